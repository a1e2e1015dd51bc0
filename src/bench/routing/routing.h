/* kvgate bench: what does kvgate's routing buy on a workload? The same router
 * code that serves traffic, measured two ways: offline (engine models in
 * virtual time, a discrete-event simulation, des.h) and live (an open-loop
 * HTTP load client against any OpenAI-compatible endpoint, live.c), with one
 * report (report.h). `kvgate bench --help` lists every flag. */
#ifndef KVG_BENCH_ROUTING_ROUTING_H
#define KVG_BENCH_ROUTING_ROUTING_H

#include <stddef.h>
#include <stdint.h>

#include "bench/des.h"
#include "bench/report.h"

#define KVG_BENCH_MAX_POLICIES 16

enum kvg_bench_mode { KVG_BENCH_OFFLINE, KVG_BENCH_LIVE };

/* Everything a bench run is configured with (flags and scenario presets). */
struct kvg_bench_cfg {
    enum kvg_bench_mode mode;
    char scenario[64];
    char policies[KVG_BENCH_MAX_POLICIES][64];
    size_t npolicies;
    struct kvg_bench_des_opts des; /* workload, engines, policy options, seed */
    char json_path[512], md_path[512], svg_prefix[512];
    char title[256];
    int jobs, quiet;
    uint32_t repeat;      /* offline: seeds seed .. seed+repeat-1, medians reported */
    double prefill_scale; /* offline: the named profile's prefill costs times this */
    /* live */
    char target[512];
    char model[128];
    int chat_api; /* live: POST /v1/chat/completions with one user message */
    uint32_t spawn_sims;
    double speed; /* engines run this much faster than real time */
    char kvgate_bin[512];
    uint32_t max_inflight;
    uint32_t retries; /* live: each request sent again up to this often, as the openai SDK */
    uint32_t serve_scrape_ms; /* spawned kvgate serve's --load-monitor-interval-ms */
    /* report */
    const struct kvg_bench_published *pub;
    size_t npub;
    const char *notes; /* the scenario's calibration notes (static text) */
    char command[2048];
};

/* Applies a named scenario preset. KVG_ENOTFOUND for an unknown name. */
int kvg_bench_scenario(struct kvg_bench_cfg *c, const char *name);
/* Markdown describing the workload and engines of c (for the report). */
void kvg_bench_describe(const struct kvg_bench_cfg *c, char *out, size_t cap);

/* Runs every policy of c offline (c->jobs at a time), one summary each into
 * out[0..c->npolicies). 0 or the first failure. */
int kvg_bench_run_offline(const struct kvg_bench_cfg *c, struct kvg_bench_summary *out);
/* Runs every policy of c live (live.c): against c->target as it is, or, with
 * spawn_sims, a fresh set of engines and a kvgate serve per policy. */
int kvg_bench_run_live(const struct kvg_bench_cfg *c, struct kvg_bench_summary *out);

#endif
