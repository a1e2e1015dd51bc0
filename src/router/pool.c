/* Pool membership and the pick/release pair; see pool.h. */
#include "router/pool.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "base/util.h"

int kvg_pool_init(struct kvg_pool *p, struct kvg_policy *policy, const struct kvg_cb_config *cb)
{
    memset(p, 0, sizeof *p);
    if (pthread_rwlock_init(&p->lock, NULL)) return -ENOMEM;
    p->policy = policy;
    if (cb)
        p->cb = *cb;
    else
        kvg_cb_config_default(&p->cb);
    return 0;
}

void kvg_pool_destroy(struct kvg_pool *p)
{
    for (size_t i = 0; i < p->n; i++) kvg_worker_unref(p->w[i]);
    p->n = 0;
    if (p->policy) p->policy->ops->destroy(p->policy);
    p->policy = NULL;
    pthread_rwlock_destroy(&p->lock);
}

static int find(struct kvg_pool *p, const char *url)
{
    size_t n = strlen(url);
    while (n && url[n - 1] == '/') n--;
    for (size_t i = 0; i < p->n; i++)
        if (strlen(p->w[i]->url) == n && !memcmp(p->w[i]->url, url, n)) return (int)i;
    return -1;
}

/* Lowest slot number not used by a current worker (KV index keys stay small). */
static int free_slot(struct kvg_pool *p)
{
    for (int s = 0;; s++) {
        size_t i = 0;
        while (i < p->n && p->w[i]->slot != s) i++;
        if (i == p->n) return s;
    }
}

static int add_locked(struct kvg_pool *p, const char *url, const char *kv, const char *replay,
                      const struct kvg_http_target *t)
{
    if (find(p, url) >= 0) return -EEXIST;
    if (p->n == KVG_POOL_MAX_WORKERS) return -ENOSPC;
    struct kvg_worker *w;
    int rc = kvg_worker_new_at(url, t, &w);
    if (rc) return rc;
    /* A rank worker's events come from its rank's publisher: vLLM offsets
     * the endpoint's port (and the replay port) by the rank. */
    if ((kv && kv[0] && strcmp(kv, "none") &&
         (rc = kvg_worker_rank_endpoint(kv, w->dp_rank, w->kv_endpoint, sizeof w->kv_endpoint))) ||
        (replay && replay[0] && strcmp(replay, "none") &&
         (rc = kvg_worker_rank_endpoint(replay, w->dp_rank, w->replay_endpoint,
                                        sizeof w->replay_endpoint)))) {
        kvg_worker_unref(w);
        return rc;
    }
    w->slot = free_slot(p);
    atomic_store(&w->healthy, !p->start_unhealthy);
    p->w[p->n++] = w;
    if (p->on_add) p->on_add(p->hooks_ud, w);
    return 0;
}

static void remove_at_locked(struct kvg_pool *p, size_t i)
{
    struct kvg_worker *w = p->w[i];
    atomic_store(&w->removed, 1);
    p->w[i] = p->w[--p->n];
    if (p->policy->ops->on_remove) p->policy->ops->on_remove(p->policy, w);
    if (p->on_remove) p->on_remove(p->hooks_ud, w);
    kvg_worker_unref(w);
}

int kvg_pool_add(struct kvg_pool *p, const char *url)
{
    return kvg_pool_add_ex(p, url, NULL, NULL);
}

int kvg_pool_add_ex(struct kvg_pool *p, const char *url, const char *kv_endpoint,
                    const char *replay_endpoint)
{
    return kvg_pool_add_at(p, url, kv_endpoint, replay_endpoint, NULL);
}

int kvg_pool_add_at(struct kvg_pool *p, const char *url, const char *kv_endpoint,
                    const char *replay_endpoint, const struct kvg_http_target *t)
{
    pthread_rwlock_wrlock(&p->lock);
    int rc = add_locked(p, url, kv_endpoint, replay_endpoint, t);
    pthread_rwlock_unlock(&p->lock);
    if (!rc) KVG_INFO("pool: added worker %s", url);
    return rc;
}

int kvg_pool_remove(struct kvg_pool *p, const char *url)
{
    pthread_rwlock_wrlock(&p->lock);
    int i = find(p, url);
    if (i >= 0) remove_at_locked(p, (size_t)i);
    pthread_rwlock_unlock(&p->lock);
    if (i < 0) return KVG_ENOTFOUND;
    KVG_INFO("pool: removed worker %s", url);
    return 0;
}

int kvg_pool_set_role(struct kvg_pool *p, const char *url, int role, int dp_rank)
{
    pthread_rwlock_rdlock(&p->lock);
    int i = find(p, url);
    if (i >= 0) {
        atomic_store(&p->w[i]->role, role);
        atomic_store(&p->w[i]->member_rank, dp_rank);
    }
    pthread_rwlock_unlock(&p->lock);
    return i < 0 ? KVG_ENOTFOUND : 0;
}

/* A worker's text field at off (cap bytes), written under the write lock:
 * the pick reads it under the read lock. */
static int set_text(struct kvg_pool *p, const char *url, size_t off, size_t cap, const char *v)
{
    pthread_rwlock_wrlock(&p->lock);
    int i = find(p, url);
    if (i >= 0) snprintf((char *)p->w[i] + off, cap, "%s", v ? v : "");
    pthread_rwlock_unlock(&p->lock);
    return i < 0 ? KVG_ENOTFOUND : 0;
}

static void get_text(struct kvg_pool *p, const struct kvg_worker *w, size_t off, char *out,
                     size_t cap)
{
    pthread_rwlock_rdlock(&p->lock);
    snprintf(out, cap, "%s", (const char *)w + off);
    pthread_rwlock_unlock(&p->lock);
}

int kvg_pool_set_labels(struct kvg_pool *p, const char *url, const char *labels)
{
    return set_text(p, url, offsetof(struct kvg_worker, labels),
                    sizeof((struct kvg_worker *)0)->labels, labels);
}

void kvg_pool_labels(struct kvg_pool *p, const struct kvg_worker *w, char *out, size_t cap)
{
    get_text(p, w, offsetof(struct kvg_worker, labels), out, cap);
}

int kvg_pool_set_model_label(struct kvg_pool *p, const char *url, const char *model)
{
    return set_text(p, url, offsetof(struct kvg_worker, model_label),
                    sizeof((struct kvg_worker *)0)->model_label, model);
}

void kvg_pool_model_label(struct kvg_pool *p, const struct kvg_worker *w, char *out, size_t cap)
{
    get_text(p, w, offsetof(struct kvg_worker, model_label), out, cap);
}

int kvg_pool_set_bootstrap_port(struct kvg_pool *p, const char *url, int port)
{
    pthread_rwlock_rdlock(&p->lock);
    int i = find(p, url);
    if (i >= 0) atomic_store(&p->w[i]->bootstrap_port, port);
    pthread_rwlock_unlock(&p->lock);
    return i < 0 ? KVG_ENOTFOUND : 0;
}

int kvg_pool_set(struct kvg_pool *p, char *const *urls, size_t n)
{
    return kvg_pool_set_ex(p, urls, NULL, NULL, n);
}

static size_t url_len(const char *u)
{
    size_t n = strlen(u);
    while (n && u[n - 1] == '/') n--;
    return n;
}

int kvg_pool_find_duplicate(char *const *urls, size_t n)
{
    for (size_t j = 1; j < n; j++)
        for (size_t i = 0; i < j; i++)
            if (url_len(urls[i]) == url_len(urls[j]) && !memcmp(urls[i], urls[j], url_len(urls[j])))
                return (int)j;
    return -1;
}

int kvg_pool_set_ex(struct kvg_pool *p, char *const *urls, char *const *kv_endpoints,
                    char *const *replay_endpoints, size_t n)
{
    int rc = 0;
    if (kvg_pool_find_duplicate(urls, n) >= 0) return -EEXIST;
    pthread_rwlock_wrlock(&p->lock);
    for (size_t i = p->n; i-- > 0;) {
        size_t j = 0;
        while (j < n && strcmp(urls[j], p->w[i]->url)) j++;
        if (j == n && !atomic_load(&p->w[i]->scaled)) remove_at_locked(p, i);
    }
    for (size_t j = 0; j < n; j++) {
        int r = add_locked(p, urls[j], kv_endpoints ? kv_endpoints[j] : NULL,
                           replay_endpoints ? replay_endpoints[j] : NULL, NULL);
        if (r && r != -EEXIST && !rc) rc = r;
    }
    pthread_rwlock_unlock(&p->lock);
    return rc;
}

size_t kvg_pool_snapshot(struct kvg_pool *p, struct kvg_worker **out, size_t max)
{
    pthread_rwlock_rdlock(&p->lock);
    size_t n = KVG_MIN(p->n, max);
    for (size_t i = 0; i < n; i++) {
        out[i] = p->w[i];
        kvg_worker_ref(out[i]);
    }
    pthread_rwlock_unlock(&p->lock);
    return n;
}

uint32_t kvg_pool_max_model_len(struct kvg_pool *p, const char *model, size_t len)
{
    uint32_t v = 0;
    pthread_rwlock_rdlock(&p->lock);
    for (size_t i = 0; i < p->n; i++) v = KVG_MAX(v, kvg_worker_max_model_len(p->w[i], model, len));
    pthread_rwlock_unlock(&p->lock);
    return v;
}

/* 1 when is(w, model, len) for some worker w. */
static int any_worker(struct kvg_pool *p, const char *model, size_t len,
                      int (*is)(struct kvg_worker *, const char *, size_t))
{
    int v = 0;
    if (!model || !len) return 0;
    pthread_rwlock_rdlock(&p->lock);
    for (size_t i = 0; i < p->n && !v; i++) v = is(p->w[i], model, len);
    pthread_rwlock_unlock(&p->lock);
    return v;
}

int kvg_pool_model_is_adapter(struct kvg_pool *p, const char *model, size_t len)
{
    return any_worker(p, model, len, kvg_worker_model_is_adapter);
}

int kvg_pool_model_listed(struct kvg_pool *p, const char *model, size_t len)
{
    return any_worker(p, model, len, kvg_worker_lists);
}

/* Slow start: a candidate with a partial share stays one with that
 * probability, unless no full-share worker is a candidate (then every
 * candidate stays: a pool of young replicas still serves). Returns the new
 * count; order is kept. */
static size_t slow_start(struct kvg_worker **cand, size_t n, struct kvg_rng *rng)
{
    size_t full = 0;
    for (size_t i = 0; i < n; i++)
        full += atomic_load_explicit(&cand[i]->share_permille, memory_order_relaxed) >= 1000;
    if (!full || full == n) return n;
    if (!rng) rng = kvg_rand_thread();
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t sh = atomic_load_explicit(&cand[i]->share_permille, memory_order_relaxed);
        if (sh >= 1000 || kvg_rng_below(rng, 1000) < sh) cand[k++] = cand[i];
    }
    return k;
}

int kvg_pool_pick(struct kvg_pool *p, const struct kvg_route_ctx *ctx,
                  struct kvg_worker *const *exclude, size_t nexclude, struct kvg_pick *out,
                  int *model_known, struct kvg_route_explain *ex)
{
    struct kvg_worker *cand[KVG_POOL_MAX_WORKERS];
    struct kvg_route_score scratch[KVG_POOL_MAX_WORKERS];
    struct kvg_route_explain local = {.scores = scratch};
    size_t n = 0;
    int known = 0;
    pthread_rwlock_rdlock(&p->lock);
    for (size_t i = 0; i < p->n; i++) {
        struct kvg_worker *w = p->w[i];
        if (!kvg_worker_serves(w, ctx->model.p, ctx->model.len)) continue;
        known = 1;
        if (!atomic_load_explicit(&w->healthy, memory_order_relaxed)) continue;
        if (atomic_load_explicit(&w->draining, memory_order_relaxed)) continue;
        if (!kvg_cb_allows(&p->cb, w, ctx->now_ms)) continue;
        if (ctx->roles && !(ctx->roles & (1u << atomic_load(&w->role)))) continue;
        /* An encoder produces no tokens: only the encode stage asks for it. */
        if (!ctx->roles && atomic_load(&w->role) == KVG_ROLE_ENCODE) continue;
        if (ctx->filter && !ctx->filter(ctx->filter_ud, w)) continue;
        size_t k = 0;
        while (k < nexclude && exclude[k] != w) k++;
        if (k < nexclude) continue;
        cand[n++] = w;
    }
    n = slow_start(cand, n, ctx->rng);
    int rc = KVG_ENOWORKER;
    if (!ex || !ex->scores) ex = &local; /* policies always report; only /debug/route reads */
    if (n) {
        ex->n = n;
        for (size_t i = 0; i < n; i++) {
            ex->scores[i] = (struct kvg_route_score){-1, -1, -1, -1, -1, -1, -1};
            if (ex->cands) {
                ex->cands[i] = cand[i];
                kvg_worker_ref(cand[i]);
            }
        }
        struct kvg_policy *pol = ctx->policy ? ctx->policy : p->policy;
        rc = pol->ops->select(pol, cand, n, ctx, ex);
        if (rc >= 0 && (size_t)rc < n) {
            struct kvg_worker *w = cand[rc];
            double mb = ex->scores[rc].matched_blocks;
            kvg_worker_ref(w);
            out->w = w;
            if (ctx->dry_run) {
                pthread_rwlock_unlock(&p->lock);
                if (model_known) *model_known = known;
                out->matched_blocks = mb > 0 ? (uint32_t)mb : 0;
                return 0; /* nothing charged: the caller only unrefs out->w */
            }
            if (ctx->lora.len) kvg_worker_lora_sent(w, ctx->lora.p, ctx->lora.len, ctx->now_ms);
            atomic_fetch_add_explicit(&w->in_flight, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&w->processed, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&w->cached_blocks, mb > 0 ? (uint64_t)mb : 0,
                                      memory_order_relaxed);
            out->matched_blocks = mb > 0 ? (uint32_t)mb : 0;
            out->prefill_tokens = out->decode_blocks = 0;
            out->picked_ms = ctx->now_ms;
            out->policy = ctx->policy;
            out->work_tokens =
                atomic_load_explicit(&w->active_prefill_tokens, memory_order_relaxed);
            if (ctx->block_size && ctx->ntokens) {
                uint64_t cached = (uint64_t)out->matched_blocks * ctx->block_size;
                out->prefill_tokens = ctx->ntokens > cached ? ctx->ntokens - cached : 0;
                /* Blocks the request adds to the worker's KV: those it does not
                 * already hold. Blocks it shares with what is cached (and
                 * with the requests in flight there) count once, as
                 * Dynamo's tracker does with router_assume_kv_reuse. */
                uint64_t total = (ctx->ntokens + ctx->block_size - 1) / ctx->block_size;
                out->decode_blocks = total > out->matched_blocks ? total - out->matched_blocks : 0;
                out->work_tokens += out->prefill_tokens;
                atomic_fetch_add_explicit(&w->active_prefill_tokens, out->prefill_tokens,
                                          memory_order_relaxed);
                atomic_fetch_add_explicit(&w->active_decode_blocks, out->decode_blocks,
                                          memory_order_relaxed);
            }
            if (p->on_pick) p->on_pick(p->on_pick_ud, w, pol, ctx);
            rc = 0;
        } else if (rc >= 0) {
            rc = KVG_ENOWORKER;
        }
    }
    pthread_rwlock_unlock(&p->lock);
    if (model_known) *model_known = known;
    return rc;
}

void kvg_pool_first_token_at(struct kvg_pool *p, struct kvg_pick *pick, uint64_t now_ms)
{
    /* Only a pick still waiting for its first token teaches anything; a
     * retry's or a release's call comes after. */
    struct kvg_policy *pol = pick->policy ? pick->policy : p->policy;
    if (pick->w && pick->picked_ms && now_ms >= pick->picked_ms && pol->ops->on_first_token)
        pol->ops->on_first_token(pol, pick->w, pick->work_tokens, now_ms - pick->picked_ms);
    pick->picked_ms = 0;
    kvg_pool_first_token(p, pick);
}

void kvg_pool_first_token(struct kvg_pool *p, struct kvg_pick *pick)
{
    pick->picked_ms = 0;
    if (!pick->w || !pick->prefill_tokens) return;
    atomic_fetch_sub_explicit(&pick->w->active_prefill_tokens, pick->prefill_tokens,
                              memory_order_relaxed);
    pick->prefill_tokens = 0;
}

enum kvg_outcome kvg_pool_answer_outcome(int status)
{
    if (status >= 200 && status < 400) return KVG_OUT_OK;
    if (status == 502 || status == 503 || status == 504) return KVG_OUT_FAIL;
    if (status == 429) return KVG_OUT_CLIENT_ERROR;
    return KVG_OUT_ANSWER_ERROR;
}

/* Is w an outlier (router/circuit.h)? The rest of the pool is every other
 * worker whose circuit is closed: an ejected worker's errors are no
 * measure of what the requests deserve. Only error answers come here. */
static int answer_error_counts(struct kvg_pool *p, struct kvg_worker *w)
{
    uint32_t n, err, on = 0, oerr = 0;
    kvg_cb_answers(w, &n, &err);
    pthread_rwlock_rdlock(&p->lock);
    for (size_t i = 0; i < p->n; i++) {
        uint32_t a, e;
        if (p->w[i] == w || atomic_load(&p->w[i]->cb_state) != KVG_CB_CLOSED) continue;
        kvg_cb_answers(p->w[i], &a, &e);
        on += a;
        oerr += e;
    }
    pthread_rwlock_unlock(&p->lock);
    return kvg_cb_outlier(n, err, on, oerr);
}

void kvg_pool_release(struct kvg_pool *p, struct kvg_pick *pick, enum kvg_outcome outcome,
                      const struct kvg_route_ctx *ctx)
{
    struct kvg_worker *w = pick->w;
    if (!w) return;
    kvg_pool_first_token(p, pick);
    if (pick->decode_blocks)
        atomic_fetch_sub_explicit(&w->active_decode_blocks, pick->decode_blocks,
                                  memory_order_relaxed);
    pick->decode_blocks = 0;
    pick->w = NULL;
    atomic_fetch_sub_explicit(&w->in_flight, 1, memory_order_relaxed);
    if (outcome == KVG_OUT_OK) atomic_fetch_add_explicit(&w->ok_requests, 1, memory_order_relaxed);
    if (outcome == KVG_OUT_OK || outcome == KVG_OUT_ANSWER_ERROR)
        kvg_cb_note_answer(w, outcome == KVG_OUT_ANSWER_ERROR);
    if (outcome == KVG_OUT_OK || outcome == KVG_OUT_FAIL ||
        (outcome == KVG_OUT_ANSWER_ERROR && answer_error_counts(p, w)))
        kvg_cb_record(&p->cb, w, outcome == KVG_OUT_OK, kvg_now_ms());
    struct kvg_policy *pol = ctx && ctx->policy ? ctx->policy : p->policy;
    if (pol->ops->on_done) pol->ops->on_done(pol, w, ctx);
    kvg_worker_unref(w);
}

size_t kvg_pool_size(struct kvg_pool *p)
{
    pthread_rwlock_rdlock(&p->lock);
    size_t n = p->n;
    pthread_rwlock_unlock(&p->lock);
    return n;
}

int kvg_pool_place(struct kvg_pool *p, const char *url, const struct kvg_route_ctx *ctx)
{
    pthread_rwlock_rdlock(&p->lock); /* as a pick: the worker stays while the policy reads it */
    int i = find(p, url);
    struct kvg_policy *pol = ctx->policy ? ctx->policy : p->policy;
    if (i >= 0 && pol->ops->place) pol->ops->place(pol, p->w[i], ctx);
    pthread_rwlock_unlock(&p->lock);
    return i >= 0 ? 0 : KVG_ENOTFOUND;
}

int kvg_pool_peer_pick(struct kvg_pool *p, const char *url)
{
    pthread_rwlock_rdlock(&p->lock);
    int i = find(p, url);
    if (i >= 0) atomic_fetch_add_explicit(&p->w[i]->peer_picks, 1, memory_order_relaxed);
    pthread_rwlock_unlock(&p->lock);
    return i >= 0 ? 0 : KVG_ENOTFOUND;
}

/* Appends ", name" (the first without the comma) unless listed already. */
static void add_model_name(char *list, size_t cap, const char *name)
{
    size_t nl = strlen(name), len = strlen(list);
    for (const char *s = list; *s;) {
        const char *e = strstr(s, ", ");
        size_t l = e ? (size_t)(e - s) : strlen(s);
        if (l == nl && !memcmp(s, name, nl)) return;
        if (!e) break;
        s = e + 2;
    }
    snprintf(list + len, cap - len, "%s%s", len ? ", " : "", name);
}

void kvg_pool_why_none(struct kvg_pool *p, const struct kvg_route_ctx *ctx, char *buf, size_t cap)
{
    size_t serving = 0, unhealthy = 0, draining = 0, open = 0, role = 0, filtered = 0;
    char served[400] = "";
    pthread_rwlock_rdlock(&p->lock);
    size_t total = p->n;
    for (size_t i = 0; i < p->n; i++) {
        struct kvg_worker *w = p->w[i];
        if (!kvg_worker_serves(w, ctx->model.p, ctx->model.len)) {
            pthread_mutex_lock(&w->mu);
            for (size_t m = 0; m < w->models.n && strlen(served) + 64 < sizeof served; m++)
                add_model_name(served, sizeof served, w->models.e[m].id);
            pthread_mutex_unlock(&w->mu);
            continue;
        }
        serving++;
        int r = atomic_load_explicit(&w->role, memory_order_relaxed);
        /* the same order of tests as kvg_pool_pick: each worker counted once */
        if (!atomic_load_explicit(&w->healthy, memory_order_relaxed))
            unhealthy++;
        else if (atomic_load_explicit(&w->draining, memory_order_relaxed))
            draining++;
        else if (!kvg_cb_allows(&p->cb, w, ctx->now_ms))
            open++;
        else if ((ctx->roles && !(ctx->roles & (1u << r))) || (!ctx->roles && r == KVG_ROLE_ENCODE))
            role++;
        else if (ctx->filter && !ctx->filter(ctx->filter_ud, w))
            filtered++;
    }
    pthread_rwlock_unlock(&p->lock);
    if (!total) {
        snprintf(buf, cap, "the pool has no workers");
        return;
    }
    if (!serving) {
        snprintf(buf, cap, "no worker serves the model `%.*s` (served: %s)", (int)ctx->model.len,
                 ctx->model.p ? ctx->model.p : "", served[0] ? served : "none listed yet");
        return;
    }
    size_t k =
        (size_t)snprintf(buf, cap, "no worker of the %zu serving `%.*s` can take it:", serving,
                         (int)ctx->model.len, ctx->model.p ? ctx->model.p : "");
    const struct {
        size_t n;
        const char *what;
    } parts[] = {{unhealthy, "unhealthy"},
                 {draining, "draining"},
                 {open, "circuit open"},
                 {role, ctx->roles ? "not of the role this leg needs" : "encoders"},
                 {filtered, "left out by the request's constraints"}};
    int any = 0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0] && k < cap; i++) {
        if (!parts[i].n) continue;
        k += (size_t)snprintf(buf + k, cap - k, "%s %zu %s", any ? "," : "", parts[i].n,
                              parts[i].what);
        any = 1;
    }
    if (!any && k < cap) snprintf(buf + k, cap - k, " the policy chose none of them");
}
