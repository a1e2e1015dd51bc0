/* libFuzzer: the W3C traceparent parser (src/trace/span.c), which reads a
 * client's header on every traced request. Any bytes: KVG_EPARSE or ids
 * that are not all zero, and what parsed writes back as a version-00 value
 * that parses to the same ids and sampled flag; never an overread (the
 * input is copied to a block of exactly its size). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "trace/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *p = malloc(size ? size : 1);
    if (!p) return 0;
    if (size) memcpy(p, data, size);
    uint8_t t[16], s[8], f;
    int rc = kvg_trace_parse_parent(p, size, t, s, &f);
    if (rc == 0) {
        static const uint8_t zero[16];
        if (!memcmp(t, zero, 16) || !memcmp(s, zero, 8)) abort();
        char out[KVG_TRACE_PARENT_LEN + 1];
        if (kvg_trace_format_parent(t, s, f & 1, out) != KVG_TRACE_PARENT_LEN) abort();
        uint8_t t2[16], s2[8], f2;
        if (kvg_trace_parse_parent(out, KVG_TRACE_PARENT_LEN, t2, s2, &f2) || memcmp(t, t2, 16) ||
            memcmp(s, s2, 8) || (f2 & 1) != (f & 1))
            abort();
    } else if (rc != KVG_EPARSE) {
        abort();
    }
    struct kvg_rng rng;
    kvg_rng_seed(&rng, size);
    struct kvg_trace_ctx c;
    kvg_trace_ctx_start(&c, (struct kvg_str){p, size}, 0.5, &rng);
    if (rc == 0 && (memcmp(c.trace_id, t, 16) || c.sampled != (f & 1))) abort();
    free(p);
    return 0;
}
