/* Pre-tokenizers: cut normalized text into the words the BPE model sees.
 *
 * Supported: Split (regex or string pattern, every behaviour, invert),
 * ByteLevel (add_prefix_space, use_regex; trim_offsets only moves offsets),
 * Metaspace (replacement, prepend_scheme, split), Digits and WhitespaceSplit
 * (expressed as Splits), Sequence. Others are a load-time KVG_EUNSUPP.
 *
 * The steps run depth-first: step k cuts its piece and hands each sub-piece
 * to step k+1, the last step hands words to the model. Nothing is
 * materialised per word; only steps that rewrite text (Metaspace, a
 * ByteLevel prefix space) copy, into a buffer of their own depth. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "tokenizer/tok_impl.h"

/* GPT-2's pre-tokenizer regex, used by ByteLevel with use_regex. */
static const char GPT2_RE[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static int add_step(struct kvg_tok *tok, struct kvg_tok_pre_step st, char *err, size_t errlen)
{
    if (tok->n_pre >= KVG_TOK_MAX_PRE) {
        kvg__tok_regex_free(st.re);
        return kvg_err_set(err, errlen, KVG_EUNSUPP,
                           "unsupported component: more than %d pre-tokenizers", KVG_TOK_MAX_PRE);
    }
    struct kvg_tok_pre_step *v = realloc(tok->pre, (tok->n_pre + 1) * sizeof *v);
    if (!v) {
        kvg__tok_regex_free(st.re);
        return -ENOMEM;
    }
    tok->pre = v;
    tok->pre[tok->n_pre++] = st;
    return 0;
}

static int split_step(struct kvg_tok *tok, const char *pat, int literal, int behavior, int invert,
                      char *err, size_t errlen)
{
    struct kvg_tok_pre_step st = {.kind = KVG_TOK_P_SPLIT, .behavior = behavior, .invert = invert};
    int rc = kvg__tok_regex_compile(pat, strlen(pat), literal, &st.re, err, errlen);
    return rc ? rc : add_step(tok, st, err, errlen);
}

static int behavior_of(const char *b)
{
    static const char *const names[] = {"Removed", "Isolated", "MergedWithPrevious",
                                        "MergedWithNext", "Contiguous"};
    for (int i = 0; i < 5; i++)
        if (b && !strcmp(b, names[i])) return i;
    return -1;
}

static int load_one(struct kvg_tok *tok, const cJSON *j, int depth, char *err, size_t errlen)
{
    if (cJSON_IsNull(j)) return 0;
    const char *type = kvg__tok_jstr(j, "type");
    if (!type) return kvg_err_set(err, errlen, KVG_EPARSE, "pre_tokenizer: no \"type\"");
    if (!strcmp(type, "Sequence")) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "pretokenizers"), *e;
        if (!cJSON_IsArray(arr) || depth > 8)
            return kvg_err_set(err, errlen, KVG_EPARSE, "pre_tokenizer Sequence: bad list");
        cJSON_ArrayForEach(e, arr)
        {
            int rc = load_one(tok, e, depth + 1, err, errlen);
            if (rc) return rc;
        }
        return 0;
    }
    if (!strcmp(type, "Split")) {
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(j, "pattern");
        const char *lit = kvg__tok_jstr(pat, "String"), *rx = kvg__tok_jstr(pat, "Regex");
        int b = behavior_of(kvg__tok_jstr(j, "behavior"));
        if ((!lit && !rx) || b < 0)
            return kvg_err_set(err, errlen, KVG_EPARSE, "pre_tokenizer Split: bad pattern");
        if (lit && !lit[0])
            return kvg_err_set(err, errlen, KVG_EUNSUPP,
                               "unsupported component: Split with an empty pattern");
        return split_step(tok, lit ? lit : rx, lit != NULL, b, kvg__tok_jbool(j, "invert", 0), err,
                          errlen);
    }
    if (!strcmp(type, "Digits"))
        return split_step(tok, kvg__tok_jbool(j, "individual_digits", 0) ? "\\p{N}" : "\\p{N}+", 0,
                          KVG_TOK_B_ISOLATED, 0, err, errlen);
    if (!strcmp(type, "WhitespaceSplit"))
        return split_step(tok, "\\s+", 0, KVG_TOK_B_REMOVED, 0, err, errlen);
    if (!strcmp(type, "ByteLevel")) {
        struct kvg_tok_pre_step st = {.kind = KVG_TOK_P_BYTELEVEL};
        st.add_prefix_space = kvg__tok_jbool(j, "add_prefix_space", 1);
        if (kvg__tok_jbool(j, "use_regex", 1)) {
            int rc = kvg__tok_regex_compile(GPT2_RE, sizeof GPT2_RE - 1, 0, &st.re, err, errlen);
            if (rc) return rc;
        }
        return add_step(tok, st, err, errlen);
    }
    if (!strcmp(type, "Metaspace")) {
        struct kvg_tok_pre_step st = {.kind = KVG_TOK_P_METASPACE};
        const char *r = kvg__tok_jstr(j, "replacement");
        if (!r || !r[0] || kvg_utf8_len_fast((uint8_t)r[0], 1) != strlen(r))
            return kvg_err_set(err, errlen, KVG_EPARSE, "Metaspace: replacement must be 1 char");
        memcpy(st.repl, r, strlen(r));
        st.repl_len = strlen(r);
        const char *ps = kvg__tok_jstr(j, "prepend_scheme");
        if (ps) {
            if (!strcmp(ps, "always"))
                st.prepend_scheme = KVG_TOK_PS_ALWAYS;
            else if (!strcmp(ps, "first"))
                st.prepend_scheme = KVG_TOK_PS_FIRST;
            else if (!strcmp(ps, "never"))
                st.prepend_scheme = KVG_TOK_PS_NEVER;
            else
                return kvg_err_set(err, errlen, KVG_EUNSUPP,
                                   "unsupported component: Metaspace prepend_scheme %s", ps);
        } else /* legacy files: add_prefix_space */
            st.prepend_scheme =
                kvg__tok_jbool(j, "add_prefix_space", 1) ? KVG_TOK_PS_ALWAYS : KVG_TOK_PS_NEVER;
        st.split = kvg__tok_jbool(j, "split", 1);
        return add_step(tok, st, err, errlen);
    }
    return kvg_err_set(err, errlen, KVG_EUNSUPP, "unsupported component: pre_tokenizer %s", type);
}

int kvg__tok_pre_load(struct kvg_tok *tok, const cJSON *j, char *err, size_t errlen)
{
    int rc = load_one(tok, j, 0, err, errlen);
    if (rc) return rc;
    for (size_t i = 0; i < tok->n_pre; i++)
        if (tok->pre[i].kind == KVG_TOK_P_BYTELEVEL && i + 1 != tok->n_pre)
            return kvg_err_set(err, errlen, KVG_EUNSUPP,
                               "unsupported component: pre_tokenizer after ByteLevel");
    tok->byte_level = tok->n_pre > 0 && tok->pre[tok->n_pre - 1].kind == KVG_TOK_P_BYTELEVEL;
    return 0;
}

void kvg__tok_pre_free(struct kvg_tok *tok)
{
    for (size_t i = 0; i < tok->n_pre; i++) kvg__tok_regex_free(tok->pre[i].re);
    free(tok->pre);
    tok->pre = NULL;
    tok->n_pre = 0;
}

/* Applies a Split behaviour (HF SplitDelimiterBehavior) to a list of
 * (range, is_match) covering the text; keeps the resulting pieces. */
static void apply_behavior(struct kvg_tok_spans *sp, int behavior)
{
    struct kvg_tok_span *v = sp->v;
    size_t n = sp->n, w = 0;
    int prev_match = 0;
    switch (behavior) {
    case KVG_TOK_B_ISOLATED:
        return;
    case KVG_TOK_B_REMOVED:
        for (size_t i = 0; i < n; i++)
            if (!v[i].m) v[w++] = v[i];
        break;
    case KVG_TOK_B_MERGED_PREV:
        for (size_t i = 0; i < n; i++) {
            if (v[i].m && !prev_match && w > 0)
                v[w - 1].b = v[i].b;
            else
                v[w++] = v[i];
            prev_match = v[i].m;
        }
        break;
    case KVG_TOK_B_CONTIGUOUS:
        for (size_t i = 0; i < n; i++) {
            if (v[i].m == prev_match && w > 0)
                v[w - 1].b = v[i].b;
            else
                v[w++] = v[i];
            prev_match = v[i].m;
        }
        break;
    case KVG_TOK_B_MERGED_NEXT: {
        /* HF folds from the end; the kept pieces are written back to front. */
        size_t r = n;
        for (size_t i = n; i-- > 0;) {
            struct kvg_tok_span cur = v[i];
            if (cur.m && !prev_match && r < n)
                v[r].a = cur.a;
            else
                v[--r] = cur;
            prev_match = cur.m;
        }
        memmove(v, v + r, (n - r) * sizeof *v);
        w = n - r;
        break;
    }
    }
    sp->n = w;
}

int kvg__tok_split_regex(const struct kvg_tok_regex *re, pcre2_match_data *md, const char *p,
                         size_t n, int behavior, int invert, struct kvg_tok_spans *sp)
{
    sp->n = 0;
    size_t prev = 0, last_end = 0, last_match_end = SIZE_MAX, ms, me;
    int rc, wide = kvg__tok_regex_wide(re, p, n);
    for (;;) {
        rc = kvg__tok_regex_next(re, wide, md, p, n, &last_end, &last_match_end, &ms, &me);
        if (rc < 0) return rc;
        if (rc == 0) break;
        if (prev != ms && (rc = kvg__tok_spans_push(sp, prev, ms, -1, invert))) return rc;
        if ((rc = kvg__tok_spans_push(sp, ms, me, -1, !invert))) return rc;
        prev = me;
    }
    if (prev != n && (rc = kvg__tok_spans_push(sp, prev, n, -1, invert))) return rc;
    apply_behavior(sp, behavior);
    return 0;
}

/* HF's char-pattern split: every occurrence of the char is its own match. */
static int split_char(const char *p, size_t n, const char *c, size_t cl, int behavior,
                      struct kvg_tok_spans *sp)
{
    sp->n = 0;
    size_t last = 0, i = 0;
    int rc;
    while (i < n) {
        size_t l = kvg_utf8_len_fast((uint8_t)p[i], 1);
        if (l == cl && !memcmp(p + i, c, cl)) {
            if (last < i && (rc = kvg__tok_spans_push(sp, last, i, -1, 0))) return rc;
            if ((rc = kvg__tok_spans_push(sp, i, i + l, -1, 1))) return rc;
            last = i + l;
        }
        i += l;
    }
    if (n > last && (rc = kvg__tok_spans_push(sp, last, n, -1, 0))) return rc;
    apply_behavior(sp, behavior);
    return 0;
}

static int run(const struct kvg_tok *tok, struct kvg_tok_scratch *s, size_t k, const char *p,
               size_t n, int at_origin);

static int run_spans(const struct kvg_tok *tok, struct kvg_tok_scratch *s, size_t k, const char *p,
                     int at_origin)
{
    struct kvg_tok_spans *sp = &s->spans[k];
    for (size_t i = 0; i < sp->n; i++) {
        int rc = run(tok, s, k + 1, p + sp->v[i].a, sp->v[i].b - sp->v[i].a,
                     at_origin && sp->v[i].a == 0);
        if (rc) return rc;
    }
    return 0;
}

static int run(const struct kvg_tok *tok, struct kvg_tok_scratch *s, size_t k, const char *p,
               size_t n, int at_origin)
{
    if (n == 0) return 0; /* HF drops empty pieces */
    if (k == tok->n_pre)
        return s->emit ? s->emit(s->emit_ctx, p, n) : kvg__tok_bpe_word(tok, s, p, n);
    const struct kvg_tok_pre_step *st = &tok->pre[k];
    struct kvg_buf *b = &s->pre[k];
    int rc;
    switch (st->kind) {
    case KVG_TOK_P_SPLIT:
        if ((rc =
                 kvg__tok_split_regex(st->re, s->md, p, n, st->behavior, st->invert, &s->spans[k])))
            return rc;
        return run_spans(tok, s, k, p, at_origin);
    case KVG_TOK_P_BYTELEVEL:
        if (st->add_prefix_space && p[0] != ' ') {
            kvg_buf_reset(b);
            if ((rc = kvg_buf_append(b, " ", 1)) || (rc = kvg_buf_append(b, p, n))) return rc;
            p = b->data;
            n = b->len;
        }
        if (!st->re) return run(tok, s, k + 1, p, n, at_origin);
        if ((rc = kvg__tok_split_regex(st->re, s->md, p, n, KVG_TOK_B_ISOLATED, 0, &s->spans[k])))
            return rc;
        return run_spans(tok, s, k, p, at_origin);
    case KVG_TOK_P_METASPACE: {
        kvg_buf_reset(b);
        int prepend = 0;
        int starts = n >= st->repl_len && !memcmp(p, st->repl, st->repl_len);
        if (st->prepend_scheme == KVG_TOK_PS_ALWAYS)
            prepend = 1;
        else if (st->prepend_scheme == KVG_TOK_PS_FIRST)
            prepend = at_origin;
        /* The check for a leading replacement char is made after spaces
         * became replacement chars, as HF does. */
        starts = starts || p[0] == ' ';
        if (prepend && !starts && (rc = kvg_buf_append(b, st->repl, st->repl_len))) return rc;
        size_t last = 0;
        for (size_t i = 0; i < n; i++)
            if (p[i] == ' ') {
                if ((rc = kvg_buf_append(b, p + last, i - last)) ||
                    (rc = kvg_buf_append(b, st->repl, st->repl_len)))
                    return rc;
                last = i + 1;
            }
        if ((rc = kvg_buf_append(b, p + last, n - last))) return rc;
        p = b->data;
        n = b->len;
        if (!st->split) return run(tok, s, k + 1, p, n, at_origin);
        if ((rc = split_char(p, n, st->repl, st->repl_len, KVG_TOK_B_MERGED_NEXT, &s->spans[k])))
            return rc;
        return run_spans(tok, s, k, p, at_origin);
    }
    }
    return KVG_EUNSUPP;
}

int kvg__tok_pre_run(const struct kvg_tok *tok, struct kvg_tok_scratch *s, const char *p, size_t n,
                     int at_origin)
{
    return run(tok, s, 0, p, n, at_origin);
}
