/* Routing mode per worker (see mode.h): the rules, in the order they are
 * judged, and the change log. */
#include "router/mode.h"

#include <stdio.h>
#include <string.h>

#include "base/log.h"

static const char *names[KVG_MODE_COUNT] = {"exact", "degraded", "approximate", "load_only"};

const char *kvg_route_mode_name(int mode)
{
    return mode >= 0 && mode < KVG_MODE_COUNT ? names[mode] : "unknown";
}

/* Everything that means events were lost: the worker's entries were dropped
 * (a gap without replay, a failed replay, an engine restart) or something
 * could not be read. A gap replayed in full is no loss. */
static uint64_t loss_of(const struct kvg_kv_sub_stats *st)
{
    return st->drops + st->replay_failures + st->decode_errors + st->bad_events;
}

/* Mismatches over the recent checks: the window spans one or two marks of
 * check_window checks, so a mismatch ages out after at most 2 windows. */
static void recent_checks(struct kvg_worker_mode *m, uint64_t c, uint64_t mis, uint32_t window,
                          uint64_t *rc, uint64_t *rm)
{
    if (c < m->win_c[1] || mis < m->win_m[1]) /* counters restarted: forget the marks */
        m->win_c[0] = m->win_c[1] = m->win_m[0] = m->win_m[1] = 0;
    if (c - m->win_c[1] >= window) {
        m->win_c[0] = m->win_c[1];
        m->win_m[0] = m->win_m[1];
        m->win_c[1] = c;
        m->win_m[1] = mis;
    }
    *rc = c - m->win_c[0];
    *rm = mis - m->win_m[0];
}

static int judge(struct kvg_worker *w, const struct kvg_route_mode_in *in,
                 const struct kvg_route_mode_limits *lim, char *why, size_t cap)
{
    struct kvg_worker_mode *m = &w->rmode;
    uint64_t c = atomic_load(&w->usage_checks), mis = atomic_load(&w->usage_mismatches), rc, rm;
    recent_checks(m, c, mis, lim->check_window, &rc, &rm);
    int tok_bad = rc >= lim->check_min && (double)rm > lim->mismatch_share * (double)rc;
    if (!in->reads_prefix) {
        snprintf(why, cap, "policy %s reads neither text nor tokens", in->policy);
        return KVG_MODE_LOAD_ONLY;
    }
    if (!in->precise) {
        int k = snprintf(why, cap, "%s",
                         in->approx_why ? in->approx_why
                                        : "no KV events: matched against this router's routing "
                                          "history");
        if (rm && k > 0 && (size_t)k < cap)
            snprintf(why + k, cap - (size_t)k,
                     " (prompt token counts differ from the engine's on %llu of %llu recent "
                     "answers; harmless here)",
                     (unsigned long long)rm, (unsigned long long)rc);
        return KVG_MODE_APPROXIMATE;
    }
    const struct kvg_kv_sub_stats *st = in->events;
    if (!st) {
        snprintf(why, cap,
                 "no KV events configured for this worker: the index sees none of its "
                 "cache");
        return KVG_MODE_DEGRADED;
    }
    uint32_t ebs = w->load.block_size;
    if (ebs && in->block_size && ebs != in->block_size) {
        snprintf(why, cap, "block size mismatch: the engine reports %u, the router uses %u", ebs,
                 in->block_size);
        return KVG_MODE_DEGRADED;
    }
    if (st->mismatches) {
        snprintf(why, cap,
                 "block size mismatch: %llu stored-block events skipped (not a multiple of %u)",
                 (unsigned long long)st->mismatches, in->block_size);
        return KVG_MODE_DEGRADED;
    }
    uint64_t loss = loss_of(st);
    if (loss != m->loss) {
        m->loss = loss;
        m->loss_ms = in->now_ms ? in->now_ms : 1;
    }
    /* Each gap ends replayed, failed or dropped; one that has not is in progress. */
    if (in->has_replay && st->gaps > st->replays + st->replay_failures + st->drops) {
        snprintf(why, cap, "a gap in the KV events is being replayed");
        return KVG_MODE_DEGRADED;
    }
    if (m->loss_ms && in->now_ms - m->loss_ms < lim->loss_hold_ms) {
        snprintf(why, cap,
                 "KV events were lost (%llu gaps, %llu drops, %llu restarts, %llu decode errors): "
                 "the index is behind the engine",
                 (unsigned long long)st->gaps, (unsigned long long)st->drops,
                 (unsigned long long)st->restarts, (unsigned long long)st->decode_errors);
        return KVG_MODE_DEGRADED;
    }
    /* Only answers that stored a new full block owed an event: one served
     * from the engine's cache entirely did not. */
    uint64_t ok = atomic_load(&w->ok_requests), nostore = atomic_load(&w->no_store_answers);
    uint64_t owed = ok > nostore ? ok - nostore : 0;
    if (!st->batches && owed >= lim->no_events_after) {
        snprintf(why, cap,
                 "KV events configured but none applied after %llu successful requests that "
                 "stored new blocks",
                 (unsigned long long)owed);
        return KVG_MODE_DEGRADED;
    }
    if (tok_bad) {
        snprintf(why, cap,
                 "tokenizer mismatch suspected: the engine's prompt_tokens differ from kvgate's "
                 "count on %llu of %llu recent answers",
                 (unsigned long long)rm, (unsigned long long)rc);
        return KVG_MODE_DEGRADED;
    }
    if (!st->batches)
        snprintf(why, cap, "KV events subscribed, none applied yet");
    else
        snprintf(why, cap, "KV events applied in sequence (%llu batches, last %lld)",
                 (unsigned long long)st->batches, (long long)st->last_seq);
    return KVG_MODE_EXACT;
}

int kvg_route_mode_update(struct kvg_worker *w, const struct kvg_route_mode_in *in,
                          const struct kvg_route_mode_limits *lim)
{
    struct kvg_route_mode_limits l = lim ? *lim : (struct kvg_route_mode_limits){0};
    if (!l.no_events_after) l.no_events_after = 20;
    if (!l.check_min) l.check_min = 20;
    if (!(l.mismatch_share > 0)) l.mismatch_share = 0.05;
    if (!l.loss_hold_ms) l.loss_hold_ms = 30000;
    if (!l.check_window) l.check_window = 200;
    char why[sizeof w->rmode.reason];
    pthread_mutex_lock(&w->mu);
    int mode = judge(w, in, &l, why, sizeof why);
    int old = w->rmode.mode;
    w->rmode.mode = mode;
    memcpy(w->rmode.reason, why, sizeof why);
    pthread_mutex_unlock(&w->mu);
    /* Only the mode's change is logged, not every change of its wording
     * (counts in the reason move all the time). */
    if (old != mode) {
        if (mode == KVG_MODE_DEGRADED)
            KVG_WARN("worker %s: routing mode %s -> %s: %s", w->url, kvg_route_mode_name(old),
                     names[mode], why);
        else
            KVG_INFO("worker %s: routing mode %s -> %s: %s", w->url, kvg_route_mode_name(old),
                     names[mode], why);
    }
    return mode;
}

int kvg_route_mode_get(struct kvg_worker *w, char *reason, size_t cap)
{
    pthread_mutex_lock(&w->mu);
    int mode = w->rmode.mode;
    if (reason && cap) snprintf(reason, cap, "%s", w->rmode.reason);
    pthread_mutex_unlock(&w->mu);
    return mode;
}

void kvg_route_mode_usage(struct kvg_worker *w, int64_t engine_prompt, int64_t engine_cached,
                          int64_t ours, uint32_t block_size)
{
    if (engine_prompt <= 0 || ours < 0) return;
    if (block_size && engine_cached >= 0 && engine_prompt - engine_cached < (int64_t)block_size)
        atomic_fetch_add_explicit(&w->no_store_answers, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->usage_checks, 1, memory_order_relaxed);
    if (engine_prompt != ours)
        atomic_fetch_add_explicit(&w->usage_mismatches, 1, memory_order_relaxed);
}
