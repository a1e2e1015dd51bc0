/* The precise KV index of one router pool: which worker slot holds which
 * block, fed by the engines' own KV events, asked "how many leading blocks of
 * this prompt does each worker already hold?" on every routed request.
 *
 * Keys are the sequence hashes of hash.h computed at the pool's block size.
 * A BlockStored is re-hashed from its token_ids (the engine's block hashes are
 * opaque IDs, kept only to resolve parent_block_hash and BlockRemoved), so
 * the engine's hash algorithm and seed never matter. An engine block size
 * that is a multiple of the pool's is split into several router blocks; any
 * other size is counted as a mismatch and its events skipped (it would
 * silently ruin routing otherwise).
 *
 * Holdings are kept per memory tier (event `medium`: GPU, host memory, other)
 * and per KV-cache group: a BlockRemoved removes the block from its own tier
 * and group only (vLLM names a block by the same hash in every group of a
 * hybrid model, and a CPU-offloaded copy by the same hash as its GPU copy).
 * Prefix reuse is decided by the full-attention groups (kv_cache_spec_kind
 * absent or full attention): blocks of sliding-window, Mamba and other
 * groups are kept apart and never count in a match, as such a group only
 * ever holds a request's tail.
 *
 * Cache salts: a block is keyed with its salt mixed in where the salt starts
 * (see hash.h), so it matches only requests hashed with the same salt
 * (kvg_kv_hash_request). A salted store continuing a salted block carries
 * the salt on through the chain; one continuing an unsalted block starts
 * the salt there. LoRA: blocks are seeded by lora_name (Dynamo's way).
 *
 * Engine hashes are opaque but not always unique: older SGLang hashed a page
 * by its content only, so a page repeated in a prompt comes twice under one
 * hash. Every place is stored and the hash is reference-counted: the
 * removal that drops its last reference forgets it. A parent_block_hash
 * that is unknown and equal to one of the event's own block hashes (a block
 * cannot be its own ancestor; a known one is a repeated page) is read as no
 * parent.
 *
 * Memory is bounded: past max_entries (block, worker) entries the least
 * recently used entry goes. "Used" means stored/refreshed by an event or
 * walked by a lookup that matched it. Lookups do not reorder lists (that
 * would make every lookup a writer): they stamp the block, and an entry that
 * reaches the LRU end with a newer lookup stamp is moved back to the head
 * instead of evicted. Within one BlockStored the deepest blocks are queued
 * to go first, as engines evict a chain's tail first.
 *
 * Threading: every function is thread-safe. Lookups take a shared lock and
 * run in parallel; events, worker changes and eviction take the exclusive
 * lock in short holds (at most KVG_KV_APPLY_CHUNK blocks, token hashing done
 * before locking). Events of one worker slot must be applied by one thread at
 * a time, in sequence order (the subscriber does this). */
#ifndef KVG_KV_INDEX_H
#define KVG_KV_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "kv/events.h"

#define KVG_KV_APPLY_CHUNK 64

struct kvg_kv_index;

struct kvg_kv_index_opts {
    uint32_t block_size;  /* the pool's block size in tokens (required) */
    uint32_t max_workers; /* worker slots 0..max_workers-1; 0 = 64; at most 4096 */
    uint64_t max_entries; /* bound on (block, worker) entries; 0 = 1 << 23 */
};

struct kvg_kv_index_stats {
    uint64_t entries; /* (block, worker) entries */
    uint64_t nodes;   /* distinct blocks */
    uint64_t bytes;   /* memory held by the index */
    uint64_t max_entries;
    uint64_t evictions;                  /* entries dropped by the bound */
    uint64_t dup_entries;                /* extra entries: same tokens under another engine hash */
    uint64_t ref_extra;                  /* extra references: one engine hash at several places */
    uint64_t tier_entries[KVG_KV_TIERS]; /* entries per memory tier (all groups) */
    uint64_t aux_entries;                /* entries of sliding-window/other groups */
    uint64_t lookups;
    uint64_t rd_contended; /* lookups that found the lock taken by a writer */
    uint64_t wr_contended; /* write holds that had to wait */
    uint32_t workers;      /* live slots */
    uint32_t block_size;
};

struct kvg_kv_apply_result {
    uint32_t events;              /* events applied */
    uint32_t stored_blocks;       /* router blocks stored or refreshed */
    uint32_t removed_blocks;      /* entries removed by BlockRemoved */
    uint32_t cleared;             /* AllBlocksCleared events */
    uint32_t cleared_entries;     /* entries they dropped */
    uint32_t block_size_mismatch; /* BlockStored skipped: size not a multiple of the pool's */
    uint32_t inconsistent;        /* BlockStored skipped: tokens != hashes x block_size */
    uint32_t orphans;             /* BlockStored skipped: parent hash unknown */
    uint32_t self_parent;         /* BlockStored whose parent was one of its own hashes */
    uint32_t repeated;            /* engine hashes stored again at another place (refcounted) */
    uint32_t aux_blocks;          /* of stored_blocks, in groups that do not decide prefixes */
    uint32_t evicted;             /* entries evicted by the bound meanwhile */
};

/* Creates an index; *out is owned by the caller (kvg_kv_index_free). */
int kvg_kv_index_new(const struct kvg_kv_index_opts *o, struct kvg_kv_index **out);
void kvg_kv_index_free(struct kvg_kv_index *idx);
uint32_t kvg_kv_index_block_size(const struct kvg_kv_index *idx);
uint32_t kvg_kv_index_max_workers(const struct kvg_kv_index *idx);

/* Slots. add: -EEXIST if live, -EBUSY while a removal drains it, -EINVAL out
 * of range. remove: drops all the slot's entries, then frees the slot;
 * returns how many entries went (-ENOENT if not live). clear: drops the
 * entries but keeps the slot live (engine restart, lost events). */
int kvg_kv_index_add_worker(struct kvg_kv_index *idx, uint32_t slot);
int kvg_kv_index_remove_worker(struct kvg_kv_index *idx, uint32_t slot);
int kvg_kv_index_clear_worker(struct kvg_kv_index *idx, uint32_t slot);

/* Applies a decoded batch from the engine behind `slot`. b's scratch is used
 * for hashing (b stays the caller's). res (nullable) gets the counts. Returns
 * 0, KVG_ENOTFOUND if the slot is not live (or stops being live midway),
 * -ENOMEM. Malformed events were already rejected by the decoder. */
int kvg_kv_index_apply(struct kvg_kv_index *idx, uint32_t slot, struct kvg_kv_batch *b,
                       struct kvg_kv_apply_result *res);

/* Longest prefix: matched[w] (w < nslots) = how many leading blocks of seq
 * (sequence hashes from kvg_kv_hash_request / kvg_kv_hash_tokens at the
 * pool's block size) worker w holds on any tier; 0 for slots that are not
 * live. Returns the largest. */
int kvg_kv_index_match(struct kvg_kv_index *idx, const uint64_t *seq, size_t n, uint32_t *matched,
                       size_t nslots);
/* The same from token ids, hashed here at the pool's block size with a
 * block seed (KVG_KV_HASH_SEED, or kvg_kv_lora_seed of the adapter). */
int kvg_kv_index_match_tokens(struct kvg_kv_index *idx, const uint32_t *tokens, size_t n,
                              uint64_t seed, uint32_t *matched, size_t nslots);

/* Per worker, what a tier-aware match found: the leading `gpu` blocks are
 * on the GPU (prefill skipped); the `host` blocks right after them are held
 * in host memory (a transfer, cheaper than prefill); the `other` blocks
 * after those on a slower tier. gpu + host + other is what
 * kvg_kv_index_match reports. */
struct kvg_kv_tier_match {
    uint32_t gpu, host, other;
};

/* Longest prefix by tier: out[w] for w < nslots (zeros for slots that are
 * not live). Returns the largest total. */
int kvg_kv_index_match_tiers(struct kvg_kv_index *idx, const uint64_t *seq, size_t n,
                             struct kvg_kv_tier_match *out, size_t nslots);

/* The request side in one call: kvg_kv_hash_request (adapter and salt, see
 * hash.h) at the pool's block size, then kvg_kv_index_match_tiers. Returns
 * the largest total, or -ENOMEM / -EINVAL. */
int kvg_kv_index_match_request(struct kvg_kv_index *idx, const uint32_t *tokens, size_t n,
                               const char *lora_name, size_t lora_len, const char *cache_salt,
                               size_t salt_len, struct kvg_kv_tier_match *out, size_t nslots);

/* Whether slot holds the engine block `engine_hash` of KV group group_idx
 * (-1 or 0: the default group) on tier: its number of router-block entries
 * there (0 when not held). For diagnostics and tests. */
uint32_t kvg_kv_index_held(struct kvg_kv_index *idx, uint32_t slot, enum kvg_kv_tier tier,
                           int64_t group_idx, uint64_t engine_hash);

/* Longest prefix of seq held by each worker in the groups that do not decide
 * prefix reuse (sliding window, Mamba...), any tier: what they hold, for
 * diagnostics and tests. Returns the largest. */
int kvg_kv_index_match_aux(struct kvg_kv_index *idx, const uint64_t *seq, size_t n,
                           uint32_t *matched, size_t nslots);

void kvg_kv_index_stats(struct kvg_kv_index *idx, struct kvg_kv_index_stats *st);
/* Entries of one slot (Dynamo breaks cost ties by the smaller tree). */
uint64_t kvg_kv_index_worker_entries(struct kvg_kv_index *idx, uint32_t slot);

#endif
