/* msgpack encoding of the simulated engine's KV events, byte-compatible with
 * what vLLM publishes (its msgspec KV event classes; tests/fixtures/kv-wire
 * holds payloads vLLM's own encoder made). A store of
 * an adapter's or a salted request's blocks also has lora_id (int),
 * lora_name and extra_keys (per block [lora_name?, cache_salt?], the salt on
 * a request's first block only; nil for none) in both forms:
 *   EventBatch = [ts (float64), [event, ...], data_parallel_rank]
 * with each event either a positional tagged array (vLLM up to mid-2026)
 *   ["BlockStored", block_hashes, parent_block_hash|nil, token_ids, block_size,
 *    lora_id=nil, medium="GPU"]
 *   ["BlockRemoved", block_hashes, medium="GPU"]
 *   ["AllBlocksCleared"]
 * or a tagged map (vLLM PR #42892, SGLang #37482)
 *   {"type":"BlockStored", "block_hashes":..., "parent_block_hash":...,
 *    "token_ids":..., "block_size":..., "lora_id":nil, "medium":"GPU",
 *    "lora_name":nil, "extra_keys":[nil per block], "group_idx":0,
 *    "kv_cache_spec_kind":"full_attention"}
 *   {"type":"BlockRemoved", "block_hashes":..., "medium":"GPU", "group_idx":0}
 *   {"type":"AllBlocksCleared"}
 * medium is "GPU", or "CPU" for the CPU tier (a store of one evicted block,
 * with its parent and tokens, and that tier's own removals).
 * Block hashes are msgpack unsigned integers (vLLM's default
 * VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1), token ids unsigned integers, both
 * in the smallest msgpack width, as msgspec writes them. */
#ifndef KVG_SIM_KV_EVENTS_H
#define KVG_SIM_KV_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "sim/sim.h"

enum kvg_sim_kv_encoding {
    KVG_SIM_KV_ARRAY, /* positional tagged arrays */
    KVG_SIM_KV_MAP,   /* tagged maps */
};

/* "array" or "map" -> the enum value; -EINVAL otherwise. */
int kvg_sim_kv_encoding_parse(const char *s);

/* Encodes ev[0..n) as one EventBatch stamped ts (seconds, the caller's
 * clock). dp_rank < 0 leaves data_parallel_rank out (a 2-element batch, as
 * msgspec omits a None default). On success *out is malloc'd and owned by the
 * caller (free(), or hand it to kvg_simsrv_kvpub_publish) and *len is its size;
 * -ENOMEM otherwise. */
int kvg_sim_kv_encode(const struct kvg_sim_event *ev, size_t n, double ts, int dp_rank,
                      enum kvg_sim_kv_encoding enc, void **out, size_t *len);

#endif
