/* Shared between the autoscaling benchmark's files (scale_wl.c: the day's
 * traffic; scale_des.c: the event loop); not a public face. */
#ifndef KVG_BENCH_SCALE_INT_H
#define KVG_BENCH_SCALE_INT_H

#include "base/util.h"
#include "bench/scale.h"

/* The day's arrivals, generated lazily in time order. */
struct scale_wl {
    const struct kvg_bench_scale_opts *o;
    struct kvg_rng rng;
    double t, lambda_max;
    double burst_at[64];
    double zipf_cdf[KVG_BENCH_SCALE_GROUPS];
    uint32_t *prefix; /* groups x prefix_len token ids (owned) */
    uint64_t issued;
};

struct scale_req {
    double arrival;
    uint32_t group, prompt_len, max_tokens;
    uint64_t suffix_seed;
};

int scale_wl_init(struct scale_wl *w, const struct kvg_bench_scale_opts *o);
void scale_wl_free(struct scale_wl *w);
/* The arrival rate at virtual time t (bursts included). */
double scale_wl_rate(const struct scale_wl *w, double t);
/* The next request (arrival < day_s), 1 when the day is over. */
int scale_wl_next(struct scale_wl *w, struct scale_req *r);
/* Writes r's prompt into buf (prompt_len ids). */
void scale_wl_prompt(const struct scale_wl *w, const struct scale_req *r, uint32_t *buf);

/* The planners' profile for knee requests/s a replica (scale_opts.c). */
void scale_derive_profile(const struct kvg_bench_scale_opts *o, double knee,
                          struct kvg_autoscale_profile *pr);
/* Replicas' worth of one request per second (1 / knee_rps). */
double scale_load_per_rps(const struct kvg_bench_scale_opts *o);

#endif
