/* A purpose-built JSON scanner for the two big sections of tokenizer.json,
 * model.vocab and model.merges (hundreds of thousands of short strings).
 *
 * Why not cJSON for them: cJSON builds a node per value (one malloc each) and
 * took 85 ms on Qwen3's 11 MB file before any table was built; the target for
 * a whole load is 150 ms. Scanning the text once and decoding each string
 * straight into the tokenizer's arena / a reused buffer does the same work
 * with no allocation per entry. The small sections (normalizer,
 * pre_tokenizer, added_tokens, ...) still go through cJSON.
 *
 * Input is known to be valid UTF-8 (checked once for the whole file). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/json.h"
#include "tokenizer/tok_impl.h"

void kvg__tok_js_ws(struct kvg_tok_js *js)
{
    while (js->p < js->end && (*js->p == ' ' || *js->p == '\n' || *js->p == '\r' || *js->p == '\t'))
        js->p++;
}

/* Decodes the string at js->p (at its opening quote) into dst, which has room
 * for the raw length (decoding never grows). Returns the decoded length or a
 * negative code. */
static long decode_into(struct kvg_tok_js *js, char *dst)
{
    const char *p = js->p + 1, *end = js->end;
    char *w = dst;
    for (;;) {
        const char *q = p;
        while (q < end && *q != '"' && *q != '\\' && (uint8_t)*q >= 0x20) q++;
        memcpy(w, p, (size_t)(q - p));
        w += q - p;
        if (q >= end || (uint8_t)*q < 0x20) return KVG_EPARSE;
        if (*q == '"') {
            js->p = q + 1;
            return w - dst;
        }
        if (q + 1 >= end) return KVG_EPARSE;
        char c = q[1];
        p = q + 2;
        if (c != 'u') {
            int d = kvg_json_unescape(c);
            if (d < 0) return KVG_EPARSE;
            *w++ = (char)d;
            continue;
        }
        uint32_t cp;
        size_t k = kvg_json_u_escape(p, end, &cp);
        if (!k) return KVG_EPARSE;
        p += k;
        /* \uXXXX is 6 raw bytes and at most 3 decoded (4 for a 12-byte pair). */
        w += kvg_utf8_put(cp, w);
    }
}

int kvg__tok_js_string(struct kvg_tok_js *js, struct kvg_buf *out)
{
    kvg_buf_reset(out);
    return kvg__tok_js_string_append(js, out);
}

int kvg__tok_js_string_append(struct kvg_tok_js *js, struct kvg_buf *out)
{
    if (js->p >= js->end || *js->p != '"') return KVG_EPARSE;
    const char *q = js->p + 1;
    /* The raw length bounds the decoded one. */
    while (q < js->end && *q != '"') q += (*q == '\\') ? 2 : 1;
    if (q >= js->end) return KVG_EPARSE;
    int rc = kvg_buf_reserve(out, (size_t)(q - js->p));
    if (rc) return rc;
    long n = decode_into(js, out->data + out->len);
    if (n < 0) return (int)n;
    out->len += (size_t)n;
    return 0;
}

int kvg__tok_js_skip(struct kvg_tok_js *js)
{
    kvg__tok_js_ws(js);
    if (js->p >= js->end) return KVG_EPARSE;
    char c = *js->p;
    if (c == '"') {
        /* memchr to each quote; it ends the string unless an odd number of
         * backslashes precedes it. */
        const char *q = js->p + 1;
        for (;;) {
            q = memchr(q, '"', (size_t)(js->end - q));
            if (!q) return KVG_EPARSE;
            const char *b = q;
            while (b > js->p + 1 && b[-1] == '\\') b--;
            if (((q - b) & 1) == 0) break;
            q++;
        }
        js->p = q + 1;
        return 0;
    }
    if (c == '{' || c == '[') {
        /* Brackets are balanced by counting; strings are skipped whole so
         * brackets inside them do not count. cJSON validates these sections. */
        long depth = 0;
        while (js->p < js->end) {
            c = *js->p;
            if (c == '"') {
                int rc = kvg__tok_js_skip(js);
                if (rc) return rc;
                continue;
            }
            js->p++;
            if (c == '{' || c == '[')
                depth++;
            else if (c == '}' || c == ']') {
                if (--depth == 0) return 0;
            }
        }
        return KVG_EPARSE;
    }
    /* number, true, false, null */
    const char *start = js->p;
    while (js->p < js->end && *js->p != ',' && *js->p != '}' && *js->p != ']' && *js->p != ' ' &&
           *js->p != '\n' && *js->p != '\r' && *js->p != '\t')
        js->p++;
    return js->p > start ? 0 : KVG_EPARSE;
}

static int expect(struct kvg_tok_js *js, char c)
{
    kvg__tok_js_ws(js);
    if (js->p >= js->end || *js->p != c) return KVG_EPARSE;
    js->p++;
    return 0;
}

/* After an element: 1 for ',' (more), 0 for the closing bracket. */
static int next_or_close(struct kvg_tok_js *js, char close)
{
    kvg__tok_js_ws(js);
    if (js->p < js->end && *js->p == ',') {
        js->p++;
        return 1;
    }
    if (js->p < js->end && *js->p == close) {
        js->p++;
        return 0;
    }
    return KVG_EPARSE;
}

int kvg__tok_js_vocab(struct kvg_tok *tok, struct kvg_tok_js *jsp, char *err, size_t errlen)
{
    struct kvg_tok_js js = *jsp;
    const char *p = js.p;
    /* Size the map for the whole section up front: entries are ~16 bytes. */
    const char *end = js.p;
    {
        struct kvg_tok_js probe = js;
        if (kvg__tok_js_skip(&probe) == 0) end = probe.p;
    }
    int rc = kvg__tok_smap_init(&tok->vocab, (size_t)(end - p) / 14 + 16);
    if (rc) return rc;
    if (expect(&js, '{')) goto bad;
    kvg__tok_js_ws(&js);
    if (js.p < js.end && *js.p == '}') {
        jsp->p = js.p + 1;
        return 0;
    }
    for (;;) {
        kvg__tok_js_ws(&js);
        if (js.p >= js.end || *js.p != '"') goto bad;
        /* Decode straight into the arena: reserve the raw length first. */
        const char *q = js.p + 1;
        while (q < js.end && *q != '"') q += (*q == '\\') ? 2 : 1;
        if (q >= js.end) goto bad;
        int64_t off = kvg__tok_arena_add(&tok->arena, NULL, 0);
        if (off < 0) return (int)off;
        size_t raw = (size_t)(q - js.p);
        int64_t room = kvg__tok_arena_add(&tok->arena, NULL, raw + 1);
        if (room < 0) return (int)room;
        long len = decode_into(&js, tok->arena.p + off);
        if (len < 0) goto bad;
        tok->arena.p[off + len] = 0; /* token strings are C strings too */
        tok->arena.len = (size_t)off + (size_t)len + 1;
        if (expect(&js, ':')) goto bad;
        kvg__tok_js_ws(&js);
        /* A bounded parse: the text need not be NUL-terminated. */
        if (js.p >= js.end || *js.p < '0' || *js.p > '9') goto bad;
        uint64_t id = 0;
        while (js.p < js.end && *js.p >= '0' && *js.p <= '9' && id <= KVG_TOK_MAX_ID)
            id = id * 10 + (uint64_t)(*js.p++ - '0');
        if (id > KVG_TOK_MAX_ID || (js.p < js.end && (*js.p == '.' || *js.p == 'e')))
            return kvg_err_set(err, errlen, KVG_EPARSE, "model.vocab: bad id");
        if ((rc = kvg__tok_ids_reserve(tok, (uint32_t)id + 1))) return rc;
        tok->vocab_off[id] = (uint32_t)off;
        tok->vocab_len[id] = (uint32_t)len;
        rc = kvg__tok_smap_put(&tok->vocab, tok->arena.p, (uint32_t)off, (uint32_t)len,
                               (uint32_t)id);
        if (rc) return rc;
        rc = next_or_close(&js, '}');
        if (rc < 0) goto bad;
        if (rc == 0) {
            jsp->p = js.p;
            return 0;
        }
    }
bad:
    return kvg_err_set(err, errlen, KVG_EPARSE, "model.vocab: malformed JSON near byte %zu",
                       (size_t)(js.p - p));
}

/* Adds one merge whose two halves are buf[0..la) and buf[la..). */
static int add_merge(struct kvg_tok *tok, struct kvg_buf *buf, size_t la, uint32_t rank, char *err,
                     size_t errlen)
{
    const char *s = buf->data;
    size_t lb = buf->len - la;
    int64_t a = kvg__tok_smap_get(&tok->vocab, tok->arena.p, s, la);
    int64_t b = kvg__tok_smap_get(&tok->vocab, tok->arena.p, s + la, lb);
    int64_t ab = kvg__tok_smap_get(&tok->vocab, tok->arena.p, s, la + lb);
    if (a < 0 || b < 0 || ab < 0) {
        const char *which = a < 0 ? s : b < 0 ? s + la : s;
        int wl = (int)(a < 0 ? la : b < 0 ? lb : la + lb);
        return kvg_err_set(err, errlen, KVG_EPARSE,
                           "model.merges[%u]: token \"%.*s\" is not in the vocabulary", rank,
                           wl > 64 ? 64 : wl, which);
    }
    return kvg__tok_mmap_put(&tok->merges, (uint32_t)a, (uint32_t)b, rank, (uint32_t)ab);
}

int kvg__tok_js_merges(struct kvg_tok *tok, struct kvg_tok_js *jsp, char *err, size_t errlen)
{
    struct kvg_tok_js js = *jsp;
    const char *p = js.p;
    struct kvg_buf buf;
    kvg_buf_init(&buf, 1 << 20);
    /* About one merge per vocabulary entry. */
    int rc = kvg__tok_mmap_init(&tok->merges, tok->vocab.count + 16), form = 0; /* 1 str, 2 pairs */
    uint32_t rank = 0;
    if (rc) goto out;
    rc = KVG_EPARSE;
    if (expect(&js, '[')) goto bad;
    kvg__tok_js_ws(&js);
    if (js.p < js.end && *js.p == ']') {
        js.p++;
        jsp->p = js.p;
        rc = 0;
        goto out;
    }
    for (;;) {
        kvg__tok_js_ws(&js);
        if (js.p >= js.end) goto bad;
        size_t la = 0;
        int skip = 0;
        if (*js.p == '"') {
            /* Legacy form "a b": exactly one space (HF splits on ' '). */
            if (form == 2) goto mixed;
            form = 1;
            if ((rc = kvg__tok_js_string(&js, &buf))) goto bad;
            if (buf.len >= 8 && !memcmp(buf.data, "#version", 8)) skip = 1;
            const char *sp = memchr(buf.data, ' ', buf.len);
            if (!skip && (!sp || memchr(sp + 1, ' ', buf.len - (size_t)(sp + 1 - buf.data)))) {
                rc = kvg_err_set(err, errlen, KVG_EPARSE,
                                 "model.merges[%u]: not two tokens separated by one space", rank);
                goto out;
            }
            if (!skip) {
                la = (size_t)(sp - buf.data);
                memmove(buf.data + la, buf.data + la + 1, buf.len - la - 1);
                buf.len--;
            }
        } else if (*js.p == '[') {
            if (form == 1) goto mixed;
            form = 2;
            js.p++;
            kvg__tok_js_ws(&js);
            if ((rc = kvg__tok_js_string(&js, &buf))) goto bad;
            la = buf.len;
            if (expect(&js, ',')) goto bad;
            kvg__tok_js_ws(&js);
            if ((rc = kvg__tok_js_string_append(&js, &buf))) goto bad;
            if (expect(&js, ']')) goto bad;
        } else
            goto bad;
        if (!skip) {
            if ((rc = add_merge(tok, &buf, la, rank, err, errlen))) goto out;
            rank++;
        }
        rc = next_or_close(&js, ']');
        if (rc < 0) goto bad;
        if (rc == 0) break;
    }
    tok->n_merges = rank;
    jsp->p = js.p;
    rc = 0;
    goto out;
mixed:
    rc = kvg_err_set(err, errlen, KVG_EPARSE, "model.merges: mixes strings and pairs");
    goto out;
bad:
    rc = kvg_err_set(err, errlen, KVG_EPARSE, "model.merges: malformed JSON near byte %zu",
                     (size_t)(js.p - p));
out:
    kvg_buf_free(&buf);
    return rc;
}
