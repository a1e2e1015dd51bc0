/* kvgate serve's side of the `local` actuator (autoscale_int.h): the hooks
 * that register, drain and remove its replicas in the router pool; the
 * routing history (each request's first pick: its prompt prefix, the
 * worker, the model and prompt kvgate rendered) behind the cache-aware
 * scale-down choice and the prewarm; the prewarm itself (the hottest
 * prefixes sent to a replica that just became healthy, prefill only: a
 * completions request kvgate builds itself, {model, prompt, max_tokens 1},
 * never a client's body, with the replica's upstream key; all at once, before
 * it takes traffic; each replay that answers 200 is placed on it in the
 * router's policy, kvg_proxy_place, so that its prefix's traffic follows)
 * and its slow start (its share of picks ramps from 10% to
 * all over slow_start_secs); and the gateway queue held while the pool has
 * no ready replica (scale from zero), woken when one is ready. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/util.h"
#include "router/route_text.h"
#include "serve/autoscale_int.h"

/* A reference to the pool's worker named url, or NULL. */
static struct kvg_worker *find(struct kvg_serve *sv, const char *url)
{
    struct kvg_worker *ws[KVG_POOL_MAX_WORKERS], *hit = NULL;
    size_t n = kvg_pool_snapshot(&sv->pool, ws, KVG_POOL_MAX_WORKERS);
    for (size_t i = 0; i < n; i++) {
        if (!hit && !strcmp(ws[i]->url, url))
            hit = ws[i];
        else
            kvg_worker_unref(ws[i]);
    }
    return hit;
}

static double now_s(struct kvg_serve_autoscale *a)
{
    return kvg_now_s() - a->t0;
}

/* A prefill or decode pool's replica is that role's worker in the router
 * (as a --worker-roles or discovered one): the PD pairing picks it for its
 * leg. An aggregated pool's stays regular. */
static int set_role(struct kvg_serve *sv, const char *url, enum kvg_autoscale_role r)
{
    if (r == KVG_AUTOSCALE_AGGREGATED) return 0;
    return kvg_pool_set_role(&sv->pool, url,
                             r == KVG_AUTOSCALE_PREFILL ? KVG_ROLE_PREFILL : KVG_ROLE_DECODE, -1);
}

static int h_add(void *ud, const char *pool, const char *url)
{
    struct kvg_serve_autoscale *a = ud;
    int rc = kvg_pool_add(&a->sv->pool, url);
    if (rc) return rc;
    /* With models:, it serves its pool's model: its label says which
     * (router/catalog.h, kvg_catalog_worker_model), as a discovered pod's. */
    for (size_t i = 0; i < a->ctl->npools; i++) {
        const struct kvg_autoscale_pool_cfg *pc = &a->ctl->pools[i].cfg;
        if (strcmp(pc->name, pool)) continue;
        if ((pc->serves[0] && (rc = kvg_pool_set_model_label(&a->sv->pool, url, pc->serves))) ||
            (rc = set_role(a->sv, url, pc->opts.role))) {
            kvg_pool_remove(&a->sv->pool, url);
            return rc;
        }
    }
    struct kvg_worker *w = find(a->sv, url);
    if (w) {
        atomic_store(&w->scaled, 1); /* ours to remove: a reload's list keeps it */
        /* No share until prewarmed (a pool with no other ready worker
         * still uses it: router/worker.h). */
        atomic_store(&w->share_permille, 0);
        kvg_worker_unref(w);
    }
    uv_async_send(&a->sv->health_kick); /* its first check now */
    return 0;
}

static int h_state(void *ud, const char *url, uint32_t *in_flight)
{
    struct kvg_serve_autoscale *a = ud;
    struct kvg_worker *w = find(a->sv, url);
    if (!w) return -1;
    *in_flight = atomic_load(&w->in_flight);
    int up = atomic_load(&w->healthy);
    kvg_worker_unref(w);
    return up;
}

static void h_drain(void *ud, const char *url, int on)
{
    struct kvg_serve_autoscale *a = ud;
    struct kvg_worker *w = find(a->sv, url);
    if (!w) return;
    atomic_store(&w->draining, on);
    kvg_worker_unref(w);
}

static void bodies_free(struct kvg_serve_warmup *wu)
{
    for (size_t i = 0; i < 64; i++) {
        cJSON_free(wu->bodies[i]);
        wu->bodies[i] = NULL;
    }
}

static void warm_end(struct kvg_serve_warmup *wu)
{
    for (size_t i = 0; i < 64; i++) {
        if (wu->call[i]) kvg_http_call_cancel(wu->call[i]);
        wu->call[i] = NULL;
    }
    wu->pending = 0;
    bodies_free(wu);
    wu->on = 0;
}

static void h_remove(void *ud, const char *url)
{
    struct kvg_serve_autoscale *a = ud;
    for (size_t i = 0; i < KVG_SERVE_WARMUPS; i++)
        if (a->warm[i].on && !strcmp(a->warm[i].url, url)) warm_end(&a->warm[i]);
    struct kvg_worker *w = find(a->sv, url);
    if (!w) return;
    kvg_autoscale_hot_forget(a->hot, w->slot); /* its cache goes with it */
    kvg_worker_unref(w);
    kvg_pool_remove(&a->sv->pool, url);
}

static int h_victim(void *ud, const char *const *urls, size_t n)
{
    struct kvg_serve_autoscale *a = ud;
    int slots[KVG_AUTOSCALE_LOCAL_MAX];
    uint32_t infl[KVG_AUTOSCALE_LOCAL_MAX];
    if (n > KVG_AUTOSCALE_LOCAL_MAX) n = KVG_AUTOSCALE_LOCAL_MAX;
    for (size_t i = 0; i < n; i++) {
        struct kvg_worker *w = find(a->sv, urls[i]);
        slots[i] = w ? w->slot : -1;
        infl[i] = w ? atomic_load(&w->in_flight) : 0;
        if (w) kvg_worker_unref(w);
    }
    return kvg_autoscale_hot_victim(a->hot, now_s(a), slots, infl, n);
}

static void warm_finish(struct kvg_serve_warmup *wu);

static void warm_head(void *ud, int status, const struct kvg_http_header *h, size_t n)
{
    struct kvg_serve_warm_call *c = ud;
    struct kvg_serve_warmup *wu = c->wu;
    (void)h, (void)n;
    if (status != 200) return;
    wu->ok++;
    /* The replica holds the prompt now, but no pick sent it there: without
     * KV events the router would never send it that prefix's traffic. */
    int rc = kvg_proxy_place(&wu->a->sv->proxy, wu->url, wu->bodies[c->i], wu->lens[c->i], 0);
    if (rc) KVG_DEBUG("autoscale: prewarm of %s: not placed: %s", wu->url, kvg_strerror(rc));
}

static void warm_body(void *ud, const char *p, size_t n)
{
    (void)ud, (void)p, (void)n; /* the answer is one token: nothing to keep */
}

static void warm_done(void *ud, int err)
{
    struct kvg_serve_warm_call *c = ud;
    struct kvg_serve_warmup *wu = c->wu;
    wu->call[c->i] = NULL;
    if (err) KVG_DEBUG("autoscale: prewarm of %s: a call failed: %s", wu->url, kvg_strerror(err));
    if (--wu->pending == 0) warm_finish(wu);
}

static void ramp_start(struct kvg_serve_warmup *wu)
{
    wu->ramping = 1;
    wu->ramp_t0 = now_s(wu->a);
    bodies_free(wu);
}

static void warm_finish(struct kvg_serve_warmup *wu)
{
    KVG_INFO("autoscale: prewarmed %s with %zu of the hottest prefixes (%zu answered 200) in "
             "%.2f s; slow start over %.1f s",
             wu->url, wu->n, wu->ok, now_s(wu->a) - wu->t0, wu->a->lcfg.slow_start_s);
    ramp_start(wu);
}

/* Every replay at once (the engine batches them), then the ramp when the
 * last one ends. */
static void warm_send(struct kvg_serve_warmup *wu)
{
    static const struct kvg_http_call_cbs cbs = {warm_head, warm_body, warm_done};
    wu->pending = 1; /* the loop's own hold: no finish while it runs */
    struct kvg_http_header hd[2] = {{KVG_STR("content-type"), KVG_STR("application/json")},
                                    wu->auth_h};
    for (size_t i = 0; i < wu->n; i++) {
        if (!wu->bodies[i]) continue;
        struct kvg_http_call_opts o = {
            .connect_timeout_ms = 2000, .first_byte_timeout_ms = 30000, .idle_timeout_ms = 30000};
        wu->ctx[i] = (struct kvg_serve_warm_call){wu, i};
        wu->pending++;
        if (kvg_http_call_start(wu->a->client, &wu->t, "POST", KVG_STR("/v1/completions"), hd,
                                wu->has_auth ? 2 : 1, wu->bodies[i], wu->lens[i], &o, &cbs,
                                &wu->ctx[i], &wu->call[i]))
            wu->pending--;
    }
    if (--wu->pending == 0) warm_finish(wu);
}

/* The prefill-only request of a hot prompt, built from nothing else (a
 * client's other members, kv_transfer_params, bootstrap_*, priorities and
 * the like, must never reach an engine from kvgate's own calls): a
 * completions request, which every engine the local actuator starts
 * serves, of the prompt's token ids or text. NULL when out of memory;
 * the caller frees it with cJSON_free. */
static char *prewarm_body(const struct kvg_autoscale_hot_prompt *p)
{
    cJSON *prompt = NULL;
    if (!p->is_ids) {
        char *t = malloc(p->len + 1); /* the record's text is not NUL-terminated */
        if (!t) return NULL;
        memcpy(t, p->u.text, p->len);
        t[p->len] = 0;
        prompt = cJSON_CreateString(t);
        free(t);
    } else if ((prompt = cJSON_CreateArray())) {
        for (size_t i = 0; i < p->len && prompt; i++) {
            cJSON *id = cJSON_CreateNumber(p->u.ids[i]);
            if (!id || !cJSON_AddItemToArray(prompt, id)) {
                cJSON_Delete(id);
                cJSON_Delete(prompt);
                prompt = NULL;
            }
        }
    }
    cJSON *j = prompt ? cJSON_CreateObject() : NULL;
    if (!j || !cJSON_AddItemToObject(j, "prompt", prompt)) {
        cJSON_Delete(prompt);
        cJSON_Delete(j);
        return NULL;
    }
    char *s = NULL;
    if (cJSON_AddStringToObject(j, "model", p->model) &&
        cJSON_AddNumberToObject(j, "max_tokens", 1))
        s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

static void h_ready(void *ud, const char *url)
{
    struct kvg_serve_autoscale *a = ud;
    struct kvg_serve_warmup *wu = NULL;
    for (size_t i = 0; i < KVG_SERVE_WARMUPS && !wu; i++)
        if (!a->warm[i].on) wu = &a->warm[i];
    struct kvg_worker *w = find(a->sv, url);
    if (!wu || !w || !a->client) { /* no room to track it: full share at once */
        if (w) atomic_store(&w->share_permille, 1000);
        if (w) kvg_worker_unref(w);
        return;
    }
    memset(wu, 0, sizeof *wu);
    wu->on = 1;
    wu->a = a;
    wu->t = w->target;
    char model[sizeof w->model_label]; /* its pool's model (h_add): its prompts alone */
    kvg_pool_model_label(&a->sv->pool, w, model, sizeof model);
    /* The key every call to this engine carries (router/worker.h). */
    wu->has_auth = kvg_worker_auth_header(w, wu->auth, sizeof wu->auth, &wu->auth_h);
    kvg_worker_unref(w);
    snprintf(wu->url, sizeof wu->url, "%s", url);
    wu->t0 = now_s(a);
    size_t k = a->lcfg.prewarm_prompts < 64 ? a->lcfg.prewarm_prompts : 64;
    struct kvg_autoscale_hot_prompt *ps = k ? malloc(k * sizeof *ps) : NULL;
    if (ps) {
        wu->n = kvg_autoscale_hot_top(a->hot, wu->t0, model[0] ? model : NULL, k, ps);
        for (size_t i = 0; i < wu->n; i++) {
            wu->bodies[i] = prewarm_body(&ps[i]);
            wu->lens[i] = wu->bodies[i] ? strlen(wu->bodies[i]) : 0;
        }
        free(ps);
    }
    warm_send(wu);
}

void kvg__serve_autoscale_local_tick(struct kvg_serve_autoscale *a, double now)
{
    for (size_t i = 0; i < KVG_SERVE_WARMUPS; i++) {
        struct kvg_serve_warmup *wu = &a->warm[i];
        if (!wu->on || !wu->ramping) continue;
        double f = a->lcfg.slow_start_s > 0 ? (now - wu->ramp_t0) / a->lcfg.slow_start_s : 1;
        uint32_t sh = f >= 1 ? 1000 : 100 + (uint32_t)(900 * f);
        struct kvg_worker *w = find(a->sv, wu->url);
        if (w) {
            atomic_store(&w->share_permille, sh);
            kvg_worker_unref(w);
        }
        if (!w || sh >= 1000) warm_end(wu);
    }
    /* Requests held at zero replicas: ready ones take them now, once every
     * role the pool has a replica of has a ready one (a PD request needs
     * both legs: released on the prefill alone it was answered 503 while
     * its decode replica was still starting). */
    struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
    size_t n = kvg_pool_snapshot(&a->sv->pool, ws, KVG_POOL_MAX_WORKERS), up = 0;
    unsigned has = 0, ready = 0;
    for (size_t i = 0; i < n; i++) {
        int r = atomic_load(&ws[i]->role),
            ok = atomic_load(&ws[i]->healthy) && !atomic_load(&ws[i]->draining);
        unsigned bit = r >= 0 && r < 8 ? 1u << r : 0;
        has |= bit;
        ready |= ok ? bit : 0;
        up += ok;
        kvg_worker_unref(ws[i]);
    }
    if (up && ready == has && a->sv->gate.adm) kvg_adm_capacity_available(a->sv->gate.adm, 1024);
}

/* Routing history: a prefix is the routing text's first 1024 bytes (a
 * shared system prompt and its first turn); its replay is the model and the
 * prompt as kvgate sees it: the token ids kvgate rendered and tokenized,
 * else the routing text (a completions prompt itself; a chat's message
 * texts when kvgate has no tokenizer). A prompt over the record's cap is
 * replayed up to the cap (its first KVG_AUTOSCALE_HOT_IDS tokens, or text
 * bytes cut at a character): a prefix cache keeps prefixes, and the shared
 * part of a long prompt is its beginning. A prompt with a cache_salt (its
 * cache is that salt's alone, and the salt is the client's) keeps its heat,
 * not a replay. */
static void on_routed(void *ud, const struct kvg_rinput *ri, struct kvg_worker *w)
{
    struct kvg_serve_autoscale *a = ud;
    struct kvg_buf text;
    kvg_buf_init(&text, 1 << 20);
    const struct kvg_buf *t = &ri->text;
    if (!t->len) {
        if (kvg_route_text(ri->json, ri->chat, &text)) {
            kvg_buf_free(&text);
            return;
        }
        t = &text;
    }
    uint64_t key =
        kvg_hash_fnv1a64(KVG_HASH_FNV1A64_SEED_SHORT, t->data, t->len < 1024 ? t->len : 1024);
    static _Thread_local struct kvg_autoscale_hot_prompt p; /* 8 KB: not on the loop's stack */
    p.len = 0;
    if (!ri->cache_salt_len && ri->model_len && ri->model_len < sizeof p.model) {
        memcpy(p.model, ri->model, ri->model_len);
        p.model[ri->model_len] = 0;
        if (ri->ids && ri->nids) {
            p.is_ids = 1;
            p.len = KVG_MIN(ri->nids, (size_t)KVG_AUTOSCALE_HOT_IDS);
            memcpy(p.u.ids, ri->ids, p.len * sizeof *ri->ids);
        } else if (!ri->ids && t->len) {
            size_t n = KVG_MIN(t->len, (size_t)KVG_AUTOSCALE_HOT_TEXT);
            if (n < t->len) /* not inside a character: back over its continuation bytes */
                while (n > 0 && ((uint8_t)t->data[n] & 0xC0) == 0x80) n--;
            p.is_ids = 0;
            memcpy(p.u.text, t->data, n);
            p.len = n;
        }
    }
    kvg_buf_free(&text);
    kvg_autoscale_hot_record(a->hot, key, w->slot, now_s(a), p.len ? &p : NULL);
}

int kvg__serve_autoscale_local_init(struct kvg_serve_autoscale *a, char *err, size_t errlen)
{
    struct kvg_autoscale_local_hooks h = {a, h_add, h_state, h_drain, h_remove, h_victim, h_ready};
    a->hot = malloc(sizeof *a->hot);
    if (!a->hot) return -ENOMEM;
    kvg_autoscale_hot_init(a->hot, 120);
    struct kvg_autoscale_actuator *act;
    int rc = kvg_autoscale_local_new(&a->lcfg, &h, &a->ctl->su, (uint64_t)kvg_now_ms(), &act, err,
                                     errlen);
    if (rc) return rc;
    kvg_autoscale_ctl_set_actuator(a->ctl, act);
    a->local = 1;
    a->sv->proxy.on_routed = on_routed;
    a->sv->proxy.on_routed_ud = a;
    /* Held requests wait for a replica only when one can come. */
    a->sv->gate.o.hold_when_empty = !a->ctl->cfg.dry_run;
    return 0;
}

int kvg__serve_autoscale_local_start(struct kvg_serve_autoscale *a, uv_loop_t *loop)
{
    if (!a->local) return 0;
    return kvg_http_client_new(loop, NULL, &a->client);
}

void kvg__serve_autoscale_local_stop(struct kvg_serve_autoscale *a)
{
    for (size_t i = 0; i < KVG_SERVE_WARMUPS; i++)
        if (a->warm[i].on) warm_end(&a->warm[i]);
    if (a->client) kvg_http_client_close(a->client);
    a->client = NULL;
}

void kvg__serve_autoscale_local_free(struct kvg_serve_autoscale *a)
{
    if (!a->hot) return;
    kvg_autoscale_hot_destroy(a->hot);
    free(a->hot);
    a->hot = NULL;
}
