/* A pool's replicas in the offline day (scale_int.h, struct scale_reps):
 * asked for, ready, drained and gone, shared by the aggregated day
 * (scale_des.c) and the PD day's two pools (scale_pd.c). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"

#include "bench/scale/scale_int.h"

/* A replica asked for at t: its node (a seeded draw: a fast node with the
 * start-up model's fast_share, else over the opts' cold / fetch / warm mix)
 * and ready time from the start-up model (a fast one never past
 * fast_ready_s). Without a fast share the draws are the same as before it. */
static void scale_rep_ask(const struct kvg_bench_scale_opts *o, struct kvg_autoscale_startup *su,
                          struct kvg_rng *rng, struct rep *p, double t)
{
    double u = kvg_rng_double(rng), fast = su->fast_share > 0 ? fmin(su->fast_share, 1) : 0;
    int is_fast = u < fast;
    if (is_fast) {
        p->node = su->fast_class;
    } else {
        u = fast > 0 ? (u - fast) / (1 - fast) : u;
        p->node = u < o->cold_share                    ? KVG_AUTOSCALE_COLD
                  : u < o->cold_share + o->fetch_share ? KVG_AUTOSCALE_FETCH
                                                       : KVG_AUTOSCALE_WARM;
    }
    double s = o->startup_fixed_s > 0
                   ? o->startup_fixed_s
                   : kvg_autoscale_startup_draw(su, o->startup_model, p->node, rng);
    if (is_fast && o->fast_ready_s > 0) s = fmin(s, o->fast_ready_s);
    p->asked = p->since = t;
    p->ready_at = t + s;
}

/* A replica asked for at t (none past KVG_BENCH_SCALE_MAX_REPLICAS): its
 * node and ready time drawn; 0 or -ENOMEM. */
static int scale_reps_add(struct scale_reps *P, const struct kvg_bench_scale_opts *o,
                          struct kvg_autoscale_startup *su, struct kvg_rng *rng, double t)
{
    if (P->nact >= KVG_BENCH_SCALE_MAX_REPLICAS) return 0;
    if (P->nrep == P->caprep) {
        size_t c = P->caprep ? P->caprep * 2 : 64;
        struct rep *v = realloc(P->rep, c * sizeof *v);
        if (!v) return -ENOMEM;
        P->rep = v;
        P->caprep = c;
    }
    struct rep *p = &P->rep[P->nrep];
    memset(p, 0, sizeof *p);
    scale_rep_ask(o, su, rng, p, t);
    p->state = R_STARTING;
    P->act[P->nact++] = (int)P->nrep++;
    P->added++;
    return 0;
}

int kvg__scale_reps_ready(struct scale_reps *P, int k, const struct kvg_sim_profile *prof,
                          uint64_t seed, double t)
{
    struct rep *p = &P->rep[k];
    /* The day's first pool was never asked for: nothing to learn. */
    if (P->su && P->model && t > p->since)
        kvg_autoscale_startup_observe(P->su, P->model, p->node, t - p->since, -1);
    p->woke = 0;
    struct kvg_sim_config c;
    kvg_sim_config_init(&c, prof);
    c.seed = seed;
    c.emit_events = 0;
    int rc = kvg_sim_create(&c, &P->rep[k].e);
    if (rc) return rc;
    P->rep[k].state = R_READY;
    return 0;
}

void kvg__scale_reps_gone(struct scale_reps *P, int k, double t)
{
    struct rep *p = &P->rep[k];
    p->state = R_GONE;
    p->gone = t;
    if (p->e) kvg_sim_free(p->e);
    p->e = NULL;
    for (size_t i = 0; i < P->nact; i++)
        if (P->act[i] == k) {
            memmove(P->act + i, P->act + i + 1, (P->nact - i - 1) * sizeof *P->act);
            P->nact--;
            return;
        }
}

void kvg__scale_reps_retire(struct scale_reps *P, int k, double t)
{
    struct rep *p = &P->rep[k];
    if (kvg__scale_reps_parked(P) >= P->standby) {
        kvg__scale_reps_gone(P, k, t);
        return;
    }
    if (p->e) kvg_sim_free(p->e);
    p->e = NULL;
    p->state = R_PARKED;
    p->parked_at = t;
    p->stepping = 0;
    p->inflight = 0;
    p->warming = 0;
    p->groups = 0; /* vLLM drops the KV cache at sleep: nothing a router could find */
    p->pend_tok = 0;
    p->scraped_ok = 0;
    p->rec_n = 0;
}

uint32_t kvg__scale_reps_parked(const struct scale_reps *P)
{
    uint32_t n = 0;
    for (size_t i = 0; i < P->nact; i++) n += P->rep[P->act[i]].state == R_PARKED;
    return n;
}

/* Wakes the parked replica parked longest at t (the asleep1 class's time):
 * 1, or 0 when none is parked. */
static int scale_reps_wake(struct scale_reps *P, const struct kvg_bench_scale_opts *o,
                           struct kvg_autoscale_startup *su, struct kvg_rng *rng, double t)
{
    int pick = -1;
    for (size_t i = 0; i < P->nact; i++) {
        int k = P->act[i];
        if (P->rep[k].state == R_PARKED &&
            (pick < 0 || P->rep[k].parked_at < P->rep[pick].parked_at))
            pick = k;
    }
    if (pick < 0) return 0;
    struct rep *p = &P->rep[pick];
    p->parked_s += t - p->parked_at;
    p->node = KVG_AUTOSCALE_ASLEEP1;
    p->since = t;
    p->ready_at = t + kvg_autoscale_startup_draw(su, o->startup_model, p->node, rng);
    p->state = R_STARTING;
    p->woke = 1;
    P->woken++;
    return 1;
}

void kvg__scale_reps_count(const struct scale_reps *P, uint32_t *ready, uint32_t *starting)
{
    *ready = *starting = 0;
    for (size_t i = 0; i < P->nact; i++) {
        int st = P->rep[P->act[i]].state;
        *ready += st == R_READY;
        *starting += st == R_STARTING;
    }
}

int kvg__scale_reps_actuate(struct scale_reps *P, const struct kvg_bench_scale_opts *o,
                            struct kvg_autoscale_startup *su, struct kvg_rng *rng, uint32_t desired,
                            double t)
{
    uint32_t ready, starting;
    kvg__scale_reps_count(P, &ready, &starting);
    uint32_t cur = ready + starting;
    int rc;
    for (; cur < desired; cur++)
        if (!scale_reps_wake(P, o, su, rng, t) && (rc = scale_reps_add(P, o, su, rng, t)))
            return rc;
    while (cur > desired) {
        int pick = -1;
        for (size_t i = 0; i < P->nact; i++) {
            int k = P->act[i];
            const struct rep *p = &P->rep[k];
            if (p->state == R_STARTING && (pick < 0 || p->ready_at > P->rep[pick].ready_at))
                pick = k;
        }
        if (pick >= 0) {
            struct rep *p = &P->rep[pick];
            if (p->woke) { /* back to sleep: it still holds its GPU */
                p->state = R_PARKED;
                p->parked_at = t;
                p->woke = 0;
            } else {
                kvg__scale_reps_gone(P, pick, t);
            }
            P->cancelled++;
            cur--;
            continue;
        }
        for (size_t i = 0; i < P->nact; i++) {
            int k = P->act[i];
            const struct rep *p = &P->rep[k];
            if (p->state == R_READY && (pick < 0 || p->inflight < P->rep[pick].inflight)) pick = k;
        }
        if (pick < 0) break;
        struct rep *p = &P->rep[pick];
        p->state = R_DRAINING;
        p->drain_at = t;
        P->removed++;
        if (p->inflight == 0 && !p->stepping) kvg__scale_reps_retire(P, pick, t);
        cur--;
    }
    return 0;
}

double kvg__scale_reps_seconds(const struct scale_reps *P, double day_s, double *parked_s)
{
    double s = 0, parked = 0;
    for (size_t i = 0; i < P->nrep; i++) {
        const struct rep *p = &P->rep[i];
        double end = p->state == R_GONE && p->gone < day_s ? p->gone : day_s;
        if (end > p->asked) s += end - p->asked;
        double pk =
            p->parked_s + (p->state == R_PARKED && end > p->parked_at ? end - p->parked_at : 0);
        parked += pk;
    }
    if (parked_s) *parked_s = parked;
    return s - parked * (1 - P->standby_cost);
}

void kvg__scale_reps_free(struct scale_reps *P)
{
    for (size_t i = 0; i < P->nrep; i++)
        if (P->rep[i].e) kvg_sim_free(P->rep[i].e);
    free(P->rep);
    P->rep = NULL;
}

void kvg__scale_reps_signals(const struct scale_reps *P, double t, double young_s,
                             struct kvg_autoscale_signals *s, double *eta)
{
    memset(s, 0, sizeof *s);
    s->now = t;
    uint32_t ns = 0;
    for (size_t i = 0; i < P->nact; i++) {
        const struct rep *p = &P->rep[P->act[i]];
        if (p->state == R_STARTING) {
            eta[ns++] = p->ready_at;
            continue;
        }
        if (p->state == R_PARKED) continue; /* asleep: not in the router's pool */
        if (p->state == R_READY) {
            s->ready++;
            if (t - p->ready_at < young_s) s->young++;
        } else {
            s->draining++;
        }
        if (!p->scraped_ok) continue; /* not scraped yet: serve counts it unknown */
        s->waiting += p->scraped.num_waiting;
        s->running += p->scraped.num_running;
        s->kv_usage_sum += p->scraped.kv_usage;
    }
    s->starting = ns;
    s->starting_eta = eta;
}

void kvg__scale_reps_scrape(struct scale_reps *P)
{
    for (size_t i = 0; i < P->nact; i++) {
        struct rep *p = &P->rep[P->act[i]];
        if (p->state != R_READY && p->state != R_DRAINING) continue;
        kvg_sim_get_metrics(p->e, &p->scraped);
        p->scraped_ok = 1;
    }
}

double kvg__scale_scrape_next(const struct kvg_bench_scale_opts *o, double t)
{
    double k = floor(t / o->scrape_s - 0.5) + 1;
    return (k + 0.5) * o->scrape_s;
}

int kvg__scale_planner_new(const char *planner, struct kvg_autoscale_opts *a,
                           struct kvg_autoscale_planner **out, char *err, size_t errlen)
{
    const char *name = !strcmp(planner, "kvgate-noprewarm") ? "kvgate" : planner;
    if (!strncmp(name, "queue-", 6)) {
        snprintf(a->queue_preset, sizeof a->queue_preset, "%s", name + 6);
        name = "queue";
    }
    int rc = kvg_autoscale_planner_new(name, a, out);
    if (rc && rc != KVG_ENOTFOUND)
        return kvg_err_set(err, errlen, rc, "planner %s: %s", planner, kvg_strerror(rc));
    return rc;
}

void kvg__scale_rep_step(struct rep *p, double t)
{
    kvg_sim_step(p->e, t, &p->st);
    p->stepping = 1;
    p->busy_until = t + p->st.duration;
}

void kvg__scale_reps_next(const struct scale_reps *P, double day_s, double *te, int *ke, double *tr,
                          int *kr)
{
    for (size_t i = 0; i < P->nact; i++) {
        int k = P->act[i];
        const struct rep *p = &P->rep[k];
        if (p->stepping && p->busy_until < *te) *te = p->busy_until, *ke = k;
        if (p->state == R_STARTING && p->ready_at < *tr && p->ready_at <= day_s)
            *tr = p->ready_at, *kr = k;
    }
}

int kvg__scale_reps_first(struct scale_reps *P, const struct kvg_bench_scale_opts *o,
                          struct kvg_autoscale_startup *su, struct kvg_rng *rng, uint32_t n,
                          uint32_t min)
{
    P->su = su;
    P->model = o->startup_model;
    P->standby = o->standby;
    P->standby_cost = o->standby_cost;
    if (n < min) n = min;
    if (n < 1) n = 1;
    for (uint32_t i = 0; i < n && P->nact < KVG_BENCH_SCALE_MAX_REPLICAS; i++) {
        int rc = scale_reps_add(P, o, su, rng, 0);
        if (rc) return rc;
        P->rep[P->nrep - 1].ready_at = 0;
    }
    P->added = 0;
    return 0;
}
