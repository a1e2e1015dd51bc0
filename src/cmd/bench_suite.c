/* `kvgate bench --suite routing`: every workload a user meets against every
 * routing policy, offline, several seeds each, in one report.
 *
 * Each workload is a `kvgate bench` command line (flags of cmd/bench.c), so
 * any row of the report can be re-run alone; the suite adds the seeds and the
 * policies, runs them with the offline runner (bench/routing/offline.c) and
 * writes one markdown report and one JSON array (an object per workload and
 * policy). `--smoke` swaps each workload for a tiny one with the same shape:
 * seconds of CPU, for the test suite; its figures mean nothing.
 *
 * The verdict compares every policy with the best on each workload: p90
 * TTFT within 2% of the best, and output tokens/s not below the best peer
 * default (kv_aware: Dynamo's, cache_aware: sglang's and vllm-router's,
 * precise: llm-d's profile) by more than that peer's own seed spread. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cmd/cmd.h"
#include "base/err.h"
#include "base/log.h"
#include "base/util.h"
#include "bench/routing/routing.h"
#include "bench/routing/suite.h"
#include "router/policy.h"

#define CHAT                                                                                       \
    "--workload chat --engines 8 --profile qwen3-32b-h100-tp2-roofline --turns 8 --user-len 300 "  \
    "--chat-groups 20 --chat-system-len 2000 --think-secs 5 --output-len 200 --max-context 16000 " \
    "--warmup-stages 1 "
#define CHAT_SMOKE                                                                                 \
    "--workload chat --engines 2 --profile tiny --turns 3 --user-len 32 --chat-groups 3 "          \
    "--chat-system-len 96 --think-secs 0.5 --output-len 8 --max-context 1000 --warmup-stages 1 "

struct workload {
    const char *name;
    const char *what; /* one line for the report */
    const char *flags, *smoke;
};

static const struct workload workloads[] = {
    {"llmd-73", "llm-d's 73%-capacity shared-prefix benchmark (8 pods, 150 groups, 3-60 QPS)",
     "--scenario llmd-73 --kv-path direct", "--scenario smoke"},
    {"chat",
     "multi-turn chat, moderate: 20 system prompts of 2,000 tokens, 8 turns, 2-8 sessions/s",
     CHAT "--stages 2x60,4x120,6x120,8x120", CHAT_SMOKE "--stages 2x2,4x3"},
    {"chat-overload", "multi-turn chat, overloaded: the same at 10-18 sessions/s (engines queue)",
     CHAT "--stages 4x60,10x120,14x120,18x120", CHAT_SMOKE "--stages 4x2,12x3"},
    {"agentic",
     "agentic sessions: 12,000-token system prompt + tools (4 agents), 10-50 turns of 500-2,500 "
     "tool-result tokens, up to 100k context, 2 s tool time, 48 sessions at once",
     "--workload chat --engines 8 --profile qwen3-32b-h100-tp2-roofline --max-model-len 131072 "
     "--chat-groups 4 --chat-system-len 12000 --turns 50 --turns-min 10 --user-len 500 "
     "--user-len-max 2500 --output-len 150 --think-secs 2 --max-context 100000 "
     "--stages c32x60,c48x240 --warmup-stages 1",
     "--workload chat --engines 2 --profile tiny --chat-groups 2 --chat-system-len 128 --turns 6 "
     "--turns-min 2 --user-len 16 --user-len-max 64 --output-len 8 --think-secs 0.2 "
     "--max-context 1200 --stages c4x2,c6x3 --warmup-stages 1"},
    {"mixed",
     "mixed: 80% short chats (200 tokens, 3 turns), 20% one question on one of 40 documents of "
     "30,000 tokens",
     "--workload chat --engines 8 --profile qwen3-32b-h100-tp2-roofline --chat-groups 20 "
     "--chat-system-len 0 --turns 3 --user-len 200 --output-len 200 --think-secs 3 "
     "--long-frac 0.2 --long-len 30000 --long-docs 40 --stages 6x60,14x240 --warmup-stages 1",
     "--workload chat --engines 2 --profile tiny --chat-groups 2 --chat-system-len 0 --turns 2 "
     "--user-len 24 --output-len 8 --think-secs 0.2 --long-frac 0.2 --long-len 600 --long-docs 4 "
     "--stages 4x2,8x3 --warmup-stages 1"},
    {"hetero-fast", "chat on 8 engines, every other one twice as fast, 4-12 sessions/s",
     CHAT "--hetero fast --stages 4x60,12x180", CHAT_SMOKE "--hetero fast --stages 2x2,4x3"},
    {"hetero-kv", "chat on 8 engines, every other one with half the KV, 4-8 sessions/s",
     CHAT "--hetero half-kv --stages 4x60,8x180", CHAT_SMOKE "--hetero half-kv --stages 2x2,4x3"},
    {"bursts",
     "chat in bursts: 24 sessions/s (about 2x capacity) for 10 s every minute, 2/s between",
     CHAT "--stages 2x30,2x50,24x10,2x50,24x10,2x50,24x10,2x50,24x10,2x50,24x10",
     CHAT_SMOKE "--stages 2x1,2x2,12x1,2x2,12x1"},
    {"trace",
     "replay of bench/routing/trace-sample.jsonl (3,297 multi-turn requests, Mooncake-style "
     "hash_ids) on 4 engines",
     "--workload trace --trace bench/routing/trace-sample.jsonl --trace-block 512 --engines 4 "
     "--profile qwen3-32b-h100-tp2-roofline",
     "--workload trace --trace bench/routing/trace-sample.jsonl --trace-block 16 --trace-speed 20 "
     "--engines 2 --profile tiny --max-model-len 4096"},
    {"multi-lora",
     "multi-LoRA chat: 40 adapters (4 hot with 80% of the sessions, 36 cold), each its own "
     "2,000-token system prompt, 4 turns, 4 adapter slots per engine (--max-loras 4), 50 ms per "
     "cold load, 4-12 sessions/s",
     "--workload chat --engines 8 --profile qwen3-32b-h100-tp2-roofline --turns 4 --user-len 300 "
     "--chat-groups 40 --chat-system-len 2000 --think-secs 5 --output-len 200 --max-context 16000 "
     "--lora-adapters 40 --lora-hot 4 --lora-hot-frac 0.8 --max-loras 4 --lora-load-ms 50 "
     "--warmup-stages 1 --stages 4x60,8x120,12x120",
     "--workload chat --engines 2 --profile tiny --turns 3 --user-len 32 --chat-groups 8 "
     "--chat-system-len 96 --think-secs 0.5 --output-len 8 --max-context 1000 --lora-adapters 8 "
     "--lora-hot 2 --lora-hot-frac 0.8 --max-loras 2 --warmup-stages 1 --stages 2x2,4x3"},
    {"salted-tenants",
     "salted tenants: 64 tenants, each its own cache_salt, 8 system prompts of 2,000 tokens "
     "shared in text by 8 tenants each (salts keep them apart), 4 turns, 4-12 sessions/s",
     "--workload chat --engines 8 --profile qwen3-32b-h100-tp2-roofline --turns 4 --user-len 300 "
     "--chat-groups 8 --chat-system-len 2000 --think-secs 5 --output-len 200 --max-context 16000 "
     "--salt-tenants 64 --warmup-stages 1 --stages 4x60,8x120,12x120",
     "--workload chat --engines 2 --profile tiny --turns 3 --user-len 32 --chat-groups 3 "
     "--chat-system-len 96 --think-secs 0.5 --output-len 8 --max-context 1000 --salt-tenants 9 "
     "--warmup-stages 1 --stages 2x2,4x3"},
};

#define NWL (sizeof workloads / sizeof workloads[0])

/* The policies the suite compares (--policies overrides). */
static const char default_policies[] =
    "precise,estimated,load,random,kv_aware,cache_aware,prefix_affinity,session_affinity,"
    "predicted_latency";

/* The peer defaults the report measures against, and whose defaults they are. */
static const char *const peers[][2] = {
    {"kv_aware", "Dynamo"}, {"cache_aware", "sglang, vllm-router"}, {"precise", "llm-d"}};

struct suite_opts {
    char json[512], md[512], only[512], policies[1024];
    char extra[512]; /* --bench-flags: appended to every workload's flags */
    uint32_t seeds;
    int jobs, smoke, quiet;
};

struct wl_result {
    const struct workload *w;
    char flags[1024];
    struct kvg_bench_summary *s; /* npolicies */
    double wall_s;
};

static void usage(FILE *f)
{
    fprintf(f, "usage: kvgate bench --suite routing [--json FILE] [--markdown FILE] [--seeds N]\n"
               "                    [--policies P,...] [--workloads W,...] [--jobs N] [--smoke]\n"
               "                    [--bench-flags \"FLAGS\"]\n\n"
               "Every workload against every policy, offline (deterministic per seed), medians\n"
               "and spreads over --seeds (3) seeds. Workloads:");
    for (size_t i = 0; i < NWL; i++) fprintf(f, "%s %s", i ? "," : "", workloads[i].name);
    fprintf(f, ".\n--smoke runs a tiny version of each (seconds; figures meaningless).\n"
               "--bench-flags appends kvgate bench flags to every workload (e.g. the LoRA term\n"
               "off: \"--router-lora-load-cost 0 --router-lora-max-workers 0\").\n");
}

static int parse(struct suite_opts *o, int argc, char **argv)
{
    memset(o, 0, sizeof *o);
    o->seeds = 3;
    o->jobs = 2;
    snprintf(o->policies, sizeof o->policies, "%s", default_policies);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t u;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(a, "--smoke")) {
            o->smoke = 1;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (!v) {
            fprintf(stderr, "kvgate bench: %s needs a value\n", a);
            return -1;
        } else if (!strcmp(a, "--suite")) {
            if (strcmp(v, "routing")) {
                fprintf(stderr, "kvgate bench: unknown suite '%s' (routing)\n", v);
                return -1;
            }
            i++;
        } else if (!strcmp(a, "--seeds") && !kvg_parse_u64(v, &u) && u >= 1 &&
                   u <= KVG_BENCH_MAX_SEEDS) {
            o->seeds = (uint32_t)u, i++;
        } else if (!strcmp(a, "--jobs") && !kvg_parse_u64(v, &u) && u >= 1 && u <= 256) {
            o->jobs = (int)u, i++;
        } else if (!strcmp(a, "--json") && strlen(v) < sizeof o->json) {
            snprintf(o->json, sizeof o->json, "%s", v), i++;
        } else if (!strcmp(a, "--markdown") && strlen(v) < sizeof o->md) {
            snprintf(o->md, sizeof o->md, "%s", v), i++;
        } else if (!strcmp(a, "--workloads") && strlen(v) + 2 < sizeof o->only) {
            snprintf(o->only, sizeof o->only, ",%.500s,", v), i++;
        } else if (!strcmp(a, "--bench-flags") && strlen(v) < sizeof o->extra) {
            snprintf(o->extra, sizeof o->extra, "%s", v), i++;
        } else if (!strcmp(a, "--policies") && strlen(v) < sizeof o->policies) {
            snprintf(o->policies, sizeof o->policies, "%s", v), i++;
        } else {
            fprintf(stderr, "kvgate bench --suite: bad flag or value: %s %s\n", a, v);
            return -1;
        }
    }
    return 0;
}

/* Splits flags (spaces) into argv after argv[0] and appends the suite's own. */
static int build_cfg(const struct suite_opts *o, const char *flags, struct kvg_bench_cfg *c,
                     char *shown, size_t cap)
{
    char buf[2048], seeds[16], jobs[16];
    if (snprintf(buf, sizeof buf, "%s%s%s", flags, o->extra[0] ? " " : "", o->extra) >=
        (int)sizeof buf)
        return -1;
    snprintf(seeds, sizeof seeds, "%u", o->seeds);
    snprintf(jobs, sizeof jobs, "%d", o->jobs);
    char *argv[128];
    int argc = 0;
    argv[argc++] = "bench";
    for (char *t = strtok(buf, " "); t && argc < 118; t = strtok(NULL, " ")) argv[argc++] = t;
    argv[argc++] = "--policies";
    argv[argc++] = (char *)o->policies;
    argv[argc++] = "--repeat";
    argv[argc++] = seeds;
    argv[argc++] = "--jobs";
    argv[argc++] = jobs;
    argv[argc++] = "--quiet";
    snprintf(shown, cap, "kvgate bench %s%s%s --repeat %u", flags, o->extra[0] ? " " : "", o->extra,
             o->seeds);
    return kvg_cmd_bench_parse(c, argc, argv);
}

int kvg_cmd_bench_suite_main(int argc, char **argv)
{
    struct suite_opts o;
    int rc = parse(&o, argc, argv);
    if (rc) return rc > 0 ? 0 : 2;
    kvg_log_set_level(KVG_LOG_WARN);
    struct kvg_bench_cfg *c = calloc(1, sizeof *c);
    struct wl_result *res = calloc(NWL, sizeof *res);
    size_t nres = 0, npol = 0;
    int status = 1;
    if (!c || !res) goto out;
    for (size_t i = 0; i < NWL; i++) {
        const struct workload *w = &workloads[i];
        char key[80];
        snprintf(key, sizeof key, ",%s,", w->name);
        if (o.only[0] && !strstr(o.only, key)) continue;
        struct wl_result *r = &res[nres];
        r->w = w;
        if (build_cfg(&o, o.smoke ? w->smoke : w->flags, c, r->flags, sizeof r->flags)) {
            fprintf(stderr, "kvgate bench --suite: workload %s: bad flags\n", w->name);
            status = 2;
            goto out;
        }
        npol = c->npolicies;
        if (!(r->s = calloc(npol, sizeof *r->s))) goto out;
        nres++;
        uint64_t t0 = kvg_now_ns();
        if (!o.quiet)
            fprintf(stderr, "suite: %s (%zu policies x %u seeds)...\n", w->name, npol, o.seeds);
        if ((rc = kvg_bench_run_offline(c, r->s))) {
            fprintf(stderr, "kvgate bench --suite: %s: %s\n", w->name, kvg_strerror(rc));
            goto out;
        }
        r->wall_s = (double)(kvg_now_ns() - t0) / 1e9;
    }
    struct kvg_bench_suite_report rep = {.smoke = o.smoke,
                                         .seeds = o.seeds,
                                         .npolicies = npol,
                                         .peers = peers,
                                         .npeers = sizeof peers / sizeof peers[0],
                                         .default_policy = KVG_POLICY_DEFAULT};
    for (size_t i = 0; i < nres && i < KVG_BENCH_SUITE_MAX; i++) {
        rep.wl[i] = (struct kvg_bench_suite_wl){res[i].w->name, res[i].w->what, res[i].flags,
                                                res[i].s, res[i].wall_s};
        rep.nwl++;
    }
    int wrc = 0;
    if (o.json[0]) {
        FILE *f = fopen(o.json, "w");
        wrc |= !f || kvg_bench_suite_json(&rep, f);
        if (f && fclose(f)) wrc = 1;
    }
    if (o.md[0]) {
        FILE *f = fopen(o.md, "w");
        wrc |= !f || kvg_bench_suite_md(&rep, f);
        if (f && fclose(f)) wrc = 1;
    }
    kvg_bench_suite_md(&rep, stdout);
    fflush(stdout);
    if (wrc) fprintf(stderr, "kvgate bench --suite: writing a report failed\n");
    status = wrc ? 1 : 0;
out:
    for (size_t i = 0; res && i < nres; i++) free(res[i].s);
    free(res);
    free(c);
    return status;
}
