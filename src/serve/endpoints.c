/* kvgate serve's endpoint table: the OpenAI surface (proxied), the models
 * union, health and readiness, and the worker admin API. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/err.h"
#include "base/log.h"
#include "gateway/quota_view.h"
#include "serve/peers.h"
#include "serve/serve.h"
#include "kv/index.h"
#include "net/resolve.h"
#include "proxy/route_input.h"
#include "router/mode.h"

static void send_json(struct kvg_http_req *req, int status, const char *json)
{
    kvg_http_res_send(req, status, "application/json", NULL, 0, json, strlen(json));
}

static struct kvg_str hdr(const void *h, const char *name)
{
    return kvg_http_req_header(h, name);
}

void kvg__serve_send_cjson(struct kvg_http_req *req, int status, cJSON *j)
{
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!s) {
        kvg_http_res_error(req, 500, NULL, NULL, "out of memory", NULL, 0);
        return;
    }
    send_json(req, status, s);
    free(s);
}

static size_t healthy_count(struct kvg_serve *sv)
{
    struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
    size_t n = kvg_pool_snapshot(&sv->pool, ws, KVG_POOL_MAX_WORKERS), h = 0;
    for (size_t i = 0; i < n; i++) {
        h += atomic_load(&ws[i]->healthy) != 0;
        kvg_worker_unref(ws[i]);
    }
    return h;
}

/* GET /v1/models: the union of the models the workers serve. */
/* The key a /v1/models request presents, when keys are on and it is valid
 * (the list is then filtered by its models); NULL otherwise. *set holds the
 * key set's reference, dropped by the caller. */
static const struct kvg_keys_entry *models_key(struct kvg_serve *sv, struct kvg_http_req *req,
                                               struct kvg_keys_set **set)
{
    *set = NULL;
    if (!sv->gate.auth_on) return NULL;
    char cred[600];
    struct kvg_str auth =
        kvg_gate_credential(kvg_http_req_header(req, "authorization"),
                            kvg_http_req_header(req, "x-api-key"), cred, sizeof cred);
    if (!(*set = kvg_keys_acquire(&sv->gate.keys))) return NULL;
    const struct kvg_keys_entry *e = NULL;
    if (kvg_keys_authenticate(*set, auth, &e) != KVG_KEYS_AUTH_OK) e = NULL;
    return e;
}

static void model_item(cJSON *data, struct kvg_serve *sv, const char *id, uint32_t max_len,
                       const char *parent)
{
    cJSON *it;
    cJSON_ArrayForEach(it, data)
    {
        cJSON *v = cJSON_GetObjectItemCaseSensitive(it, "id");
        if (v && !strcmp(v->valuestring, id)) return; /* listed by another worker */
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "object", "model");
    cJSON_AddNumberToObject(o, "created", (double)(long long)sv->started_s);
    cJSON_AddStringToObject(o, "owned_by", "kvgate");
    if (max_len) cJSON_AddNumberToObject(o, "max_model_len", max_len);
    if (parent) cJSON_AddStringToObject(o, "parent", parent);
    cJSON_AddItemToArray(data, o);
}

/* GET /v1/models: with a models: section, every name the catalog answers
 * to (models, aliases, splits: an alias and a split with the model it
 * serves first as parent); else the union of the workers' lists (an
 * adapter with its parent). Context lengths as the workers report them;
 * filtered by the presented key's models. */
static void models(struct kvg_serve_loop *lc, struct kvg_http_req *req)
{
    struct kvg_serve *sv = lc->sv;
    struct kvg_keys_set *set;
    const struct kvg_keys_entry *key = models_key(sv, req, &set);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(root, "data");
    struct kvg_catalog *cat = kvg_serve_catalog(sv);
    if (cat && cat->any < 0) {
        for (size_t i = 0; i < cat->nnames; i++) {
            const struct kvg_catalog_name *nm = &cat->names[i];
            if (key && !kvg_keys_model_allowed(key, nm->name, nm->len)) continue;
            int m = nm->model >= 0 ? nm->model : cat->splits[nm->split].model[0];
            const char *served = cat->models[m].name;
            uint32_t len = cat->models[m].max_model_len;
            if (!len) len = kvg_pool_max_model_len(&sv->pool, served, strlen(served));
            /* an alias or a split: the model it serves (a split's first) as parent */
            model_item(data, sv, nm->name, len, nm->kind == KVG_CATALOG_MODEL ? NULL : served);
        }
    } else {
        struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
        size_t n = kvg_pool_snapshot(&sv->pool, ws, KVG_POOL_MAX_WORKERS);
        for (size_t i = 0; i < n; i++) {
            struct kvg_worker *w = ws[i];
            pthread_mutex_lock(&w->mu);
            const char *base = w->models.n ? w->models.e[0].id : NULL;
            for (size_t m = 0; m < w->models.n; m++) {
                const struct kvg_model_entry *e = &w->models.e[m];
                if (key && !kvg_keys_model_allowed(key, e->id, e->len)) continue;
                model_item(data, sv, e->id, e->max_model_len,
                           e->adapter && base && !w->models.e[0].adapter ? base : NULL);
            }
            pthread_mutex_unlock(&w->mu);
            kvg_worker_unref(w);
        }
    }
    if (set) kvg_keys_unref(set);
    kvg_catalog_unref(cat);
    kvg__serve_send_cjson(req, 200, root);
}

/* "routing": {"mode": ..., "reason": ...}: the cache view w's routing uses. */
void kvg__serve_add_mode(cJSON *o, struct kvg_worker *w)
{
    char why[sizeof w->rmode.reason];
    int mode = kvg_route_mode_get(w, why, sizeof why);
    cJSON *r = cJSON_AddObjectToObject(o, "routing");
    cJSON_AddStringToObject(r, "mode", kvg_route_mode_name(mode));
    cJSON_AddStringToObject(r, "reason", why);
}

cJSON *kvg_serve_workers_json(struct kvg_serve *sv)
{
    static const char *cb_names[] = {"closed", "open", "half_open"};
    struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
    kvg_serve_modes_refresh(sv);
    size_t n = kvg_pool_snapshot(&sv->pool, ws, KVG_POOL_MAX_WORKERS);
    struct kvg_catalog *cat = kvg_serve_catalog(sv);
    cJSON *root = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(root, "workers");
    for (size_t i = 0; i < n; i++) {
        struct kvg_worker *w = ws[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "url", w->url);
        /* With models:, the model whose entry lists it (null: none, a
         * worker added by POST /workers serves no model of the catalog). */
        int cm = cat && cat->any < 0 ? kvg_serve_worker_model(sv, cat, w) : -1;
        if (cm >= 0) {
            cJSON_AddStringToObject(o, "model", cat->models[cm].name);
            /* false: its /v1/models does not list it (models_setup.c) */
            cJSON_AddBoolToObject(o, "model_confirmed", !atomic_load(&w->model_unconfirmed));
        } else if (cat && cat->any < 0) {
            cJSON_AddNullToObject(o, "model");
        }
        char mlabel[sizeof w->model_label];
        kvg_pool_model_label(&sv->pool, w, mlabel, sizeof mlabel);
        if (mlabel[0]) cJSON_AddStringToObject(o, "model_label", mlabel); /* a discovered pod's */
        cJSON_AddNumberToObject(o, "slot", w->slot);
        cJSON_AddStringToObject(o, "role", kvg_worker_role_name(atomic_load(&w->role)));
        char labels[sizeof w->labels];
        kvg_pool_labels(&sv->pool, w, labels, sizeof labels);
        if (labels[0]) cJSON_AddStringToObject(o, "labels", labels);
        char eid[64];
        /* Its model's PD router learnt it (the top level's without models:). */
        struct kvg_pd *pd =
            cm >= 0 ? ((const struct kvg_proxy_model *)cat->models[cm].host)->pd : sv->pd;
        if (pd && kvg_pd_engine_id(pd, w->url, eid, sizeof eid))
            cJSON_AddStringToObject(o, "engine_id", eid); /* a prefill's, from its answers */
        if (atomic_load(&w->bootstrap_port))
            cJSON_AddNumberToObject(o, "bootstrap_port", atomic_load(&w->bootstrap_port));
        if (w->dp_rank >= 0) cJSON_AddNumberToObject(o, "dp_rank", w->dp_rank);
        if (atomic_load(&w->member_rank) >= 0)
            cJSON_AddNumberToObject(o, "member_rank", atomic_load(&w->member_rank));
        cJSON_AddBoolToObject(o, "healthy", atomic_load(&w->healthy));
        cJSON_AddBoolToObject(o, "draining", atomic_load(&w->draining));
        cJSON_AddNumberToObject(o, "share", atomic_load(&w->share_permille) / 1000.0);
        cJSON_AddNumberToObject(o, "in_flight", atomic_load(&w->in_flight));
        /* The peer replicas' in-flight counts of it (null: none heard). */
        if (atomic_load(&w->peer_view))
            cJSON_AddNumberToObject(o, "peer_in_flight", atomic_load(&w->peer_in_flight));
        else
            cJSON_AddNullToObject(o, "peer_in_flight");
        cJSON_AddNumberToObject(o, "processed", (double)atomic_load(&w->processed));
        cJSON_AddNumberToObject(o, "cached_blocks", (double)atomic_load(&w->cached_blocks));
        cJSON_AddStringToObject(o, "circuit", cb_names[atomic_load(&w->cb_state) % 3]);
        struct kvg_engine_load l =
            kvg_worker_load(w, kvg_now_ms(), sv->cfg.proxy.metrics_staleness_ms);
        cJSON *eng = cJSON_AddObjectToObject(o, "engine");
        if (l.waiting >= 0)
            cJSON_AddNumberToObject(eng, "waiting", l.waiting);
        else
            cJSON_AddNullToObject(eng, "waiting");
        if (l.running >= 0)
            cJSON_AddNumberToObject(eng, "running", l.running);
        else
            cJSON_AddNullToObject(eng, "running");
        if (l.kv_usage >= 0)
            cJSON_AddNumberToObject(eng, "kv_usage", l.kv_usage);
        else
            cJSON_AddNullToObject(eng, "kv_usage");
        if (l.block_size) cJSON_AddNumberToObject(eng, "block_size", l.block_size);
        if (l.at_ms) cJSON_AddNumberToObject(eng, "age_ms", (double)(kvg_now_ms() - l.at_ms));
        cJSON *sc = cJSON_AddObjectToObject(o, "scrape");
        pthread_mutex_lock(&w->mu);
        cJSON_AddStringToObject(sc, "state", kvg_worker_scrape_state_name(w->scrape_state));
        if (w->scrape_error[0]) cJSON_AddStringToObject(sc, "error", w->scrape_error);
        pthread_mutex_unlock(&w->mu);
        cJSON_AddNumberToObject(sc, "errors", (double)atomic_load(&w->scrape_errors));
        kvg__serve_add_mode(o, w);
        cJSON_AddNumberToObject(o, "prompt_token_checks", (double)atomic_load(&w->usage_checks));
        cJSON_AddNumberToObject(o, "prompt_token_mismatches",
                                (double)atomic_load(&w->usage_mismatches));
        if (sv->kv && w->slot >= 0)
            cJSON_AddNumberToObject(o, "kv_index_blocks",
                                    (double)kvg_kv_index_worker_entries(sv->kv, (uint32_t)w->slot));
        cJSON *ms = cJSON_AddArrayToObject(o, "models");
        pthread_mutex_lock(&w->mu);
        for (size_t m = 0; m < w->models.n; m++)
            cJSON_AddItemToArray(ms, cJSON_CreateString(w->models.e[m].id));
        pthread_mutex_unlock(&w->mu);
        cJSON_AddItemToArray(arr, o);
        kvg_worker_unref(w);
    }
    kvg_catalog_unref(cat);
    kvg__serve_peers_json(sv, root);
    return root;
}

static void workers_list(struct kvg_serve_loop *lc, struct kvg_http_req *req)
{
    kvg__serve_send_cjson(req, 200, kvg_serve_workers_json(lc->sv));
}

static int url_decode(const char *in, size_t n, char *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k + 1 >= cap) return -1;
        if (in[i] == '%' && i + 2 < n) {
            char hex[3] = {in[i + 1], in[i + 2], 0};
            char *end;
            long v = strtol(hex, &end, 16);
            if (*end) return -1;
            out[k++] = (char)v;
            i += 2;
        } else {
            out[k++] = in[i];
        }
    }
    out[k] = 0;
    return 0;
}

/* A POST /workers whose URL is being resolved (net/resolve.h); owned by
 * the resolution, freed in added(). req is NULL once the client has gone:
 * the worker is added all the same, nobody is answered. */
struct worker_add {
    struct kvg_serve_loop *lc;
    struct kvg_http_req *req;
    char url[512], kv[256], replay[256], key[256];
};

static void worker_add_abort(struct kvg_http_req *req, void *ud)
{
    (void)req;
    ((struct worker_add *)ud)->req = NULL;
}

static void add_failed(struct kvg_http_req *req, const char *url, int rc)
{
    char msg[600];
    snprintf(msg, sizeof msg, "cannot add worker %s: %s", url, kvg_strerror(rc));
    kvg_http_res_error(req, 400, NULL, NULL, msg, NULL, 0);
}

/* The URL is resolved (or not): add the worker, on the loop's thread. */
static void added(void *ud, int status, const struct kvg_http_target *t)
{
    struct worker_add *a = ud;
    struct kvg_serve *sv = a->lc->sv;
    int rc = status ? status : kvg_pool_add_at(&sv->pool, a->url, a->kv, a->replay, t);
    if (!rc && a->key[0]) { /* its own key instead of the common one */
        struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
        size_t n = kvg_pool_snapshot(&sv->pool, ws, KVG_POOL_MAX_WORKERS);
        for (size_t i = 0; i < n; i++) {
            if (!strcmp(ws[i]->url, a->url)) kvg_worker_set_api_key(ws[i], a->key);
            kvg_worker_unref(ws[i]);
        }
    }
    if (!rc) uv_async_send(&sv->health_kick);
    struct kvg_http_req *req = a->req;
    if (req) {
        req->on_abort = NULL;
        if (rc == -EEXIST)
            kvg_http_res_error(req, 409, NULL, NULL, "worker already in the pool", NULL, 0);
        else if (rc)
            add_failed(req, a->url, rc);
        else
            send_json(req, 201, "{\"status\":\"added\"}");
    }
    free(a);
}

/* POST /workers {"url": "..."}, DELETE /workers/{url}: never from the query
 * string (the guard refuses one, gateway/guard.h). The URL's host is
 * resolved off the loop: a slow DNS answer stalls no other request. */
static void workers_add(struct kvg_serve_loop *lc, struct kvg_http_req *req)
{
    struct worker_add *a = calloc(1, sizeof *a);
    if (!a) {
        kvg_http_res_error(req, 500, NULL, NULL, "out of memory", NULL, 0);
        return;
    }
    a->lc = lc;
    a->req = req;
    cJSON *j = req->body.len ? cJSON_ParseWithLength(req->body.data, req->body.len) : NULL;
    cJSON *u = j ? cJSON_GetObjectItemCaseSensitive(j, "url") : NULL;
    cJSON *k = j ? cJSON_GetObjectItemCaseSensitive(j, "kv_events_endpoint") : NULL;
    cJSON *r = j ? cJSON_GetObjectItemCaseSensitive(j, "replay_endpoint") : NULL;
    cJSON *ak = j ? cJSON_GetObjectItemCaseSensitive(j, "upstream_api_key") : NULL;
    if (cJSON_IsString(ak) && strlen(ak->valuestring) < sizeof a->key)
        snprintf(a->key, sizeof a->key, "%s", ak->valuestring);
    if (cJSON_IsString(u) && strlen(u->valuestring) < sizeof a->url)
        snprintf(a->url, sizeof a->url, "%s", u->valuestring);
    if (cJSON_IsString(k) && strlen(k->valuestring) < sizeof a->kv)
        snprintf(a->kv, sizeof a->kv, "%s", k->valuestring);
    if (cJSON_IsString(r) && strlen(r->valuestring) < sizeof a->replay)
        snprintf(a->replay, sizeof a->replay, "%s", r->valuestring);
    cJSON_Delete(j);
    if (!a->url[0]) {
        kvg_http_res_error(req, 400, NULL, NULL,
                           "give the worker as {\"url\": \"http://host:port\"}", NULL, 0);
        free(a);
        return;
    }
    if (a->kv[0] && !lc->sv->kv)
        KVG_WARN("POST /workers: %s publishes KV events, but this router was started without "
                 "any (--kv-events-endpoints): they are not used",
                 a->url);
    char base[sizeof a->url]; /* the URL without its "@rank" */
    snprintf(base, sizeof base, "%.*s", (int)kvg_worker_url_base(a->url), a->url);
    int rc = kvg_resolve_url(&lc->loop, base, added, a);
    if (rc) {
        add_failed(req, a->url, rc);
        free(a);
        return;
    }
    req->ud = a;
    req->on_abort = worker_add_abort;
}

static void workers_delete(struct kvg_serve_loop *lc, struct kvg_http_req *req)
{
    char url[512];
    struct kvg_str rest = {req->path.p + 9, req->path.len - 9}; /* after "/workers/" */
    if (url_decode(rest.p, rest.len, url, sizeof url) || !url[0]) {
        kvg_http_res_error(req, 400, NULL, NULL, "bad worker URL", NULL, 0);
        return;
    }
    int rc = kvg_pool_remove(&lc->sv->pool, url);
    if (rc)
        kvg_http_res_error(req, 404, NULL, NULL, "no such worker", NULL, 0);
    else
        send_json(req, 200, "{\"status\":\"removed\"}");
}

static void quota_usage_done(void *ud, cJSON *j)
{
    struct kvg_http_req *req = ud;
    req->on_abort = NULL;
    if (!j)
        kvg_http_res_error(req, 500, NULL, NULL, "out of memory", NULL, 0);
    else
        kvg__serve_send_cjson(req, 200, j);
}

static void quota_usage_abort(struct kvg_http_req *req, void *ud)
{
    (void)req;
    kvg_gate_quota_view_cancel(ud);
}

/* GET /quota/usage: what every quota sees now, read without charging. */
static void quota_usage(struct kvg_serve_loop *lc, struct kvg_http_req *req)
{
    struct kvg_gate_quota_view *v;
    int rc = kvg_gate_quota_view(&lc->gate, quota_usage_done, req, &v);
    if (rc == KVG_ENOTFOUND) {
        kvg_http_res_error(req, 404, NULL, NULL, "no keys: quotas are off (start with --keys FILE)",
                           NULL, 0);
    } else if (rc) {
        kvg_http_res_error(req, 500, NULL, NULL, "cannot read the quotas", NULL, 0);
    } else if (v) {
        req->ud = v;
        req->on_abort = quota_usage_abort;
    }
}

static int is(const struct kvg_http_req *req, const char *path)
{
    return kvg_str_eq(req->path, path);
}

/* Who may reach each endpoint; anything not listed needs what the API
 * needs, so an unknown path tells a client without a key nothing. */
static enum kvg_gate_access access_of(struct kvg_str path)
{
    if (kvg_str_eq(path, "/health") || kvg_str_eq(path, "/liveness") ||
        kvg_str_eq(path, "/readiness"))
        return KVG_GATE_PUBLIC;
    if (kvg_str_eq(path, "/metrics") || kvg_str_eq(path, "/v1/models") ||
        kvg_str_eq(path, "/serving"))
        return KVG_GATE_READ;
    if (kvg_str_eq(path, "/ui") || kvg_str_eq(path, "/ui/state")) return KVG_GATE_ADMIN;
    if (kvg_str_eq(path, "/autoscale/metrics")) return KVG_GATE_READ; /* KEDA reads it */
    if (kvg_str_eq(path, "/workers") || (path.len > 9 && !memcmp(path.p, "/workers/", 9)) ||
        kvg_str_eq(path, "/autoscale") || kvg_str_eq(path, "/quota/usage") ||
        (path.len >= 7 && !memcmp(path.p, "/debug/", 7)))
        return KVG_GATE_ADMIN;
    return KVG_GATE_API;
}

/* What an admin request does, for the guard: a GET reads; /debug/route
 * reads too, by POST (the status page's form); anything else changes. */
static enum kvg_guard_kind admin_kind(const struct kvg_http_req *req)
{
    if (!strcmp(req->method_name, "GET") || !strcmp(req->method_name, "HEAD"))
        return KVG_GUARD_READ;
    if (req->path.len >= 7 && !memcmp(req->path.p, "/debug/", 7)) return KVG_GUARD_QUERY;
    return KVG_GUARD_WRITE;
}

/* A refusal of an Anthropic endpoint, in Anthropic's error shape. */
static int anthropic_refusal(const struct kvg_http_refusal *r, struct kvg_buf *out)
{
    return kvg_api_error_body(KVG_API_SHAPE_ANTHROPIC, r->status, NULL, r->code, r->message,
                              r->param, out);
}

void kvg_serve_refused(const struct kvg_http_req *req, void *ud, struct kvg_http_refusal *out)
{
    struct kvg_serve_loop *lc = ud;
    unsigned allow;
    const struct kvg_api_endpoint *ep =
        kvg_api_find(req->path.p, req->path.len, req->method_name, &allow, NULL, NULL);
    if (ep && ep->shape == KVG_API_SHAPE_ANTHROPIC) out->render = anthropic_refusal;
    kvg_proxy_refused(&lc->sv->proxy, req, out, "limit");
}

int kvg_serve_head_check(struct kvg_http_req *req, void *ud, struct kvg_http_refusal *out)
{
    struct kvg_serve_loop *lc = ud;
    struct kvg_gate_deny d;
    if (kvg_str_eq(req->path, KVG_SERVE_PEERS_PATH)) { /* its own secret: peers.c */
        int refused = kvg__serve_peers_head(lc->sv, req, out);
        if (refused) kvg_proxy_refused(&lc->sv->proxy, req, out, "head");
        return refused;
    }
    enum kvg_gate_access a = access_of(req->path);
    char cred[600];
    struct kvg_str auth =
        kvg_gate_credential(kvg_http_req_header(req, "authorization"),
                            kvg_http_req_header(req, "x-api-key"), cred, sizeof cred);
    if (!kvg_gate_check_head(&lc->sv->gate, a, auth, req->peer, &req->head_note, &d)) {
        if (a != KVG_GATE_ADMIN) return 0;
        struct kvg_guard_req gr = {.method = req->method_name,
                                   .query = req->query,
                                   .header = hdr,
                                   .hctx = req,
                                   .keys_on = lc->sv->gate.auth_on};
        int refused = kvg_guard_check(&lc->sv->admin_guard, admin_kind(req), &gr, out);
        if (refused) kvg_proxy_refused(&lc->sv->proxy, req, out, "head");
        return refused;
    }
    *out = d.r; /* its headers are static strings */
    kvg_proxy_refused(&lc->sv->proxy, req, out, "head");
    unsigned allow;
    const struct kvg_api_endpoint *ep =
        kvg_api_find(req->path.p, req->path.len, req->method_name, &allow, NULL, NULL);
    out->render = ep && ep->shape == KVG_API_SHAPE_ANTHROPIC ? anthropic_refusal : NULL;
    /* A browser opening the status page gets its login prompt (the admin
     * key as the password). */
    if (out->status == 401 && kvg_str_eq(req->path, "/ui") &&
        out->nheaders < KVG_ARRAY_LEN(out->headers))
        out->headers[out->nheaders++] =
            (struct kvg_http_header){KVG_STR("www-authenticate"),
                                     KVG_STR("Basic realm=\"kvgate admin\", charset=\"UTF-8\"")};
    return 1;
}

void kvg_serve_handle(struct kvg_http_req *req, void *ud)
{
    struct kvg_serve_loop *lc = ud;
    int get = !strcmp(req->method_name, "GET") || !strcmp(req->method_name, "HEAD");
    int post = !strcmp(req->method_name, "POST");
    /* The engines' APIs (api/api.h's table) go to the proxy. */
    unsigned allow = 0;
    const char *id = NULL;
    size_t id_len = 0;
    const struct kvg_api_endpoint *ep =
        kvg_api_find(req->path.p, req->path.len, req->method_name, &allow, &id, &id_len);
    if (ep) {
        kvg_proxy_handle(&lc->proxy, req, ep, id, id_len);
        return;
    }
    if (is(req, "/ui") && get) {
        kvg_serve_ui_page(lc->sv, req);
        return;
    }
    if (is(req, "/ui/state") && get) {
        kvg_serve_ui_state(lc->sv, req);
        return;
    }
    if (is(req, "/serving") && get) {
        kvg_serve_serving(lc->sv, req);
        return;
    }
    if (is(req, "/quota/usage") && get) {
        quota_usage(lc, req);
        return;
    }
    if (is(req, "/v1/models") && get) {
        models(lc, req);
        return;
    }
    if ((is(req, "/health") || is(req, "/liveness")) && get) {
        send_json(req, 200, "{\"status\":\"ok\"}");
        return;
    }
    if (is(req, KVG_SERVE_PEERS_PATH)) {
        if (post)
            kvg__serve_peers_receive(lc->sv, req);
        else
            kvg_http_res_error(req, 405, NULL, NULL, "use POST", NULL, 0);
        return;
    }
    if (is(req, "/debug/route")) {
        if (post)
            kvg__serve_debug_route(lc, req);
        else
            kvg_http_res_error(req, 405, NULL, NULL, "use POST", NULL, 0);
        return;
    }
    if (is(req, "/metrics") && get) {
        struct kvg_buf b;
        kvg_buf_init(&b, 0);
        if (kvg_serve_metrics_render(lc->sv, &b))
            kvg_http_res_error(req, 500, NULL, NULL, "cannot render metrics", NULL, 0);
        else
            kvg_http_res_send(req, 200, KVG_METRICS_CONTENT_TYPE, NULL, 0, b.data, b.len);
        kvg_buf_free(&b);
        return;
    }
    if ((is(req, "/autoscale") || is(req, "/autoscale/metrics")) && get) {
        struct kvg_buf b;
        kvg_buf_init(&b, 0);
        int rc = kvg_serve_autoscale_body(lc->sv, is(req, "/autoscale/metrics"), &b);
        if (rc == KVG_ENOTFOUND)
            kvg_http_res_error(req, 404, NULL, NULL, "no autoscaler: start with --autoscale FILE",
                               NULL, 0);
        else if (rc)
            kvg_http_res_error(req, 500, NULL, NULL, "cannot render the autoscaler", NULL, 0);
        else
            kvg_http_res_send(req, 200, "application/json", NULL, 0, b.data, b.len);
        kvg_buf_free(&b);
        return;
    }
    if (is(req, "/readiness") && get) {
        size_t h = healthy_count(lc->sv);
        if (atomic_load(&lc->sv->draining))
            send_json(req, 503, "{\"status\":\"draining\"}");
        else if (h == 0)
            send_json(req, 503, "{\"status\":\"no healthy workers\"}");
        else
            send_json(req, 200, "{\"status\":\"ready\"}");
        return;
    }
    if (is(req, "/workers")) {
        if (get)
            workers_list(lc, req);
        else if (post)
            workers_add(lc, req);
        else
            kvg_http_res_error(req, 405, NULL, NULL, "use GET or POST", NULL, 0);
        return;
    }
    if (req->path.len > 9 && !strncmp(req->path.p, "/workers/", 9)) {
        if (!strcmp(req->method_name, "DELETE"))
            workers_delete(lc, req);
        else
            kvg_http_res_error(req, 405, NULL, NULL, "use DELETE", NULL, 0);
        return;
    }
    /* Counted and logged like every request: a 404 naming the path, or a
     * 405 with Allow for a known path. */
    kvg_proxy_no_endpoint(&lc->proxy, req, allow);
}
