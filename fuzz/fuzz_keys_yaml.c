/* libFuzzer: the API keys file parser (YAML from an operator, but a parser of
 * outside bytes all the same). Any input: an error or a key set, never a
 * crash or a leak. */
#include <stddef.h>
#include <stdint.h>

#include "gateway/keys.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kvg_keys_set *set = NULL;
    char err[256];
    if (kvg_keys_parse((const char *)data, size, "fuzz.yaml", &set, err, sizeof err) == 0) {
        unsigned char digest[32] = {0};
        kvg_keys_lookup(set, digest);
        kvg_keys_unref(set);
    }
    return 0;
}
