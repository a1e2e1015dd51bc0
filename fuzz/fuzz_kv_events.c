/* libFuzzer target: KV-event batches as an engine could send them. The first
 * byte picks the pool's block size and the worker slot; the rest is the
 * msgpack payload. Whatever decodes is applied to a small bounded index and
 * looked up, so the decoder and the index's event paths both see hostile
 * input: tiers, KV groups, salts, adapters, repeated hashes included (the
 * corpus is seeded with the engines' own payloads, one leading byte added).
 * Invariants checked: the bound holds, lookups stay in range, the per-tier
 * split adds up to the plain match. */
#include <stdint.h>
#include <stdlib.h>

#include "kv/events.h"
#include "kv/hash.h"
#include "kv/index.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint32_t sizes[4] = {1, 2, 4, 16};
    if (size < 1) return 0;
    struct kvg_kv_batch_limits lim = {.max_events = 256, .max_hashes = 4096, .max_tokens = 65536};
    struct kvg_kv_batch b;
    kvg_kv_batch_init(&b, &lim);
    int n = kvg_kv_decode_batch(&b, data + 1, size - 1);
    if (n >= 0) {
        struct kvg_kv_index_opts o = {
            .block_size = sizes[data[0] & 3], .max_workers = 4, .max_entries = 64};
        struct kvg_kv_index *idx;
        if (kvg_kv_index_new(&o, &idx) == 0) {
            uint32_t w = (data[0] >> 2) & 3, out[4];
            kvg_kv_index_add_worker(idx, w);
            kvg_kv_index_apply(idx, w, &b, NULL);
            kvg_kv_index_apply(idx, w, &b, NULL); /* re-stores and re-removes */
            struct kvg_kv_index_stats st;
            kvg_kv_index_stats(idx, &st);
            if (st.entries > 64) abort();
            if (b.n_tokens) {
                int m =
                    kvg_kv_index_match_tokens(idx, b.tokens, b.n_tokens, KVG_KV_HASH_SEED, out, 4);
                if (m < 0 || (uint64_t)m * o.block_size > b.n_tokens) abort();
                /* As each store's own request would be hashed: adapter, salt, tiers. */
                for (uint32_t e = 0; e < b.n_events; e++) {
                    const struct kvg_kv_event *ev = &b.events[e];
                    struct kvg_kv_tier_match tm[4];
                    if (ev->type != KVG_KV_EV_STORED) continue;
                    int t = kvg_kv_index_match_request(idx, b.tokens + ev->token_off, ev->n_tokens,
                                                       ev->lora_name.p, ev->lora_name.len,
                                                       ev->cache_salt.p, ev->cache_salt.len, tm, 4);
                    if (t < 0 || (uint64_t)t * o.block_size > ev->n_tokens) abort();
                    uint32_t best = 0;
                    for (int i = 0; i < 4; i++) {
                        uint32_t sum = tm[i].gpu + tm[i].host + tm[i].other;
                        if (sum > best) best = sum;
                    }
                    if (best != (uint32_t)t) abort();
                    if (ev->n_hashes)
                        (void)kvg_kv_index_held(idx, w, ev->tier, ev->group_idx,
                                                b.hashes[ev->hash_off]);
                }
            }
            kvg_kv_index_remove_worker(idx, w);
            kvg_kv_index_stats(idx, &st);
            if (st.entries || st.nodes) abort();
            kvg_kv_index_free(idx);
        }
    }
    kvg_kv_batch_free(&b);
    return 0;
}
