/* Shared between the offline simulator's files (des.c: the event loop and
 * routing; des_kv.c: KV events into the index); not a public face. */
#ifndef KVG_BENCH_DES_INT_H
#define KVG_BENCH_DES_INT_H

#include "bench/acc.h"
#include "bench/des.h"
#include "kv/events.h"
#include "kv/index.h"
#include "router/pool.h"

/* One engine and the worker that stands for it in the pool. */
struct des_eng {
    struct kvg_sim *e;
    struct kvg_worker *w; /* the pool's (borrowed) */
    int stepping;         /* a step is in flight until busy_until */
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

#endif
