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
 * A cache salt (vLLM's and SGLang's `cache_salt`: per-tenant isolation) is
 * mixed into the sequence hash of the block where it starts, and the chain
 * carries it from there, as the engines do (vLLM puts the salt in the first
 * block's extra keys only; SGLang separates salted subtrees at the root):
 *
 *     salted[j] = XXH3-64(seed KVG_KV_SALT_SEED, le64(seq[j]) || le64(XXH3-64(salt)))
 *
 * so a salted block never equals an unsalted one or another salt's.
 *
 * All functions here are pure and thread-safe. */
#ifndef KVG_KV_HASH_H
#define KVG_KV_HASH_H

#include <stddef.h>
#include <stdint.h>

#define KVG_KV_HASH_SEED 1337u
#define KVG_KV_SALT_SEED 0x73616c74u /* "salt": apart from chain steps */

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

/* Hash of a cache salt: 0 for NULL/empty (no salt), else XXH3-64(salt)
 * (never 0: a salt hashing to 0 is taken as 1). */
uint64_t kvg_kv_salt_hash(const char *salt, size_t len);

/* The sequence hash of a block where a salt (kvg_kv_salt_hash, non-zero)
 * starts, from the block's unsalted sequence hash. */
uint64_t kvg_kv_seq_salted(uint64_t seq, uint64_t salt_hash);

/* The request side, for a request as the engine sees it: sequence hashes of
 * the full blocks of tokens[0..n) at block_size, seeded by the LoRA adapter
 * the request runs on (lora_name: the adapter's name as the engine reports
 * it in BlockStored's lora_name, i.e. the request's `model` when it names
 * an adapter; NULL/0 for the base model) and salted from block 0 by the
 * request's `cache_salt` (NULL/0 for none). The result equals the keys the
 * index stores for that engine's blocks of the same adapter and salt, so it
 * goes straight to kvg_kv_index_match / kvg_kv_index_match_tiers. Writes at
 * most max; returns the number written (min(n / block_size, max)), or
 * -EINVAL when block_size is 0. Pure; strings are only read. */
int kvg_kv_hash_request(const uint32_t *tokens, size_t n, uint32_t block_size,
                        const char *lora_name, size_t lora_len, const char *cache_salt,
                        size_t salt_len, uint64_t *out, size_t max);

/* The hashes kvg_kv_hash_request gives blocks [from, to) of tokens (block i
 * is tokens[i * block_size ..][..block_size]), seeded by `seed`
 * (kvg_kv_lora_seed) and salted by salt_hash (kvg_kv_salt_hash, 0 for none),
 * chained from out[from - 1] when from > 0: a prompt's hashes can be
 * computed in parts (the tokenizer's prefix cache keeps those of a known
 * start). */
void kvg_kv_hash_range(const uint32_t *tokens, uint32_t block_size, uint64_t seed,
                       uint64_t salt_hash, size_t from, size_t to, uint64_t *out);

/* The request side: sequence hashes of the full blocks of a prompt, ready for
 * kvg_kv_index_match. Writes at most max; returns the number written
 * (min(n / block_size, max)), or -EINVAL when block_size is 0. */
int kvg_kv_hash_tokens(const uint32_t *tokens, size_t n, uint32_t block_size, uint64_t *out,
                       size_t max);
/* The same with a block seed (kvg_kv_lora_seed of the request's adapter). */
int kvg_kv_hash_tokens_seeded(const uint32_t *tokens, size_t n, uint32_t block_size, uint64_t seed,
                              uint64_t *out, size_t max);

#endif
