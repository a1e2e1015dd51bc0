/* Decoding vLLM's (and SGLang's) KV-event batches.
 *
 * An engine publishes one msgpack EventBatch per scheduler step that changed
 * its prefix cache. Every variant seen in the wild is accepted:
 *   batch:  positional [ts, events, dp_rank?]   or map {ts, events, data_parallel_rank}
 *   event:  tagged array ["BlockStored", block_hashes, parent, token_ids, block_size,
 *                         lora_id?, medium?, lora_name?, extra_keys?, group_idx?,
 *                         kv_cache_spec_kind?, kv_cache_spec_sliding_window?]  (5..12 elements)
 *           ["BlockRemoved", block_hashes, medium?, group_idx?]              (2..4)
 *           ["AllBlocksCleared"]
 *        or tagged map {"type": "BlockStored", "block_hashes": ..., ...} in any key order.
 *        or SGLang's BlockStoredWithMetadata: a positional store whose element
 *           after medium (where vLLM has lora_name) is a map of named fields,
 *           e.g. {"cache_salt": "tenant-a"}.
 *   hash:   uint64, negative int64 (reinterpreted as u64), or bytes (last 8 bytes
 *           big-endian, left-padded with zeros when shorter).
 *   token:  an integer, or (EAGLE speculative decoding) a [t, t+1] pair whose
 *           first element is the block's token.
 * Cache salts come from SGLang's `cache_salt` field and from vLLM's extra_keys
 * (a typed {"type": "cache_salt", "salt": s} item, or in the untyped tuple
 * form a string that is not the event's lora_name); the block carrying it is
 * where the salt starts (vLLM puts it on a request's first block only).
 * Extra trailing elements, unknown map keys and unknown event tags are skipped
 * (newer engines add fields). An event whose fields are unreadable is skipped
 * and counted in n_bad (the rest of the batch is kept: one odd field must not
 * cost the other events); a batch whose structure is broken (truncated,
 * not a batch, past a limit) fails whole with KVG_EPARSE or KVG_ETOOBIG.
 *
 * A struct kvg_kv_batch is reusable scratch owned by one thread: its arrays
 * grow up to the limits given at init and are kept between decodes. */
#ifndef KVG_KV_EVENTS_H
#define KVG_KV_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

enum kvg_kv_ev_type {
    KVG_KV_EV_STORED = 1,
    KVG_KV_EV_REMOVED = 2,
    KVG_KV_EV_CLEARED = 3,
};

/* Memory tiers of the `medium` field, fastest first. */
enum kvg_kv_tier {
    KVG_KV_TIER_GPU = 0,   /* "GPU" (and absent/nil: the engines' default) */
    KVG_KV_TIER_HOST = 1,  /* host memory: vLLM "CPU", SGLang HiCache "CPU_PINNED" */
    KVG_KV_TIER_OTHER = 2, /* anything else named (disk, remote, shared stores) */
    KVG_KV_TIERS = 3
};

/* The tier a `medium` string names (case-insensitive); {NULL,0} is GPU. */
enum kvg_kv_tier kvg_kv_medium_tier(struct kvg_str medium);

struct kvg_kv_event {
    enum kvg_kv_ev_type type;
    uint32_t hash_off, n_hashes;  /* block_hashes: batch->hashes[hash_off ..] */
    uint32_t token_off, n_tokens; /* STORED: batch->tokens[token_off ..] */
    uint32_t block_size;          /* STORED: the engine's block size */
    int has_parent;               /* STORED: parent_block_hash present and not nil */
    uint64_t parent;              /* STORED: engine hash of the block before hashes[0] */
    int has_lora_id;              /* lora_id present and not nil */
    int64_t lora_id;              /* deprecated integer adapter id */
    int64_t group_idx;            /* KV-cache group, -1 when absent or nil */
    int64_t sliding_window;       /* kv_cache_spec_sliding_window, -1 when absent or nil */
    enum kvg_kv_tier tier;        /* from medium */
    struct kvg_str medium;        /* "GPU", "CPU"...; {NULL,0} when absent or nil */
    struct kvg_str lora_name;     /* views into the decoded input: valid while it is */
    struct kvg_str spec_kind;     /* kv_cache_spec_kind */
    struct kvg_str cache_salt;    /* STORED: {NULL,0} when unsalted */
    uint32_t salt_block;          /* STORED: engine block (0..n_hashes) where the salt starts */
    int bigram_tokens;            /* STORED: token_ids came as EAGLE [t, t+1] pairs */
};

struct kvg_kv_batch_limits {
    uint32_t max_events; /* per batch; 0 = 65536 */
    uint32_t max_hashes; /* block hashes, all events together; 0 = 1 << 20 */
    uint32_t max_tokens; /* token ids, all events together; 0 = 1 << 24 */
};

struct kvg_kv_batch {
    double ts;
    /* data_parallel_rank, -1 when absent or nil (not data parallel). vLLM
     * stamps every batch; events of rank r belong to the logical worker
     * URL@r (each rank publishes on endpoint port + r). */
    int64_t dp_rank;
    struct kvg_kv_event *events;
    uint32_t n_events, cap_events;
    uint64_t *hashes;
    uint32_t n_hashes, cap_hashes;
    uint32_t *tokens;
    uint32_t n_tokens, cap_tokens;
    uint32_t n_unknown;     /* events with an unknown tag, skipped */
    uint32_t n_bad;         /* events with unreadable fields, skipped (err says why) */
    uint32_t n_bad_removed; /* of those, BlockRemoved: blocks the index may now over-claim */
    /* Scratch for the index (local block hashes); owned by the batch. */
    uint64_t *scratch;
    size_t cap_scratch;
    struct kvg_kv_batch_limits lim;
    const char *err; /* static text naming what was malformed: after KVG_EPARSE, or
                      * the first skipped event's reason when n_bad > 0 */
};

/* Initialises an empty batch (allocates nothing). lim may be NULL. */
void kvg_kv_batch_init(struct kvg_kv_batch *b, const struct kvg_kv_batch_limits *lim);
/* Frees the batch's arrays (not b itself). */
void kvg_kv_batch_free(struct kvg_kv_batch *b);

/* Decodes one EventBatch payload into b (replacing its previous content).
 * Returns the number of events kept (bad events skipped are in n_bad),
 * KVG_EPARSE for a malformed batch (b->err says what), KVG_ETOOBIG past a
 * limit, -ENOMEM. On failure b holds no events. String views in the events
 * point into buf. */
int kvg_kv_decode_batch(struct kvg_kv_batch *b, const void *buf, size_t len);

/* Room for this many events, block hashes and token ids in b's arrays, for
 * a producer that fills a batch without msgpack (the bench's direct path),
 * within b's limits: 0, KVG_ETOOBIG or -ENOMEM. */
int kvg_kv_batch_reserve(struct kvg_kv_batch *b, size_t events, size_t hashes, size_t tokens);
/* Grows b->scratch to at least n entries (within max_tokens). 0 or -ENOMEM. */
int kvg_kv_batch_scratch(struct kvg_kv_batch *b, size_t n);

#endif
