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

static void scale_lat_put(struct lat_ring *L, double t, double v)
{
    size_t cap = sizeof L->t / sizeof L->t[0];
    size_t i = (L->head + L->n) % cap;
    if (L->n == cap)
        L->head = (L->head + 1) % cap;
    else
        L->n++;
    L->t[i] = t;
    L->v[i] = v;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Mean and p90 of L's samples since `since` (-1 when none); scratch holds
 * 1 << 16 doubles. */
static void scale_lat_window(const struct lat_ring *L, double *scratch, double since, double *mean,
                             double *p90)
{
    size_t cap = sizeof L->t / sizeof L->t[0], k = 0;
    double s = 0;
    for (size_t j = L->n; j-- > 0;) {
        size_t i = (L->head + j) % cap;
        if (L->t[i] < since) break;
        scratch[k++] = L->v[i];
        s += L->v[i];
    }
    if (!k) {
        *mean = *p90 = -1;
        return;
    }
    qsort(scratch, k, sizeof *scratch, cmp_d);
    *mean = s / (double)k;
    *p90 = scratch[(size_t)ceil(0.9 * (double)k) - 1];
}

/* 0 or -ENOMEM (free it anyway). */
static int scale_obs_init(struct scale_obs *ob)
{
    ob->nb = 512;
    ob->bcur = 0;
    ob->b = calloc(ob->nb, sizeof *ob->b);
    ob->ttft = calloc(1, sizeof *ob->ttft);
    ob->itl = calloc(1, sizeof *ob->itl);
    ob->scratch = malloc((1 << 16) * sizeof *ob->scratch);
    return ob->b && ob->ttft && ob->itl && ob->scratch ? 0 : -ENOMEM;
}

static void scale_obs_free(struct scale_obs *ob)
{
    free(ob->b);
    free(ob->ttft);
    free(ob->itl);
    free(ob->scratch);
    memset(ob, 0, sizeof *ob);
}

struct bucket *kvg__scale_obs_cur(struct scale_obs *ob)
{
    return &ob->b[ob->bcur % ob->nb];
}

void kvg__scale_obs_next(struct scale_obs *ob)
{
    ob->bcur++;
    memset(kvg__scale_obs_cur(ob), 0, sizeof(struct bucket));
}

void kvg__scale_window_signals(struct scale_obs *ob, double tick_s, double window,
                               struct kvg_autoscale_signals *s)
{
    size_t nb = (size_t)ceil(window / tick_s);
    if (nb > ob->nb - 1) nb = ob->nb - 1;
    if (nb > ob->bcur) nb = ob->bcur;
    struct bucket sum = {0};
    for (size_t j = 1; j <= nb; j++) {
        const struct bucket *b = &ob->b[(ob->bcur - j) % ob->nb];
        sum.arrivals += b->arrivals;
        sum.prompt_tokens += b->prompt_tokens;
        sum.max_tokens += b->max_tokens;
        sum.out_tokens += b->out_tokens;
        sum.cached += b->cached;
        sum.first_prompt += b->first_prompt;
        sum.finished += b->finished;
        sum.missed += b->missed;
    }
    double w = nb ? (double)nb * tick_s : 1;
    s->arrival_rate = sum.arrivals / w;
    s->input_tps = sum.prompt_tokens / w;
    s->output_tps = sum.out_tokens / w;
    s->isl = sum.arrivals ? sum.prompt_tokens / sum.arrivals : 0;
    s->osl = sum.arrivals ? sum.max_tokens / sum.arrivals : 0;
    s->cache_hit = sum.first_prompt > 0 ? sum.cached / sum.first_prompt : 0;
    s->slo_miss = sum.finished > 0 ? sum.missed / sum.finished : -1;
    scale_lat_window(ob->ttft, ob->scratch, s->now - w, &s->ttft_mean, &s->ttft_p90);
    scale_lat_window(ob->itl, ob->scratch, s->now - w, &s->itl_mean, &s->itl_p90);
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
    kvg_rng_seed(&d->rng, o->seed * 31 + 7);
    if (scale_obs_init(&d->ob)) return -ENOMEM;
    d->prompt = malloc(((size_t)o->prefix_len + o->suffix_max + 1) * sizeof *d->prompt);
    return d->prompt ? 0 : -ENOMEM;
}

void kvg__scale_day_free(struct scale_day *d)
{
    free(d->prompt);
    d->prompt = NULL;
    scale_obs_free(&d->ob);
    kvg_bench_samples_free(&d->all_ttft);
    kvg_bench_samples_free(&d->all_itl);
    kvg__scale_wl_free(&d->wl);
}

double kvg__scale_day_window(const struct scale_day *d, const struct kvg_autoscale_planner *pl)
{
    if (d->o->window_s > 0) return d->o->window_s;
    /* As the planner sees its own interval: sla's is 180 s by default. */
    double iv = pl->o.interval_s;
    if (!(iv > 0)) iv = !strcmp(d->o->planner, "sla") ? 180 : 30;
    return iv > 30 ? iv : 30;
}

void kvg__scale_day_arrive(struct scale_day *d, struct scale_req *r)
{
    *r = d->next;
    struct bucket *b = kvg__scale_obs_cur(&d->ob);
    b->arrivals++;
    b->prompt_tokens += r->prompt_len;
    b->max_tokens += r->max_tokens;
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

void kvg__scale_day_cached(struct scale_day *d, double cached, double prompt)
{
    struct bucket *b = kvg__scale_obs_cur(&d->ob);
    b->cached += cached;
    b->first_prompt += prompt;
    d->hit_cached += cached;
    d->hit_prompt += prompt;
}

double kvg__scale_day_first(struct scale_day *d, const struct scale_req *r, double t)
{
    struct bucket *b = kvg__scale_obs_cur(&d->ob);
    d->inflight_prompt -= r->prompt_len;
    double ttft = t - r->arrival;
    b->firsts++;
    b->ttft_sum += ttft;
    scale_lat_put(d->ob.ttft, t, ttft);
    kvg_bench_samples_add(&d->all_ttft, ttft);
    return ttft;
}

double kvg__scale_itl(uint32_t ntok, double t_first, double t_last)
{
    return ntok > 1 ? (t_last - t_first) / (ntok - 1) : 0;
}

void kvg__scale_day_done(struct scale_day *d, double t, double itl, int ok)
{
    struct bucket *b = kvg__scale_obs_cur(&d->ob);
    b->finished++;
    b->itl_sum += itl;
    scale_lat_put(d->ob.itl, t, itl);
    kvg_bench_samples_add(&d->all_itl, itl);
    b->missed += !ok;
}

void kvg__scale_day_fail(struct scale_day *d, const struct scale_req *r, int first)
{
    if (!first) d->inflight_prompt -= r->prompt_len;
    struct bucket *b = kvg__scale_obs_cur(&d->ob);
    b->missed++;
    b->finished++;
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
