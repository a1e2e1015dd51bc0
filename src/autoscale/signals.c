/* The autoscale signal builder and its multi-thread feed; see signals.h. */
#include "autoscale/signals.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/stats.h"

/* Samples stamped with their time, oldest overwritten. */
struct lat_ring {
    double *t, *v; /* cap each, owned */
    size_t cap, n, head;
};

struct kvg_autoscale_obs {
    struct kvg_autoscale_obs_sums *b; /* nb, owned; b[bcur % nb] is filling */
    size_t nb, bcur;
    size_t origin;  /* the first closed bucket that observed a request ... */
    int has_origin; /* ... once one did */
    int finished;   /* a closed bucket saw a request finish */
    struct lat_ring ttft, itl;
    double *scratch; /* the rings' cap, for percentiles */
};

static int ring_init(struct lat_ring *L, size_t cap)
{
    L->cap = cap;
    L->t = malloc(cap * sizeof *L->t);
    L->v = malloc(cap * sizeof *L->v);
    return L->t && L->v ? 0 : -ENOMEM;
}

static void ring_put(struct lat_ring *L, double t, double v)
{
    size_t i = (L->head + L->n) % L->cap;
    if (L->n == L->cap)
        L->head = (L->head + 1) % L->cap;
    else
        L->n++;
    L->t[i] = t;
    L->v[i] = v;
}

/* Mean and p90 of L's samples stamped at or after since, -1 when none. */
static void ring_window(const struct lat_ring *L, double *scratch, double since, double *mean,
                        double *p90)
{
    size_t k = 0;
    double s = 0;
    for (size_t j = L->n; j-- > 0;) {
        size_t i = (L->head + j) % L->cap;
        if (L->t[i] < since) break;
        scratch[k++] = L->v[i];
        s += L->v[i];
    }
    if (!k) {
        *mean = *p90 = -1;
        return;
    }
    *mean = s / (double)k;
    *p90 = kvg_stats_pct(scratch, k, 90);
}

int kvg_autoscale_obs_new(size_t nbuckets, size_t nsamples, struct kvg_autoscale_obs **out)
{
    *out = NULL;
    if (nbuckets < 2 || !nsamples) return -EINVAL;
    struct kvg_autoscale_obs *o = calloc(1, sizeof *o);
    if (!o) return -ENOMEM;
    o->nb = nbuckets;
    o->b = calloc(nbuckets, sizeof *o->b);
    o->scratch = malloc(nsamples * sizeof *o->scratch);
    int rc = ring_init(&o->ttft, nsamples);
    if (!rc) rc = ring_init(&o->itl, nsamples);
    if (rc || !o->b || !o->scratch) {
        kvg_autoscale_obs_free(o);
        return -ENOMEM;
    }
    *out = o;
    return 0;
}

void kvg_autoscale_obs_free(struct kvg_autoscale_obs *o)
{
    if (!o) return;
    free(o->b);
    free(o->scratch);
    free(o->ttft.t);
    free(o->ttft.v);
    free(o->itl.t);
    free(o->itl.v);
    free(o);
}

static struct kvg_autoscale_obs_sums *cur(struct kvg_autoscale_obs *o)
{
    return &o->b[o->bcur % o->nb];
}

void kvg_autoscale_obs_arrive(struct kvg_autoscale_obs *o, double prompt_tokens)
{
    struct kvg_autoscale_obs_sums *b = cur(o);
    b->arrivals++;
    if (prompt_tokens >= 0) {
        b->sized++;
        b->prompt_tokens += prompt_tokens;
    }
}

void kvg_autoscale_obs_tokens(struct kvg_autoscale_obs *o, double n)
{
    cur(o)->out_tokens += n;
}

void kvg_autoscale_obs_cached(struct kvg_autoscale_obs *o, double cached, double prompt)
{
    struct kvg_autoscale_obs_sums *b = cur(o);
    b->cached += cached;
    b->prefilled += prompt;
}

void kvg_autoscale_obs_first(struct kvg_autoscale_obs *o, double t, double ttft)
{
    ring_put(&o->ttft, t, ttft);
}

/* The legs of a PD request's misses (signals.h): its TTFT miss (a failure
 * counts as one) is the prefill leg's when that leg alone passed the
 * target or took the larger part of the TTFT, else the decode leg's; an ITL
 * miss is the decode leg's. */
static unsigned legs_of(unsigned miss, int failed, double ttft, double prefill_s,
                        double ttft_target)
{
    unsigned m = KVG_AUTOSCALE_LEG;
    int pre = prefill_s > ttft_target || (!failed && ttft >= 0 && 2 * prefill_s >= ttft);
    if (miss & KVG_AUTOSCALE_MISS_TTFT)
        m |= pre ? KVG_AUTOSCALE_MISS_PREFILL : KVG_AUTOSCALE_MISS_DECODE;
    if ((miss & KVG_AUTOSCALE_MISS_ITL) && !(failed && pre)) m |= KVG_AUTOSCALE_MISS_DECODE;
    return m;
}

unsigned kvg_autoscale_obs_judge(int failed, double ttft, double itl, double prefill_s,
                                 double ttft_target, double itl_target)
{
    unsigned miss = failed ? KVG_AUTOSCALE_MISS_FAILED
                           : (ttft >= 0 && ttft > ttft_target ? KVG_AUTOSCALE_MISS_TTFT : 0) |
                                 (itl >= 0 && itl > itl_target ? KVG_AUTOSCALE_MISS_ITL : 0);
    return prefill_s >= 0 ? miss | legs_of(miss, failed, ttft, prefill_s, ttft_target) : miss;
}

/* One finish's count into b's miss sums. */
static void count_miss(struct kvg_autoscale_obs_sums *b, unsigned miss)
{
    b->finished++;
    b->missed += (miss & KVG_AUTOSCALE_MISS_FAILED) != 0;
    b->missed_ttft += (miss & KVG_AUTOSCALE_MISS_TTFT) != 0;
    b->missed_itl += (miss & KVG_AUTOSCALE_MISS_ITL) != 0;
    b->legged += (miss & KVG_AUTOSCALE_LEG) != 0;
    b->missed_pre += (miss & KVG_AUTOSCALE_MISS_PREFILL) != 0;
    b->missed_dec += (miss & KVG_AUTOSCALE_MISS_DECODE) != 0;
}

void kvg_autoscale_obs_finish(struct kvg_autoscale_obs *o, double t, double itl, unsigned miss,
                              double prompt_tokens, double out_tokens)
{
    struct kvg_autoscale_obs_sums *b = cur(o);
    count_miss(b, miss);
    if (itl >= 0) ring_put(&o->itl, t, itl);
    if (prompt_tokens >= 0 && out_tokens >= 0) {
        b->done_n++;
        b->done_prompt += prompt_tokens;
        b->done_out += out_tokens;
    }
}

static void sums_add(struct kvg_autoscale_obs_sums *a, const struct kvg_autoscale_obs_sums *s)
{
    a->arrivals += s->arrivals;
    a->sized += s->sized;
    a->prompt_tokens += s->prompt_tokens;
    a->out_tokens += s->out_tokens;
    a->cached += s->cached;
    a->prefilled += s->prefilled;
    a->finished += s->finished;
    a->missed += s->missed;
    a->missed_ttft += s->missed_ttft;
    a->missed_itl += s->missed_itl;
    a->legged += s->legged;
    a->missed_pre += s->missed_pre;
    a->missed_dec += s->missed_dec;
    a->done_n += s->done_n;
    a->done_prompt += s->done_prompt;
    a->done_out += s->done_out;
}

void kvg_autoscale_obs_add(struct kvg_autoscale_obs *o, const struct kvg_autoscale_obs_sums *s)
{
    sums_add(cur(o), s);
}

void kvg_autoscale_obs_next(struct kvg_autoscale_obs *o)
{
    const struct kvg_autoscale_obs_sums *b = cur(o);
    if (!o->has_origin && (b->arrivals > 0 || b->finished > 0 || b->out_tokens > 0)) {
        o->origin = o->bcur;
        o->has_origin = 1;
    }
    o->finished |= b->finished > 0;
    o->bcur++;
    memset(cur(o), 0, sizeof *cur(o));
}

/* The closed buckets a window may cover: those from the first that
 * observed a request on. The ticks before it (a gateway up before its
 * traffic) observed nothing: read as zero traffic they would average the
 * first windows down and the planner would read the filling window as a
 * trend, where a builder that starts with its traffic (the benchmark's
 * day) has no such ticks. */
static size_t seen_ticks(const struct kvg_autoscale_obs *o)
{
    return o->has_origin ? o->bcur - o->origin : 0;
}

void kvg_autoscale_obs_window(struct kvg_autoscale_obs *o, double tick_s, double window,
                              struct kvg_autoscale_signals *s)
{
    size_t nb = (size_t)ceil(window / tick_s);
    if (nb > o->nb - 1) nb = o->nb - 1;
    if (nb > seen_ticks(o)) nb = seen_ticks(o);
    /* Unseen while a request is running with none finished (its length is
     * not known yet), or, before any request arrived, for one window: a
     * gateway up before its traffic. A whole window without a request is
     * zero traffic measured, and a pool never used is planned on it (down
     * to min_replicas, or to zero), not held at what runs forever. */
    s->unseen = !o->finished && (o->has_origin || (double)o->bcur * tick_s < window);
    struct kvg_autoscale_obs_sums sum = {0};
    for (size_t j = 1; j <= nb; j++) sums_add(&sum, &o->b[(o->bcur - j) % o->nb]);
    double w = nb ? (double)nb * tick_s : 1;
    s->partial = (double)nb * tick_s < window - 1e-9 * window;
    s->arrival_rate = sum.arrivals / w;
    s->output_tps = sum.out_tokens / w;
    if (sum.sized > 0 && sum.sized == sum.arrivals) {
        s->isl = sum.prompt_tokens / sum.arrivals;
        s->input_tps = sum.prompt_tokens / w;
    } else if (sum.done_n > 0) {
        s->isl = sum.done_prompt / sum.done_n;
        s->input_tps = s->isl * s->arrival_rate;
    } else {
        s->isl = s->input_tps = -1;
    }
    s->osl = sum.done_n > 0 ? sum.done_out / sum.done_n : -1;
    s->cache_hit = sum.prefilled > 0 ? sum.cached / sum.prefilled : -1;
    s->slo_miss = sum.finished > 0 ? sum.missed / sum.finished : -1;
    s->slo_miss_ttft = sum.finished > 0 ? sum.missed_ttft / sum.finished : -1;
    s->slo_miss_itl = sum.finished > 0 ? sum.missed_itl / sum.finished : -1;
    s->slo_miss_prefill = sum.legged > 0 ? sum.missed_pre / sum.finished : -1;
    s->slo_miss_decode = sum.legged > 0 ? sum.missed_dec / sum.finished : -1;
    ring_window(&o->ttft, o->scratch, s->now - w, &s->ttft_mean, &s->ttft_p90);
    ring_window(&o->itl, o->scratch, s->now - w, &s->itl_mean, &s->itl_p90);
}

double kvg_autoscale_obs_span(const char *planner, double interval_s, double window_s)
{
    if (window_s > 0) return window_s;
    double iv = interval_s;
    if (!(iv > 0)) iv = !strcmp(planner, "sla") ? 180 : 30;
    return iv > 30 ? iv : 30;
}

/* ---------------------------------------------------------------- the feed */

int kvg_autoscale_feed_init(struct kvg_autoscale_feed *f)
{
    memset(f, 0, sizeof *f);
    for (size_t i = 0; i < KVG_AUTOSCALE_FEED_SHARDS; i++) {
        int rc = pthread_mutex_init(&f->shard[i].mu, NULL);
        if (rc) {
            while (i-- > 0) pthread_mutex_destroy(&f->shard[i].mu);
            return -rc;
        }
    }
    return 0;
}

void kvg_autoscale_feed_destroy(struct kvg_autoscale_feed *f)
{
    for (size_t i = 0; i < KVG_AUTOSCALE_FEED_SHARDS; i++) pthread_mutex_destroy(&f->shard[i].mu);
}

/* The calling thread's shard, locked: each thread takes the next index on
 * its first call, so the serving loops (fewer than the shards) never meet. */
static struct kvg_autoscale_feed_shard *shard_lock(struct kvg_autoscale_feed *f)
{
    static _Atomic unsigned next;
    static _Thread_local int mine = -1;
    if (mine < 0) mine = (int)(atomic_fetch_add(&next, 1) % KVG_AUTOSCALE_FEED_SHARDS);
    struct kvg_autoscale_feed_shard *sh = &f->shard[mine];
    pthread_mutex_lock(&sh->mu);
    return sh;
}

void kvg_autoscale_feed_arrive(struct kvg_autoscale_feed *f, double prompt_tokens)
{
    struct kvg_autoscale_feed_shard *sh = shard_lock(f);
    sh->sums.arrivals++;
    if (prompt_tokens >= 0) {
        sh->sums.sized++;
        sh->sums.prompt_tokens += prompt_tokens;
    }
    pthread_mutex_unlock(&sh->mu);
}

void kvg_autoscale_feed_first(struct kvg_autoscale_feed *f, double ttft)
{
    struct kvg_autoscale_feed_shard *sh = shard_lock(f);
    if (sh->nttft < KVG_AUTOSCALE_FEED_SAMPLES) sh->ttft[sh->nttft++] = ttft; /* else dropped */
    pthread_mutex_unlock(&sh->mu);
}

void kvg_autoscale_feed_finish(struct kvg_autoscale_feed *f, int failed, double ttft, double itl,
                               double prefill_s, double prompt_tokens, double out_tokens,
                               double cached)
{
    struct kvg_autoscale_feed_shard *sh = shard_lock(f);
    struct kvg_autoscale_obs_sums *s = &sh->sums;
    if (sh->ndone < KVG_AUTOSCALE_FEED_SAMPLES) {
        sh->done[sh->ndone++] = (struct kvg_autoscale_feed_done){ttft, itl, prefill_s, failed};
    } else { /* no room to judge it later: counted, missed only when failed */
        count_miss(s, failed ? KVG_AUTOSCALE_MISS_FAILED : 0);
    }
    if (out_tokens >= 0) s->out_tokens += out_tokens;
    if (prompt_tokens >= 0 && out_tokens >= 0) {
        s->done_n++;
        s->done_prompt += prompt_tokens;
        s->done_out += out_tokens;
    }
    if (prompt_tokens > 0 && cached >= 0) {
        s->cached += cached;
        s->prefilled += prompt_tokens;
    }
    pthread_mutex_unlock(&sh->mu);
}

int kvg_autoscale_feed_take(struct kvg_autoscale_feed *f, struct kvg_autoscale_feed_take *t)
{
    memset(t, 0, sizeof *t);
    size_t cap = KVG_AUTOSCALE_FEED_SHARDS * KVG_AUTOSCALE_FEED_SAMPLES;
    t->ttft = malloc(cap * sizeof *t->ttft);
    t->done = malloc(cap * sizeof *t->done);
    if (!t->ttft || !t->done) {
        kvg_autoscale_feed_take_free(t);
        return -ENOMEM;
    }
    for (size_t i = 0; i < KVG_AUTOSCALE_FEED_SHARDS; i++) {
        struct kvg_autoscale_feed_shard *sh = &f->shard[i];
        pthread_mutex_lock(&sh->mu);
        sums_add(&t->sums, &sh->sums);
        memcpy(t->ttft + t->nttft, sh->ttft, sh->nttft * sizeof *sh->ttft);
        t->nttft += sh->nttft;
        memcpy(t->done + t->ndone, sh->done, sh->ndone * sizeof *sh->done);
        t->ndone += sh->ndone;
        memset(&sh->sums, 0, sizeof sh->sums);
        sh->nttft = sh->ndone = 0;
        pthread_mutex_unlock(&sh->mu);
    }
    return 0;
}

void kvg_autoscale_feed_take_free(struct kvg_autoscale_feed_take *t)
{
    free(t->ttft);
    free(t->done);
    memset(t, 0, sizeof *t);
}

void kvg_autoscale_obs_fold(struct kvg_autoscale_obs *o, const struct kvg_autoscale_feed_take *tk,
                            double t, double ttft_target, double itl_target)
{
    kvg_autoscale_obs_add(o, &tk->sums);
    for (size_t i = 0; i < tk->nttft; i++) kvg_autoscale_obs_first(o, t, tk->ttft[i]);
    struct kvg_autoscale_obs_sums *b = cur(o);
    for (size_t i = 0; i < tk->ndone; i++) {
        const struct kvg_autoscale_feed_done *d = &tk->done[i];
        count_miss(b, kvg_autoscale_obs_judge(d->failed, d->ttft, d->itl, d->prefill_s, ttft_target,
                                              itl_target));
        if (d->itl >= 0) ring_put(&o->itl, t, d->itl);
    }
}
