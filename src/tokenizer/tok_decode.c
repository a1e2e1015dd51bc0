/* Decoding: ids back to text, as HF tokenizers' Tokenizer::decode does.
 *
 * Ids become their token strings (an added token's content first, else the
 * model vocabulary's; ids that are neither are dropped, as HF drops them;
 * special tokens dropped on request), then each decoder step rewrites the
 * list of strings: ByteLevel (chars back to bytes, lossy UTF-8), Metaspace,
 * Replace, ByteFallback (<0xXX> runs back to bytes), Fuse, Strip, Sequence.
 * Without a decoder HF joins the tokens with spaces. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/util.h"
#include "tokenizer/tok_impl.h"

static int add_step(struct kvg_tok *tok, struct kvg_tok_dec_step st)
{
    struct kvg_tok_dec_step *v = realloc(tok->dec, (tok->n_dec + 1) * sizeof *v);
    if (!v) {
        free(st.a);
        free(st.b);
        return -ENOMEM;
    }
    tok->dec = v;
    tok->dec[tok->n_dec++] = st;
    return 0;
}

static int dup_into(const char *s, char **out, size_t *len)
{
    *len = strlen(s);
    *out = strdup(s);
    return *out ? 0 : -ENOMEM;
}

static int one_char(const char *s)
{
    return s && s[0] && kvg_utf8_len_fast((uint8_t)s[0], 1) == strlen(s);
}

static int load_one(struct kvg_tok *tok, const cJSON *j, int depth, char *err, size_t errlen)
{
    if (cJSON_IsNull(j)) return 0;
    const char *type = kvg__tok_jstr(j, "type");
    if (!type) return kvg_err_set(err, errlen, KVG_EPARSE, "decoder: no \"type\"");
    struct kvg_tok_dec_step st = {0};
    int rc = 0;
    if (!strcmp(type, "Sequence")) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "decoders"), *e;
        if (!cJSON_IsArray(arr) || depth > 8)
            return kvg_err_set(err, errlen, KVG_EPARSE, "decoder Sequence: bad list");
        cJSON_ArrayForEach(e, arr)
        {
            if ((rc = load_one(tok, e, depth + 1, err, errlen))) return rc;
        }
        return 0;
    }
    if (!strcmp(type, "ByteLevel"))
        st.kind = KVG_TOK_D_BYTELEVEL;
    else if (!strcmp(type, "ByteFallback"))
        st.kind = KVG_TOK_D_BYTEFALLBACK;
    else if (!strcmp(type, "Fuse"))
        st.kind = KVG_TOK_D_FUSE;
    else if (!strcmp(type, "Metaspace")) {
        const char *r = kvg__tok_jstr(j, "replacement"), *ps = kvg__tok_jstr(j, "prepend_scheme");
        if (!one_char(r))
            return kvg_err_set(err, errlen, KVG_EPARSE, "decoder Metaspace: bad replacement");
        st.kind = KVG_TOK_D_METASPACE;
        if (ps)
            st.prepend_scheme = !strcmp(ps, "never") ? KVG_TOK_PS_NEVER : KVG_TOK_PS_ALWAYS;
        else
            st.prepend_scheme =
                kvg__tok_jbool(j, "add_prefix_space", 1) ? KVG_TOK_PS_ALWAYS : KVG_TOK_PS_NEVER;
        rc = dup_into(r, &st.a, &st.alen);
    } else if (!strcmp(type, "Replace")) {
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(j, "pattern");
        const char *lit = kvg__tok_jstr(pat, "String"), *content = kvg__tok_jstr(j, "content");
        if (!lit || !lit[0] || !content)
            return kvg_err_set(err, errlen, KVG_EUNSUPP,
                               "unsupported component: decoder Replace without a string pattern");
        st.kind = KVG_TOK_D_REPLACE;
        rc = dup_into(lit, &st.a, &st.alen);
        if (!rc) rc = dup_into(content, &st.b, &st.blen);
    } else if (!strcmp(type, "Strip")) {
        const char *c = kvg__tok_jstr(j, "content");
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "start");
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(j, "stop");
        if (!one_char(c) || !cJSON_IsNumber(a) || !cJSON_IsNumber(b) || a->valuedouble < 0 ||
            b->valuedouble < 0 || a->valuedouble > 1e6 || b->valuedouble > 1e6)
            return kvg_err_set(err, errlen, KVG_EPARSE, "decoder Strip: bad fields");
        st.kind = KVG_TOK_D_STRIP;
        st.start = (int)a->valuedouble;
        st.stop = (int)b->valuedouble;
        rc = dup_into(c, &st.a, &st.alen);
    } else
        return kvg_err_set(err, errlen, KVG_EUNSUPP, "unsupported component: decoder %s", type);
    if (rc) {
        free(st.a);
        free(st.b);
        return rc;
    }
    return add_step(tok, st);
}

int kvg__tok_dec_load(struct kvg_tok *tok, const cJSON *j, char *err, size_t errlen)
{
    tok->has_decoder = !cJSON_IsNull(j);
    return load_one(tok, j, 0, err, errlen);
}

void kvg__tok_dec_free(struct kvg_tok *tok)
{
    for (size_t i = 0; i < tok->n_dec; i++) {
        free(tok->dec[i].a);
        free(tok->dec[i].b);
    }
    free(tok->dec);
    tok->dec = NULL;
    tok->n_dec = 0;
}

/* A list of strings in one buffer. */
struct tl {
    struct kvg_buf text;
    size_t *off, *len;
    size_t n, cap;
};

static int tl_start(struct tl *t)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        size_t *o = realloc(t->off, cap * sizeof *o), *l;
        if (!o) return -ENOMEM;
        t->off = o;
        if (!(l = realloc(t->len, cap * sizeof *l))) return -ENOMEM;
        t->len = l;
        t->cap = cap;
    }
    t->off[t->n] = t->text.len;
    t->len[t->n] = 0;
    t->n++;
    return 0;
}

static void tl_end(struct tl *t)
{
    t->len[t->n - 1] = t->text.len - t->off[t->n - 1];
}

static int tl_add(struct tl *t, const char *s, size_t n)
{
    int rc = tl_start(t);
    if (!rc) rc = kvg_buf_append(&t->text, s, n);
    if (!rc) tl_end(t);
    return rc;
}

static void tl_reset(struct tl *t)
{
    kvg_buf_reset(&t->text);
    t->n = 0;
}

static void tl_free(struct tl *t)
{
    kvg_buf_free(&t->text);
    free(t->off);
    free(t->len);
}

/* "<0xXX>": Rust's u8::from_str_radix(.., 16), which also takes "+X". */
static int byte_token(const char *s, size_t n)
{
    if (n != 6 || memcmp(s, "<0x", 3) || s[5] != '>') return -1;
    if (s[3] == '+') return kvg_hex_digit(s[4]);
    int hi = kvg_hex_digit(s[3]), lo = kvg_hex_digit(s[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

static int flush_bytes(struct tl *o, struct kvg_buf *bytes)
{
    int rc = 0;
    if (!bytes->len) return 0;
    if (kvg_utf8_valid(bytes->data, bytes->len))
        rc = tl_add(o, bytes->data, bytes->len);
    else
        for (size_t k = 0; k < bytes->len && !rc; k++) rc = tl_add(o, "\xEF\xBF\xBD", 3);
    kvg_buf_reset(bytes);
    return rc;
}

static int step(const struct kvg_tok_dec_step *st, const struct tl *in, struct tl *o,
                struct kvg_buf *tmp)
{
    int rc = 0;
    /* Only empty pieces when nothing was ever appended: offsets are all 0. */
    const char *base = in->text.data ? in->text.data : "";
    switch (st->kind) {
    case KVG_TOK_D_BYTELEVEL:
    case KVG_TOK_D_FUSE:
        kvg_buf_reset(tmp);
        for (size_t i = 0; i < in->n && !rc; i++) {
            const char *s = base + in->off[i];
            size_t n = in->len[i], w = tmp->len;
            if (st->kind == KVG_TOK_D_FUSE) {
                rc = kvg_buf_append(tmp, s, n);
                continue;
            }
            /* Every char back to its byte; a token with any other char
             * (an added token) is kept as it is. */
            int all = 1;
            for (size_t k = 0; k < n && !rc && all;) {
                uint32_t cp;
                k += kvg_utf8_decode_fast(s + k, SIZE_MAX, &cp);
                int b = kvg__tok_bl_byte(cp);
                if (b < 0)
                    all = 0;
                else {
                    char c = (char)b;
                    rc = kvg_buf_append(tmp, &c, 1);
                }
            }
            if (!all) {
                tmp->len = w;
                rc = kvg_buf_append(tmp, s, n);
            }
        }
        if (rc) return rc;
        if ((rc = tl_start(o))) return rc;
        if (st->kind == KVG_TOK_D_FUSE)
            rc = kvg_buf_append(&o->text, tmp->data, tmp->len);
        else
            rc = kvg__tok_utf8_lossy(tmp->data ? tmp->data : "", tmp->len, &o->text);
        if (!rc) tl_end(o);
        return rc;
    case KVG_TOK_D_BYTEFALLBACK:
        kvg_buf_reset(tmp);
        for (size_t i = 0; i < in->n && !rc; i++) {
            int b = byte_token(base + in->off[i], in->len[i]);
            if (b >= 0) {
                char c = (char)b;
                rc = kvg_buf_append(tmp, &c, 1);
                continue;
            }
            rc = flush_bytes(o, tmp);
            if (!rc) rc = tl_add(o, base + in->off[i], in->len[i]);
        }
        return rc ? rc : flush_bytes(o, tmp);
    default:
        break;
    }
    for (size_t i = 0; i < in->n && !rc; i++) {
        const char *s = base + in->off[i];
        size_t n = in->len[i];
        if ((rc = tl_start(o))) return rc;
        if (st->kind == KVG_TOK_D_METASPACE) {
            for (size_t k = 0; k < n && !rc;) {
                size_t l = kvg_utf8_len_fast((uint8_t)s[k], 1);
                if (l == st->alen && !memcmp(s + k, st->a, l)) {
                    if (!(i == 0 && st->prepend_scheme != KVG_TOK_PS_NEVER))
                        rc = kvg_buf_append(&o->text, " ", 1);
                } else
                    rc = kvg_buf_append(&o->text, s + k, l);
                k += l;
            }
        } else if (st->kind == KVG_TOK_D_REPLACE) {
            size_t prev = 0;
            const char *hit;
            while (!rc && (hit = memmem(s + prev, n - prev, st->a, st->alen))) {
                rc = kvg_buf_append(&o->text, s + prev, (size_t)(hit - s) - prev);
                if (!rc) rc = kvg_buf_append(&o->text, st->b, st->blen);
                prev = (size_t)(hit - s) + st->alen;
            }
            if (!rc) rc = kvg_buf_append(&o->text, s + prev, n - prev);
        } else if (st->kind == KVG_TOK_D_STRIP) {
            size_t a = 0, b = n;
            for (int k = 0; k < st->start && a + st->alen <= n && !memcmp(s + a, st->a, st->alen);
                 k++)
                a += st->alen;
            for (int k = 0;
                 k < st->stop && b >= a + st->alen && !memcmp(s + b - st->alen, st->a, st->alen);
                 k++)
                b -= st->alen;
            rc = kvg_buf_append(&o->text, s + a, b - a);
        }
        if (!rc) tl_end(o);
    }
    return rc;
}

int kvg_tok_decode(const struct kvg_tok *tok, const uint32_t *ids, size_t n, int skip_special,
                   char **text, size_t *len)
{
    struct tl a = {0}, b = {0};
    struct kvg_buf tmp, out;
    kvg_buf_init(&a.text, 0);
    kvg_buf_init(&b.text, 0);
    kvg_buf_init(&tmp, 0);
    kvg_buf_init(&out, 0);
    *text = NULL;
    *len = 0;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        size_t l;
        if (skip_special && kvg_tok_is_special(tok, ids[i])) continue;
        const char *s = kvg_tok_id_to_token(tok, ids[i], &l);
        if (s) rc = tl_add(&a, s, l);
    }
    struct tl *cur = &a, *nxt = &b;
    for (size_t k = 0; k < tok->n_dec && !rc; k++) {
        tl_reset(nxt);
        rc = step(&tok->dec[k], cur, nxt, &tmp);
        struct tl *t = cur;
        cur = nxt;
        nxt = t;
    }
    /* Join: with spaces when there is no decoder at all (HF's default). */
    for (size_t i = 0; i < cur->n && !rc; i++) {
        if (i && !tok->has_decoder && !tok->builtin_decoder) rc = kvg_buf_append(&out, " ", 1);
        if (!rc) rc = kvg_buf_append(&out, cur->text.data + cur->off[i], cur->len[i]);
    }
    if (!rc && tok->builtin_decoder) {
        /* builtin:bytes tokens are raw bytes: make the result valid UTF-8. */
        kvg_buf_reset(&tmp);
        rc = kvg__tok_utf8_lossy(out.data ? out.data : "", out.len, &tmp);
        if (!rc) {
            struct kvg_buf t = out;
            out = tmp;
            tmp = t;
        }
    }
    if (!rc && !kvg_buf_cstr(&out)) rc = -ENOMEM;
    if (!rc) {
        *text = out.data;
        *len = out.len;
        out.data = NULL;
    }
    kvg_buf_free(&out);
    kvg_buf_free(&tmp);
    tl_free(&a);
    tl_free(&b);
    return rc;
}
