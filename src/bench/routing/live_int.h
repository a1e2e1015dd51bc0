/* Between the live client (live.c) and the live runner that starts and
 * stops processes per policy (live_spawn.c); not a public face. */
#ifndef KVG_BENCH_ROUTING_LIVE_INT_H
#define KVG_BENCH_ROUTING_LIVE_INT_H

#include "bench/routing/routing.h"
#include "net/http_client.h"

#define KVG_BENCH_LIVE_MAX_ENGINES 64

/* What one live run sends requests to, and what it watches. */
struct kvg_bench_live_target {
    struct kvg_http_target target; /* the endpoint under test */
    char path[128];                /* "/v1/completions" (after the target's base path) */
    char label[64];                /* the policy (or endpoint) name for progress */
    char engines[KVG_BENCH_LIVE_MAX_ENGINES][128]; /* engine URLs whose /metrics are sampled */
    int nengines;
    double drain_s; /* engine seconds in-flight requests get after the load ends */
};

/* One run of c's workload against tg; the figures into out. 0 or a
 * negative code (err says why; -EINTR after SIGINT/SIGTERM). */
int kvg__bench_live_run(const struct kvg_bench_cfg *c, const struct kvg_bench_live_target *tg,
                        struct kvg_bench_summary *out, char *err, size_t errlen);

#endif
