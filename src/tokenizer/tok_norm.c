/* Normalizers: the text transformations HF tokenizers applies before
 * pre-tokenization, as a flat list of steps (a "Sequence" is flattened).
 *
 * Supported: NFC, NFD (HF's Unicode 9.0 data), Lowercase, Replace (string or
 * regex pattern), Prepend, Strip, Sequence. Anything else (NFKC/NFKD,
 * BertNormalizer, Precompiled SentencePiece charmaps, StripAccents, ...) is a
 * load-time KVG_EUNSUPP naming it.
 *
 * Steps write into two scratch buffers in turn; a step that changes nothing
 * (NFC on text that is already NFC: nearly always) costs one scan. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "tokenizer/tok_impl.h"

static int add_step(struct kvg_tok *tok, struct kvg_tok_norm_step st)
{
    struct kvg_tok_norm_step *v = realloc(tok->norm, (tok->n_norm + 1) * sizeof *v);
    if (!v) return -ENOMEM;
    tok->norm = v;
    tok->norm[tok->n_norm++] = st;
    return 0;
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

static int load_one(struct kvg_tok *tok, const cJSON *j, int depth, char *err, size_t errlen)
{
    if (cJSON_IsNull(j)) return 0;
    const char *type = kvg__tok_jstr(j, "type");
    if (!type) return kvg_err_set(err, errlen, KVG_EPARSE, "normalizer: no \"type\"");
    struct kvg_tok_norm_step st = {0};
    if (!strcmp(type, "Sequence")) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "normalizers"), *e;
        if (!cJSON_IsArray(arr) || depth > 8)
            return kvg_err_set(err, errlen, KVG_EPARSE, "normalizer Sequence: bad normalizers");
        cJSON_ArrayForEach(e, arr)
        {
            int rc = load_one(tok, e, depth + 1, err, errlen);
            if (rc) return rc;
        }
        return 0;
    }
    if (!strcmp(type, "NFC"))
        st.kind = KVG_TOK_N_NFC;
    else if (!strcmp(type, "NFD"))
        st.kind = KVG_TOK_N_NFD;
    else if (!strcmp(type, "Lowercase"))
        st.kind = KVG_TOK_N_LOWER;
    else if (!strcmp(type, "Prepend")) {
        const char *s = kvg__tok_jstr(j, "prepend");
        if (!s) return kvg_err_set(err, errlen, KVG_EPARSE, "normalizer Prepend: no prepend");
        st.kind = KVG_TOK_N_PREPEND;
        st.alen = strlen(s);
        if (!(st.a = dup_n(s, st.alen))) return -ENOMEM;
    } else if (!strcmp(type, "Strip")) {
        st.kind = KVG_TOK_N_STRIP;
        st.left = kvg__tok_jbool(j, "strip_left", 0);
        st.right = kvg__tok_jbool(j, "strip_right", 0);
    } else if (!strcmp(type, "Replace")) {
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(j, "pattern");
        const char *content = kvg__tok_jstr(j, "content");
        const char *lit = kvg__tok_jstr(pat, "String"), *rx = kvg__tok_jstr(pat, "Regex");
        if (!content || (!lit && !rx))
            return kvg_err_set(err, errlen, KVG_EPARSE, "normalizer Replace: bad pattern");
        if ((lit && !lit[0]) || (rx && !rx[0]))
            return kvg_err_set(err, errlen, KVG_EUNSUPP,
                               "unsupported component: normalizer Replace with an empty pattern");
        st.kind = KVG_TOK_N_REPLACE;
        st.blen = strlen(content);
        if (!(st.b = dup_n(content, st.blen))) return -ENOMEM;
        if (lit) {
            st.alen = strlen(lit);
            if (!(st.a = dup_n(lit, st.alen))) {
                free(st.b);
                return -ENOMEM;
            }
        } else {
            int rc = kvg__tok_regex_compile(rx, strlen(rx), 0, &st.re, err, errlen);
            if (rc) {
                free(st.b);
                return rc;
            }
        }
    } else
        return kvg_err_set(err, errlen, KVG_EUNSUPP, "unsupported component: normalizer %s", type);
    int rc = add_step(tok, st);
    if (rc) {
        free(st.a);
        free(st.b);
        kvg__tok_regex_free(st.re);
    }
    return rc;
}

int kvg__tok_norm_load(struct kvg_tok *tok, const cJSON *j, char *err, size_t errlen)
{
    return load_one(tok, j, 0, err, errlen);
}

void kvg__tok_norm_free(struct kvg_tok *tok)
{
    for (size_t i = 0; i < tok->n_norm; i++) {
        free(tok->norm[i].a);
        free(tok->norm[i].b);
        kvg__tok_regex_free(tok->norm[i].re);
    }
    free(tok->norm);
    tok->norm = NULL;
    tok->n_norm = 0;
}

static int replace(const struct kvg_tok_norm_step *st, struct kvg_tok_scratch *s, const char *p,
                   size_t n, struct kvg_buf *dst)
{
    int rc = 0;
    size_t prev = 0;
    if (!st->re) {
        while (prev <= n) {
            const char *hit = memmem(p + prev, n - prev, st->a, st->alen);
            if (!hit) break;
            size_t at = (size_t)(hit - p);
            if ((rc = kvg_buf_append(dst, p + prev, at - prev))) return rc;
            if ((rc = kvg_buf_append(dst, st->b, st->blen))) return rc;
            prev = at + st->alen;
        }
    } else {
        size_t last_end = 0, last_match_end = SIZE_MAX, ms, me;
        int wide = kvg__tok_regex_wide(st->re, p, n);
        for (;;) {
            rc = kvg__tok_regex_next(st->re, wide, s->md, p, n, &last_end, &last_match_end, &ms,
                                     &me);
            if (rc < 0) return rc;
            if (rc == 0) break;
            if ((rc = kvg_buf_append(dst, p + prev, ms - prev))) return rc;
            if ((rc = kvg_buf_append(dst, st->b, st->blen))) return rc;
            prev = me;
        }
    }
    return kvg_buf_append(dst, p + prev, n - prev);
}

static int strip(const struct kvg_tok_norm_step *st, const char *p, size_t n, size_t *a, size_t *b)
{
    size_t i = 0, j = n;
    if (st->left)
        while (i < n) {
            uint32_t cp;
            size_t l = kvg_utf8_decode_fast(p + i, SIZE_MAX, &cp);
            if (!kvg__tok_is_space(cp)) break;
            i += l;
        }
    if (st->right)
        while (j > i) {
            size_t k = j - 1;
            while (k > i && ((uint8_t)p[k] & 0xC0) == 0x80) k--;
            uint32_t cp;
            kvg_utf8_decode_fast(p + k, SIZE_MAX, &cp);
            if (!kvg__tok_is_space(cp)) break;
            j = k;
        }
    *a = i;
    *b = j;
    return 0;
}

int kvg__tok_normalize(const struct kvg_tok *tok, struct kvg_tok_scratch *s, const char *p,
                       size_t n, const char **out, size_t *outn)
{
    const char *cur = p;
    size_t curn = n;
    int which = 0, rc = 0;
    for (size_t k = 0; k < tok->n_norm && !rc; k++) {
        const struct kvg_tok_norm_step *st = &tok->norm[k];
        struct kvg_buf *dst = &s->norm[which];
        kvg_buf_reset(dst);
        switch (st->kind) {
        case KVG_TOK_N_NFC:
            if (kvg__tok_unicode_nfc_quick(cur, curn)) continue;
            rc = kvg__tok_unicode_nf(cur, curn, 1, dst);
            break;
        case KVG_TOK_N_NFD:
            rc = kvg__tok_unicode_nf(cur, curn, 0, dst);
            break;
        case KVG_TOK_N_LOWER:
            for (size_t i = 0; i < curn && !rc;) {
                uint32_t cp;
                size_t l = kvg_utf8_decode_fast(cur + i, SIZE_MAX, &cp);
                if (cp < 0x80) {
                    char c = (char)(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
                    rc = kvg_buf_append(dst, &c, 1);
                } else
                    rc = kvg__tok_lower_append(cp, dst);
                i += l;
            }
            break;
        case KVG_TOK_N_PREPEND:
            if (curn == 0) continue; /* HF prepends only to non-empty text */
            rc = kvg_buf_append(dst, st->a, st->alen);
            if (!rc) rc = kvg_buf_append(dst, cur, curn);
            break;
        case KVG_TOK_N_STRIP: {
            size_t a, b;
            strip(st, cur, curn, &a, &b);
            cur += a;
            curn = b - a;
            continue;
        }
        case KVG_TOK_N_REPLACE:
            rc = replace(st, s, cur, curn, dst);
            break;
        }
        if (rc) return rc;
        cur = dst->data ? dst->data : "";
        curn = dst->len;
        which ^= 1;
    }
    *out = cur;
    *outn = curn;
    return rc;
}
