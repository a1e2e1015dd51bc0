/* POST /debug/route (serve/endpoints.c dispatches it): what the router
 * would do with a request body, explained, with nothing forwarded and no
 * routing state changed: the served model and its fallback (docs/models.md),
 * the PD decision and legs, each candidate's scores. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "base/err.h"
#include "serve/serve.h"
#include "pd/pd.h"
#include "proxy/route_input.h"
#include "router/mode.h"

static void num_or_null(cJSON *o, const char *k, double v)
{
    if (v < 0)
        cJSON_AddNullToObject(o, k);
    else
        cJSON_AddNumberToObject(o, k, v);
}

static struct kvg_str hdr(const void *h, const char *name)
{
    return kvg_http_req_header(h, name);
}

/* A leg's worker ("prefill" or "decode"): its data-parallel rank (null for
 * a plain URL) and the host:port kvgate dials, which for a URL@rank worker
 * is the member's one listener (the rank is no part of it). */
static void explain_leg(cJSON *o, const char *leg, const struct kvg_worker *w)
{
    char k[32];
    snprintf(k, sizeof k, "%s_dp_rank", leg);
    if (w->dp_rank >= 0)
        cJSON_AddNumberToObject(o, k, w->dp_rank);
    else
        cJSON_AddNullToObject(o, k);
    snprintf(k, sizeof k, "%s_target", leg);
    cJSON_AddStringToObject(o, k, w->target.hostport);
}

/* Under PD, the pair: the prefill pick (a dry run over prefill workers),
 * the decision, and the context for the decode pick that the caller then
 * explains (near the prefill: labels[] must outlive the pick). */
static cJSON *pd_explain(struct kvg_serve *sv, struct kvg_pd *pd, struct kvg_route_ctx *ctx,
                         const cJSON *req, uint64_t tokens, char *labels, size_t cap)
{
    cJSON *o = cJSON_CreateObject();
    struct kvg_route_ctx pc = *ctx;
    struct kvg_pick pp = {0}, dp = {0};
    uint64_t cached = 0;
    pc.roles = 1u << KVG_ROLE_DECODE; /* the decode side's cache, as the pool's policy sees it */
    if (ctx->block_size && kvg_pool_pick(&sv->pool, &pc, NULL, 0, &dp, NULL, NULL) == 0) {
        cached = (uint64_t)dp.matched_blocks * ctx->block_size;
        kvg_worker_unref(dp.w);
    }
    enum kvg_pd_decision d = kvg_pd_decide(tokens, cached, pd->cfg.threshold_tokens);
    /* vLLM EPD: media always take the prefill leg (pd/encode.c); SGLang
     * splits every request, as kvg_pd_begin does. */
    if ((pd->cfg.epd && pd->cfg.mode == KVG_PD_VLLM && kvg_pd_media_items(req)) ||
        pd->cfg.mode == KVG_PD_SGLANG)
        d = KVG_PD_PREFILL_DECODE;
    cJSON_AddStringToObject(o, "mode", kvg_pd_mode_name(pd->cfg.mode));
    cJSON_AddStringToObject(o, "decision", kvg_pd_decision_name(d));
    cJSON_AddNumberToObject(o, "prompt_tokens", (double)tokens);
    cJSON_AddNumberToObject(o, "decode_cached_tokens", (double)cached);
    cJSON_AddNumberToObject(o, "threshold_tokens", pd->cfg.threshold_tokens);
    labels[0] = 0;
    pc.roles = 1u << KVG_ROLE_PREFILL;
    pc.policy = pd->prefill_policy;
    if (d == KVG_PD_PREFILL_DECODE &&
        kvg_pool_pick(&sv->pool, &pc, NULL, 0, &pp, NULL, NULL) == 0) {
        cJSON_AddStringToObject(o, "prefill", pp.w->url);
        cJSON_AddStringToObject(o, "prefill_labels", pp.w->labels);
        explain_leg(o, "prefill", pp.w);
        snprintf(labels, cap, "%s", pp.w->labels);
        kvg_worker_unref(pp.w);
    } else {
        cJSON_AddNullToObject(o, "prefill");
    }
    kvg_pd_encode_explain(pd, ctx, req, o);
    ctx->roles = 1u << KVG_ROLE_DECODE;
    ctx->policy = pd->decode_policy;
    ctx->near_labels = labels[0] ? labels : NULL;
    return o;
}

/* The served model's candidates (the catalog's model t->m's workers). */
struct turn {
    const struct kvg_catalog *cat;
    int m;
};

static int in_model(void *ud, struct kvg_worker *w)
{
    const struct turn *t = ud;
    return kvg_catalog_worker_model(t->cat, w->url, w->model_label) ==
           t->m; /* under the pool's lock */
}

/* The body parsed for one model's turn (t->m < 0: the single model of the
 * flags): its routing text, its tokens by that model's tokenizer, and the
 * dry-run routing context over that model's workers. 0, or a parse error
 * (msg). */
static int prepare(struct kvg_serve_loop *lc, struct kvg_http_req *req, enum kvg_api_kind kind,
                   struct turn *t, struct kvg_rinput *ri, struct kvg_route_ctx *ctx, char *msg,
                   size_t msglen)
{
    struct kvg_serve *sv = lc->sv;
    if (kvg_rinput_parse(ri, req->body.data, req->body.len, kind, msg, msglen)) return KVG_EPARSE;
    const struct kvg_catalog_model *m = t->m >= 0 ? &t->cat->models[t->m] : NULL;
    const struct kvg_proxy_model *pm = m ? m->host : NULL;
    struct kvg_str name =
        m ? (struct kvg_str){m->name, strlen(m->name)} : (struct kvg_str){ri->model, ri->model_len};
    kvg_rinput_text(ri);
    ri->adapter = kvg_pool_model_is_adapter(&sv->pool, name.p, name.len);
    /* Tokens when the policy reads them, or for a model with fallbacks
     * whose own tokenizer counts the prompt against its context. */
    if (pm && (pm->wants_tokens || (pm->tokenizer_exact && t->cat->models[t->m].nfallbacks)))
        kvg_rinput_tokenize(ri, &pm->rt, 1);
    else if (!pm && sv->proxy.wants_tokens)
        kvg_rinput_tokenize(ri, &sv->proxy.rt, 1);
    *ctx = (struct kvg_route_ctx){.body = {req->body.data, req->body.len},
                                  .load_max_age_ms = sv->cfg.proxy.metrics_staleness_ms,
                                  .header = hdr,
                                  .hctx = req,
                                  .rng = &lc->rng,
                                  .now_ms = kvg_now_ms(),
                                  .dry_run = 1};
    kvg_rinput_ctx(ri, ctx);
    if (m) {
        ctx->model = name;
        ctx->filter = in_model;
        ctx->filter_ud = t;
        if (pm->policy) ctx->policy = pm->policy;
    }
    return 0;
}

/* Whether a worker of ctx's model could take the request now: under its
 * PD mode, a prefill and a decode (the proxy falls back when it finds no
 * prefill for a request to split, or no decode). */
static int can_serve(struct kvg_serve *sv, const struct kvg_pd *pd, const struct kvg_route_ctx *ctx)
{
    static const unsigned pair[] = {1u << KVG_ROLE_PREFILL, 1u << KVG_ROLE_DECODE};
    const unsigned any = 0;
    const unsigned *roles = pd ? pair : &any;
    for (size_t i = 0; i < (pd ? 2u : 1u); i++) {
        struct kvg_route_ctx c = *ctx;
        struct kvg_pick p = {0};
        c.roles = roles[i];
        if (kvg_pool_pick(&sv->pool, &c, NULL, 0, &p, NULL, NULL)) return 0;
        kvg_worker_unref(p.w);
    }
    return 1;
}

/* With a models: section, which model serves the request: the one its
 * name resolves to, else (a prompt past its context, no worker to take
 * it) the first of its fallbacks that can, as the proxy tries them
 * (proxy/models.c). t->m is that model, ri and ctx prepared for it; *why
 * and *from say the last fallback taken (NULL: none). */
static int choose_model(struct kvg_serve_loop *lc, struct kvg_http_req *req, enum kvg_api_kind kind,
                        struct turn *t, struct kvg_rinput *ri, struct kvg_route_ctx *ctx,
                        const char **why, const char **from, char *msg, size_t msglen)
{
    struct kvg_serve *sv = lc->sv;
    const struct kvg_catalog_model *first = &t->cat->models[t->m];
    size_t next = 0;
    for (;;) {
        int rc = prepare(lc, req, kind, t, ri, ctx, msg, msglen);
        if (rc) return rc;
        const struct kvg_catalog_model *m = &t->cat->models[t->m];
        const struct kvg_proxy_model *pm = m->host;
        const char *reason = NULL;
        if (first->nfallbacks && pm->tokenizer_exact && ri->ids &&
            kvg_proxy_model_past_context(kvg_proxy_model_context(&sv->proxy, m), ri->nids,
                                         ri->max_tokens)) {
            reason = "context_length";
        } else if (can_serve(sv, pm->pd, ctx)) {
            return 0;
        } else {
            reason = "no_healthy_worker";
        }
        while (next < first->nfallbacks && first->fallbacks[next] == t->m) next++;
        if (next >= first->nfallbacks) return 0; /* none left: this one, explained */
        *why = reason;
        *from = m->name;
        t->m = first->fallbacks[next++];
        kvg_rinput_free(ri);
    }
}

/* POST /debug/route: the routing decision for a request body, explained,
 * without forwarding it and without changing any routing state. With a
 * models: section: the model asked, the one served, and the fallback
 * taken and why. */
void kvg__serve_debug_route(struct kvg_serve_loop *lc, struct kvg_http_req *req)
{
    struct kvg_serve *sv = lc->sv;
    struct kvg_rinput ri;
    char msg[128];
    /* The endpoint the body is for: x-kvgate-endpoint names its path
     * (/v1/responses, /v1/messages, /generate...); else chat when the body
     * has messages, completions otherwise. */
    enum kvg_api_kind kind =
        !req->body.len || memmem(req->body.data, req->body.len, "\"messages\"", 10)
            ? KVG_API_CHAT
            : KVG_API_COMPLETIONS;
    struct kvg_str named = kvg_http_req_header(req, "x-kvgate-endpoint");
    if (named.p) {
        unsigned allow;
        const struct kvg_api_endpoint *ep =
            kvg_api_find(named.p, named.len, "POST", &allow, NULL, NULL);
        if (!ep || ep->routing != KVG_API_ROUTE_PROMPT) {
            kvg_http_res_error(req, 400, NULL, NULL,
                               "x-kvgate-endpoint must name an endpoint routed by its prompt "
                               "(/v1/chat/completions, /v1/completions, /v1/responses, "
                               "/v1/messages, /generate)",
                               NULL, 0);
            return;
        }
        kind = ep->kind;
    }
    struct kvg_catalog *cat = kvg_serve_catalog(sv);
    struct turn t = {cat, -1};
    struct kvg_route_ctx ctx;
    const char *why = NULL, *from = NULL;
    char asked[256] = "";
    int rc = prepare(lc, req, kind, &t, &ri, &ctx, msg, sizeof msg);
    if (!rc && cat && cat->any < 0) {
        struct kvg_catalog_pick cp;
        struct kvg_str key = kvg_proxy_session_key(&ri, hdr, req);
        kvg_catalog_resolve(cat, ri.model, ri.model_len, key.p, key.len, kvg_rng_double(&lc->rng),
                            &cp);
        snprintf(asked, sizeof asked, "%.*s", (int)ri.model_len, ri.model);
        kvg_rinput_free(&ri);
        if (cp.model < 0) {
            char m404[400];
            snprintf(m404, sizeof m404, "The model `%s` does not exist.", asked);
            kvg_http_res_error(req, 404, "invalid_request_error", "model_not_found", m404, NULL, 0);
            kvg_catalog_unref(cat);
            return;
        }
        t.m = cp.model;
        rc = choose_model(lc, req, kind, &t, &ri, &ctx, &why, &from, msg, sizeof msg);
    }
    if (rc) {
        kvg_http_res_error(req, 400, NULL, NULL, msg, NULL, 0);
        kvg_catalog_unref(cat);
        return;
    }
    kvg_serve_modes_refresh(sv);
    char near[256];
    /* The served model's own serving mode (the flags' one model: the top level's). */
    struct kvg_pd *pd =
        t.m >= 0 ? ((const struct kvg_proxy_model *)cat->models[t.m].host)->pd : sv->pd;
    const char *unsplit = pd ? kvg_proxy_pd_unsplit_reason(pd, kind) : NULL;
    cJSON *pdj = NULL;
    near[0] = 0;
    if (unsplit) { /* served whole by a decode worker (proxy.c) */
        pdj = cJSON_CreateObject();
        cJSON_AddStringToObject(pdj, "decision", "aggregated_on_decode");
        cJSON_AddStringToObject(pdj, "reason", unsplit);
        ctx.roles = 1u << KVG_ROLE_DECODE;
    } else if (pd) {
        pdj = pd_explain(sv, pd, &ctx, ri.json, ri.ids ? ri.nids : req->body.len / 4, near,
                         sizeof near);
    }
    static _Thread_local struct kvg_route_score scores[KVG_POOL_MAX_WORKERS];
    static _Thread_local struct kvg_worker *cands[KVG_POOL_MAX_WORKERS];
    struct kvg_route_explain ex = {.scores = scores, .cands = cands};
    struct kvg_pick pick = {0};
    int known = 0;
    rc = kvg_pool_pick(&sv->pool, &ctx, NULL, 0, &pick, &known, &ex);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "policy",
                            ctx.policy ? ctx.policy->ops->name
                            : pd       ? pd->decode_policy->ops->name
                                       : sv->cfg.policy);
    if (t.m >= 0) {
        cJSON *mj = cJSON_AddObjectToObject(root, "model");
        cJSON_AddStringToObject(mj, "requested", asked);
        cJSON_AddStringToObject(mj, "served", cat->models[t.m].name);
        if (why) {
            cJSON *fj = cJSON_AddObjectToObject(mj, "fallback");
            cJSON_AddStringToObject(fj, "from", from);
            cJSON_AddStringToObject(fj, "reason", why);
        } else {
            cJSON_AddNullToObject(mj, "fallback");
        }
    }
    if (pdj) {
        if (rc == 0) {
            cJSON_AddStringToObject(pdj, "decode", pick.w->url);
            explain_leg(pdj, "decode", pick.w);
            if (near[0])
                cJSON_AddNumberToObject(pdj, "decode_locality",
                                        kvg_pd_locality(near, pick.w->labels));
        }
        cJSON_AddItemToObject(root, "pd", pdj);
    }
    if (rc == 0)
        cJSON_AddStringToObject(root, "chosen", pick.w->url);
    else
        cJSON_AddNullToObject(root, "chosen");
    char none[600];
    if (rc == KVG_ENOWORKER) /* the real reason, not the code's name (the page shows it) */
        kvg_pool_why_none(&sv->pool, &ctx, none, sizeof none);
    else if (rc)
        snprintf(none, sizeof none, "%s", kvg_strerror(rc));
    cJSON_AddStringToObject(root, "note", rc == 0 ? ex.note : none);
    cJSON_AddNumberToObject(root, "prompt_tokens", (double)ri.nids);
    cJSON_AddNumberToObject(root, "prompt_blocks", (double)ri.nhashes);
    cJSON_AddBoolToObject(root, "precise", sv->kv != NULL);
    cJSON *arr = cJSON_AddArrayToObject(root, "workers");
    for (size_t i = 0; i < ex.n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "url", cands[i]->url);
        num_or_null(o, "matched_blocks", scores[i].matched_blocks);
        num_or_null(o, "prefill_blocks", scores[i].prefill_blocks);
        num_or_null(o, "lora_cost", scores[i].lora_cost);
        num_or_null(o, "decode_blocks", scores[i].decode_blocks);
        struct kvg_engine_load l = kvg_worker_load(cands[i], ctx.now_ms, ctx.load_max_age_ms);
        num_or_null(o, "waiting", scores[i].waiting >= 0 ? scores[i].waiting : l.waiting);
        num_or_null(o, "kv_usage", scores[i].kv_usage >= 0 ? scores[i].kv_usage : l.kv_usage);
        if (scores[i].score == -1)
            cJSON_AddNullToObject(o, "score");
        else
            cJSON_AddNumberToObject(o, "score", scores[i].score);
        cJSON_AddNumberToObject(o, "in_flight", atomic_load(&cands[i]->in_flight));
        kvg__serve_add_mode(o, cands[i]);
        cJSON_AddItemToArray(arr, o);
    }
    for (size_t i = 0; i < ex.n; i++) kvg_worker_unref(cands[i]);
    if (pick.w) kvg_worker_unref(pick.w);
    kvg_rinput_free(&ri);
    kvg_catalog_unref(cat);
    kvg__serve_send_cjson(req, rc == 0 ? 200 : 503, root);
}
