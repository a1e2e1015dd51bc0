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
#include "base/log.h"
#include "proxy/proxy_int.h"

struct kvg_str kvg_proxy_session_key(const struct kvg_rinput *ri,
                                     struct kvg_str (*header)(const void *hctx, const char *name),
                                     const void *hctx)
{
    static const char *const headers[] = {"x-kvgate-routing-key", "x-session-id",
                                          "x-claude-code-session-id", "session-id", "x-user-id"};
    if (ri->session_len) return (struct kvg_str){ri->session, ri->session_len};
    for (size_t i = 0; i < KVG_ARRAY_LEN(headers); i++) {
        struct kvg_str v = header(hctx, headers[i]);
        if (v.p && v.len) return v;
    }
    return (struct kvg_str){NULL, 0};
}

static struct kvg_str req_header(const void *req, const char *name)
{
    return kvg_http_req_header(req, name);
}

/* The request's session key for a split (none: the split draws at random). */
static struct kvg_str session_key(const struct proxy_req *pr)
{
    if (pr->offloop) return kvg_proxy_session_key(&pr->ri, kvg__proxy_snap_header, &pr->hdrs);
    return kvg_proxy_session_key(&pr->ri, req_header, pr->req);
}

int kvg__proxy_model_resolve(struct proxy_req *pr)
{
    if (!pr->cat && pr->pl->px->catalog) pr->cat = kvg_catalog_acquire(pr->pl->px->catalog);
    const struct kvg_catalog *cat = pr->cat;
    pr->cmodel = -1;
    pr->pm = NULL;
    if (!cat) return 0;
    struct kvg_catalog_pick pick = {.model = pr->fb_target};
    if (!pr->fallen) { /* a fallback's model was chosen by kvg__proxy_model_next_fallback */
        struct kvg_str key = session_key(pr);
        double r = kvg_rng_double(pr->offloop ? &pr->rng : pr->pl->rng);
        kvg_catalog_resolve(cat, pr->ri.model, pr->ri.model_len, key.p, key.len, r, &pick);
    }
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

const char *kvg__proxy_model_label(struct proxy_req *pr, char *buf, size_t cap)
{
    const struct kvg_catalog *cat = pr->cat;
    if (cat && cat->any < 0 && pr->cmodel >= 0) return cat->models[pr->cmodel].name;
    size_t n = pr->ri.model_len;
    if (!n || n >= cap || !kvg_pool_model_listed(pr->pl->px->pool, pr->ri.model, n))
        return "unknown";
    memcpy(buf, pr->ri.model, n);
    buf[n] = 0;
    return buf;
}

const char *kvg__proxy_model_served(const struct proxy_req *pr)
{
    const struct kvg_catalog *cat = pr->cat;
    return cat && cat->any < 0 && pr->cmodel >= 0 ? cat->models[pr->cmodel].name : "";
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

/* An upload's body with its model field's value (off, len: multipart.c)
 * replaced by name: the parts are delimited by the boundary alone, so the
 * bytes around it stay as they are. */
static int set_form_model(const struct kvg_buf *b, size_t off, size_t len, const char *name,
                          struct kvg_buf *out)
{
    if (off > b->len || len > b->len - off) return KVG_EPARSE;
    int rc = kvg_buf_append(out, b->data, off);
    if (!rc) rc = kvg_buf_append(out, name, strlen(name));
    if (!rc) rc = kvg_buf_append(out, b->data + off + len, b->len - off - len);
    return rc;
}

int kvg__proxy_model_rename(struct proxy_req *pr)
{
    if (!pr->asked_len || pr->model_body.len) return 0;
    const struct kvg_buf *b = kvg__proxy_req_body(pr);
    kvg_buf_init(&pr->model_body, 0);
    if (pr->ep && pr->ep->body == KVG_API_BODY_MULTIPART)
        return set_form_model(b, pr->mp_model_off, pr->mp_model_len, pr->ri.model, &pr->model_body);
    /* A converted request's chat bytes, if ever sent, are made from these
     * (translate.c): the served name is in them too. */
    return set_model(b->data, b->len, pr->ri.model, &pr->model_body);
}

/* The model whose fallbacks are tried: the one resolved first (a
 * fallback's own fallbacks are already in its chain, breadth first). */
static const struct kvg_catalog_model *first_model(const struct proxy_req *pr)
{
    const struct kvg_catalog *cat = pr->cat;
    if (!cat || cat->any >= 0 || pr->cmodel < 0) return NULL;
    return &cat->models[pr->fallen ? pr->primary : pr->cmodel];
}

/* The index in m's chain of the next fallback pr may take from i on: not
 * the model it is served by now, and one its key may use. -1: none. */
static int next_from(const struct proxy_req *pr, const struct kvg_catalog_model *m, size_t i)
{
    for (; i < m->nfallbacks; i++) {
        const char *name = pr->cat->models[m->fallbacks[i]].name;
        if (m->fallbacks[i] == pr->cmodel) continue;
        if (pr->gate.key && !kvg_keys_model_allowed(pr->gate.key, name, strlen(name))) continue;
        return (int)i;
    }
    return -1;
}

int kvg__proxy_model_can_fall(const struct proxy_req *pr)
{
    const struct kvg_catalog_model *m = first_model(pr);
    /* A stored object lives on one worker, and a prefill leg once sent
     * holds KV for its decode: neither moves to another model. */
    if (!m || pr->stored_worker || (kvg__proxy_pd(pr) && pr->pdr.prefill_url[0])) return 0;
    return next_from(pr, m, pr->fb_next) >= 0;
}

int kvg__proxy_model_checks_context(const struct proxy_req *pr)
{
    const struct kvg_catalog_model *m = first_model(pr);
    /* Only the model's own tokenizer counts exactly; the bytes one would
     * overcount, and the engine says a prompt is too long itself. */
    return m && m->nfallbacks && pr->pm && pr->pm->tokenizer_exact && pr->ep &&
           pr->ep->routing == KVG_API_ROUTE_PROMPT;
}

uint32_t kvg_proxy_model_context(struct kvg_proxy *px, const struct kvg_catalog_model *m)
{
    if (m->max_model_len) return m->max_model_len;
    return m->name[0] ? kvg_pool_max_model_len(px->pool, m->name, strlen(m->name)) : 0;
}

int kvg_proxy_model_past_context(uint32_t context, size_t prompt_tokens, uint32_t max_tokens)
{
    /* As vLLM judges a request: the prompt must leave room for one token,
     * and for max_tokens when it names them. */
    return context &&
           (prompt_tokens >= context || (max_tokens && prompt_tokens + max_tokens > context));
}

int kvg__proxy_model_too_long(const struct proxy_req *pr)
{
    if (!pr->ri.ids || !kvg__proxy_model_checks_context(pr)) return 0;
    uint32_t lim = kvg_proxy_model_context(pr->pl->px, &pr->cat->models[pr->cmodel]);
    return kvg_proxy_model_past_context(lim, pr->ri.nids, pr->ri.max_tokens);
}

int kvg__proxy_model_next_fallback(struct proxy_req *pr, const char *why)
{
    const struct kvg_catalog_model *m = first_model(pr);
    if (!m || !kvg__proxy_model_can_fall(pr)) return -1;
    int i = next_from(pr, m, pr->fb_next);
    const struct kvg_catalog_model *from = &pr->cat->models[pr->cmodel];
    const struct kvg_catalog_model *to = &pr->cat->models[m->fallbacks[i]];
    struct kvg_metrics_family *f = pr->pl->px->m->fallbacks;
    struct kvg_metrics_series *s;
    const char *v[3] = {from->name, to->name, why};
    if (f && !kvg_metrics_series(f, v, 3, &s)) {
        kvg_metrics_inc(s);
        kvg_metrics_series_release(s);
    }
    KVG_DEBUG("proxy %s: model %s -> fallback %s (%s)", pr->request_id, from->name, to->name, why);
    if (!pr->fallen) pr->primary = pr->cmodel;
    pr->fallen++;
    pr->fb_target = m->fallbacks[i];
    pr->fb_next = (size_t)i + 1;
    pr->fb_reason = why;
    pr->fb_from = from->name;
    return 0;
}
