/* Added tokens (special and not): loading with HF's id rules, the byte tries
 * that find them, and the split of a text around them.
 *
 * HF tokenizers (added_vocabulary.rs) finds added tokens with a
 * leftmost-longest Aho-Corasick automaton: tokens with normalized=false on
 * the raw text, tokens with normalized=true (their content normalized too) on
 * the normalized text. A match may then be discarded (single_word next to a
 * word character: the scan still resumes after it) or widened over
 * whitespace (lstrip, rstrip). Word and whitespace are Rust regex's Unicode
 * \w and \s.
 *
 * A trie walked from each candidate start gives the same leftmost-longest
 * matches: the root is a 256-entry array (one load per input byte when
 * nothing matches), deeper edges an open-addressing table. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "tokenizer/tok_impl.h"

int kvg__tok_added_load(struct kvg_tok *tok, const cJSON *arr, char *err, size_t errlen)
{
    if (cJSON_IsNull(arr)) return 0;
    if (!cJSON_IsArray(arr))
        return kvg_err_set(err, errlen, KVG_EPARSE, "added_tokens: not an array");
    size_t n = (size_t)cJSON_GetArraySize(arr);
    if (n == 0) return 0;
    tok->added = calloc(n, sizeof *tok->added);
    int rc = kvg__tok_smap_init(&tok->added_map, n);
    if (!tok->added || rc) return -ENOMEM;
    const cJSON *e;
    /* New ids continue after the model vocabulary, as HF's add_tokens does;
     * the ids written in the file are HF's own output of the same rule. */
    uint32_t vsize = tok->vocab.count, max_added = 0;
    int any_added = 0;
    cJSON_ArrayForEach(e, arr)
    {
        const char *content = kvg__tok_jstr(e, "content");
        if (!content) return kvg_err_set(err, errlen, KVG_EPARSE, "added_tokens: no content");
        size_t len = strlen(content);
        struct kvg_tok_added a = {
            .special = (uint8_t)kvg__tok_jbool(e, "special", 0),
            .lstrip = (uint8_t)kvg__tok_jbool(e, "lstrip", 0),
            .rstrip = (uint8_t)kvg__tok_jbool(e, "rstrip", 0),
            .single_word = (uint8_t)kvg__tok_jbool(e, "single_word", 0),
        };
        a.normalized = (uint8_t)kvg__tok_jbool(e, "normalized", !a.special);
        if (len == 0) continue;
        /* An identical token (content and flags) is ignored. */
        int64_t have = kvg__tok_smap_get(&tok->added_map, tok->arena.p, content, len);
        if (have >= 0) {
            const struct kvg_tok_added *o = &tok->added[tok->added_ix[have]];
            if (o->special == a.special && o->lstrip == a.lstrip && o->rstrip == a.rstrip &&
                o->single_word == a.single_word && o->normalized == a.normalized)
                continue;
        }
        int64_t id = have >= 0 ? have : kvg__tok_smap_get(&tok->vocab, tok->arena.p, content, len);
        if (id < 0)
            id = !any_added ? vsize : (max_added >= vsize || vsize == 0) ? max_added + 1 : vsize;
        if (id > KVG_TOK_MAX_ID)
            return kvg_err_set(err, errlen, KVG_EPARSE, "added_tokens: id out of range");
        int64_t off = kvg__tok_arena_str(&tok->arena, content, len);
        if (off < 0) return (int)off;
        a.id = (uint32_t)id;
        a.off = (uint32_t)off;
        a.len = (uint32_t)len;
        if ((rc = kvg__tok_ids_reserve(tok, a.id + 1))) return rc;
        if ((rc = kvg__tok_smap_put(&tok->added_map, tok->arena.p, a.off, a.len, a.id))) return rc;
        if (!any_added || a.id > max_added) max_added = a.id;
        any_added = 1;
        tok->added_ix[a.id] = (int32_t)tok->n_added;
        if (a.special) tok->special[a.id] = 1;
        tok->added[tok->n_added++] = a;
    }
    return 0;
}

void kvg__tok_added_free(struct kvg_tok *tok)
{
    struct kvg_tok_trie *t[2] = {&tok->trie_raw, &tok->trie_norm};
    for (int i = 0; i < 2; i++) {
        free(t[i]->term);
        free(t[i]->edges);
        free(t[i]->edge_child);
        memset(t[i], 0, sizeof *t[i]);
    }
    kvg__tok_smap_free(&tok->added_map);
    free(tok->added);
    free(tok->norm_off);
    free(tok->norm_len);
    tok->added = NULL;
    tok->n_added = 0;
}

static inline uint32_t edge_slot(const struct kvg_tok_trie *t, uint64_t key)
{
    return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 40) & t->edge_mask;
}

static inline int32_t edge_get(const struct kvg_tok_trie *t, int32_t node, uint8_t b)
{
    uint64_t key = ((uint64_t)node << 8 | b) + 1;
    for (uint32_t i = edge_slot(t, key);; i = (i + 1) & t->edge_mask) {
        if (t->edges[i] == key) return t->edge_child[i];
        if (!t->edges[i]) return -1;
    }
}

/* Builds a trie of the given strings (entry i is added token idx[i]). */
static int trie_build(struct kvg_tok_trie *t, const struct kvg_tok *tok, const uint32_t *off,
                      const uint32_t *len, const size_t *idx, size_t n)
{
    size_t total = 1;
    for (size_t i = 0; i < n; i++) total += len[i];
    size_t cap = 16;
    while (cap < 2 * total) cap *= 2;
    for (int b = 0; b < 256; b++) t->root[b] = -1;
    t->term = malloc(total * sizeof *t->term);
    t->edges = calloc(cap, sizeof *t->edges);
    t->edge_child = malloc(cap * sizeof *t->edge_child);
    if (!t->term || !t->edges || !t->edge_child) return -ENOMEM;
    t->edge_mask = (uint32_t)cap - 1;
    t->nodes = 1; /* node 0 is the root */
    t->term[0] = -1;
    t->first = -1;
    int firsts = 0;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *s = (const uint8_t *)tok->arena.p + off[i];
        if (len[i] == 0) continue;
        if (t->root[s[0]] < 0) {
            firsts++;
            t->first = s[0];
        }
        int32_t node = t->root[s[0]];
        if (node < 0) {
            node = (int32_t)t->nodes++;
            t->term[node] = -1;
            t->root[s[0]] = node;
        }
        for (size_t k = 1; k < len[i]; k++) {
            int32_t c = edge_get(t, node, s[k]);
            if (c < 0) {
                c = (int32_t)t->nodes++;
                t->term[c] = -1;
                uint64_t key = ((uint64_t)node << 8 | s[k]) + 1;
                uint32_t j = edge_slot(t, key);
                while (t->edges[j]) j = (j + 1) & t->edge_mask;
                t->edges[j] = key;
                t->edge_child[j] = c;
            }
            node = c;
        }
        /* Same content twice: HF's automaton reports the first pattern. */
        if (t->term[node] < 0) t->term[node] = (int32_t)idx[i];
    }
    if (firsts != 1) t->first = -1;
    return 0;
}

int kvg__tok_added_build(struct kvg_tok *tok, char *err, size_t errlen)
{
    size_t n = tok->n_added;
    if (n == 0) return 0;
    tok->norm_off = malloc(n * sizeof *tok->norm_off);
    tok->norm_len = malloc(n * sizeof *tok->norm_len);
    size_t *idx = malloc(n * sizeof *idx);
    uint32_t *off = malloc(n * sizeof *off), *len = malloc(n * sizeof *len);
    struct kvg_tok_scratch s;
    int rc = kvg__tok_scratch_init(&s, 4096);
    if (!tok->norm_off || !tok->norm_len || !idx || !off || !len) rc = rc ? rc : -ENOMEM;
    for (size_t pass = 0; pass < 2 && !rc; pass++) {
        size_t m = 0;
        for (size_t i = 0; i < n && !rc; i++) {
            const struct kvg_tok_added *a = &tok->added[i];
            if (a->normalized != pass) continue;
            uint32_t o = a->off, l = a->len;
            if (pass == 1) {
                /* Normalized tokens match their normalized content. */
                const char *np;
                size_t nl;
                char *copy = malloc(a->len + 1);
                if (!copy) {
                    rc = -ENOMEM;
                    break;
                }
                memcpy(copy, tok->arena.p + a->off, a->len);
                rc = kvg__tok_normalize(tok, &s, copy, a->len, &np, &nl);
                int64_t no = rc ? -1 : kvg__tok_arena_add(&tok->arena, np, nl);
                free(copy);
                if (rc) break;
                if (no < 0) {
                    rc = (int)no;
                    break;
                }
                o = (uint32_t)no;
                l = (uint32_t)nl;
            }
            tok->norm_off[i] = o;
            tok->norm_len[i] = l;
            idx[m] = i;
            off[m] = o;
            len[m] = l;
            m++;
        }
        if (!rc) rc = trie_build(pass ? &tok->trie_norm : &tok->trie_raw, tok, off, len, idx, m);
    }
    kvg__tok_scratch_free(&s);
    free(idx);
    free(off);
    free(len);
    if (rc && err && errlen && !err[0]) kvg_err_set(err, errlen, rc, "added_tokens: %d", rc);
    return rc;
}

static int is_word_at(const char *p, size_t i)
{
    uint32_t cp;
    kvg_utf8_decode_fast(p + i, SIZE_MAX, &cp);
    return kvg__tok_is_word(cp);
}

/* Start of the last char of p[0..end). */
static size_t prev_char(const char *p, size_t end)
{
    size_t k = end - 1;
    while (k > 0 && ((uint8_t)p[k] & 0xC0) == 0x80) k--;
    return k;
}

int kvg__tok_added_split(const struct kvg_tok *tok, const struct kvg_tok_trie *t, const char *p,
                         size_t n, struct kvg_tok_spans *sp)
{
    sp->n = 0;
    if (n == 0) return 0;
    size_t start_offset = 0, i = 0;
    int rc;
    while (t->nodes > 1 && i < n) {
        if (t->first >= 0) { /* one start byte (Qwen's '<'): the text between is skipped at once */
            const char *q = memchr(p + i, t->first, n - i);
            if (!q) break;
            i = (size_t)(q - p);
        }
        int32_t node = t->root[(uint8_t)p[i]];
        if (node < 0) {
            i++;
            continue;
        }
        int32_t best = t->term[node];
        size_t best_len = 1, j = i + 1;
        while (j < n) {
            node = edge_get(t, node, (uint8_t)p[j]);
            if (node < 0) break;
            j++;
            if (t->term[node] >= 0) {
                best = t->term[node];
                best_len = j - i;
            }
        }
        if (best < 0) {
            i++;
            continue;
        }
        size_t start = i, stop = i + best_len;
        i = stop; /* the automaton resumes after the match, whatever happens to it */
        uint32_t id = tok->added[best].id;
        const struct kvg_tok_added *a = &tok->added[tok->added_ix[id]];
        if (a->single_word) {
            int start_space = start == 0 || !is_word_at(p, prev_char(p, start));
            int stop_space = stop == n || !is_word_at(p, stop);
            if (!start_space || !stop_space) continue;
        }
        if (a->lstrip) {
            size_t k = start;
            while (k > 0) {
                size_t c = prev_char(p, k);
                uint32_t cp;
                kvg_utf8_decode_fast(p + c, SIZE_MAX, &cp);
                if (!kvg__tok_is_space(cp)) break;
                k = c;
            }
            start = k > start_offset ? k : start_offset;
        }
        if (a->rstrip)
            while (stop < n) {
                uint32_t cp;
                size_t l = kvg_utf8_decode_fast(p + stop, SIZE_MAX, &cp);
                if (!kvg__tok_is_space(cp)) break;
                stop += l;
            }
        if (start_offset < start && (rc = kvg__tok_spans_push(sp, start_offset, start, -1, 0)))
            return rc;
        if ((rc = kvg__tok_spans_push(sp, start, stop, (int32_t)id, 0))) return rc;
        start_offset = stop;
    }
    if (start_offset < n && (rc = kvg__tok_spans_push(sp, start_offset, n, -1, 0))) return rc;
    return 0;
}
