/* A request's served model (proxy_int.h): the name it asks for resolved
 * through the catalog (router/catalog.h) to a model, by alias or by a
 * weighted split that the request's session key keeps sticky, and that
 * model's tokenizer and policy for the rest of its way. A request that
 * asked by another name reaches the engine with the served model's name:
 * its body is edited byte for byte (base/json_edit.h), the chat request of
 * a translated one too. */
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/json_edit.h"
#include "proxy/proxy_int.h"

/* The request's session key for a split: the body's (Responses'
 * prompt_cache_key, Claude Code's session), else the usual session
 * headers. Empty: none (the split then draws at random). */
static struct kvg_str session_key(const struct proxy_req *pr)
{
    static const char *const headers[] = {"x-kvgate-routing-key", "x-session-id",
                                          "x-claude-code-session-id", "session-id", "x-user-id"};
    if (pr->ri.session_len) return (struct kvg_str){pr->ri.session, pr->ri.session_len};
    for (size_t i = 0; i < KVG_ARRAY_LEN(headers); i++) {
        struct kvg_str v = pr->offloop ? kvg__proxy_snap_header(&pr->hdrs, headers[i])
                                       : kvg_http_req_header(pr->req, headers[i]);
        if (v.p && v.len) return v;
    }
    return (struct kvg_str){NULL, 0};
}

int kvg__proxy_model_resolve(struct proxy_req *pr)
{
    const struct kvg_catalog *cat = pr->pl->px->catalog;
    pr->cmodel = -1;
    pr->pm = NULL;
    if (!cat) return 0;
    struct kvg_catalog_pick pick;
    struct kvg_str key = session_key(pr);
    double r = kvg_rng_double(pr->offloop ? &pr->rng : pr->pl->rng);
    kvg_catalog_resolve(cat, pr->ri.model, pr->ri.model_len, key.p, key.len, r, &pick);
    if (pick.model < 0) return KVG_ENOTFOUND;
    const struct kvg_catalog_model *m = &cat->models[pick.model];
    pr->cmodel = pick.model;
    pr->pm = m->host;
    size_t n = strlen(m->name);
    if (!n || (n == pr->ri.model_len && !memcmp(m->name, pr->ri.model, n))) return 0;
    /* Asked by another name: routing, quotas and the engine see the served one. */
    memcpy(pr->asked, pr->ri.model, pr->ri.model_len);
    pr->asked_len = pr->ri.model_len;
    if (n >= sizeof pr->ri.model) return KVG_ENOTFOUND;
    memcpy(pr->ri.model, m->name, n + 1);
    pr->ri.model_len = n;
    return 0;
}

/* body with "model" set to name, into out. */
static int set_model(const char *body, size_t len, const char *name, struct kvg_buf *out)
{
    struct kvg_buf v;
    kvg_buf_init(&v, 0);
    int rc = kvg_buf_append_json_str(&v, name, strlen(name));
    if (!rc) rc = kvg_buf_append(&v, "", 1);
    if (rc) {
        kvg_buf_free(&v);
        return rc;
    }
    const struct kvg_json_edit e = KVG_JSON_SET("model", v.data);
    rc = kvg_json_edit(body, len, &e, 1, out);
    kvg_buf_free(&v);
    return rc < 0 ? rc : 0;
}

int kvg__proxy_model_rename(struct proxy_req *pr)
{
    if (!pr->asked_len || pr->model_body.len) return 0;
    const struct kvg_buf *b = kvg__proxy_req_body(pr);
    kvg_buf_init(&pr->model_body, 0);
    /* A converted request's chat bytes, if ever sent, are made from these
     * (translate.c): the served name is in them too. */
    return set_model(b->data, b->len, pr->ri.model, &pr->model_body);
}
