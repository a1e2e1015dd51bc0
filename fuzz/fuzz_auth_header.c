/* libFuzzer: the Authorization header a client sends (Bearer, or Basic from a
 * browser's login prompt) against a key set: any bytes, a verdict, never a
 * crash, a read past the header or a leak. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/keys.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct kvg_keys_set *set;
    if (!set) {
        static const char yaml[] =
            "keys:\n  - name: a\n    hash: "
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n";
        char err[128];
        if (kvg_keys_parse(yaml, sizeof yaml - 1, "fuzz.yaml", &set, err, sizeof err)) abort();
    }
    /* A copy of exactly size bytes: ASan sees any read past the header. */
    char *h = malloc(size ? size : 1);
    if (!h) return 0;
    memcpy(h, data, size);
    const struct kvg_keys_entry *e;
    kvg_keys_authenticate(set, (struct kvg_str){h, size}, &e);
    free(h);
    return 0;
}
