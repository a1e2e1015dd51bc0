/* The offline simulator with several routers (des.h, routers): the balancer
 * that spreads arrivals over them, and two figures of how well they route
 * together. Herding: a pick of an engine that another router picked within
 * the last scrape period, which neither router's in-flight counts nor the
 * engines' metrics could show yet (dynamo#589's 16 routers on one worker).
 * Load spread: each engine's requests running or waiting, sampled at every
 * scrape, averaged over 10 s windows of the measured period; the largest
 * engine's mean over all engines' mean, worst window. The exchange: every
 * exchange period each router's picks since its last batch, through the
 * outbox, encoding and decoder kvgate serve's peers use (router/exchange.h),
 * reach every other router's policy at once (the delay of one batch; the
 * network's own is left out), and with them the router's in-flight count of
 * each engine (the batch's load section). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/util.h"
#include "bench/des_int.h"
#include "router/exchange.h"

#define LOAD_WINDOW_S 10.0

int kvg__bench_fleet_init(struct des_fleet *f, const struct kvg_bench_des_opts *o, uint32_t neng,
                          double warm_end, double end)
{
    memset(f, 0, sizeof *f);
    f->nrouters = o->routers ? o->routers : 1;
    f->neng = neng;
    f->bal = o->balancer;
    kvg_rng_seed(&f->rng, o->seed * 0x9e3779b97f4a7c15ull + 0xba1a);
    f->herd_s = (o->scrape_ms ? o->scrape_ms : 50) / 1000.0;
    f->warm_end = warm_end;
    f->win_s = LOAD_WINDOW_S;
    /* Whole windows only (a short tail would weigh a few samples as much as
     * a window of them); a period shorter than one window is one window. */
    double span = end - warm_end;
    f->nwin = span >= LOAD_WINDOW_S ? (size_t)(span / LOAD_WINDOW_S) : span > 0 ? 1 : 0;
    if (f->nwin == 1 && span < LOAD_WINDOW_S) f->win_s = span;
    f->last_pick = malloc((size_t)f->nrouters * neng * sizeof *f->last_pick);
    f->load = calloc(f->nwin ? f->nwin * neng : 1, sizeof *f->load);
    f->nsamp = calloc(f->nwin ? f->nwin : 1, sizeof *f->nsamp);
    if (!f->last_pick || !f->load || !f->nsamp) {
        kvg__bench_fleet_free(f);
        return -ENOMEM;
    }
    for (size_t i = 0; i < (size_t)f->nrouters * neng; i++) f->last_pick[i] = -INFINITY;
    if (f->nrouters > 1 && o->exchange_ms) {
        f->exchange_s = o->exchange_ms / 1000.0;
        /* A peer forgotten as serve forgets one; offline no router dies. */
        f->heard_ttl_ms = kvg_exchange_peers_ttl_ms(o->exchange_ms);
        f->x = calloc(f->nrouters, sizeof *f->x);
        f->pools = calloc(f->nrouters, sizeof *f->pools);
        f->heard = calloc(f->nrouters, sizeof *f->heard);
        if (!f->x || !f->pools || !f->heard) {
            kvg__bench_fleet_free(f);
            return -ENOMEM;
        }
        kvg_buf_init(&f->batch, 0);
    }
    return 0;
}

int kvg__bench_fleet_attach(struct des_fleet *f, uint32_t r, struct kvg_pool *p)
{
    if (!f->x || r >= f->nrouters) return 0;
    /* A batch the size serve sends at most: what one router routes in a
     * period fits unless its prompts are huge (the oldest go then, as live). */
    int rc = kvg_exchange_new(0, &f->x[r]);
    if (!rc) rc = kvg_exchange_peers_new(f->heard_ttl_ms, &f->heard[r]);
    if (rc) return rc;
    kvg_exchange_set_loads(f->x[r], p);
    f->pools[r] = p;
    p->on_pick = kvg_exchange_on_pick;
    p->on_pick_ud = f->x[r];
    return 0;
}

struct apply_ctx {
    struct des_fleet *f;
    uint32_t from;
    uint64_t now_ms;
};

/* One record of router `from`'s batch, into every other router's policy. */
static int apply_rec(void *ud, const struct kvg_exchange_rec *r)
{
    struct apply_ctx *a = ud;
    for (uint32_t j = 0; j < a->f->nrouters; j++) {
        if (j == a->from) continue;
        int rc = kvg_exchange_apply(a->f->pools[j], NULL, r, a->now_ms, 0);
        if (rc == KVG_ENOTFOUND)
            a->f->xunknown++;
        else if (rc)
            return rc;
        else
            a->f->xapplied++;
    }
    return 0;
}

int kvg__bench_fleet_exchange(struct des_fleet *f, uint64_t now_ms)
{
    for (uint32_t r = 0; f->x && r < f->nrouters; r++) {
        kvg_buf_reset(&f->batch);
        int n = kvg_exchange_flush(f->x[r], r + 1, ++f->xseq, NULL, &f->batch);
        if (n < 0) return n; /* with no record the batch still carries the counts */
        struct apply_ctx a = {f, r, now_ms};
        struct kvg_exchange_head h;
        const char *why;
        int rc =
            kvg_exchange_decode(f->batch.data, f->batch.len, f->batch.len, &h, apply_rec, &a, &why);
        for (uint32_t j = 0; rc >= 0 && j < f->nrouters; j++)
            if (j != r)
                rc = kvg_exchange_peers_apply(f->heard[j], f->pools[j], &h, f->batch.data,
                                              f->batch.len, now_ms);
        if (rc < 0) return rc;
    }
    for (uint32_t r = 0; f->heard && r < f->nrouters; r++)
        kvg_exchange_peers_expire(f->heard[r], f->pools[r], now_ms);
    return 0;
}

void kvg__bench_fleet_free(struct des_fleet *f)
{
    free(f->last_pick);
    free(f->load);
    free(f->nsamp);
    f->last_pick = f->load = NULL;
    f->nsamp = NULL;
    for (uint32_t r = 0; f->x && r < f->nrouters; r++) kvg_exchange_free(f->x[r]);
    for (uint32_t r = 0; f->heard && r < f->nrouters; r++) kvg_exchange_peers_free(f->heard[r]);
    free(f->x);
    free(f->pools);
    free(f->heard);
    f->x = NULL;
    f->pools = NULL;
    f->heard = NULL;
    kvg_buf_free(&f->batch);
}

uint32_t kvg__bench_fleet_router(struct des_fleet *f)
{
    if (f->nrouters <= 1) return 0;
    if (f->bal == KVG_BENCH_BAL_RANDOM) return (uint32_t)kvg_rng_below(&f->rng, f->nrouters);
    return (uint32_t)(f->rr++ % f->nrouters);
}

void kvg__bench_fleet_pick(struct des_fleet *f, uint32_t r, uint32_t e, double t)
{
    if (r >= f->nrouters || e >= f->neng) return;
    f->picks++;
    for (uint32_t o = 0; o < f->nrouters; o++)
        if (o != r && t - f->last_pick[(size_t)o * f->neng + e] < f->herd_s) {
            f->herded++;
            break;
        }
    f->last_pick[(size_t)r * f->neng + e] = t;
}

/* Samples arrive engine by engine at one t: the window counts a sample
 * time once, at engine 0. */
void kvg__bench_fleet_sample(struct des_fleet *f, double t, uint32_t e, double load)
{
    if (t < f->warm_end || e >= f->neng) return;
    size_t w = (size_t)((t - f->warm_end) / f->win_s);
    if (w >= f->nwin) return;
    f->load[w * f->neng + e] += load;
    if (e == 0) f->nsamp[w]++;
}

void kvg__bench_fleet_summarize(const struct des_fleet *f, struct kvg_bench_summary *s)
{
    s->routers = f->nrouters;
    s->herd_ratio = f->picks ? (double)f->herded / (double)f->picks : 0;
    double worst = 0;
    s->nload_win = KVG_MIN(f->nwin, (size_t)KVG_BENCH_MAX_LOAD_WINDOWS);
    for (size_t w = 0; w < f->nwin; w++) {
        const double *l = &f->load[w * f->neng];
        double sum = 0, max = 0;
        for (uint32_t e = 0; e < f->neng; e++) {
            sum += l[e];
            if (l[e] > max) max = l[e];
        }
        /* Sums over the same samples: their ratio is the means'. An idle
         * window has no spread to measure. */
        double ratio = sum > 0 && f->nsamp[w] ? max / (sum / f->neng) : 0;
        if (w < s->nload_win) {
            s->load_ratio_win[w] = ratio;
            s->load_mean_win[w] = f->nsamp[w] ? sum / f->neng / f->nsamp[w] : 0;
        }
        if (ratio > worst) {
            worst = ratio;
            s->max_load_window_s = (double)w * f->win_s;
            s->max_load_mean = max / f->nsamp[w];
            for (uint32_t e = 0; e < f->neng; e++)
                if (l[e] == max) s->max_load_engine = e;
        }
    }
    s->max_load_ratio_10s = worst;
}
