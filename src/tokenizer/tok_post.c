/* Post-processors: what encode(add_special=1) wraps around a single
 * sequence, flattened at load time into one list of ids with a marker where
 * the text's ids go.
 *
 * TemplateProcessing ("single" template), RobertaProcessing and
 * BertProcessing (cls, text, sep), ByteLevel (offsets only: nothing to add),
 * and Sequence (applied in order: each wraps the previous result). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "tokenizer/tok_impl.h"

struct list {
    uint32_t *v;
    size_t n;
};

static int push(struct list *l, uint32_t id)
{
    uint32_t *v = realloc(l->v, (l->n + 1) * sizeof *v);
    if (!v) return -ENOMEM;
    l->v = v;
    l->v[l->n++] = id;
    return 0;
}

/* Replaces every text marker of outer by the inner list. */
static int wrap(struct list *cur, const struct list *outer)
{
    struct list r = {0};
    int rc = 0;
    for (size_t i = 0; i < outer->n && !rc; i++) {
        if (outer->v[i] != KVG_TOK_NONE)
            rc = push(&r, outer->v[i]);
        else
            for (size_t k = 0; k < cur->n && !rc; k++) rc = push(&r, cur->v[k]);
    }
    if (rc) {
        free(r.v);
        return rc;
    }
    free(cur->v);
    *cur = r;
    return 0;
}

/* [string, id] pairs of Roberta/Bert. */
static int pair_id(const cJSON *j, const char *name, uint32_t *id)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, name);
    const cJSON *v = cJSON_GetArrayItem(p, 1);
    if (!cJSON_IsArray(p) || !cJSON_IsNumber(v) || v->valuedouble < 0 ||
        v->valuedouble > KVG_TOK_MAX_ID)
        return KVG_EPARSE;
    *id = (uint32_t)v->valuedouble;
    return 0;
}

static int template_list(const cJSON *j, struct list *out, char *err, size_t errlen)
{
    const cJSON *single = cJSON_GetObjectItemCaseSensitive(j, "single");
    const cJSON *specials = cJSON_GetObjectItemCaseSensitive(j, "special_tokens"), *e;
    if (!cJSON_IsArray(single))
        return kvg_err_set(err, errlen, KVG_EUNSUPP,
                           "unsupported component: TemplateProcessing without a list template");
    int rc = 0;
    cJSON_ArrayForEach(e, single)
    {
        const cJSON *seq = cJSON_GetObjectItemCaseSensitive(e, "Sequence");
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(e, "SpecialToken");
        if (seq) {
            const char *which = kvg__tok_jstr(seq, "id");
            if (!which || strcmp(which, "A"))
                return kvg_err_set(err, errlen, KVG_EUNSUPP,
                                   "unsupported component: TemplateProcessing single template "
                                   "uses sequence %s",
                                   which ? which : "?");
            rc = push(out, KVG_TOK_NONE);
        } else if (sp) {
            const char *name = kvg__tok_jstr(sp, "id");
            const cJSON *st = name ? cJSON_GetObjectItemCaseSensitive(specials, name) : NULL;
            const cJSON *ids = cJSON_GetObjectItemCaseSensitive(st, "ids"), *x;
            if (!cJSON_IsArray(ids))
                return kvg_err_set(err, errlen, KVG_EPARSE,
                                   "TemplateProcessing: special token %s not defined",
                                   name ? name : "?");
            cJSON_ArrayForEach(x, ids)
            {
                if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble > KVG_TOK_MAX_ID)
                    return kvg_err_set(err, errlen, KVG_EPARSE, "TemplateProcessing: bad id");
                if ((rc = push(out, (uint32_t)x->valuedouble))) return rc;
            }
        } else
            return kvg_err_set(err, errlen, KVG_EPARSE, "TemplateProcessing: bad piece");
        if (rc) return rc;
    }
    return 0;
}

static int load_one(const cJSON *j, struct list *cur, int depth, char *err, size_t errlen)
{
    if (cJSON_IsNull(j)) return 0;
    const char *type = kvg__tok_jstr(j, "type");
    if (!type) return kvg_err_set(err, errlen, KVG_EPARSE, "post_processor: no \"type\"");
    if (!strcmp(type, "ByteLevel")) return 0;
    if (!strcmp(type, "Sequence")) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "processors"), *e;
        if (!cJSON_IsArray(arr) || depth > 8)
            return kvg_err_set(err, errlen, KVG_EPARSE, "post_processor Sequence: bad list");
        cJSON_ArrayForEach(e, arr)
        {
            int rc = load_one(e, cur, depth + 1, err, errlen);
            if (rc) return rc;
        }
        return 0;
    }
    struct list outer = {0};
    int rc;
    if (!strcmp(type, "TemplateProcessing"))
        rc = template_list(j, &outer, err, errlen);
    else if (!strcmp(type, "RobertaProcessing") || !strcmp(type, "BertProcessing")) {
        uint32_t cls, sep;
        rc = pair_id(j, "cls", &cls);
        if (!rc) rc = pair_id(j, "sep", &sep);
        if (rc) rc = kvg_err_set(err, errlen, rc, "%s: bad cls/sep", type);
        if (!rc) rc = push(&outer, cls);
        if (!rc) rc = push(&outer, KVG_TOK_NONE);
        if (!rc) rc = push(&outer, sep);
    } else
        rc =
            kvg_err_set(err, errlen, KVG_EUNSUPP, "unsupported component: post_processor %s", type);
    if (!rc) rc = wrap(cur, &outer);
    free(outer.v);
    return rc;
}

int kvg__tok_post_load(struct kvg_tok *tok, const cJSON *j, char *err, size_t errlen)
{
    struct list cur = {0};
    int rc = push(&cur, KVG_TOK_NONE);
    if (!rc) rc = load_one(j, &cur, 0, err, errlen);
    if (rc) {
        free(cur.v);
        return rc;
    }
    free(tok->post);
    tok->post = cur.v;
    tok->n_post = cur.n;
    tok->has_post = !(cur.n == 1 && cur.v[0] == KVG_TOK_NONE);
    return 0;
}
