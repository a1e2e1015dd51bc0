/* Encoding: UTF-8 text to ids through the whole pipeline.
 *
 *   1. added tokens with normalized=false are cut out of the raw text;
 *   2. each remaining piece is normalized, then added tokens with
 *      normalized=true are cut out of the normalized text;
 *   3. each remaining piece is pre-tokenized and its words run through BPE;
 *   4. with add_special, the post-processor's ids go around the result.
 *
 * This is HF tokenizers' encode() for one sequence, step for step, so that
 * the ids are the same. All working memory is a scratch owned by the call,
 * which makes concurrent calls on one tokenizer safe. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "tokenizer/tok_impl.h"

int kvg__tok_encode_piece(const struct kvg_tok *tok, struct kvg_tok_scratch *s, const char *text,
                          const struct kvg_tok_span *r)
{
    struct kvg_tok_spans *norm = &s->spans[KVG_TOK_MAX_PRE + 1];
    if (r->id >= 0) return kvg_tok_ids_push(s->out, (uint32_t)r->id);
    const char *np;
    size_t nn;
    int rc = kvg__tok_normalize(tok, s, text + r->a, r->b - r->a, &np, &nn);
    if (rc) return rc;
    if (tok->trie_norm.nodes <= 1) return kvg__tok_pre_run(tok, s, np, nn, r->a == 0);
    if ((rc = kvg__tok_added_split(tok, &tok->trie_norm, np, nn, norm))) return rc;
    for (size_t k = 0; k < norm->n && !rc; k++) {
        const struct kvg_tok_span *q = &norm->v[k];
        if (q->id >= 0)
            rc = kvg_tok_ids_push(s->out, (uint32_t)q->id);
        else
            rc = kvg__tok_pre_run(tok, s, np + q->a, q->b - q->a, r->a == 0 && q->a == 0);
    }
    return rc;
}

static int encode_text(const struct kvg_tok *tok, struct kvg_tok_scratch *s, const char *text,
                       size_t len, void *ud)
{
    (void)ud;
    struct kvg_tok_spans *raw = &s->spans[KVG_TOK_MAX_PRE];
    int rc = kvg__tok_added_split(tok, &tok->trie_raw, text, len, raw);
    for (size_t i = 0; i < raw->n && !rc; i++) rc = kvg__tok_encode_piece(tok, s, text, &raw->v[i]);
    return rc;
}

int kvg__tok_encode_run(const struct kvg_tok *tok, const char *text, size_t len, int add_special,
                        uint32_t **ids, size_t *n, kvg_tok_text_fn fn, void *ud)
{
    *ids = NULL;
    *n = 0;
    if (!text && len) return -EINVAL;
    if (!text) text = "";
    if (!kvg_utf8_valid(text, len)) return KVG_EUTF8;
    struct kvg_tok_ids out = {0};
    struct kvg_tok_scratch s;
    int rc = kvg__tok_scratch_init(&s, len);
    s.out = &out;
    /* Always hand back an allocation, even for no ids. */
    if (!rc) rc = kvg__tok_ids_grow(&out, len / 3 + 8);
    size_t p = 0, text_start = 0, text_end = 0;
    int wrap = add_special && tok->has_post;
    if (wrap)
        for (; p < tok->n_post && tok->post[p] != KVG_TOK_NONE && !rc; p++)
            rc = kvg_tok_ids_push(&out, tok->post[p]);
    if (!rc) {
        text_start = out.n;
        rc = fn(tok, &s, text, len, ud);
        text_end = out.n;
    }
    if (wrap)
        for (p++; p < tok->n_post && !rc; p++) {
            if (tok->post[p] != KVG_TOK_NONE) {
                rc = kvg_tok_ids_push(&out, tok->post[p]);
                continue;
            }
            /* The text again (a template naming it twice). */
            if (!(rc = kvg__tok_ids_grow(&out, text_end - text_start))) {
                memcpy(out.v + out.n, out.v + text_start, (text_end - text_start) * sizeof *out.v);
                out.n += text_end - text_start;
            }
        }
    kvg__tok_scratch_free(&s);
    if (rc) {
        free(out.v);
        return rc;
    }
    *ids = out.v;
    *n = out.n;
    return 0;
}

int kvg_tok_encode(const struct kvg_tok *tok, const char *text, size_t len, int add_special,
                   uint32_t **ids, size_t *n)
{
    return kvg__tok_encode_run(tok, text, len, add_special, ids, n, encode_text, NULL);
}
