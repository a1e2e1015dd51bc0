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
    uint64_t evictions;   /* entries dropped by the bound */
    uint64_t dup_entries; /* extra entries: same tokens under another engine hash */
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
 * (sequence hashes from kvg_kv_hash_tokens at the pool's block size) worker
 * w holds; 0 for slots that are not live. Returns the largest. */
int kvg_kv_index_match(struct kvg_kv_index *idx, const uint64_t *seq, size_t n, uint32_t *matched,
                       size_t nslots);
/* The same from token ids, hashed here at the pool's block size with a
 * block seed (KVG_KV_HASH_SEED, or kvg_kv_lora_seed of the adapter). */
int kvg_kv_index_match_tokens(struct kvg_kv_index *idx, const uint32_t *tokens, size_t n,
                              uint64_t seed, uint32_t *matched, size_t nslots);

void kvg_kv_index_stats(struct kvg_kv_index *idx, struct kvg_kv_index_stats *st);
/* Entries of one slot (Dynamo breaks cost ties by the smaller tree). */
uint64_t kvg_kv_index_worker_entries(struct kvg_kv_index *idx, uint32_t slot);

#endif
