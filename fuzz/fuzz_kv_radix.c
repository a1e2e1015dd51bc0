/* libFuzzer target: the cache_aware radix tree fed request text (any bytes,
 * including invalid UTF-8). Lines are inserted for tenants chosen by their
 * first byte, matched, evicted and removed; character counts must stay
 * consistent with what prefix_match reports. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kv/radix.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kvg_kv_radix *t;
    if (kvg_kv_radix_new(&t)) return 0;
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        int tenant = len ? (unsigned char)p[0] % 5 : 0;
        struct kvg_kv_radix_match m;
        kvg_kv_radix_insert(t, p, len, tenant);
        kvg_kv_radix_prefix_match(t, p, len, &m);
        if (m.matched_chars != m.text_chars || m.matched_bytes != len) abort();
        if (len && (unsigned char)p[0] % 7 == 0) kvg_kv_radix_evict_by_size(t, len);
        if (len && (unsigned char)p[0] % 11 == 0) kvg_kv_radix_remove_tenant(t, tenant);
        p += len + (nl != NULL);
    }
    struct kvg_kv_radix_stats st;
    kvg_kv_radix_stats(t, &st);
    uint64_t sum = 0;
    for (int i = 0; i < 5; i++) sum += kvg_kv_radix_tenant_chars(t, i);
    if (sum != st.total_chars) abort();
    kvg_kv_radix_free(t);
    return 0;
}
