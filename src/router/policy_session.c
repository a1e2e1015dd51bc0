/* session_affinity: kvgate's sticky sessions for agents and chats. A
 * request that names its session goes to the session's home worker, the
 * owner of the key on a consistent-hash ring (ring.h), while that worker is
 * within a load bound; otherwise, and for requests without a key, the
 * KV-aware choice decides (an inner policy, prefix_affinity by default,
 * --session-fallback).
 *
 * The key, first found wins: the configured header (--session-header), the
 * x-session-id header, the API key's user (ctx->user: its tenant, else its
 * name), the OpenAI body field `user`. Request-scoped ids (x-request-id,
 * x-trace-id) are never keys: they would scatter a session.
 *
 * The bound is consistent hashing with bounded loads (Mirrokni, Thorup,
 * Zadimoghaddam 2018): the home may hold at most ceil(c x (in flight over
 * the candidates + 1) / n) requests, c = --session-load-bound (1.25). Past
 * it the request is not pushed to the next worker on the ring, as the paper
 * does, but handed to the KV-aware choice: the session's context is cached
 * on the home, and the inner policy knows what every other worker holds.
 *
 * Why a ring and not a table of where each session went: the ring needs no
 * state, so every kvgate replica sends a session to the same worker, and a
 * worker that leaves moves only its own sessions. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "router/policy.h"
#include "router/ring.h"

struct sessp {
    struct kvg_policy base;
    struct kvg_policy *inner; /* owned: the KV-aware choice */
    struct kvg_ring ring;
    char header[64];
    double bound;
};

/* The session key into out (NUL-terminated); its length, 0 for none. */
static size_t session_key(const struct sessp *s, const struct kvg_route_ctx *ctx, char *out,
                          size_t cap)
{
    const char *hdrs[2] = {s->header[0] ? s->header : NULL, "x-session-id"};
    for (size_t i = 0; ctx->header && i < 2; i++) {
        if (!hdrs[i]) continue;
        struct kvg_str v = ctx->header(ctx->hctx, hdrs[i]);
        if (v.p && v.len) return (size_t)snprintf(out, cap, "s:%.*s", (int)v.len, v.p) % cap;
    }
    if (ctx->user.p && ctx->user.len)
        return (size_t)snprintf(out, cap, "k:%.*s", (int)ctx->user.len, ctx->user.p) % cap;
    const cJSON *u = ctx->json ? cJSON_GetObjectItemCaseSensitive(ctx->json, "user") : NULL;
    if (cJSON_IsString(u) && u->valuestring[0])
        return (size_t)snprintf(out, cap, "u:%s", u->valuestring) % cap;
    return 0;
}

static int select_session(struct kvg_policy *p, struct kvg_worker *const *cand, size_t n,
                          const struct kvg_route_ctx *ctx, struct kvg_route_explain *ex)
{
    struct sessp *s = (struct sessp *)p;
    if (n == 0) return KVG_ENOWORKER;
    char key[320];
    size_t kl = session_key(s, ctx, key, sizeof key);
    const char *why = "no session key: the KV-aware choice";
    if (kl) {
        int home = kvg_ring_lookup(&s->ring, cand, n, kvg_ring_hash(key, kl));
        double sum = 0;
        for (size_t i = 0; i < n; i++) sum += kvg_policy_inflight(cand[i]);
        double cap = ceil(s->bound * (sum + 1) / (double)n);
        if (home >= 0 && kvg_policy_inflight(cand[home]) + 1 <= cap) {
            /* The inner policy still sees the request, so that what it
             * tracks (placements, the approximate index) stays true. */
            struct kvg_route_score one = {-1, -1, -1, -1, -1, -1, -1};
            struct kvg_route_explain ie = {.scores = &one, .n = 1};
            int rc = s->inner->ops->select(s->inner, cand + home, 1, ctx, &ie);
            if (rc < 0) return rc;
            if (ex && ex->scores) ex->scores[home] = one; /* the pool charges its match */
            if (ex) snprintf(ex->note, sizeof ex->note, "session home (bound %.0f)", cap);
            return home;
        }
        why = home >= 0 ? "session home past the load bound: the KV-aware choice"
                        : "no ring: the KV-aware choice";
    }
    int rc = s->inner->ops->select(s->inner, cand, n, ctx, ex);
    if (ex && rc >= 0) {
        char inner[sizeof ex->note];
        snprintf(inner, sizeof inner, "%s", ex->note);
        snprintf(ex->note, sizeof ex->note, "%s (%.60s)", why, inner);
    }
    return rc;
}

static void on_done(struct kvg_policy *p, struct kvg_worker *w, const struct kvg_route_ctx *ctx)
{
    struct sessp *s = (struct sessp *)p;
    if (s->inner->ops->on_done) s->inner->ops->on_done(s->inner, w, ctx);
}

static void on_first_token(struct kvg_policy *p, struct kvg_worker *w, uint64_t work,
                           uint64_t ttft_ms)
{
    struct sessp *s = (struct sessp *)p;
    if (s->inner->ops->on_first_token) s->inner->ops->on_first_token(s->inner, w, work, ttft_ms);
}

static void on_remove(struct kvg_policy *p, struct kvg_worker *w)
{
    struct sessp *s = (struct sessp *)p;
    if (s->inner->ops->on_remove) s->inner->ops->on_remove(s->inner, w);
}

static void place_on(struct kvg_policy *p, struct kvg_worker *w, const struct kvg_route_ctx *ctx)
{
    struct sessp *s = (struct sessp *)p;
    if (s->inner->ops->place) s->inner->ops->place(s->inner, w, ctx);
}

/* The inner policy's history is what peers' records feed. */
static int places_text(const struct kvg_policy *p)
{
    const struct sessp *s = (const struct sessp *)p;
    return s->inner->ops->places_text && s->inner->ops->places_text(s->inner);
}

static void destroy(struct kvg_policy *p)
{
    struct sessp *s = (struct sessp *)p;
    if (s->inner) s->inner->ops->destroy(s->inner);
    kvg_ring_destroy(&s->ring);
    free(s);
}

static const struct kvg_policy_ops ops = {.name = "session_affinity",
                                          .wants_tokens = 1,
                                          .wants_text = 1,
                                          .select = select_session,
                                          .on_done = on_done,
                                          .on_first_token = on_first_token,
                                          .on_remove = on_remove,
                                          .destroy = destroy,
                                          .place = place_on,
                                          .places_text = places_text};

int kvg_policy_session_affinity_new(const struct kvg_policy_opts *o, struct kvg_policy **out)
{
    if (!(o->session_load_bound >= 1) || !strcmp(o->session_fallback, "session_affinity"))
        return KVG_ECONFIG;
    struct sessp *s = calloc(1, sizeof *s);
    if (!s) return -ENOMEM;
    s->base.ops = &ops;
    s->bound = o->session_load_bound;
    snprintf(s->header, sizeof s->header, "%s", o->session_header);
    kvg_ring_init(&s->ring, o->vnodes ? o->vnodes : 160);
    const char *fb = o->session_fallback[0] ? o->session_fallback : "prefix_affinity";
    int rc = kvg_policy_new(fb, o, &s->inner);
    if (rc) {
        kvg_ring_destroy(&s->ring);
        free(s);
        return rc;
    }
    *out = &s->base;
    return 0;
}
