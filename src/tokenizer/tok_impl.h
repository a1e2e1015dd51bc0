/* Internals of the tokenizer, shared by its source files (not part of the
 * public face, tokenizer.h).
 *
 * The pipeline mirrors HuggingFace tokenizers' so that every id matches:
 *   added tokens on the raw text -> normalizer -> added tokens on the
 *   normalized text -> pre-tokenizer -> BPE model -> post-processor.
 * Each stage is a flat list of steps (nested "Sequence" components are
 * flattened at load time, which HF's semantics allow).
 *
 * Byte-level tokenizers (a ByteLevel pre-tokenizer) run BPE on raw bytes:
 * the GPT-2 byte-to-char mapping is applied to the vocabulary once at load
 * time instead of to every input word. SentencePiece-style tokenizers run BPE
 * on UTF-8 characters with <0xXX> byte fallback.
 *
 * Everything in struct kvg_tok is written at load time only; encode and decode
 * read it from many threads at once. The one mutable part, the word cache, is
 * a table of seqlock-protected entries (tok_bpe.c). Per-call state lives in a
 * struct kvg_tok_scratch owned by the call. */
#ifndef KVG_TOKENIZER_TOK_IMPL_H
#define KVG_TOKENIZER_TOK_IMPL_H

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <cjson/cJSON.h>
#include <pcre2.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/utf8.h"
#include "tokenizer/tokenizer.h"

#define KVG_TOK_NONE UINT32_MAX
/* Ids index dense per-id arrays (13 bytes each), so an id is bounded: the
 * largest real vocabularies are ~262k; 2^24 keeps a hostile file's
 * "id": 2147483647 from reserving gigabytes. */
#define KVG_TOK_MAX_ID ((1u << 24) - 1)

/* ---- Unicode (tok_unicode.c; generated tables in tok_ucd.c) ---- */

extern const uint32_t kvg__tok_ucd_ccc[];
extern const size_t kvg__tok_ucd_ccc_len;
extern const uint32_t kvg__tok_ucd_decomp[];
extern const size_t kvg__tok_ucd_decomp_len;
extern const uint32_t kvg__tok_ucd_space[];
extern const size_t kvg__tok_ucd_space_len;
extern const uint32_t kvg__tok_ucd_word[];
extern const size_t kvg__tok_ucd_word_len;
extern const uint32_t kvg__tok_ucd_lower[];
extern const size_t kvg__tok_ucd_lower_len;
extern const uint32_t kvg__tok_ucd_age15[];
extern const size_t kvg__tok_ucd_age15_len;

/* Unicode White_Space (Rust char::is_whitespace, regex \s). */
int kvg__tok_is_space(uint32_t cp);
/* Rust regex \w: Alphabetic, marks, decimal digits, connector punctuation,
 * Join_Control. */
int kvg__tok_is_word(uint32_t cp);
/* Appends the lowercase of cp (Rust char::to_lowercase) to out. */
int kvg__tok_lower_append(uint32_t cp, struct kvg_buf *out);
/* Appends NFC (compose=1) or NFD (compose=0) of the valid UTF-8 s[0..n) to
 * out, with HF tokenizers' Unicode 9.0 data. */
int kvg__tok_unicode_nf(const char *s, size_t n, int compose, struct kvg_buf *out);
/* 1 when NFC(s) == s is certain without normalizing (the common case). */
int kvg__tok_unicode_nfc_quick(const char *s, size_t n);
/* 1 when s[0..n) (valid UTF-8) holds a code point Unicode 15.0 assigned. */
int kvg__tok_unicode_has_age15(const char *s, size_t n);
/* Appends s[0..n) to out with every invalid UTF-8 subsequence replaced by
 * U+FFFD, as Rust's String::from_utf8_lossy does. */
int kvg__tok_utf8_lossy(const char *s, size_t n, struct kvg_buf *out);

/* ---- Strings, maps (tok_vocab.c) ---- */

/* A growable byte arena: strings are referred to by offset, so growth never
 * invalidates them. Owned by the tokenizer. */
/* Token strings added with kvg__tok_arena_str are NUL-terminated (the NUL is
 * not part of their length) so accessors can hand them out as C strings. */
struct kvg_tok_arena {
    char *p;
    size_t len, cap;
};
/* Appends s[0..n) (or reserves n bytes when s is NULL); returns the offset or
 * -ENOMEM / KVG_ETOOBIG. */
int64_t kvg__tok_arena_add(struct kvg_tok_arena *a, const char *s, size_t n);
/* Appends s[0..n) and a NUL; returns the offset of s. */
int64_t kvg__tok_arena_str(struct kvg_tok_arena *a, const char *s, size_t n);

/* String -> id, open addressing. Keys live in an arena (offset, length): the
 * map does not own them. */
struct kvg_tok_slot {
    uint32_t hash, id, off, len;
};
struct kvg_tok_smap {
    struct kvg_tok_slot *slots;
    uint32_t mask, count;
};
uint32_t kvg__tok_hash(const char *s, size_t n);
/* Allocates the slots (freed by kvg__tok_smap_free); the map grows as needed. */
int kvg__tok_smap_init(struct kvg_tok_smap *m, size_t expected);
void kvg__tok_smap_free(struct kvg_tok_smap *m);
/* Maps the arena string at (off, len) to id, replacing an existing mapping
 * of the same string (a JSON object's later duplicate key wins, as in serde). */
int kvg__tok_smap_put(struct kvg_tok_smap *m, const char *arena, uint32_t off, uint32_t len,
                      uint32_t id);
/* Id of key[0..n), or -1. */
int64_t kvg__tok_smap_get(const struct kvg_tok_smap *m, const char *arena, const char *key,
                          size_t n);

/* (left id, right id) -> (rank, merged id), open addressing. */
struct kvg_tok_mslot {
    uint64_t key; /* UINT64_MAX: empty */
    uint32_t rank, id;
};
struct kvg_tok_mmap {
    struct kvg_tok_mslot *slots;
    uint32_t mask, count;
};
/* Allocates the slots (freed by kvg__tok_mmap_free); the map grows as needed. */
int kvg__tok_mmap_init(struct kvg_tok_mmap *m, size_t expected);
void kvg__tok_mmap_free(struct kvg_tok_mmap *m);
/* A later duplicate pair replaces the earlier one (HF builds a HashMap). */
int kvg__tok_mmap_put(struct kvg_tok_mmap *m, uint32_t a, uint32_t b, uint32_t rank, uint32_t id);
static inline const struct kvg_tok_mslot *kvg_tok_mmap_get(const struct kvg_tok_mmap *m, uint32_t a,
                                                           uint32_t b)
{
    uint64_t key = ((uint64_t)a << 32) | b;
    uint32_t i = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & m->mask;
    for (;;) {
        const struct kvg_tok_mslot *s = &m->slots[i];
        if (s->key == key) return s;
        if (s->key == UINT64_MAX) return NULL;
        i = (i + 1) & m->mask;
    }
}

/* ---- Regexes (tok_regex.c) ---- */

/* A Split pattern compiled for PCRE2 (UTF, UCP, JIT) after translating
 * Oniguruma's (Ruby syntax) semantics, which HF tokenizers uses. code[1], when
 * set, is the variant whose \p{..} classes include Unicode 15.0 additions. */
struct kvg_tok_regex {
    pcre2_code *code[2];
    int jit[2];
};
/* Compiles an Oniguruma-syntax pattern; a literal (escaped) one when
 * literal != 0. KVG_EUNSUPP (with the construct in err) for syntax whose
 * meaning differs between the engines. *out owned by the caller:
 * kvg__tok_regex_free(). */
int kvg__tok_regex_compile(const char *pat, size_t n, int literal, struct kvg_tok_regex **out,
                           char *err, size_t errlen);
void kvg__tok_regex_free(struct kvg_tok_regex *re);
/* 1 when s[0..n) needs the widened variant (pass it as `wide` below). */
int kvg__tok_regex_wide(const struct kvg_tok_regex *re, const char *s, size_t n);
/* Finds the next match at or after start, with the empty-match rules of
 * the onig crate's find_iter (the caller keeps *last_end / *last_match_end,
 * initialised to 0 / SIZE_MAX). Returns 1 with [*ms, *me), 0 at the end, or
 * a negative code (regex resource limits). */
int kvg__tok_regex_next(const struct kvg_tok_regex *re, int wide, pcre2_match_data *md,
                        const char *s, size_t n, size_t *last_end, size_t *last_match_end,
                        size_t *ms, size_t *me);

/* ---- Components ---- */

enum {
    KVG_TOK_N_NFC,
    KVG_TOK_N_NFD,
    KVG_TOK_N_LOWER,
    KVG_TOK_N_REPLACE,
    KVG_TOK_N_PREPEND,
    KVG_TOK_N_STRIP
};
struct kvg_tok_norm_step {
    int kind;
    char *a, *b; /* Replace: literal pattern (NULL with re), content; Prepend: a */
    size_t alen, blen;
    struct kvg_tok_regex *re;
    int left, right; /* Strip */
};

enum { KVG_TOK_P_SPLIT, KVG_TOK_P_BYTELEVEL, KVG_TOK_P_METASPACE };
enum {
    KVG_TOK_B_REMOVED,
    KVG_TOK_B_ISOLATED,
    KVG_TOK_B_MERGED_PREV,
    KVG_TOK_B_MERGED_NEXT,
    KVG_TOK_B_CONTIGUOUS
};
enum { KVG_TOK_PS_ALWAYS, KVG_TOK_PS_FIRST, KVG_TOK_PS_NEVER };
struct kvg_tok_pre_step {
    int kind;
    struct kvg_tok_regex *re; /* Split; ByteLevel with use_regex */
    int behavior, invert;
    int add_prefix_space; /* ByteLevel */
    char repl[5];         /* Metaspace replacement char, UTF-8 */
    size_t repl_len;
    int prepend_scheme, split;
};

enum {
    KVG_TOK_D_BYTELEVEL,
    KVG_TOK_D_METASPACE,
    KVG_TOK_D_REPLACE,
    KVG_TOK_D_BYTEFALLBACK,
    KVG_TOK_D_FUSE,
    KVG_TOK_D_STRIP
};
struct kvg_tok_dec_step {
    int kind;
    char *a, *b; /* Replace: pattern, content; Metaspace / Strip: a = the char */
    size_t alen, blen;
    int prepend_scheme, start, stop;
};

struct kvg_tok_added {
    uint32_t id;
    uint32_t off, len; /* content in the arena */
    uint8_t special, lstrip, rstrip, single_word, normalized;
};

/* Byte trie of added-token contents, for leftmost-longest matching. */
struct kvg_tok_trie {
    int32_t root[256];   /* child of the root per byte, -1 none */
    int32_t *term;       /* per node: index into tok->added, -1 none */
    uint64_t *edges;     /* open addressing: (node << 8 | byte) + 1 -> slot */
    int32_t *edge_child; /* child per edge slot */
    uint32_t nodes, edge_mask;
    int first; /* the one byte every string starts with, -1 several: memchr skips to it */
};

/* How the BPE model starts a word from one input byte (byte-level mode). */
struct kvg_tok_bsym {
    uint8_t n;        /* 0: no symbol (unk / skipped), else ids used */
    uint8_t fallback; /* the ids are <0xXX> byte-fallback tokens */
    uint32_t ids[2];
};

#define KVG_TOK_CACHE_ENTRIES (1u << 16) /* 4 MB per tokenizer */
#define KVG_TOK_CACHE_BYTES 24
#define KVG_TOK_CACHE_IDS 8
struct kvg_tok_cache_entry {
    _Alignas(64) _Atomic uint64_t w[8];
};

enum { KVG_TOK_HF = 0, KVG_TOK_BUILTIN = 1 };

struct kvg_tok {
    int kind;
    struct kvg_tok_arena arena;

    /* Ids: model vocabulary strings and added tokens, both per id. */
    uint32_t n_ids; /* max id + 1 */
    size_t ids_cap;
    uint32_t *vocab_off; /* per id: model vocab string offset, KVG_TOK_NONE */
    uint32_t *vocab_len;
    int32_t *added_ix;         /* per id: index into added, -1 */
    uint8_t *special;          /* per id: 1 when a special added token */
    struct kvg_tok_smap vocab; /* model vocab string -> id */
    struct kvg_tok_smap added_map;
    struct kvg_tok_added *added;
    size_t n_added;
    struct kvg_tok_trie trie_raw, trie_norm;
    uint32_t *norm_off, *norm_len; /* per added token: normalized content */

    struct kvg_tok_norm_step *norm;
    size_t n_norm;
    struct kvg_tok_pre_step *pre;
    size_t n_pre;
    struct kvg_tok_dec_step *dec;
    size_t n_dec;
    int has_decoder;
    int builtin_decoder; /* builtin:bytes: token strings are raw bytes */

    /* Post-processor (single sequence), flattened: ids, KVG_TOK_NONE = text. */
    uint32_t *post;
    size_t n_post;
    int has_post;

    /* BPE model. */
    int byte_level;
    int ignore_merges, byte_fallback, fuse_unk;
    int64_t unk_id; /* -1: none, or configured but not in the vocabulary */
    int has_unk;
    uint32_t unk_off, unk_len;
    struct kvg_tok_smap raw; /* byte-level: raw bytes of a vocab token -> id */
    struct kvg_tok_bsym bsym[256];
    uint32_t fallback[256]; /* <0xXX> ids, KVG_TOK_NONE */
    struct kvg_tok_mmap merges;
    size_t n_merges;
    struct kvg_tok_cache_entry *cache;
    uint32_t cache_mask;

    char *bos, *eos, *chat_template;
};

/* Per-call working memory; owned by one call of encode. */
#define KVG_TOK_MAX_PRE 16
struct kvg_tok_span {
    size_t a, b;
    int32_t id; /* added token id, or -1 for text */
    int m;      /* split: the range is a match */
};
struct kvg_tok_spans {
    struct kvg_tok_span *v;
    size_t n, cap;
};
struct kvg_tok_ids {
    uint32_t *v;
    size_t n, cap;
};
struct kvg_tok_scratch {
    struct kvg_buf norm[2];
    struct kvg_buf pre[KVG_TOK_MAX_PRE];
    struct kvg_tok_spans spans[KVG_TOK_MAX_PRE + 2];
    pcre2_match_data *md;
    uint32_t *sym, *rank, *mid; /* BPE work arrays */
    int32_t *prev, *next;
    uint64_t *heap;
    size_t bpe_cap;
    size_t limit; /* cap for every scratch buffer */
    struct kvg_tok_ids *out;
    /* When set, pre-tokenized words go here instead of to the model (tests
     * and debugging see the pieces). */
    int (*emit)(void *ctx, const char *w, size_t n);
    void *emit_ctx;
};

/* Prepares s for one call on input_len bytes (buffers grow on demand, capped
 * relative to the input); kvg__tok_scratch_free releases everything but
 * s->out, which the caller owns. */
int kvg__tok_scratch_init(struct kvg_tok_scratch *s, size_t input_len);
void kvg__tok_scratch_free(struct kvg_tok_scratch *s);
int kvg__tok_spans_push(struct kvg_tok_spans *sp, size_t a, size_t b, int32_t id, int m);
int kvg__tok_ids_grow(struct kvg_tok_ids *a, size_t more);
static inline int kvg_tok_ids_push(struct kvg_tok_ids *a, uint32_t id)
{
    if (a->n == a->cap) {
        int rc = kvg__tok_ids_grow(a, 1);
        if (rc) return rc;
    }
    a->v[a->n++] = id;
    return 0;
}

/* ---- Stages ----
 * Each *_load reads a cJSON section into tok (which then owns what it
 * allocated; *_free or kvg_tok_free releases it) and fails with a code and a
 * message naming the component. */

/* tok_json.c: the load-time scanner for the big sections. */
struct kvg_tok_js {
    const char *p, *end;
};
void kvg__tok_js_ws(struct kvg_tok_js *js);
/* Reads a JSON string at js->p into out (reset first); KVG_EPARSE. */
int kvg__tok_js_string(struct kvg_tok_js *js, struct kvg_buf *out);
/* Same, appending to out. */
int kvg__tok_js_string_append(struct kvg_tok_js *js, struct kvg_buf *out);
/* Skips one JSON value of any kind. */
int kvg__tok_js_skip(struct kvg_tok_js *js);
/* Parses model.vocab (an object of string -> id) at js into tok; js moves
 * past it. */
int kvg__tok_js_vocab(struct kvg_tok *tok, struct kvg_tok_js *js, char *err, size_t errlen);
/* Parses model.merges (strings "a b" or pairs [a, b]) at js into
 * tok->merges (the vocabulary must be in); js moves past it. */
int kvg__tok_js_merges(struct kvg_tok *tok, struct kvg_tok_js *js, char *err, size_t errlen);

/* tok_model.c: the rest of the BPE model once the vocabulary is in, and
 * GPT-2's byte <-> char mapping (byte-level vocabularies). */
uint32_t kvg__tok_bl_char(uint8_t b);
int kvg__tok_bl_byte(uint32_t cp); /* -1 when cp is no byte's char */
int kvg__tok_model_options(struct kvg_tok *tok, const cJSON *model, char *err, size_t errlen);
int kvg__tok_model_finish(struct kvg_tok *tok, char *err, size_t errlen);

/* tok_norm.c */
int kvg__tok_norm_load(struct kvg_tok *tok, const cJSON *j, char *err, size_t errlen);
void kvg__tok_norm_free(struct kvg_tok *tok);
/* Normalizes p[0..n); *out points at p itself or into scratch. */
int kvg__tok_normalize(const struct kvg_tok *tok, struct kvg_tok_scratch *s, const char *p,
                       size_t n, const char **out, size_t *outn);

/* tok_pretok.c */
int kvg__tok_pre_load(struct kvg_tok *tok, const cJSON *j, char *err, size_t errlen);
void kvg__tok_pre_free(struct kvg_tok *tok);
/* Pre-tokenizes p[0..n) and runs the model on every piece, appending ids to
 * s->out. at_origin: the text starts at offset 0 of the original input. */
/* ---- Encoding (tok_encode.c) ---- */

/* Appends the ids of r, one span of the raw added-token split of text, to
 * s->out: the added token's id, or the piece normalized, split on normalized
 * added tokens, pre-tokenized and run through the model. Pieces are encoded
 * independently of each other (which makes the prefix cache exact). */
int kvg__tok_encode_piece(const struct kvg_tok *tok, struct kvg_tok_scratch *s, const char *text,
                          const struct kvg_tok_span *r);
/* tok_prefix.c: keeps only the key bits in mask (tests: colliding keys must
 * cost misses, never a wrong id or hash). Before the cache's first use. */
struct kvg_tok_pcache;
void kvg__tok_pcache_test_key_mask(struct kvg_tok_pcache *c, uint64_t mask);

/* Produces the ids of the text part (no post-processor) into s->out. */
typedef int (*kvg_tok_text_fn)(const struct kvg_tok *tok, struct kvg_tok_scratch *s,
                               const char *text, size_t len, void *ud);
/* kvg_tok_encode with the text part computed by fn: UTF-8 check, scratch,
 * the post-processor around it. */
int kvg__tok_encode_run(const struct kvg_tok *tok, const char *text, size_t len, int add_special,
                        uint32_t **ids, size_t *n, kvg_tok_text_fn fn, void *ud);

int kvg__tok_pre_run(const struct kvg_tok *tok, struct kvg_tok_scratch *s, const char *p, size_t n,
                     int at_origin);
/* Splits with the onig find_iter rules, then applies a Split behaviour:
 * leaves the kept ranges in sp. */
int kvg__tok_split_regex(const struct kvg_tok_regex *re, pcre2_match_data *md, const char *p,
                         size_t n, int behavior, int invert, struct kvg_tok_spans *sp);

/* tok_bpe.c */
int kvg__tok_bpe_word(const struct kvg_tok *tok, struct kvg_tok_scratch *s, const char *w,
                      size_t n);
/* Merges syms[0..m) in place (lowest rank first, leftmost on ties); returns
 * the new count. Exposed so tests can check both strategies agree. */
size_t kvg__tok_bpe_merge(const struct kvg_tok *tok, struct kvg_tok_scratch *s, uint32_t *syms,
                          size_t m, int force_heap);
/* Replaces the word cache with one of `entries` (a power of two), or none
 * with 0. Load time only (the benchmark measures with and without). */
int kvg__tok_cache_alloc(struct kvg_tok *tok, uint32_t entries);

/* tok_added.c */
int kvg__tok_added_load(struct kvg_tok *tok, const cJSON *arr, char *err, size_t errlen);
/* Builds both tries (normalizes the contents of normalized tokens). */
int kvg__tok_added_build(struct kvg_tok *tok, char *err, size_t errlen);
void kvg__tok_added_free(struct kvg_tok *tok);
/* Splits p[0..n) around the added tokens of one trie (HF find_matches). */
int kvg__tok_added_split(const struct kvg_tok *tok, const struct kvg_tok_trie *t, const char *p,
                         size_t n, struct kvg_tok_spans *sp);

/* tok_post.c */
int kvg__tok_post_load(struct kvg_tok *tok, const cJSON *j, char *err, size_t errlen);

/* tok_decode.c */
int kvg__tok_dec_load(struct kvg_tok *tok, const cJSON *j, char *err, size_t errlen);
void kvg__tok_dec_free(struct kvg_tok *tok);

/* tok_builtin.c */
int kvg__tok_builtin_init(struct kvg_tok *tok, char *err, size_t errlen);

/* tok_path.c: the files path and config_path (nullable) name (see
 * kvg_tok_load): tok_out gets the tokenizer.json to read, cfg_out the
 * tokenizer_config.json ("" for none). 0, or a negative code with err set
 * (a directory without tokenizer.json, a HuggingFace id, too long). */
int kvg__tok_resolve(const char *path, const char *config_path, char *tok_out, size_t tok_cap,
                     char *cfg_out, size_t cfg_cap, char *err, size_t errlen);

/* tok_load.c: loads tokenizer.json text from memory (the loader fuzz
 * target); as kvg_tok_load otherwise. */
int kvg__tok_load_mem(const char *json, size_t len, struct kvg_tok **out, char *err, size_t errlen);
/* tok_load.c helpers used by the component loaders. */
/* Sizes the per-id tables for ids < n (keeps existing entries). */
int kvg__tok_ids_reserve(struct kvg_tok *tok, uint32_t n);
/* A JSON string member (NULL if absent or not a string); valid while obj lives. */
const char *kvg__tok_jstr(const cJSON *obj, const char *name);
int kvg__tok_jbool(const cJSON *obj, const char *name, int dflt);

#endif
