/* `kvgate bench`: the routing runs' flags (one option table, base/opt.h),
 * the run, the reports; the other scenarios are handed to bench_scale.c,
 * bench_suite.c and bench_pd.c by their flags. */
#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/bench_int.h"
#include "base/err.h"
#include "base/log.h"
#include "base/opt.h"
#include "base/util.h"
#include "bench/routing/routing.h"
#include "bench/routing/suite.h"
#include "bench/scale/scale.h"

/* The command line's target: the configuration, the shared flags, and what
 * is applied after every flag has been read. */
struct args {
    struct kvg_bench_cfg c;
    struct kvg__bench_common com;
    char scenario[64];     /* --scenario: applied before every other flag */
    double explicit_scale; /* --prefill-scale: applied last (0: not given) */
    double lora_load_ms;   /* --lora-load-ms (< 0: not given) */
};

_Static_assert(sizeof(enum kvg_bench_mode) == sizeof(int), "ENUM entries write an int");
_Static_assert(sizeof(enum kvg_bench_wl_kind) == sizeof(int), "ENUM entries write an int");
_Static_assert(sizeof(enum kvg_bench_hetero) == sizeof(int), "ENUM entries write an int");
_Static_assert(sizeof(enum kvg_bench_kv_path) == sizeof(int), "ENUM entries write an int");
_Static_assert(sizeof(enum kvg_bench_agent_api) == sizeof(int), "ENUM entries write an int");

#define A(field) offsetof(struct args, field)
#define AS(field) sizeof(((struct args *)0)->field)
#define W(field) A(c.des.wl.field)
#define P(field) A(c.des.profile.field)
#define R(lo, hi) .min = (lo), .max = (hi)

/* In the order of their enums (des.h, workload.h, routing.h). */
static const char *const scenarios[] = {"llmd-73", "llmd-73-mini", "smoke", "pd",
                                        "diurnal", "diurnal-pd",   NULL};
static const char *const modes[] = {"offline", "live", NULL};
static const char *const workloads[] = {"shared_prefix", "chat", "trace", "agent", NULL};
static const char *const agent_apis[] = {"responses", "messages", "mixed", NULL};
static const char *const apis[] = {"completions", "chat", NULL};
static const char *const heteros[] = {"none", "fast", "half-kv", NULL};
static const char *const kv_paths[] = {"none", "direct", "wire", NULL};
static const char *const balancers[] = {"round_robin", "random", NULL};

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

static int stages_opt(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                      size_t errlen)
{
    (void)o, (void)index;
    if (!parse_stages(v, &((struct args *)obj)->c.des.wl)) return 0;
    return kvg_err_set(err, errlen, KVG_ECONFIG,
                       "expects up to %d comma-separated RATExSECS (Poisson) or cCONCxSECS "
                       "(closed loop), e.g. 15x50,c16x60; got '%s'",
                       KVG_BENCH_MAX_STAGES, v);
}

static int stages_text(const void *obj, const struct kvg_opt *o, char *out, size_t cap)
{
    (void)o;
    const struct kvg_bench_wl_opts *w = &((const struct args *)obj)->c.des.wl;
    size_t n = 0;
    out[0] = 0;
    for (size_t i = 0; i < w->nstages && n < cap; i++) {
        const struct kvg_bench_stage *st = &w->stage[i];
        n +=
            (size_t)(st->conc
                         ? snprintf(out + n, cap - n, "%sc%ux%g", i ? "," : "", st->conc, st->secs)
                         : snprintf(out + n, cap - n, "%s%gx%g", i ? "," : "", st->rate, st->secs));
    }
    return 0;
}

static int policies_opt(void *obj, const struct kvg_opt *o, const char *s, size_t index, char *err,
                        size_t errlen)
{
    (void)o, (void)index;
    struct kvg_bench_cfg *c = &((struct args *)obj)->c;
    c->npolicies = 0;
    while (*s) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len) {
            if (c->npolicies == KVG_BENCH_MAX_POLICIES || len >= sizeof c->policies[0])
                return kvg_err_set(err, errlen, KVG_ECONFIG,
                                   "expects at most %d comma-separated names of fewer than %zu "
                                   "characters",
                                   KVG_BENCH_MAX_POLICIES, sizeof c->policies[0]);
            memcpy(c->policies[c->npolicies], s, len);
            c->policies[c->npolicies++][len] = 0;
        }
        s += len + (e ? 1 : 0);
    }
    if (!c->npolicies)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "expects at least one policy name");
    return 0;
}

static int policies_text(const void *obj, const struct kvg_opt *o, char *out, size_t cap)
{
    (void)o;
    const struct kvg_bench_cfg *c = &((const struct args *)obj)->c;
    kvg__bench_join(out, cap, c->policies[0], sizeof c->policies[0], c->npolicies);
    return 0;
}

static int profile_opt(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                       size_t errlen)
{
    (void)o, (void)index;
    struct args *a = obj;
    const struct kvg_sim_profile *p = kvg_sim_profile_find(v);
    if (!p)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "expects one of %s, got '%s'",
                           kvg__bench_profile_names, v);
    a->c.des.profile = *p;
    a->c.prefill_scale = 1; /* the named profile as it is */
    return 0;
}

static int profile_text(const void *obj, const struct kvg_opt *o, char *out, size_t cap)
{
    (void)o;
    snprintf(out, cap, "%s", ((const struct args *)obj)->c.des.profile.name);
    return 0;
}

/* A number in [lo, hi] into *out, or an error naming the range. */
static int number_in(const char *v, double lo, double hi, double *out, char *err, size_t errlen)
{
    double d;
    if (kvg_parse_double(v, &d) || !(d >= lo && d <= hi))
        return kvg_err_set(err, errlen, KVG_ECONFIG, "expects a number %g..%g, got '%s'", lo, hi,
                           v);
    *out = d;
    return 0;
}

/* --prefill-scale and --lora-load-ms are applied after every flag; --help
 * shows the value the run starts from. */
static int scale_opt(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                     size_t errlen)
{
    (void)o, (void)index;
    return number_in(v, 1e-3, 1e3, &((struct args *)obj)->explicit_scale, err, errlen);
}

static int scale_text(const void *obj, const struct kvg_opt *o, char *out, size_t cap)
{
    (void)o;
    snprintf(out, cap, "%g", ((const struct args *)obj)->c.prefill_scale);
    return 0;
}

static int lora_ms_opt(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                       size_t errlen)
{
    (void)o, (void)index;
    return number_in(v, 0, 1e6, &((struct args *)obj)->lora_load_ms, err, errlen);
}

static int lora_ms_text(const void *obj, const struct kvg_opt *o, char *out, size_t cap)
{
    (void)o;
    snprintf(out, cap, "%g", ((const struct args *)obj)->c.des.lora_load_s * 1000);
    return 0;
}

/* Read before the other flags: a preset they override wherever they stand. */
static const struct kvg_opt scenario_table[] = {
    {"scenario", NULL, KVG_OPT_ENUM, A(scenario), AS(scenario), .choices = scenarios,
     .section = "scenario",
     .help = "a preset the other flags override wherever they stand: llmd-73 (llm-d's 8-pod "
             "benchmark), llmd-73-mini (its live miniature), smoke (seconds, for tests); pd, "
             "diurnal and diurnal-pd have flags of their own (--scenario pd --help)"},
    KVG_OPT_END,
};

static const struct kvg_opt opt_table[] = {
    {NULL, NULL, KVG_OPT_INCLUDE, 0, .sub = scenario_table},
    {"mode", NULL, KVG_OPT_ENUM, A(c.mode), .choices = modes, .section = "scenario",
     .help = "offline: engine models in virtual time (deterministic per --seed); live: over HTTP"},
    {"policies", NULL, KVG_OPT_CUSTOM, 0, .meta = "LIST", .parse = policies_opt,
     .format = policies_text, .help = kvg__bench_policy_help},
    {"repeat", NULL, KVG_OPT_U32, A(c.repeat), R(1, KVG_BENCH_MAX_SEEDS), .meta = "R",
     .help = "offline: run seeds S..S+R-1 and report medians"},
    {"route-salt", NULL, KVG_OPT_U64, A(c.des.route_salt),
     .help = "offline: change only the router's random choices (ties): how much is routing noise"},
    {NULL, NULL, KVG_OPT_INCLUDE, A(com), .sub = kvg__bench_common_table},
    {NULL, NULL, KVG_OPT_INCLUDE, A(c.jobs), .sub = kvg__bench_jobs_table},
    {"svg", NULL, KVG_OPT_STR, A(c.svg_prefix), AS(c.svg_prefix), .meta = "PREFIX",
     .section = "output", .help = "plots: PREFIX-ttft.svg, PREFIX-throughput.svg"},
    {"title", NULL, KVG_OPT_STR, A(c.title), AS(c.title), .meta = "TEXT",
     .help = "the report's heading"},
    {"workload", NULL, KVG_OPT_ENUM, W(kind), .choices = workloads, .section = "workload",
     .help = "what the clients send"},
    {"stages", NULL, KVG_OPT_CUSTOM, 0, .meta = "LIST", .parse = stages_opt, .format = stages_text,
     .help = "RATExSECS (Poisson) or cCONCxSECS (closed loop), e.g. 15x50,3x20 or c16x60"},
    {"warmup-stages", NULL, KVG_OPT_SIZE, W(warmup), R(0, KVG_BENCH_MAX_STAGES),
     .help = "leading stages not measured"},
    {"timeout", NULL, KVG_OPT_DOUBLE, A(c.des.timeout_s), R(0, 1e9), .meta = "SECS",
     .help = "give up a request without a first token after SECS (0: never)"},
    {"output-len", NULL, KVG_OPT_U32, W(output_len), R(1, 1000000),
     .help = "max_tokens of each request"},
    {"ignore-eos", NULL, KVG_OPT_BOOL, W(ignore_eos),
     .help = "emit exactly --output-len tokens (--no-ignore-eos: the engines' EOS)"},
    {"no-ignore-eos", NULL, KVG_OPT_NBOOL, W(ignore_eos), .help = "requests may end at EOS"},
    {"vocab", NULL, KVG_OPT_U32, W(vocab), R(1, UINT32_MAX),
     .help = "offline token ids are drawn from [0, N)"},
    {"printable", NULL, KVG_OPT_BOOL, W(printable),
     .help = "ids are printable bytes (live always: the byte tokenizer)"},
    {"groups", NULL, KVG_OPT_U32, W(groups), R(1, 1000000),
     .help = "shared_prefix: groups (inference-perf's meaning)"},
    {"prompts-per-group", NULL, KVG_OPT_U32, W(prompts_per_group), R(1, 1000000),
     .help = "shared_prefix: prompts per group"},
    {"system-prompt-len", NULL, KVG_OPT_U32, W(system_len), R(0, 1000000),
     .help = "shared_prefix: tokens of each group's shared prefix"},
    {"question-len", NULL, KVG_OPT_U32, W(question_len), R(0, 1000000),
     .help = "shared_prefix: tokens of each prompt's own question"},
    {"turns", NULL, KVG_OPT_U32, W(turns), R(1, 100000), .help = "chat: turns per session"},
    {"user-len", NULL, KVG_OPT_U32, W(user_len), R(0, 1000000),
     .help = "chat: tokens of each user message"},
    {"chat-groups", NULL, KVG_OPT_U32, W(chat_groups), R(1, 100000),
     .help = "chat: distinct system prompts"},
    {"chat-system-len", NULL, KVG_OPT_U32, W(chat_system_len), R(0, 1000000),
     .help = "chat: tokens of each system prompt"},
    {"think-secs", NULL, KVG_OPT_DOUBLE, W(think_s), R(0, 1e6), .meta = "SECS",
     .help = "chat: pause between a reply and the next turn"},
    {"max-context", NULL, KVG_OPT_U32, W(max_context),
     .help = "chat: a session ends before its context passes N (0: never; stage rates count "
             "sessions)"},
    {"turns-min", NULL, KVG_OPT_U32, W(turns_min), R(0, 100000),
     .help = "agentic chat: turns per session drawn from [turns-min, turns]"},
    {"user-len-max", NULL, KVG_OPT_U32, W(user_len_max), R(0, 1000000),
     .help = "agentic chat: each message's length drawn from [user-len, user-len-max]"},
    {"long-frac", NULL, KVG_OPT_DOUBLE, W(long_frac), R(0, 1),
     .help = "mixed chat: share of sessions asking one question about a long document"},
    {"long-len", NULL, KVG_OPT_U32, W(long_len), R(0, 10000000),
     .help = "mixed chat: tokens of each document"},
    {"long-docs", NULL, KVG_OPT_U32, W(long_docs), R(0, 100000),
     .help = "mixed chat: distinct documents"},
    {"lora-adapters", NULL, KVG_OPT_U32, W(lora_adapters), R(0, 100000),
     .help = "multi-LoRA chat (offline): each session on one of N adapters"},
    {"lora-hot", NULL, KVG_OPT_U32, W(lora_hot), R(0, 100000),
     .help = "multi-LoRA chat: the hot adapters"},
    {"lora-hot-frac", NULL, KVG_OPT_DOUBLE, W(lora_hot_frac), R(0, 1),
     .help = "multi-LoRA chat: share of sessions on a hot adapter"},
    {"salt-tenants", NULL, KVG_OPT_U32, W(salt_tenants), R(0, 100000),
     .help = "salted chat (offline): each session one of N tenants, its own cache_salt and "
             "system prompt (group t mod chat-groups)"},
    {"agent-api", NULL, KVG_OPT_ENUM, W(agent_api), .choices = agent_apis,
     .help = "agent: sessions over the Responses API (Codex-like), the Messages API (Claude "
             "Code-like) or every other session each; --turns/--turns-min turns, --user-len.."
             "--user-len-max characters of each tool result, --chat-groups deployments, "
             "--think-secs tool time, --output-len Messages' max_tokens, --max-context a "
             "request body's bytes"},
    {"agent-scale", NULL, KVG_OPT_DOUBLE, W(agent_scale), R(1e-3, 100),
     .help = "agent: instructions and tools at X times the agents' own sizes"},
    {"tokenizer", NULL, KVG_OPT_STR, W(tokenizer), AS(c.des.wl.tokenizer), .meta = "PATH",
     .help = "agent: the engines' tokenizer.json (offline: renders each request as the proxy "
             "does; live: given to the spawned sims and gateway); default the byte tokenizer"},
    {"tokenizer-config", NULL, KVG_OPT_STR, W(tokenizer_config), AS(c.des.wl.tokenizer_config),
     .meta = "PATH", .help = "agent: its tokenizer_config.json (the chat template)"},
    {"trace", NULL, KVG_OPT_STR, W(trace_path), AS(c.des.wl.trace_path), .meta = "FILE",
     .help = "trace: a JSONL replay (src/bench/trace.c)"},
    {"trace-speed", NULL, KVG_OPT_DOUBLE, W(trace_speed), R(1e-9, 1e9),
     .help = "trace: timestamps divided by X"},
    {"trace-block", NULL, KVG_OPT_U32, W(trace_block), R(1, 1u << 20),
     .help = "trace: tokens per hash_ids entry"},
    {"engines", NULL, KVG_OPT_U32, A(c.des.engines), R(1, 1024), .section = "engines",
     .help = "offline: simulated engines (live: --spawn-sims)"},
    {"profile", NULL, KVG_OPT_CUSTOM, 0, .meta = "NAME", .parse = profile_opt,
     .format = profile_text, .help = kvg__bench_profile_help},
    {"block-size", NULL, KVG_OPT_U32, P(block_size), R(1, 1u << 16),
     .help = "tokens per KV block (the profile's)"},
    {"kv-capacity-tokens", NULL, KVG_OPT_U64, P(kv_capacity_tokens), R(2, 1099511627776.0),
     .help = "KV cache per engine (the profile's)"},
    {"max-num-seqs", NULL, KVG_OPT_U32, P(max_num_seqs), R(1, 1u << 20),
     .help = "sequences per step (the profile's)"},
    {"max-num-batched-tokens", NULL, KVG_OPT_U32, P(max_num_batched_tokens), R(1, 1u << 24),
     .help = "tokens per step (the profile's)"},
    {"max-model-len", NULL, KVG_OPT_U32, P(max_model_len), R(2, UINT32_MAX),
     .help = "the engines' context limit (the profile's)"},
    {"hetero", NULL, KVG_OPT_ENUM, A(c.des.hetero), .choices = heteros,
     .help = "offline: every other engine twice as fast, or with half the KV"},
    {"output-mean", NULL, KVG_OPT_DOUBLE, A(c.des.mean_output), R(1, 1e6),
     .help = "offline: the engines' EOS length without ignore_eos"},
    {"max-loras", NULL, KVG_OPT_U32, A(c.des.max_loras), R(0, 4096),
     .help = "offline: adapter slots per engine (vLLM's default, 1)"},
    {"lora-load-ms", NULL, KVG_OPT_CUSTOM, 0, .meta = "MS", .parse = lora_ms_opt,
     .format = lora_ms_text, .help = "offline: a cold adapter's load, stalling its step"},
    {"prefill-scale", NULL, KVG_OPT_CUSTOM, 0, .meta = "F", .parse = scale_opt,
     .format = scale_text,
     .help = "offline: the profile's prefill costs times F (llmd-73: 0.75); a --profile alone "
             "resets it to 1"},
    {"scrape-ms", NULL, KVG_OPT_U32, A(c.des.scrape_ms), R(1, 3600000),
     .help = "offline: engine load refresh, virtual ms"},
    {"load-max-age-ms", NULL, KVG_OPT_U32, A(c.des.load_max_age_ms), R(1, 86400000),
     .help = "offline: older load samples are unknown"},
    {"kv-path", NULL, KVG_OPT_ENUM, A(c.des.kv_path), .choices = kv_paths,
     .help = "offline: how KV events reach the index"},
    {"routers", NULL, KVG_OPT_U32, A(c.des.routers), R(1, KVG_BENCH_MAX_ROUTERS),
     .help = "offline: router replicas, each with its own in-flight counts, routing history "
             "and scrape phase (kvgate serve replicas behind a balancer)"},
    {"balancer", NULL, KVG_OPT_ENUM, A(c.des.balancer), .choices = balancers,
     .help = "offline: how requests are spread over the routers"},
    {"exchange-ms", NULL, KVG_OPT_U32, A(c.des.exchange_ms), R(0, 3600000),
     .help = "offline: every this many virtual ms each router sends the picks it made since to "
             "the others, which remember them as their own (kvgate serve --peers); 0: the "
             "routers share nothing"},
    {"target", NULL, KVG_OPT_STR, A(c.target), AS(c.target), .meta = "URL", .section = "live",
     .help = "an OpenAI-compatible endpoint (http://host:port)"},
    {"model", NULL, KVG_OPT_STR, A(c.model), AS(c.model), .meta = "NAME",
     .help = "model field of the requests"},
    {"api", NULL, KVG_OPT_ENUM, A(c.chat_api), .choices = apis,
     .help = "/v1/completions with the prompt, or /v1/chat/completions with it as one user "
             "message"},
    {"spawn-sims", NULL, KVG_OPT_U32, A(c.spawn_sims), R(0, 64),
     .help = "start N `kvgate sim` and a `kvgate serve` per policy on 127.0.0.1, stopped after "
             "(by PID, also on error or SIGINT)"},
    {"speed", NULL, KVG_OPT_DOUBLE, A(c.speed), R(1e-3, 1e4),
     .help = "spawned engines run X times real time; the schedule is compressed by X and times "
             "are reported in engine time"},
    {"kvgate-bin", NULL, KVG_OPT_STR, A(c.kvgate_bin), AS(c.kvgate_bin), .meta = "PATH",
     .help = "the kvgate binary to spawn"},
    {"max-inflight", NULL, KVG_OPT_U32, A(c.max_inflight), R(1, 1u << 20),
     .help = "client cap on open requests"},
    {"retries", NULL, KVG_OPT_U32, A(c.retries), R(0, 100),
     .help = "send a request again up to N times as the openai SDK does (its default: 2): after "
             "a failure before any response head or a 408, 409, 429 or 5xx answer; a stream "
             "that breaks after its 200 is not retried (JSON: retried, lost_in_flight)"},
    {"serve-scrape-ms", NULL, KVG_OPT_U32, A(c.serve_scrape_ms), R(1, 3600000),
     .help = "spawned serve's engine metrics interval (wall ms; 0: serve's default)",
     .flags = KVG_OPT_F_NODEFAULT},
    /* The policy options are serve's (router/policy_opts.c): same names, same
     * checks, passed on to the gateways live mode spawns. */
    {NULL, NULL, KVG_OPT_INCLUDE, A(c.des.popts), .sub = kvg_policy_opt_table},
    KVG_OPT_END,
};

static void usage(FILE *f)
{
    fprintf(f, "usage: kvgate bench [--scenario NAME] [--mode offline|live] [--policies P,...] "
               "[flags]\n"
               "       kvgate bench --scenario pd|diurnal|diurnal-pd [flags] (with --help: "
               "theirs)\n"
               "       kvgate bench --suite routing [flags] (--suite routing --help)\n\n"
               "What does kvgate's routing buy on a workload? The router's own policy code, "
               "measured\n"
               "offline (engine models in virtual time, deterministic per --seed) or live over "
               "HTTP.\n"
               "The report is printed on stdout (and written to --out FILE).\n\n");
}

/* The shared flags' fields (bench_int.h) start from the configuration's. */
static void common_from_cfg(struct args *a)
{
    snprintf(a->com.json, sizeof a->com.json, "%s", a->c.json_path);
    snprintf(a->com.out, sizeof a->com.out, "%s", a->c.md_path);
    a->com.seed = a->c.des.seed;
    a->com.quiet = a->c.quiet;
}

static void args_default(struct args *a)
{
    memset(a, 0, sizeof *a);
    struct kvg_bench_cfg *c = &a->c;
    c->mode = KVG_BENCH_OFFLINE;
    kvg_bench_des_opts_default(&c->des);
    c->des.wl.vocab = 151936;
    c->des.wl.want_text = 1;
    snprintf(c->policies[0], sizeof c->policies[0], "random");
    c->npolicies = 1;
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    c->jobs = nc > 0 ? (nc > 256 ? 256 : (int)nc) : 1;
    snprintf(c->model, sizeof c->model, "kvgate-sim");
    snprintf(c->kvgate_bin, sizeof c->kvgate_bin, "/proc/self/exe");
    c->speed = 1;
    c->repeat = 1;
    c->prefill_scale = 1;
    c->max_inflight = 4096;
    snprintf(c->scenario, sizeof c->scenario, "custom");
    a->lora_load_ms = -1;
    kvg__bench_names_init();
    common_from_cfg(a);
}

/* The scenario presets, in argv order, before anything else. */
static int apply_scenarios(struct args *a, int argc, char **argv)
{
    char why[600];
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--scenario", 10)) continue;
        int rc = kvg_opt_parse_one(scenario_table, a, argc, argv, &i, why, sizeof why);
        if (rc == 1) continue; /* not this flag: the table parse says what it is */
        if (rc) {
            fprintf(stderr, "kvgate bench: %s\n", why);
            return -1;
        }
        if (kvg_bench_scenario(&a->c, a->scenario)) {
            fprintf(stderr,
                    "kvgate bench: --scenario %s has flags of its own (kvgate bench --scenario %s "
                    "--help); it cannot be combined here\n",
                    a->scenario, a->scenario);
            return -1;
        }
    }
    return 0;
}

/* What the flags leave to check and apply once they are all read. */
static int finish(struct args *a)
{
    struct kvg_bench_cfg *c = &a->c;
    struct kvg_bench_wl_opts *w = &c->des.wl;
    struct kvg_sim_profile *pr = &c->des.profile;
    snprintf(c->json_path, sizeof c->json_path, "%s", a->com.json);
    snprintf(c->md_path, sizeof c->md_path, "%s", a->com.out);
    c->des.seed = a->com.seed;
    c->quiet = a->com.quiet;
    if (c->mode == KVG_BENCH_LIVE && !c->spawn_sims && !c->target[0]) {
        fprintf(stderr, "kvgate bench: --mode live needs --target URL or --spawn-sims N\n");
        return -1;
    }
    if (c->mode == KVG_BENCH_LIVE && (w->lora_adapters || w->salt_tenants)) {
        /* The live client sends neither an adapter's model nor a salt yet. */
        fprintf(stderr, "kvgate bench: --lora-adapters and --salt-tenants are offline only\n");
        return -1;
    }
    /* Live against a --target, the names are labels of what runs there. */
    for (size_t i = 0; (c->mode == KVG_BENCH_OFFLINE || c->spawn_sims) && i < c->npolicies; i++) {
        char why[1024];
        if (kvg__bench_check_policy(c->policies[i], c->mode == KVG_BENCH_OFFLINE, why,
                                    sizeof why)) {
            fprintf(stderr, "kvgate bench: --policies: %s\n", why);
            return -1;
        }
    }
    if (c->mode == KVG_BENCH_LIVE && w->kind != KVG_BENCH_WL_TRACE) w->printable = 1;
    /* An agent's bodies name the model; offline they are rendered to the
     * ids the proxy routes on, live the gateway does that. */
    snprintf(w->model, sizeof w->model, "%s", c->model);
    w->agent_render = c->mode == KVG_BENCH_OFFLINE;
    if (w->kind != KVG_BENCH_WL_AGENT && (w->tokenizer[0] || w->tokenizer_config[0])) {
        fprintf(stderr, "kvgate bench: --tokenizer is for --workload agent\n");
        return -1;
    }
    if (c->spawn_sims) c->des.engines = c->spawn_sims;
    if (a->lora_load_ms >= 0) c->des.lora_load_s = a->lora_load_ms / 1000.0;
    c->des.wl.seed = c->des.seed;
    /* Applied last, to whichever profile was chosen, from its named values.
     * A spawned kvgate sim cannot take it: live runs keep the named costs. */
    if (a->explicit_scale > 0) c->prefill_scale = a->explicit_scale;
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

int kvg_cmd_bench_parse(struct kvg_bench_cfg *c, int argc, char **argv)
{
    struct args *a = malloc(sizeof *a);
    if (!a) {
        fprintf(stderr, "kvgate bench: out of memory\n");
        return -1;
    }
    args_default(a);
    int rc = 0;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            kvg_opt_help(opt_table, a, stdout);
            rc = 1;
            goto out;
        }
    kvg__bench_command(a->c.command, sizeof a->c.command, argc, argv);
    if ((rc = apply_scenarios(a, argc, argv))) goto out;
    common_from_cfg(a); /* the presets' values are where the flags start from */
    char why[600];
    if (kvg_opt_parse_argv(opt_table, a, argc, argv, 1, why, sizeof why)) {
        fprintf(stderr, "kvgate bench: %s\n", why);
        rc = -1;
        goto out;
    }
    rc = finish(a);
out:
    *c = a->c;
    free(a);
    return rc;
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
        if (!strcmp(argv[i], "--suite") || !strncmp(argv[i], "--suite=", 8))
            return kvg_cmd_bench_suite_main(argc, argv);
    /* The autoscaling days have their own engine loop and report (scale.h),
     * the PD tables their own engines (pd.h). */
    const char *scenario = kvg__bench_scenario_of(argc, argv);
    if (scenario && (!strcmp(scenario, "diurnal") || !strcmp(scenario, "diurnal-pd")))
        return kvg_cmd_bench_scale_main(argc, argv);
    if (scenario && !strcmp(scenario, "pd")) return kvg_cmd_bench_pd_main(argc, argv);
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
