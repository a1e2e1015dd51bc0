/* What the aggregated day (scale_des.c) and the PD day (scale_pd.c) keep
 * alike (scale_int.h, struct scale_day): the traffic and its next arrival,
 * the start-up draws, the gateway's windowed observations, the day's
 * latency samples and the timeline's cursor. Each day's own event loop
 * calls these at the same points, so both count a request the same way. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "bench/scale/scale_int.h"

void kvg__scale_day_signals(struct scale_day *d, double window, struct kvg_autoscale_signals *s)
{
    kvg_autoscale_obs_window(d->ob, d->o->tick_s, window, s);
}

int kvg__scale_day_init(struct scale_day *d, const struct kvg_bench_scale_opts *o, char *err,
                        size_t errlen)
{
    d->o = o;
    kvg_bench_samples_init(&d->all_ttft);
    kvg_bench_samples_init(&d->all_itl);
    int rc = kvg__scale_wl_init(&d->wl, o);
    if (rc) return kvg_err_set(err, errlen, rc, "workload: %s", kvg_strerror(rc));
    d->have_next = kvg__scale_wl_next(&d->wl, &d->next) == 0;
    kvg_autoscale_startup_init(&d->su);
    /* As the local actuator's cold_start_scale: draws and priors alike. */
    if (o->startup_scale > 0 && o->startup_scale != 1)
        kvg_autoscale_startup_scale(&d->su, o->startup_scale);
    if (o->fast_share > 0) {
        /* The fast nodes restore from a checkpoint: the restore class's
         * published shape, scaled so that its p90 is fast_ready_s
         * (scale_reps.c never draws past it). */
        enum kvg_autoscale_node st = KVG_AUTOSCALE_RESTORE;
        double f = o->fast_ready_s / kvg_autoscale_startup_prior(&d->su, o->startup_model, st, 0.9);
        double lo = kvg_autoscale_startup_prior(&d->su, o->startup_model, st, 0.1);
        double med = kvg_autoscale_startup_prior(&d->su, o->startup_model, st, 0.5);
        struct kvg_autoscale_startup_dist fd = {med * f, lo * f, o->fast_ready_s};
        if (!(f > 0) || kvg_autoscale_startup_set(&d->su, o->startup_model, st, fd))
            return kvg_err_set(err, errlen, KVG_ECONFIG, "fast start: %g s is not a start-up time",
                               o->fast_ready_s);
        d->su.fast_share = o->fast_share;
        d->su.fast_class = st;
    }
    kvg_rng_seed(&d->rng, o->seed * 31 + 7);
    /* 512 ticks of window, the newest 65536 TTFT and ITL samples. */
    if ((rc = kvg_autoscale_obs_new(512, 1 << 16, &d->ob))) return rc;
    d->prompt = malloc((size_t)kvg__scale_wl_prompt_cap(o) * sizeof *d->prompt);
    return d->prompt ? 0 : -ENOMEM;
}

void kvg__scale_day_free(struct scale_day *d)
{
    free(d->prompt);
    d->prompt = NULL;
    kvg_autoscale_obs_free(d->ob);
    d->ob = NULL;
    kvg_bench_samples_free(&d->all_ttft);
    kvg_bench_samples_free(&d->all_itl);
    kvg__scale_wl_free(&d->wl);
}

double kvg__scale_day_window(const struct scale_day *d, const struct kvg_autoscale_planner *pl)
{
    return kvg_autoscale_obs_span(d->o->planner, pl->o.interval_s, d->o->window_s);
}

void kvg__scale_day_arrive(struct scale_day *d, struct scale_req *r)
{
    *r = d->next;
    /* Unsized, as serve's proxy tells an arrival: the lengths come from the
     * usage at the finish (kvg__scale_day_done). */
    kvg_autoscale_obs_arrive(d->ob, -1);
    d->tl_arrivals++;
    d->inflight_prompt += r->prompt_len;
    d->have_next = kvg__scale_wl_next(&d->wl, &d->next) == 0;
}

int kvg__scale_day_submit(struct scale_day *d, struct kvg_sim *e, uint64_t id,
                          const struct scale_req *r, uint32_t max_tokens, uint32_t remote_tokens,
                          int hold)
{
    kvg__scale_wl_prompt(&d->wl, r, d->prompt);
    struct kvg_sim_request sr = {.id = id,
                                 .prompt = d->prompt,
                                 .prompt_len = r->prompt_len,
                                 .max_tokens = max_tokens ? max_tokens : r->max_tokens,
                                 .ignore_eos = 1,
                                 .arrival = r->arrival,
                                 .remote_tokens = remote_tokens,
                                 .hold_blocks = hold};
    return kvg_sim_submit(e, &sr);
}

void kvg__scale_day_cached(struct scale_day *d, struct scale_req *r, double cached)
{
    r->cached = cached; /* the gateway reads it in the usage at the finish */
    d->hit_cached += cached;
    d->hit_prompt += r->prompt_len;
}

double kvg__scale_day_first(struct scale_day *d, const struct scale_req *r, double t)
{
    d->inflight_prompt -= r->prompt_len;
    double ttft = t - r->arrival;
    kvg_autoscale_obs_first(d->ob, t, ttft);
    kvg_bench_samples_add(&d->all_ttft, ttft);
    return ttft;
}

double kvg__scale_itl(uint32_t ntok, double t_first, double t_last)
{
    return ntok > 1 ? (t_last - t_first) / (ntok - 1) : 0;
}

void kvg__scale_day_done(struct scale_day *d, const struct scale_req *r, uint32_t ntok, double t,
                         double itl, int miss)
{
    /* What serve's proxy reads at a request's end: its usage (output and
     * cached tokens counted now, not as emitted) and its latencies. */
    kvg_autoscale_obs_tokens(d->ob, ntok);
    if (r->cached >= 0) kvg_autoscale_obs_cached(d->ob, r->cached, r->prompt_len);
    if (miss >= 0) kvg_autoscale_obs_finish(d->ob, t, itl, (unsigned)miss, r->prompt_len, ntok);
    kvg_bench_samples_add(&d->all_itl, itl);
}

void kvg__scale_day_fail(struct scale_day *d, const struct scale_req *r, int first, unsigned miss)
{
    if (!first) d->inflight_prompt -= r->prompt_len;
    kvg_autoscale_obs_finish(d->ob, 0, -1, miss, -1, -1);
}

int kvg__scale_day_point(struct scale_day *d, double t, size_t n, double *t_h, double *rate,
                         size_t *i)
{
    double step = d->o->day_s / (double)n;
    if (d->tl_next >= n || t < (double)(d->tl_next + 1) * step) return 0;
    *i = d->tl_next++;
    t_h[*i] = (double)(*i + 1) * step / d->o->day_s * 24;
    rate[*i] = d->tl_arrivals / step;
    d->tl_arrivals = 0;
    return 1;
}

void kvg__scale_day_pcts(struct scale_day *d, double *ttft_p50, double *ttft_p90, double *ttft_p99,
                         double *itl_p90, double *cache_hit)
{
    *ttft_p50 = kvg_bench_samples_pct(&d->all_ttft, 50);
    *ttft_p90 = kvg_bench_samples_pct(&d->all_ttft, 90);
    *ttft_p99 = kvg_bench_samples_pct(&d->all_ttft, 99);
    *itl_p90 = kvg_bench_samples_pct(&d->all_itl, 90);
    *cache_hit = d->hit_prompt > 0 ? d->hit_cached / d->hit_prompt : 0;
}

int kvg__scale_timeline_alloc(size_t n, double **v[], size_t nv)
{
    int rc = 0;
    for (size_t k = 0; k < nv; k++)
        if (!(*v[k] = calloc(n, sizeof(double)))) rc = -ENOMEM;
    return rc;
}

int kvg__scale_ids_push(uint64_t **v, size_t *tail, size_t *cap, uint64_t id)
{
    if (*tail == *cap) {
        size_t c = *cap ? *cap * 2 : 1024;
        uint64_t *n = realloc(*v, c * sizeof *n);
        if (!n) return -ENOMEM;
        *v = n;
        *cap = c;
    }
    (*v)[(*tail)++] = id;
    return 0;
}
