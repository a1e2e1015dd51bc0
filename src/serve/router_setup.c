/* The router inside kvgate serve: the served model's tokenizer and chat
 * template (so requests become the token ids the engines compute), the
 * precise KV index with one ZMQ subscriber per worker that publishes events,
 * the policy, and the pool whose join/leave hooks keep index, subscriptions
 * and metrics in step with the worker list. */
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "serve/serve.h"
#include "discovery/discovery.h"
#include "kv/index.h"
#include "kv/subscriber.h"
#include "router/mode.h"
#include "jinja/chat.h"
#include "tokenizer/tokenizer.h"

const char *kvg_serve_upstream_key(const struct kvg_serve_config *c, const char *url)
{
    for (size_t i = 0; i < c->upstream_keys.n && i < c->workers.n; i++)
        if (!strcmp(c->workers.v[i], url) && strcmp(c->upstream_keys.v[i], "none"))
            return c->upstream_keys.v[i];
    return c->upstream_api_key;
}

static void on_add(void *ud, struct kvg_worker *w)
{
    struct kvg_serve *sv = ud;
    kvg_worker_set_api_key(w, kvg_serve_upstream_key(&sv->cfg, w->url));
    if (!sv->kv || w->slot < 0) return;
    if (w->slot < KVG_POOL_MAX_WORKERS) atomic_store(&sv->slot_rank[w->slot], w->dp_rank + 1);
    int rc = kvg_kv_index_add_worker(sv->kv, (uint32_t)w->slot);
    if (rc && rc != -EEXIST)
        KVG_WARN("kv index: slot %d for %s: %s", w->slot, w->url, kvg_strerror(rc));
    if (w->kv_endpoint[0]) {
        rc = kvg_kv_sub_add_worker(sv->sub, (uint32_t)w->slot, w->kv_endpoint,
                                   w->replay_endpoint[0] ? w->replay_endpoint : NULL);
        if (rc)
            KVG_WARN("kv events: cannot subscribe to %s for %s: %s", w->kv_endpoint, w->url,
                     kvg_strerror(rc));
        else
            KVG_INFO("kv events: %s publishes on %s%s%s", w->url, w->kv_endpoint,
                     w->replay_endpoint[0] ? ", replay " : "", w->replay_endpoint);
    }
}

static void on_remove(void *ud, struct kvg_worker *w)
{
    struct kvg_serve *sv = ud;
    kvg_serve_metrics_forget_worker(&sv->metrics, w->url);
    if (!sv->kv || w->slot < 0) return;
    if (w->kv_endpoint[0]) kvg_kv_sub_remove_worker(sv->sub, (uint32_t)w->slot);
    int n = kvg_kv_index_remove_worker(sv->kv, (uint32_t)w->slot);
    if (n > 0) KVG_INFO("kv index: %s left, %d entries dropped", w->url, n);
}

/* Subscriber thread, every batch: vLLM stamps each batch with the rank that
 * published it, and each rank publishes on its own port, so URL@r's
 * endpoint must carry rank r only. A batch of another rank (a wrong port,
 * or a plain URL in front of a data-parallel engine) is counted and logged
 * (at powers of two): its blocks land on a worker that does not hold them. */
static void on_batch(void *arg, uint32_t slot, int64_t dp_rank, const struct kvg_kv_batch *b)
{
    (void)b;
    struct kvg_serve *sv = arg;
    if (slot >= KVG_POOL_MAX_WORKERS) return;
    int want = atomic_load(&sv->slot_rank[slot]) - 1;
    int bad = want >= 0 ? dp_rank != want : dp_rank > 0;
    if (!bad) return;
    uint64_t n = atomic_fetch_add(&sv->dp_rank_mismatches, 1) + 1;
    if (n & (n - 1)) return;
    if (want >= 0)
        KVG_WARN("kv events: worker slot %u is rank %d but its endpoint sent a batch of rank "
                 "%lld (%llu such batches): check its --kv-events-endpoints (vLLM publishes "
                 "rank r on port + r)",
                 slot, want, (long long)dp_rank, (unsigned long long)n);
    else
        KVG_WARN("kv events: worker slot %u sent a batch of data-parallel rank %lld (%llu such "
                 "batches): list a data-parallel engine as URL@rank workers, one per rank",
                 slot, (long long)dp_rank, (unsigned long long)n);
}

int kvg_serve_apply_roles(struct kvg_pool *pool, const struct kvg_serve_config *c)
{
    for (size_t i = 0; i < c->workers.n; i++) {
        const char *r = i < c->worker_roles.n ? c->worker_roles.v[i] : "regular";
        int role = !strcmp(r, "prefill")  ? KVG_ROLE_PREFILL
                   : !strcmp(r, "decode") ? KVG_ROLE_DECODE
                   : !strcmp(r, "encode") ? KVG_ROLE_ENCODE
                                          : KVG_ROLE_REGULAR;
        const char *l = i < c->worker_labels.n ? c->worker_labels.v[i] : "none";
        uint64_t bport = 0;
        if (i < c->worker_bootstrap.n && strcmp(c->worker_bootstrap.v[i], "none"))
            kvg_parse_u64(c->worker_bootstrap.v[i], &bport);
        int rc;
        if ((rc = kvg_pool_set_bootstrap_port(pool, c->workers.v[i], (int)bport)) ||
            (rc = kvg_pool_set_role(pool, c->workers.v[i], role, -1)) ||
            (rc = kvg_pool_set_labels(pool, c->workers.v[i], strcmp(l, "none") ? l : "")))
            return rc;
    }
    return 0;
}

int kvg_serve_router_init(struct kvg_serve *sv, char *err, size_t errlen)
{
    struct kvg_serve_config *c = &sv->cfg;
    int rc = kvg_tok_load(c->tokenizer, c->tokenizer_config[0] ? c->tokenizer_config : NULL,
                          &sv->tok, err, errlen);
    int fallback = 0;
    if (rc == KVG_EUNSUPP) {
        /* A tokenizer kvgate cannot reproduce exactly: never route on wrong
         * token ids. Prefix awareness falls back to the request text (its
         * bytes as tokens, matched only against this router's own routing). */
        KVG_WARN("tokenizer %s: %s; prefix-aware routing falls back to approximate, text-based "
                 "matching (precise KV matching is off)",
                 c->tokenizer, err);
        fallback = 1;
        rc = kvg_tok_load("builtin:bytes", NULL, &sv->tok, err, errlen);
    }
    if (rc) return rc;
    kvg_metrics_set(sv->metrics.tokenizer_fallback, fallback);
    sv->tok_fallback = fallback;
    /* --chat-template, as vLLM's: the engine may render with another template
     * than its tokenizer config's, and kvgate must render with the same. */
    struct kvg_buf tpl;
    kvg_buf_init(&tpl, 16u << 20);
    if (c->chat_template[0]) {
        if ((rc = kvg_buf_read_file(&tpl, c->chat_template)) ||
            (rc = kvg_buf_append(&tpl, "", 1))) {
            kvg_buf_free(&tpl);
            return kvg_err_set(err, errlen, KVG_ECONFIG, "--chat-template %s: %s", c->chat_template,
                               kvg_strerror(rc));
        }
        KVG_INFO("chat template from %s (not the tokenizer config's)", c->chat_template);
    }
    rc = kvg_jinja_chat_new(tpl.len ? tpl.data : kvg_tok_chat_template(sv->tok),
                            kvg_tok_bos_token(sv->tok), kvg_tok_eos_token(sv->tok), &sv->chat, err,
                            errlen);
    kvg_buf_free(&tpl);
    if (rc) return rc;
    if (c->tokenizer_cache_bytes &&
        (rc = kvg_tok_pcache_new(sv->tok, (size_t)c->tokenizer_cache_bytes, &sv->tok_cache)))
        return rc;
    int events = 0;
    for (size_t i = 0; i < c->kv_endpoints.n; i++)
        events |= strcmp(c->kv_endpoints.v[i], "none") != 0;
    sv->events_configured = events;
    if (events && fallback) {
        KVG_WARN("KV events are ignored: their token ids cannot be matched without the model's "
                 "tokenizer");
    } else if (events) {
        struct kvg_kv_index_opts io = {.block_size = c->block_size,
                                       .max_workers = KVG_POOL_MAX_WORKERS,
                                       .max_entries = c->kv_index_max_entries};
        struct kvg_kv_sub_opts so = {.threads = 1, .on_batch = on_batch, .on_batch_arg = sv};
        if ((rc = kvg_kv_index_new(&io, &sv->kv)) || (rc = kvg_kv_sub_new(sv->kv, &so, &sv->sub)) ||
            (rc = kvg_kv_sub_start(sv->sub))) {
            snprintf(err, errlen, "KV index: %s", kvg_strerror(rc));
            return rc;
        }
        c->policy_opts.kv = sv->kv;
    }
    struct kvg_policy *policy;
    if ((rc = kvg_policy_new(c->policy, &c->policy_opts, &policy))) {
        if (rc == KVG_ENOTFOUND)
            snprintf(err, errlen, "unknown --policy '%s' (known: %s)", c->policy,
                     kvg_policy_names());
        else
            snprintf(err, errlen, "--policy %s: %s (check its options)", c->policy,
                     kvg_strerror(rc));
        return rc;
    }
    /* Embeddings, scoring, audio and stored responses have no KV to chase:
     * they go by load whatever --policy is. */
    if ((rc = kvg_policy_new("least_load", &c->policy_opts, &sv->proxy.load_policy))) {
        policy->ops->destroy(policy);
        snprintf(err, errlen, "least_load policy: %s", kvg_strerror(rc));
        return rc;
    }
    sv->proxy.wants_tokens = policy->ops->wants_tokens;
    sv->proxy.wants_text = policy->ops->wants_text;
    if ((rc = kvg_pool_init(&sv->pool, policy, &c->cb))) return rc;
    sv->pool.start_unhealthy = c->health_enabled;
    sv->pool.on_add = on_add;
    sv->pool.on_remove = on_remove;
    sv->pool.hooks_ud = sv;
    for (size_t i = 0; i < c->workers.n; i++) {
        rc = kvg_pool_add_ex(&sv->pool, c->workers.v[i],
                             c->kv_endpoints.n ? c->kv_endpoints.v[i] : NULL,
                             c->replay_endpoints.n ? c->replay_endpoints.v[i] : NULL);
        if (rc == -EEXIST) {
            /* Two entries would collapse into one worker (the banner and
             * /workers would disagree); data-parallel ranks are URL@rank. */
            snprintf(err, errlen,
                     "worker '%s' is listed twice (for data-parallel ranks behind one URL, "
                     "list URL@0, URL@1, ...)",
                     c->workers.v[i]);
            return KVG_ECONFIG;
        }
        if (rc) {
            snprintf(err, errlen, "worker '%s': %s", c->workers.v[i], kvg_strerror(rc));
            return rc;
        }
    }
    if ((rc = kvg_serve_apply_roles(&sv->pool, c))) return rc;
    if (c->pd.mode != KVG_PD_OFF) {
        if ((rc = kvg_pd_new(&c->pd, &c->policy_opts, &sv->pool, sv->metrics.reg, &sv->pd, err,
                             errlen)))
            return rc;
        sv->proxy.pd = sv->pd;
    }
    if (policy->ops->wants_tokens && !sv->kv && strcmp(c->policy, "prefix_hash"))
        KVG_INFO("policy %s: no worker publishes KV events (--kv-events-endpoints): prefix "
                 "knowledge is approximate, from this router's own routing",
                 c->policy);
    return 0;
}

void kvg_serve_modes_refresh(struct kvg_serve *sv)
{
    const struct kvg_policy *p = sv->pool.policy;
    struct kvg_route_mode_in in = {
        .policy = p->ops->name,
        .reads_prefix = p->ops->wants_tokens || p->ops->wants_text,
        .precise = p->ops->reads_events && p->ops->reads_events(p),
        .block_size = sv->cfg.block_size,
        .now_ms = kvg_now_ms(),
    };
    char why[128];
    if (!in.precise && sv->kv) {
        snprintf(why, sizeof why,
                 "policy %s does not read KV events: it matches on its own routing history",
                 p->ops->name);
        in.approx_why = why;
    } else if (!in.precise && sv->events_configured && sv->tok_fallback) {
        in.approx_why = "KV events ignored (the model's tokenizer could not be used): matched "
                        "against this router's routing history";
    } else if (!in.precise && !strcmp(p->ops->name, "prefix_hash")) {
        in.approx_why = "no KV events: the prompt's prefix is hashed to a worker";
    }
    struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
    size_t n = kvg_pool_snapshot(&sv->pool, ws, KVG_POOL_MAX_WORKERS);
    for (size_t i = 0; i < n; i++) {
        struct kvg_worker *w = ws[i];
        struct kvg_kv_sub_stats st;
        in.events = NULL;
        in.has_replay = w->replay_endpoint[0] != 0;
        if (sv->sub && w->kv_endpoint[0] && w->slot >= 0 &&
            kvg_kv_sub_stats(sv->sub, (uint32_t)w->slot, &st) == 0)
            in.events = &st;
        kvg_route_mode_update(w, &in, NULL);
        kvg_worker_unref(w);
    }
}

static void on_discovered(void *ud)
{
    struct kvg_serve *sv = ud;
    uv_async_send(&sv->health_kick); /* new workers wait for their first check */
}

/* Whether a pod's model label names a model of the current catalog
 * (discovery's thread; the catalog is taken and given back). */
static int model_known(void *ud, const char *model)
{
    struct kvg_catalog *cat = kvg_serve_catalog(ud);
    int ok = cat && kvg_catalog_worker_model(cat, "", model) >= 0;
    kvg_catalog_unref(cat);
    return ok;
}

int kvg_serve_discovery_start(struct kvg_serve *sv, char *err, size_t errlen)
{
    struct kvg_serve_config *c = &sv->cfg;
    if (!c->service_discovery) return 0;
    struct kvg_discovery_opts o = {.namespace_ = c->sd_namespace,
                                   .model_label = c->model_label,
                                   .model_known = model_known,
                                   .api_url = c->sd_api_url[0] ? c->sd_api_url : NULL,
                                   .ca_file = c->sd_ca_file[0] ? c->sd_ca_file : NULL,
                                   .token_file = c->sd_token_file[0] ? c->sd_token_file : NULL,
                                   .resync_s = 300,
                                   .on_change = on_discovered,
                                   .ud = sv};
    o.rules.dp_aware = c->dp_aware;
    o.rules.port = c->sd_port;
    /* config.c checked every term already. */
    int rc = kvg_discovery_selector_parse((const char *const *)c->selector.v, c->selector.n,
                                          &o.rules.regular, err, errlen);
    if (!rc)
        rc = kvg_discovery_selector_parse((const char *const *)c->prefill_selector.v,
                                          c->prefill_selector.n, &o.rules.prefill, err, errlen);
    if (!rc)
        rc = kvg_discovery_selector_parse((const char *const *)c->decode_selector.v,
                                          c->decode_selector.n, &o.rules.decode, err, errlen);
    if (!rc)
        rc = kvg_discovery_selector_parse((const char *const *)c->encode_selector.v,
                                          c->encode_selector.n, &o.rules.encode, err, errlen);
    if (!rc) rc = kvg_discovery_start(&o, &sv->pool, &sv->disc, err, errlen);
    return rc;
}

void kvg_serve_router_free(struct kvg_serve *sv)
{
    kvg_discovery_free(sv->disc);          /* stopped already; its workers go with the pool */
    if (sv->sub) kvg_kv_sub_free(sv->sub); /* stops its threads first */
    kvg_pd_free(sv->pd);
    sv->pd = NULL;
    kvg_pool_destroy(&sv->pool);
    if (sv->proxy.load_policy) sv->proxy.load_policy->ops->destroy(sv->proxy.load_policy);
    sv->proxy.load_policy = NULL;
    if (sv->kv) kvg_kv_index_free(sv->kv);
    if (sv->chat) kvg_jinja_chat_free(sv->chat);
    kvg_tok_pcache_free(sv->tok_cache);
    if (sv->tok) kvg_tok_free(sv->tok);
}
