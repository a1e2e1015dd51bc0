/* Block hashing for precise KV routing, the same way Dynamo's KV router does
 * it, so that a request and an engine's BlockStored event name a block alike.
 *
 * A prompt's token ids are cut into blocks of the pool's block size; a partial
 * last block is ignored (engines only cache full blocks). Each block gets a
 * LocalBlockHash = XXH3-64 over its token ids as little-endian u32, seed 1337
 * (for a LoRA adapter, seed 1337 + XXH3-64(adapter name), as Dynamo does, so
 * an adapter's KV never matches the base model's). Identical blocks at
 * different places in different prompts must not be confused, so the index
 * is keyed by the *sequence* hash, chained from the parent block (Dynamo's
 * SequenceHash):
 *
 *     seq[0] = local[0]
 *     seq[i] = XXH3-64(seed 1337, le64(seq[i-1]) || le64(local[i]))
 *
 * All functions here are pure and thread-safe. */
#ifndef KVG_KV_HASH_H
#define KVG_KV_HASH_H

#include <stddef.h>
#include <stdint.h>

#define KVG_KV_HASH_SEED 1337u

/* Block-hash seed of a LoRA adapter: KVG_KV_HASH_SEED for NULL/empty (the
 * base model), else 1337 + XXH3-64(name) (wrapping). */
uint64_t kvg_kv_lora_seed(const char *name, size_t len);

/* LocalBlockHash of one block of block_size token ids with a block seed
 * (KVG_KV_HASH_SEED for the base model). */
uint64_t kvg_kv_local_hash(const uint32_t *tokens, uint32_t block_size, uint64_t seed);

/* The next sequence hash after `parent` (a sequence hash) for a block whose
 * LocalBlockHash is `local`. */
uint64_t kvg_kv_seq_next(uint64_t parent, uint64_t local);

/* Writes the LocalBlockHashes of the full blocks of tokens[0..n) into
 * out[0..max). Returns the number of full blocks (only max of them are
 * written when there are more), or -EINVAL when block_size is 0. */
int kvg_kv_local_hashes(const uint32_t *tokens, size_t n, uint32_t block_size, uint64_t seed,
                        uint64_t *out, size_t max);

/* Chains LocalBlockHashes into sequence hashes (out may equal local).
 * has_parent = 0 starts a chain at the root; otherwise the first block
 * follows the sequence hash `parent`. */
void kvg_kv_seq_chain(const uint64_t *local, size_t n, int has_parent, uint64_t parent,
                      uint64_t *out);

/* The request side: sequence hashes of the full blocks of a prompt, ready for
 * kvg_kv_index_match. Writes at most max; returns the number written
 * (min(n / block_size, max)), or -EINVAL when block_size is 0. */
int kvg_kv_hash_tokens(const uint32_t *tokens, size_t n, uint32_t block_size, uint64_t *out,
                       size_t max);
/* The same with a block seed (kvg_kv_lora_seed of the request's adapter). */
int kvg_kv_hash_tokens_seeded(const uint32_t *tokens, size_t n, uint32_t block_size, uint64_t seed,
                              uint64_t *out, size_t max);

#endif
