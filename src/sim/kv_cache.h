/* The simulated engine's block pool: fixed-size KV blocks with reference
 * counts, a prefix cache (block hash -> block) over full blocks, an LRU free
 * queue, and the log of KV events those produce. It mirrors vLLM's v1
 * BlockPool closely enough that a router fed by its events sees what it would
 * see from vLLM:
 *   - allocation pops the least recently freed block; if that block still
 *     holds a cached hash it is evicted then (BlockRemoved);
 *   - a request frees its blocks tail first, so the tail of a chain sits
 *     nearer the queue head and is evicted before its parents;
 *   - a prefix hit on a free cached block takes it out of the queue;
 *   - a newly full block is stored (BlockStored) unless its hash is already
 *     resident; then the request shares the resident copy and its own block
 *     goes back to the pool unstored. vLLM keeps both physical copies (and
 *     before vLLM PR #55092 reported both); the set of resident hashes, which
 *     is all the events describe, is the same.
 *
 * An optional CPU tier (kvg_sim_kvc_enable_cpu, vLLM's CPU offloading): a
 * GPU block evicted with a hash moves there (BlockStored medium "CPU",
 * logged before the GPU's BlockRemoved so its parent is still known), the
 * tier evicts its least recently used block when full (BlockRemoved medium
 * "CPU"), and a block copied back to the GPU stays there too, as an
 * offloading cache keeps what it holds.
 * Internal to src/sim (engine.c is the only user); the public face is sim.h. */
#ifndef KVG_SIM_KV_CACHE_H
#define KVG_SIM_KV_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "sim/sim.h"

struct kvg_sim_kvc;

/* -ENOMEM; on success *out is the caller's: kvg_sim_kvc_free(). */
int kvg_sim_kvc_create(uint32_t num_blocks, uint32_t block_size, int emit_events,
                       struct kvg_sim_kvc **out);
void kvg_sim_kvc_free(struct kvg_sim_kvc *c);

/* Adds a CPU tier of cpu_blocks blocks (before any use). -ENOMEM. */
int kvg_sim_kvc_enable_cpu(struct kvg_sim_kvc *c, uint32_t cpu_blocks);
/* Longest prefix of hashes[0..n) held in the CPU tier (0 without one); the
 * blocks found become its most recently used, so that allocating GPU blocks
 * for their copy does not evict them. */
uint32_t kvg_sim_kvc_cpu_lookup(struct kvg_sim_kvc *c, const uint64_t *hashes, uint32_t n);
uint32_t kvg_sim_kvc_cpu_num_blocks(const struct kvg_sim_kvc *c);
uint32_t kvg_sim_kvc_cpu_num_cached(const struct kvg_sim_kvc *c);
size_t kvg_sim_kvc_cpu_hashes(const struct kvg_sim_kvc *c, uint64_t *out, size_t cap);

uint32_t kvg_sim_kvc_num_free(const struct kvg_sim_kvc *c);   /* includes evictable cached */
uint32_t kvg_sim_kvc_num_cached(const struct kvg_sim_kvc *c); /* resident hashes */

/* Longest prefix of hashes[0..n) that is resident: writes its blocks to
 * blocks_out and returns its length; *n_free gets how many of them no request
 * holds (they leave the free queue when touched). Changes nothing. */
uint32_t kvg_sim_kvc_lookup(const struct kvg_sim_kvc *c, const uint64_t *hashes, uint32_t n,
                            int32_t *blocks_out, uint32_t *n_free);
/* Takes a reference on each of blocks[0..n). */
void kvg_sim_kvc_touch(struct kvg_sim_kvc *c, const int32_t *blocks, uint32_t n);
/* Pops n blocks (n <= num_free) from the LRU end into out, evicting cached
 * ones; each gets one reference. */
void kvg_sim_kvc_alloc(struct kvg_sim_kvc *c, int32_t *out, uint32_t n);
/* Stores blocks[from..to) of one request, whose chain hashes are hashes[]
 * and token ids tokens[] (both indexed from the request's first block).
 * Resident duplicates are merged: blocks[i] is replaced by the resident block. */
void kvg_sim_kvc_store(struct kvg_sim_kvc *c, int32_t *blocks, const uint64_t *hashes,
                       const uint32_t *tokens, uint32_t from, uint32_t to);
/* The same for a request on a LoRA adapter and/or with a cache salt (both
 * NULL: the base model, unsalted; the strings must outlive the events). */
void kvg_sim_kvc_store_tagged(struct kvg_sim_kvc *c, int32_t *blocks, const uint64_t *hashes,
                              const uint32_t *tokens, uint32_t from, uint32_t to,
                              const char *lora_name, int lora_id, const char *cache_salt);
/* Drops one reference on each of blocks[0..n), last block first; blocks no
 * longer held join the free queue's most-recent end (cached ones stay
 * cached). */
void kvg_sim_kvc_release(struct kvg_sim_kvc *c, const int32_t *blocks, uint32_t n);
/* Forgets every cached hash (AllBlocksCleared); -EBUSY if any block is held. */
int kvg_sim_kvc_reset(struct kvg_sim_kvc *c);

void kvg_sim_kvc_events(struct kvg_sim_kvc *c, struct kvg_sim_events *out);
void kvg_sim_kvc_events_clear(struct kvg_sim_kvc *c);
size_t kvg_sim_kvc_num_events(const struct kvg_sim_kvc *c);

size_t kvg_sim_kvc_cached_hashes(const struct kvg_sim_kvc *c, uint64_t *out, size_t cap);
size_t kvg_sim_kvc_eviction_order(const struct kvg_sim_kvc *c, uint64_t *out, size_t cap);

#endif
