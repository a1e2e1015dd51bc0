/* Shared between the offline simulator's files (des.c: the event loop and
 * routing; des_kv.c: KV events into the index); not a public face. */
#ifndef KVG_BENCH_DES_INT_H
#define KVG_BENCH_DES_INT_H

#include "bench/acc.h"
#include "bench/des.h"
#include "kv/events.h"
#include "kv/index.h"
#include "router/pool.h"

/* One engine (engine i is the worker in slot i of every router's pool). */
struct des_eng {
    struct kvg_sim *e;
    int stepping; /* a step is in flight until busy_until */
    double busy_until;
    struct kvg_sim_step st; /* the step in flight: delivered at busy_until */
};

/* The KV event path into the index. */
struct des_kv {
    enum kvg_bench_kv_path path;
    struct kvg_kv_index *idx; /* owned */
    struct kvg_kv_batch batch;
    uint64_t events, batches, bytes;
};

int kvg__bench_des_kv_init(struct des_kv *k, enum kvg_bench_kv_path path, uint32_t block_size,
                           uint32_t engines);
void kvg__bench_des_kv_free(struct des_kv *k);
/* Publishes the engine's logged events (at virtual time ts) into slot's
 * entries of the index, then clears the log. 0 or a negative code. */
int kvg__bench_des_kv_publish(struct des_kv *k, struct kvg_sim *e, uint32_t slot, double ts);

/* Several routers (des.h, routers): the balancer in front of them, and what
 * is measured about them: herding and the spread of load over the engines. */
struct des_fleet {
    uint32_t nrouters, neng;
    enum kvg_bench_balancer bal;
    uint64_t rr;        /* round robin: arrivals so far */
    struct kvg_rng rng; /* the balancer's own: the routers' choices stay as with one */
    double herd_s;      /* a pick within this of another router's, same engine, herds */
    double *last_pick;  /* nrouters x neng: each router's last pick of each engine (owned) */
    uint64_t picks, herded;
    double warm_end, win_s; /* load windows: win_s long from the measured period's start */
    size_t nwin;
    double *load;    /* nwin x neng: sums of sampled load (owned) */
    uint32_t *nsamp; /* nwin: samples taken in each window */
    /* The exchange of routing history (exchange_ms > 0, several routers):
     * each router's outbox (owned), its pool (borrowed), what it heard of
     * the others' in-flight counts (owned), the batch buffer. */
    double exchange_s;
    struct kvg_exchange **x;
    struct kvg_pool **pools;
    struct kvg_exchange_peers **heard;
    uint64_t heard_ttl_ms;
    struct kvg_buf batch;
    uint64_t xseq, xapplied, xunknown;
};

/* 0 or -ENOMEM. [warm_end, end) is the measured period; herd_s the scrape
 * period; seed the run's. */
int kvg__bench_fleet_init(struct des_fleet *f, const struct kvg_bench_des_opts *o, uint32_t neng,
                          double warm_end, double end);
void kvg__bench_fleet_free(struct des_fleet *f);
/* The router the next arrival goes to. */
uint32_t kvg__bench_fleet_router(struct des_fleet *f);
/* Router r picked engine e at t. */
void kvg__bench_fleet_pick(struct des_fleet *f, uint32_t r, uint32_t e, double t);
/* Engine e had `load` requests running or waiting at t. */
void kvg__bench_fleet_sample(struct des_fleet *f, double t, uint32_t e, double load);
/* Router r routes with pool p: its picks are published to the others
 * (when the routers exchange). 0 or -ENOMEM. */
int kvg__bench_fleet_attach(struct des_fleet *f, uint32_t r, struct kvg_pool *p);
/* Every exchange_s: each router's batch, encoded and applied by the
 * others at now_ms (the policies' clock). 0 or a negative code. */
int kvg__bench_fleet_exchange(struct des_fleet *f, uint64_t now_ms);
/* routers, max_load_ratio_10s and herd_ratio into s. */
void kvg__bench_fleet_summarize(const struct des_fleet *f, struct kvg_bench_summary *s);

#endif
