/* `kvgate bench`: flags, the run, the reports. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "base/err.h"
#include "base/log.h"
#include "base/util.h"
#include "bench/routing/routing.h"
#include "bench/routing/suite.h"
#include "bench/scale/scale.h"

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: kvgate bench [--scenario NAME] [--mode offline|live] [--policies P,...] "
        "[options]\n"
        "       kvgate bench --suite routing [--json FILE] [--seeds N] [--smoke] (--suite "
        "--help)\n\n"
        "What does kvgate's routing buy on a workload? The router's own policy code, measured\n"
        "offline (engine models in virtual time, deterministic per --seed) or live over HTTP.\n\n"
        "  --scenario NAME             llmd-73 (llm-d's 8-pod benchmark, offline), llmd-73-mini\n"
        "                              (its scaled-down live version), smoke (seconds, for "
        "tests),\n"
        "                              pd (aggregated vs prefill/decode splits, offline: its own\n"
        "                              flags --out, --requests, --seed, --prompt-len, "
        "--output-len),\n"
        "                              diurnal (the autoscaling day: --planners, see\n"
        "                              docs/autoscale.md), diurnal-pd (that day on separate\n"
        "                              prefill and decode pools)\n"
        "  --mode offline|live         (offline)\n"
        "  --policies LIST             comma-separated policy names (the scenario's set; kvgate\n"
        "                              serve --help lists them); live without --spawn-sims: a\n"
        "                              label for the endpoint under test. Offline, `oracle` is\n"
        "                              a placement no router can make (each shared_prefix group\n"
        "                              on one engine, groups spread evenly): the bound\n"
        "  --seed N                    workload, routing and engine randomness (1)\n"
        "  --json FILE                 every figure, one object per policy\n"
        "  --markdown FILE             the report (also printed on stdout)\n"
        "  --svg PREFIX                plots: PREFIX-ttft.svg, PREFIX-throughput.svg\n"
        "  --title TEXT                report heading\n"
        "  --jobs N                    offline: runs simulated at once (cores)\n"
        "  --repeat R                  offline: run seeds S..S+R-1 and report medians (1)\n"
        "  --route-salt N              offline: change only the router's random choices (ties),\n"
        "                              same workload and engines: how much is routing noise (0)\n"
        "  --quiet                     no progress line on stderr\n"
        "workload:\n"
        "  --workload shared_prefix|chat|trace   (shared_prefix)\n"
        "  --groups N --prompts-per-group N --system-prompt-len N --question-len N\n"
        "                              shared_prefix, inference-perf's meaning\n"
        "  --output-len N              max_tokens of each request\n"
        "  --ignore-eos | --no-ignore-eos   emit exactly --output-len tokens (on)\n"
        "  --vocab N                   offline token ids are drawn from [0, N) (151936)\n"
        "  --printable                 ids are printable bytes (live always: the byte tokenizer)\n"
        "  --turns N --user-len N --chat-groups N --chat-system-len N --think-secs S\n"
        "  --max-context N             chat sessions (stage rates count sessions)\n"
        "  --turns-min N --user-len-max N   agentic chat: turns per session drawn from\n"
        "                              [turns-min, turns], each message from [user-len, max]\n"
        "  --long-frac X --long-len N --long-docs N   mixed chat: a share X of the sessions\n"
        "                              ask one question about one of N documents of L tokens\n"
        "  --lora-adapters N --lora-hot K --lora-hot-frac X   multi-LoRA chat: each session on\n"
        "                              one of N adapters, one of the K hot ones with prob. X\n"
        "  --salt-tenants N            salted chat: each session one of N tenants, its own\n"
        "                              cache_salt and system prompt (group t mod chat-groups)\n"
        "  --trace FILE --trace-speed X --trace-block N   JSONL replay (src/bench/trace.c)\n"
        "  --stages LIST               RATExSECS (Poisson) or cCONCxSECS (closed loop), e.g.\n"
        "                              15x50,3x20,10x20 or c16x60\n"
        "  --warmup-stages N           leading stages not measured\n"
        "  --timeout S                 give up a request without a first token after S s (never)\n"
        "engines (offline, and --spawn-sims):\n"
        "  --engines N --profile NAME --block-size N --kv-capacity-tokens N --max-num-seqs N\n"
        "  --max-num-batched-tokens N  (kvgate sim --help lists the profiles)\n"
        "  --max-model-len N           the engines' context limit (the profile's)\n"
        "  --hetero none|fast|half-kv  offline: every other engine twice as fast, or half the KV\n"
        "  --output-mean N             offline: the engines' EOS length without ignore_eos (256)\n"
        "  --max-loras N               offline: adapter slots per engine (vLLM's default, 1)\n"
        "  --lora-load-ms X            offline: a cold adapter's load, stalling its step (50)\n"
        "  --prefill-scale F           offline: the profile's prefill costs times F (1; llmd-73:\n"
        "                              0.75); a --profile alone resets it to 1\n"
        "  --scrape-ms N               offline: engine load refresh, virtual ms (50)\n"
        "  --load-max-age-ms N         offline: older load samples are unknown (2000)\n"
        "  --kv-path direct|wire|none  offline: KV events into the index (direct)\n"
        "policy options:\n"
        "  --router-kv-overlap-score-weight X --router-temperature X (kv_aware)\n"
        "  --affinity-min-match X --affinity-load-bound X (prefix_affinity)\n"
        "  --session-header H --session-load-bound X --session-fallback P (session_affinity)\n"
        "  --predict-prefill-tps X --predict-itl-bound X (predicted_latency)\n"
        "  --cache-threshold X --balance-abs-threshold N --balance-rel-threshold X (cache_aware)\n"
        "  --router-lora-load-cost X --router-lora-max-workers N (kv_aware, score presets;\n"
        "                              0 and 0 turn the LoRA term off)\n"
        "live:\n"
        "  --target URL                an OpenAI-compatible endpoint (http://host:port)\n"
        "  --model NAME                model field of the requests (kvgate-sim)\n"
        "  --api completions|chat      /v1/completions with the prompt (default), or\n"
        "                              /v1/chat/completions with it as one user message\n"
        "  --spawn-sims N              start N `kvgate sim` and a `kvgate serve` per policy on\n"
        "                              127.0.0.1, stop them after (by PID, also on error/SIGINT)\n"
        "  --speed X                   spawned engines run X times real time; the schedule is\n"
        "                              compressed by X and times are reported in engine time\n"
        "  --kvgate-bin PATH           the kvgate binary to spawn (/proc/self/exe)\n"
        "  --max-inflight N            client cap on open requests (4096)\n"
        "  --serve-scrape-ms N         spawned serve's engine metrics interval (wall ms)\n");
}

/* "15x50,3x20,c16x60" -> stages. */
static int parse_stages(const char *s, struct kvg_bench_wl_opts *w)
{
    size_t n = 0;
    const char *p = s;
    while (*p) {
        if (n == KVG_BENCH_MAX_STAGES) return -1;
        struct kvg_bench_stage st = {0};
        char *end;
        int conc = *p == 'c';
        if (conc) p++;
        double a = strtod(p, &end);
        if (end == p || (*end != 'x' && *end != 'X')) return -1;
        p = end + 1;
        double b = strtod(p, &end);
        if (end == p || !(a > 0) || !(b > 0) || !isfinite(a) || !isfinite(b)) return -1;
        if (conc) {
            if (a != floor(a) || a > 1e6) return -1;
            st.conc = (uint32_t)a;
        } else {
            st.rate = a;
        }
        st.secs = b;
        w->stage[n++] = st;
        p = end;
        if (*p == ',')
            p++;
        else if (*p)
            return -1;
    }
    if (!n) return -1;
    w->nstages = n;
    if (w->warmup >= n) w->warmup = 0;
    return 0;
}

static int parse_policies(struct kvg_bench_cfg *c, const char *s)
{
    c->npolicies = 0;
    while (*s) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len) {
            if (c->npolicies == KVG_BENCH_MAX_POLICIES || len >= sizeof c->policies[0]) return -1;
            memcpy(c->policies[c->npolicies], s, len);
            c->policies[c->npolicies++][len] = 0;
        }
        s += len + (e ? 1 : 0);
    }
    return c->npolicies ? 0 : -1;
}

/* A function, not an inline test: a bound of 0 would be a tautology warning. */
static int in_range(uint64_t u, uint64_t lo, uint64_t hi)
{
    return u >= lo && u <= hi;
}

static void cfg_default(struct kvg_bench_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->mode = KVG_BENCH_OFFLINE;
    kvg_bench_des_opts_default(&c->des);
    c->des.wl.vocab = 151936;
    c->des.wl.want_text = 1;
    snprintf(c->policies[0], sizeof c->policies[0], "random");
    c->npolicies = 1;
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    c->jobs = nc > 0 ? (int)nc : 1;
    snprintf(c->model, sizeof c->model, "kvgate-sim");
    snprintf(c->kvgate_bin, sizeof c->kvgate_bin, "/proc/self/exe");
    c->speed = 1;
    c->repeat = 1;
    c->prefill_scale = 1;
    c->max_inflight = 4096;
    snprintf(c->scenario, sizeof c->scenario, "custom");
}

int kvg_cmd_bench_parse(struct kvg_bench_cfg *c, int argc, char **argv)
{
    cfg_default(c);
    size_t n = 0;
    n += (size_t)snprintf(c->command, sizeof c->command, "kvgate bench");
    for (int i = 1; i < argc && n < sizeof c->command; i++)
        n += (size_t)snprintf(c->command + n, sizeof c->command - n, " %s", argv[i]);
    /* The scenario first: the other flags override it wherever they are. */
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--scenario") && kvg_bench_scenario(c, argv[i + 1])) {
            fprintf(stderr,
                    "kvgate bench: unknown scenario '%s' (llmd-73, llmd-73-mini, smoke, pd, "
                    "diurnal, diurnal-pd)\n",
                    argv[i + 1]);
            return -1;
        }
    struct kvg_bench_wl_opts *w = &c->des.wl;
    struct kvg_sim_profile *pr = &c->des.profile;
    double explicit_scale = 0, lora_load_ms = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 1;
        }
        /* Flags without a value. */
        if (!strcmp(a, "--ignore-eos")) {
            w->ignore_eos = 1;
            continue;
        }
        if (!strcmp(a, "--no-ignore-eos")) {
            w->ignore_eos = 0;
            continue;
        }
        if (!strcmp(a, "--printable")) {
            w->printable = 1;
            continue;
        }
        if (!strcmp(a, "--quiet")) {
            c->quiet = 1;
            continue;
        }
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v || strncmp(a, "--", 2)) {
            fprintf(stderr, "kvgate bench: %s %s\n", a, v ? "is not a flag" : "needs a value");
            return -1;
        }
        i++;
        uint64_t u = 0;
        double d = 0;
        int bad = 0;
#define STR(flag, dst)                                                                             \
    else if (!strcmp(a, flag)) bad = snprintf(dst, sizeof dst, "%s", v) >= (int)sizeof dst
#define U32(flag, dst, lo, hi)                                                                     \
    else if (!strcmp(a, flag))                                                                     \
    {                                                                                              \
        bad = kvg_parse_u64(v, &u) || !in_range(u, lo, hi);                                        \
        dst = (uint32_t)u;                                                                         \
    }
#define U64(flag, dst, lo, hi)                                                                     \
    else if (!strcmp(a, flag))                                                                     \
    {                                                                                              \
        bad = kvg_parse_u64(v, &u) || !in_range(u, lo, hi);                                        \
        dst = u;                                                                                   \
    }
#define DBL(flag, dst, lo, hi)                                                                     \
    else if (!strcmp(a, flag))                                                                     \
    {                                                                                              \
        bad = kvg_parse_double(v, &d) || !(d >= (lo) && d <= (hi));                                \
        dst = d;                                                                                   \
    }
        if (!strcmp(a, "--scenario")) {
        } else if (!strcmp(a, "--mode")) {
            if (!strcmp(v, "offline"))
                c->mode = KVG_BENCH_OFFLINE;
            else if (!strcmp(v, "live"))
                c->mode = KVG_BENCH_LIVE;
            else
                bad = 1;
        } else if (!strcmp(a, "--policies")) {
            bad = parse_policies(c, v);
        } else if (!strcmp(a, "--workload")) {
            if (!strcmp(v, "shared_prefix"))
                w->kind = KVG_BENCH_WL_SHARED_PREFIX;
            else if (!strcmp(v, "chat"))
                w->kind = KVG_BENCH_WL_CHAT;
            else if (!strcmp(v, "trace"))
                w->kind = KVG_BENCH_WL_TRACE;
            else
                bad = 1;
        } else if (!strcmp(a, "--stages")) {
            bad = parse_stages(v, w);
        } else if (!strcmp(a, "--api")) {
            if (!strcmp(v, "completions"))
                c->chat_api = 0;
            else if (!strcmp(v, "chat"))
                c->chat_api = 1;
            else
                bad = 1;
        } else if (!strcmp(a, "--hetero")) {
            if (!strcmp(v, "none"))
                c->des.hetero = KVG_BENCH_HET_NONE;
            else if (!strcmp(v, "fast"))
                c->des.hetero = KVG_BENCH_HET_FAST;
            else if (!strcmp(v, "half-kv"))
                c->des.hetero = KVG_BENCH_HET_HALF_KV;
            else
                bad = 1;
        } else if (!strcmp(a, "--kv-path")) {
            if (!strcmp(v, "direct"))
                c->des.kv_path = KVG_BENCH_KV_DIRECT;
            else if (!strcmp(v, "wire"))
                c->des.kv_path = KVG_BENCH_KV_WIRE;
            else if (!strcmp(v, "none"))
                c->des.kv_path = KVG_BENCH_KV_NONE;
            else
                bad = 1;
        } else if (!strcmp(a, "--profile")) {
            const struct kvg_sim_profile *p = kvg_sim_profile_find(v);
            if (p) *pr = *p;
            c->prefill_scale = 1; /* the named profile as it is */
            bad = !p;
        }
        U64("--seed", c->des.seed, 0, UINT64_MAX)
        STR("--json", c->json_path);
        STR("--markdown", c->md_path);
        STR("--svg", c->svg_prefix);
        STR("--title", c->title);
        U32("--jobs", c->jobs, 1, 256)
        U32("--repeat", c->repeat, 1, KVG_BENCH_MAX_SEEDS)
        U32("--groups", w->groups, 1, 1000000)
        U32("--prompts-per-group", w->prompts_per_group, 1, 1000000)
        U32("--system-prompt-len", w->system_len, 0, 1000000)
        U32("--question-len", w->question_len, 0, 1000000)
        U32("--output-len", w->output_len, 1, 1000000)
        U32("--vocab", w->vocab, 1, UINT32_MAX)
        U32("--turns", w->turns, 1, 100000)
        U32("--user-len", w->user_len, 0, 1000000)
        U32("--chat-groups", w->chat_groups, 1, 100000)
        U32("--chat-system-len", w->chat_system_len, 0, 1000000)
        U32("--max-context", w->max_context, 0, UINT32_MAX)
        DBL("--think-secs", w->think_s, 0, 1e6)
        U32("--turns-min", w->turns_min, 0, 100000)
        U32("--user-len-max", w->user_len_max, 0, 1000000)
        DBL("--long-frac", w->long_frac, 0, 1)
        U32("--long-len", w->long_len, 0, 10000000)
        U32("--long-docs", w->long_docs, 0, 100000)
        U32("--lora-adapters", w->lora_adapters, 0, 100000)
        U32("--lora-hot", w->lora_hot, 0, 100000)
        DBL("--lora-hot-frac", w->lora_hot_frac, 0, 1)
        U32("--salt-tenants", w->salt_tenants, 0, 100000)
        STR("--trace", w->trace_path);
        DBL("--trace-speed", w->trace_speed, 1e-9, 1e9)
        U32("--trace-block", w->trace_block, 1, 1u << 20)
        U64("--warmup-stages", w->warmup, 0, KVG_BENCH_MAX_STAGES)
        DBL("--timeout", c->des.timeout_s, 0, 1e9)
        U64("--route-salt", c->des.route_salt, 0, UINT64_MAX)
        U32("--engines", c->des.engines, 1, 1024)
        U32("--block-size", pr->block_size, 1, 1u << 16)
        U64("--kv-capacity-tokens", pr->kv_capacity_tokens, 2, 1ull << 40)
        U32("--max-num-seqs", pr->max_num_seqs, 1, 1u << 20)
        U32("--max-num-batched-tokens", pr->max_num_batched_tokens, 1, 1u << 24)
        U32("--max-model-len", pr->max_model_len, 2, UINT32_MAX)
        DBL("--output-mean", c->des.mean_output, 1, 1e6)
        U32("--max-loras", c->des.max_loras, 0, 4096)
        DBL("--lora-load-ms", lora_load_ms, 0, 1e6)
        DBL("--prefill-scale", explicit_scale, 1e-3, 1e3)
        U32("--scrape-ms", c->des.scrape_ms, 1, 3600000)
        U32("--load-max-age-ms", c->des.load_max_age_ms, 1, 86400000)
        DBL("--router-kv-overlap-score-weight", c->des.popts.overlap_weight, 0, 1e6)
        DBL("--router-temperature", c->des.popts.temperature, 0, 1e6)
        DBL("--affinity-min-match", c->des.popts.affinity_min_match, 0, 1)
        DBL("--affinity-load-bound", c->des.popts.affinity_load_bound, 1, 1e6)
        STR("--session-header", c->des.popts.session_header);
        DBL("--session-load-bound", c->des.popts.session_load_bound, 1, 1e6)
        STR("--session-fallback", c->des.popts.session_fallback);
        DBL("--predict-prefill-tps", c->des.popts.predict_prefill_tps, 1e-3, 1e12)
        DBL("--predict-itl-bound", c->des.popts.predict_itl_bound, 1, 1e6)
        DBL("--cache-threshold", c->des.popts.cache_threshold, 0, 1)
        U32("--balance-abs-threshold", c->des.popts.balance_abs, 0, UINT32_MAX)
        DBL("--balance-rel-threshold", c->des.popts.balance_rel, 0, 1e6)
        DBL("--router-lora-load-cost", c->des.popts.lora_load_cost, 0, 1e9)
        U32("--router-lora-max-workers", c->des.popts.lora_max_workers, 0, 1024)
        STR("--target", c->target);
        STR("--model", c->model);
        U32("--spawn-sims", c->spawn_sims, 0, 64)
        DBL("--speed", c->speed, 1e-3, 1e4)
        STR("--kvgate-bin", c->kvgate_bin);
        U32("--max-inflight", c->max_inflight, 1, 1u << 20)
        U32("--serve-scrape-ms", c->serve_scrape_ms, 1, 3600000)
        else
        {
            fprintf(stderr, "kvgate bench: unknown flag %s (see --help)\n", a);
            return -1;
        }
#undef STR
#undef U32
#undef U64
#undef DBL
        if (bad) {
            fprintf(stderr, "kvgate bench: bad value for %s: '%s'\n", a, v);
            return -1;
        }
    }
    if (c->mode == KVG_BENCH_LIVE && !c->spawn_sims && !c->target[0]) {
        fprintf(stderr, "kvgate bench: --mode live needs --target URL or --spawn-sims N\n");
        return -1;
    }
    if (c->mode == KVG_BENCH_LIVE && (w->lora_adapters || w->salt_tenants)) {
        /* The live client sends neither an adapter's model nor a salt yet. */
        fprintf(stderr, "kvgate bench: --lora-adapters and --salt-tenants are offline only\n");
        return -1;
    }
    if (c->mode == KVG_BENCH_LIVE && w->kind != KVG_BENCH_WL_TRACE) w->printable = 1;
    if (c->spawn_sims) c->des.engines = c->spawn_sims;
    if (lora_load_ms >= 0) c->des.lora_load_s = lora_load_ms / 1000.0;
    c->des.wl.seed = c->des.seed;
    /* Applied last, to whichever profile was chosen, from its named values.
     * A spawned kvgate sim cannot take it: live runs keep the named costs. */
    if (explicit_scale > 0) c->prefill_scale = explicit_scale;
    const struct kvg_sim_profile *base = kvg_sim_profile_find(pr->name);
    if (base && c->prefill_scale > 0) {
        pr->t_prefill_token = base->t_prefill_token * c->prefill_scale;
        pr->t_prefill_attn = base->t_prefill_attn * c->prefill_scale;
    }
    if (c->prefill_scale != 1 && c->mode == KVG_BENCH_LIVE && c->spawn_sims)
        fprintf(stderr, "kvgate bench: --prefill-scale applies offline only; kvgate sim keeps %s\n",
                pr->name);
    return 0;
}

static int write_file(const char *path, const struct kvg_bench_report *r,
                      int (*fn)(const struct kvg_bench_report *, FILE *))
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "kvgate bench: %s: %s\n", path, strerror(errno));
        return -errno;
    }
    int rc = fn(r, f);
    if (fclose(f) && !rc) rc = -EIO;
    if (rc) fprintf(stderr, "kvgate bench: writing %s: %s\n", path, kvg_strerror(rc));
    return rc;
}

/* The file name part of a path, for links between report files. */
static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

int kvg_cmd_bench_main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) /* the suite has flags of its own */
        if (!strcmp(argv[i], "--suite")) return kvg_cmd_bench_suite_main(argc, argv);
    /* The autoscaling scenario has its own engine loop and report
     * (bench/scale/scale.h). */
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--scenario") &&
            (!strcmp(argv[i + 1], "diurnal") || !strcmp(argv[i + 1], "diurnal-pd")))
            return kvg_cmd_bench_scale_main(argc, argv);
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--scenario") && !strcmp(argv[i + 1], "pd"))
            return kvg_cmd_bench_pd_main(argc, argv); /* its own engines and report */
    struct kvg_bench_cfg *c = calloc(1, sizeof *c);
    struct kvg_bench_summary *sum = NULL;
    char *setup = NULL;
    int status = 2;
    if (!c) return 1;
    int rc = kvg_cmd_bench_parse(c, argc, argv);
    if (rc) {
        status = rc > 0 ? 0 : 2;
        goto out;
    }
    /* The pool and policies log at info; a bench wants only warnings. */
    kvg_log_set_level(KVG_LOG_WARN);
    status = 1;
    sum = calloc(c->npolicies, sizeof *sum);
    setup = malloc(8192);
    if (!sum || !setup) goto out;
    rc = c->mode == KVG_BENCH_OFFLINE ? kvg_bench_run_offline(c, sum) : kvg_bench_run_live(c, sum);
    kvg_bench_describe(c, setup, 8192);
    char ttft[600], tput[600];
    snprintf(ttft, sizeof ttft, "%s-ttft.svg", c->svg_prefix);
    snprintf(tput, sizeof tput, "%s-throughput.svg", c->svg_prefix);
    struct kvg_bench_report r = {
        .title = c->title[0] ? c->title : "kvgate bench",
        .scenario = c->scenario,
        .mode = c->mode == KVG_BENCH_OFFLINE ? "offline" : "live",
        .command = c->command,
        .setup = setup,
        .seed = c->des.seed,
        .s = sum,
        .n = c->npolicies,
        .pub = c->pub,
        .npub = c->npub,
        .svg_ttft = c->svg_prefix[0] ? base_name(ttft) : NULL,
        .svg_throughput = c->svg_prefix[0] ? base_name(tput) : NULL,
    };
    int ran = 0;
    for (size_t i = 0; i < c->npolicies; i++) ran += sum[i].status == 0 && !rc;
    int wrc = 0;
    if (ran && c->svg_prefix[0]) {
        wrc |= write_file(ttft, &r, kvg_bench_svg_ttft);
        wrc |= write_file(tput, &r, kvg_bench_svg_throughput);
    }
    if (c->json_path[0]) wrc |= write_file(c->json_path, &r, kvg_bench_report_json);
    if (c->md_path[0]) wrc |= write_file(c->md_path, &r, kvg_bench_report_md);
    kvg_bench_report_md(&r, stdout);
    fflush(stdout);
    status = rc || wrc ? 1 : 0;
out:
    free(setup);
    free(sum);
    free(c);
    return status;
}
