/* Tokenizers: HuggingFace tokenizer.json (byte-level BPE; SentencePiece-style
 * BPE with byte fallback) and the built-in byte-level tokenizer that kvgate
 * serve and kvgate sim share by default ("builtin:bytes").
 *
 * A loaded struct kvg_tok is immutable and safe to use from many threads at
 * once. */
#ifndef KVG_TOKENIZER_TOKENIZER_H
#define KVG_TOKENIZER_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

struct kvg_tok;

/* Loads a tokenizer. `path` is a tokenizer.json file, a model directory
 * (its tokenizer.json, and its tokenizer_config.json when config_path is
 * NULL), or "builtin:bytes"; a HuggingFace model id is refused with what to
 * pass instead (nothing is downloaded). `config_path` (nullable) is
 * tokenizer_config.json, or a directory holding it: bos/eos tokens and the
 * chat template. On failure returns a negative code (KVG_EUNSUPP names the
 * unsupported component in `err`) and writes a message into err[errlen].
 * On success *out is owned by the caller: kvg_tok_free(). */
int kvg_tok_load(const char *path, const char *config_path, struct kvg_tok **out, char *err,
                 size_t errlen);
void kvg_tok_free(struct kvg_tok *tok);

/* Encodes UTF-8 text. Special/added tokens in the text are matched as HF does.
 * add_special: apply the post-processor's BOS/EOS template. On success *ids is
 * malloc'd (caller frees) and *n set; KVG_EUTF8 for invalid UTF-8. */
int kvg_tok_encode(const struct kvg_tok *tok, const char *text, size_t len, int add_special,
                   uint32_t **ids, size_t *n);
/* Decodes ids to UTF-8 text (skip_special: drop special tokens). *text is
 * malloc'd and NUL-terminated (caller frees), *len its length. */
int kvg_tok_decode(const struct kvg_tok *tok, const uint32_t *ids, size_t n, int skip_special,
                   char **text, size_t *len);

size_t kvg_tok_vocab_size(const struct kvg_tok *tok);
/* From tokenizer_config.json (or the built-in defaults); NULL when absent.
 * Valid while tok lives. */
const char *kvg_tok_bos_token(const struct kvg_tok *tok);
const char *kvg_tok_eos_token(const struct kvg_tok *tok);
const char *kvg_tok_chat_template(const struct kvg_tok *tok);
/* Id of a token string (added or vocab), or -1. */
int64_t kvg_tok_token_to_id(const struct kvg_tok *tok, const char *token);

/* Notes on the functions above.
 * - "builtin:bytes": ids 0..255 are the bytes; 256 <|bos|>, 257 <|eos|>,
 *   258 <|im_start|>, 259 <|im_end|> are special tokens matched in the text;
 *   add_special prepends <|bos|>; bos/eos tokens "<|bos|>" / "<|eos|>"; no
 *   chat template; vocab size 260.
 * - kvg_tok_vocab_size is the highest id + 1 (added tokens included).
 * - add_special applies tokenizer.json's post-processor, except that a
 *   tokenizer_config.json naming a Llama / CodeLlama / Gemma tokenizer class
 *   makes it follow add_bos_token / add_eos_token, as transformers (and so
 *   vLLM) does.
 * - decode drops ids that are neither in the vocabulary nor added tokens, as
 *   HF does; invalid UTF-8 from byte tokens becomes U+FFFD.
 * - Unicode tables: normalization as HF tokenizers (Unicode 9.0). */

/* Additions (the functions above are fixed; these were added after). */

/* The string of an id as the tokenizer stores it (an added token's content,
 * else the vocabulary entry: byte-level vocabularies spell a space "Ġ";
 * builtin:bytes ids 0..255 are the raw byte), or NULL for an unused id.
 * NUL-terminated, *len (nullable) its length; valid while tok lives. */
const char *kvg_tok_id_to_token(const struct kvg_tok *tok, uint32_t id, size_t *len);
/* 1 when id is a special added token (decode with skip_special drops it). */
int kvg_tok_is_special(const struct kvg_tok *tok, uint32_t id);

/* The exact prefix cache (tok_prefix.c): texts that start like a text
 * encoded before reuse that start's ids; the ids are always those of
 * kvg_tok_encode. Cuts only at added tokens (<|im_start|> in chat prompts),
 * so a tokenizer without added tokens gains nothing. A segment is kept on
 * its second sight (a filter of max_bytes/256, within [1 KiB, 2 MiB],
 * remembers the first), or at once when the text goes on where an earlier
 * text ended (a conversation's next turn). Thread-safe (one mutex); memory
 * bounded by max_bytes (entries evicted least recently used first) plus the
 * filter. One cache serves one tokenizer, which must outlive it. */
struct kvg_tok_pcache;
struct kvg_tok_pcache_stats {
    uint64_t hits, misses;  /* encodes that reused a prefix / reused nothing */
    uint64_t reused_tokens; /* ids taken from the cache */
    uint64_t evictions;
    uint64_t reused_blocks; /* block hashes taken from the cache (kvg_tok_encode_blocks) */
    uint64_t busy;          /* nowait encodes that went without the cache: it was in use */
    uint64_t not_admitted;  /* new segments not kept: seen for the first time */
    size_t entries, bytes, max_bytes;
    size_t filter_bytes; /* the seen-once filter's memory (not in bytes) */
};
/* *out owned by the caller: kvg_tok_pcache_free(). max_bytes 0 keeps
 * nothing (every encode goes the uncached way). */
int kvg_tok_pcache_new(const struct kvg_tok *tok, size_t max_bytes, struct kvg_tok_pcache **out);
void kvg_tok_pcache_free(struct kvg_tok_pcache *c);
void kvg_tok_pcache_stats(struct kvg_tok_pcache *c, struct kvg_tok_pcache_stats *st);
/* kvg_tok_encode through the cache c (NULL: uncached); *reused (nullable)
 * is the number of text ids that came from the cache. With nowait (an event
 * loop's call) the cache's mutex is only tried: when another thread holds
 * it, the text is encoded without the cache (the same ids). */
int kvg_tok_encode_cached(const struct kvg_tok *tok, struct kvg_tok_pcache *c, const char *text,
                          size_t len, int add_special, uint32_t **ids, size_t *n, size_t *reused,
                          int nowait);

/* Block hashes through the cache: the caller's chained hash over fixed
 * blocks of the ids (the KV router's; the tokenizer knows only its shape).
 * hash(ud, ids, block_size, from, to, hashes) writes hashes[from..to) for
 * the blocks ids[i * block_size ..][..block_size], chaining from
 * hashes[from - 1] when from > 0; equal tags name equal functions (the
 * caller puts every parameter of its hash in tag: adapter seed, salt).
 *
 * kvg_tok_encode_blocks is kvg_tok_encode_cached that also hands back the
 * hashes of all n / block_size full blocks of the ids (b->hashes, malloc'd,
 * caller frees; NULL when there is no full block) in b->nhashes. Segments
 * the cache holds also keep the hashes of the blocks that end in them, per
 * tag, so a reused prefix reuses its hashes (b->reused of them) and hash()
 * runs only on the rest. Exact: a segment's hashes are reused only when every
 * segment before it was, in the same chain of entries that computed them
 * (see tok_prefix.c), so they are the hashes hash() gives for these ids. */
typedef void (*kvg_tok_block_hash_fn)(void *ud, const uint32_t *ids, uint32_t block_size,
                                      size_t from, size_t to, uint64_t *hashes);
struct kvg_tok_blocks {
    uint32_t block_size; /* in, > 0 */
    uint64_t tag[2];     /* in */
    kvg_tok_block_hash_fn hash;
    void *ud;
    uint64_t *hashes; /* out, owned by the caller */
    size_t nhashes, reused;
};
int kvg_tok_encode_blocks(const struct kvg_tok *tok, struct kvg_tok_pcache *c, const char *text,
                          size_t len, int add_special, uint32_t **ids, size_t *n, size_t *reused,
                          int nowait, struct kvg_tok_blocks *b);

#endif
