/* Named scenarios of kvgate bench and the published numbers they are
 * compared with.
 *
 * llmd-73 reproduces llm-d's "KV-cache wins you can see" benchmark
 * (llm-d.ai/blog/kvcache-wins-you-can-see; the full report is the
 * llm-d-kv-cache repository's 73-capacity benchmark): 8 vLLM pods of
 * Qwen3-32B on 2 H100 each, KV 307,328 tokens per pod in blocks of 64;
 * inference-perf shared_prefix with 150 groups x 5 prompts of 6,000 + 1,200
 * tokens, output_len 1,000 with ignore_eos; Poisson stages warm-up 15 QPS x
 * 50 s, then 3..60 QPS. Two parameters are calibrated, not copied (the
 * report's `calibration` section says why, and bench/routing/notes.md in
 * detail):
 *   - output tokens per request: 500, the length at which the simulated
 *     precise run reproduces the report's engine-side figures for precise
 *     (KV usage, ITL, empty queue), not the 1,000 asked (which overloads
 *     every policy) nor the 245 the report's tokens/s column implies;
 *   - prefill speed: qwen3-32b-h100-tp2-roofline with its prefill costs
 *     x0.75 (~67% of bf16 peak), which puts random routing's breaking point
 *     between 15 and 20 QPS as in the report's per-stage table; the
 *     blog-fitted profile (~9% of peak) cannot serve the load even with
 *     precise routing.
 * `--output-len 1000 --profile qwen3-32b-h100-tp2` runs the literal setup.
 *
 * llmd-73-mini is the same experiment scaled for a live run over HTTP on a
 * laptop (its own notes say how): live by default with 4 spawned engines;
 * `--mode offline` simulates the very same setup, which is how its rates
 * were chosen. */
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/util.h"
#include "bench/routing/routing.h"

/* The report's per-QPS tables (3 .. 60 QPS), TTFT p90 and output tokens/s. */
static const double pub_p90[4][16] = {
    {0.498, 0.600, 0.400, 0.600, 0.500, 0.583, 0.509, 0.500, 0.488, 0.500, 0.589, 0.600, 0.507,
     0.600, 0.600, 0.500},
    {0.497, 0.499, 0.400, 0.600, 0.700, 0.609, 0.708, 2.459, 43.018, 43.515, 44.930, 46.335, 47.284,
     50.108, 49.930, 50.226},
    {1.609, 4.124, 7.002, 77.707, 72.972, 85.979, 83.806, 88.086, 100.911, 101.524, 105.884,
     105.015, 108.572, 110.681, 113.278, 110.184},
    {0.820, 1.398, 2.299, 70.273, 78.420, 82.943, 86.182, 91.519, 101.272, 101.142, 101.265,
     103.514, 105.004, 104.321, 106.816, 105.988}};
static const double pub_tok[4][16] = {
    {1219.1, 3902.1, 5761.1, 9184.5, 9382.0, 9242.2, 9221.8, 9780.6, 10270.8, 10054.8, 10128.7,
     10296.5, 10284.6, 10140.9, 10313.9, 10496.9},
    {1310.9, 3842.4, 5152.9, 8082.6, 8415.7, 8445.1, 8435.9, 7443.5, 8045.9, 7969.6, 7695.2, 7455.9,
     7452.3, 7100.7, 7013.8, 7247.9},
    {1274.8, 3607.0, 3348.4, 4902.5, 4785.5, 4872.8, 4888.7, 4660.7, 4946.4, 4973.3, 4723.6, 4004.8,
     3991.0, 4671.9, 3866.5, 4745.1},
    {1314.0, 3568.5, 3791.1, 4933.1, 4765.4, 4781.3, 4636.3, 4332.6, 4773.8, 4844.6, 4969.5, 4783.2,
     4845.1, 4921.7, 4764.2, 4835.2}};

static const struct kvg_bench_published llmd73_pub[] = {
    {"precise", "precise-scheduling", 8730.0, 35.562, 0.542, 0.298, 0.026, 0.1, 0, 39, 59.3, 86.5,
     100, pub_p90[0], pub_tok[0], 16},
    {"estimated", "estimated-scheduling", 6944.4, 36.068, 31.083, 13.316, 0.024, 8.1, 33, 65, 66.2,
     99.7, 100, pub_p90[1], pub_tok[1], 16},
    {"load", "load-scheduling", 4266.4, 36.298, 94.865, 46.987, 0.024, 28.9, 67, 124, 54.3, 98.6,
     100, pub_p90[2], pub_tok[2], 16},
    {"random", "random-scheduling", 4428.7, 35.671, 92.551, 45.281, 0.025, 27.3, 63, 108, 59.0,
     98.9, 100, pub_p90[3], pub_tok[3], 16},
};

static const struct kvg_bench_stage llmd73_stages[] = {
    {15, 0, 50}, {3, 0, 20},  {10, 0, 20}, {15, 0, 20}, {20, 0, 38}, {22, 0, 34},
    {25, 0, 30}, {30, 0, 25}, {35, 0, 21}, {40, 0, 38}, {43, 0, 36}, {46, 0, 33},
    {49, 0, 30}, {52, 0, 29}, {55, 0, 27}, {57, 0, 26}, {60, 0, 25}};

static const char llmd73_notes[] =
    "Published workload (inference-perf `shared_prefix`): 150 groups x 5 prompts, system prompt "
    "6,000 tokens, question 1,200, output_len 1,000 with ignore_eos, Poisson stages 15 QPS x 50 s "
    "(warm-up) then 3, 10, 15, 20, 22, 25, 30, 35, 40, 43, 46, 49, 52, 55, 57, 60 QPS; 8 pods of "
    "Qwen3-32B on 2 H100 each, 307,328 KV tokens per pod, block 64.\n\n"
    "Calibrated here, not copied (bench/routing/notes.md has the evidence, the sweep below the "
    "sensitivity): **500 output tokens per request** and **prefill at ~67% of bf16 peak** (the "
    "qwen3-32b-h100-tp2-roofline profile, prefill costs x0.75). 1,000 tokens at the report's 35.6 "
    "requests/s would need 36k tokens/s, twice what 8 simulated pods decode, and queue even the "
    "precise run for minutes; at 500 the simulated precise run reproduces the report's own "
    "engine-side figures for precise (KV usage mean 59.3%, p90 86.5%, max 100%; ITL 26 ms; an "
    "empty queue) and its note that running requests had generated 200-230 tokens (half-way "
    "through ~450). The report's tokens/s column implies 245 tokens instead (8,730 / 35.56), "
    "which its KV and ITL figures contradict (245 tokens give KV 31%, ITL 17 ms): that column is "
    "where the simulation disagrees most. The prefill speed puts random routing's breaking point "
    "where the report's per-stage table has it, between 15 QPS (TTFT p90 2.3 s) and 20 QPS "
    "(70 s); at the roofline's 50% of peak random already falls behind during the 15 QPS warm-up, "
    "and the blog-fitted profile (9%) cannot keep up even with precise routing. The simulated "
    "client never gives up on a request, so an overloaded run's TTFT grows until the load ends; "
    "the published overloaded rows plateau near 100 s (`--timeout 100` reproduces that).";

static const struct kvg_bench_stage mini_stages[] = {
    {7.5, 0, 50}, {1.5, 0, 10},  {5, 0, 10},  {7.5, 0, 10}, {10, 0, 12}, {12.5, 0, 12},
    {15, 0, 12},  {17.5, 0, 12}, {20, 0, 12}, {25, 0, 12},  {30, 0, 12}};

static const char mini_notes[] =
    "llmd-73 scaled down for a live run over HTTP in minutes: half the cluster (4 `kvgate sim` "
    "engines of the same roofline profile, 307,328 KV tokens each, block 64) and half the groups "
    "(75 x 5 prompts of 6,000 + 1 + 1,200 printable bytes, which the byte tokenizer turns into as "
    "many ids), so the groups still fill 73% of the cluster's KV; 64 output tokens instead of "
    "500 (the HTTP path carries every token as one SSE chunk); the same warm-up (one full set), "
    "then the ladder at half the rates with 10-12 s stages; requests without a first token after "
    "60 s are given up so the overloaded runs drain. The engines run --speed times faster than "
    "real time and the client compresses its schedule by the same factor: every time in the "
    "tables is engine time, directly comparable with `--mode offline` of the same scenario.";

static void stages(struct kvg_bench_cfg *c, const struct kvg_bench_stage *s, size_t n, size_t warm)
{
    for (size_t i = 0; i < n; i++) c->des.wl.stage[i] = s[i];
    c->des.wl.nstages = n;
    c->des.wl.warmup = warm;
}

static void set_policies(struct kvg_bench_cfg *c, const char *const *p, size_t n)
{
    c->npolicies = n;
    for (size_t i = 0; i < n; i++) snprintf(c->policies[i], sizeof c->policies[i], "%s", p[i]);
}

/* What llm-d's 73%-capacity setup and its live miniature share: the pod
 * profile, inference-perf's shared_prefix shape (5 prompts per group, 6,000
 * + 1,200 prompt tokens, ignore_eos) and the policies compared: llm-d's four
 * configurations and kvgate's others. */
static void llmd73_common(struct kvg_bench_cfg *c)
{
    static const char *const pol[] = {"precise",  "estimated",   "load",           "random",
                                      "kv_aware", "cache_aware", "prefix_affinity"};
    struct kvg_bench_wl_opts *w = &c->des.wl;
    c->des.profile = *kvg_sim_profile_find("qwen3-32b-h100-tp2-roofline");
    w->kind = KVG_BENCH_WL_SHARED_PREFIX;
    w->prompts_per_group = 5;
    w->system_len = 6000;
    w->question_len = 1200;
    w->ignore_eos = 1;
    set_policies(c, pol, sizeof pol / sizeof pol[0]);
}

int kvg_bench_scenario(struct kvg_bench_cfg *c, const char *name)
{
    struct kvg_bench_wl_opts *w = &c->des.wl;
    if (!strcmp(name, "llmd-73")) {
        llmd73_common(c);
        c->prefill_scale = 0.75; /* ~67% of bf16 peak: see the notes */
        c->des.engines = 8;
        w->groups = 150;
        w->output_len = 500;
        w->vocab = 151936;
        w->printable = 0;
        w->want_text = 1;
        stages(c, llmd73_stages, sizeof llmd73_stages / sizeof llmd73_stages[0], 1);
        /* Five seeds, medians: two policies near the optimum differ by less
         * than one seed's noise (measured); the wire path because the budget
         * allows the exact bytes a live router decodes. */
        c->repeat = 5;
        c->des.kv_path = KVG_BENCH_KV_WIRE;
        c->pub = llmd73_pub;
        c->npub = sizeof llmd73_pub / sizeof llmd73_pub[0];
        c->notes = llmd73_notes;
        snprintf(c->title, sizeof c->title, "kvgate bench: llm-d 73%%-capacity routing benchmark");
    } else if (!strcmp(name, "llmd-73-mini")) {
        llmd73_common(c);
        c->prefill_scale = 1; /* kvgate sim runs the named profile */
        c->des.engines = 4;
        w->groups = 75;
        w->output_len = 64;
        w->printable = 1;
        stages(c, mini_stages, sizeof mini_stages / sizeof mini_stages[0], 1);
        c->des.timeout_s = 60;
        c->mode = KVG_BENCH_LIVE;
        c->spawn_sims = 4;
        /* 8x: ~25 s of wall time per policy on 2 cores, and the HTTP path's
         * own latency (x8 in engine time) still small next to a step. */
        c->speed = 8;
        c->notes = mini_notes;
        snprintf(c->title, sizeof c->title,
                 "kvgate bench: llm-d 73%% benchmark, scaled down, live");
    } else if (!strcmp(name, "smoke")) {
        /* Seconds of CPU, for tests and a first look: 12 groups fill ~70% of
         * two tiny engines, so routing decides the hit rate. */
        static const char *const pol[] = {"random", "precise", "cache_aware"};
        c->des.profile = *kvg_sim_profile_find("tiny");
        c->prefill_scale = 1;
        c->des.engines = 2;
        w->kind = KVG_BENCH_WL_SHARED_PREFIX;
        w->groups = 12;
        w->prompts_per_group = 4;
        w->system_len = 256;
        w->question_len = 48;
        w->output_len = 16;
        w->ignore_eos = 1;
        w->printable = 1;
        static const struct kvg_bench_stage st[] = {{20, 0, 3}, {40, 0, 5}, {80, 0, 5}};
        stages(c, st, 3, 1);
        set_policies(c, pol, 3);
        c->spawn_sims = 0;
        c->speed = 1;
        snprintf(c->title, sizeof c->title, "kvgate bench: smoke");
    } else {
        return KVG_ENOTFOUND;
    }
    snprintf(c->scenario, sizeof c->scenario, "%s", name);
    return 0;
}

void kvg_bench_describe(const struct kvg_bench_cfg *c, char *out, size_t cap)
{
    const struct kvg_bench_wl_opts *w = &c->des.wl;
    const struct kvg_sim_profile *p = &c->des.profile;
    size_t n = 0;
#define PUT(...)                                                                                   \
    do {                                                                                           \
        if (n < cap) {                                                                             \
            int k_ = snprintf(out + n, cap - n, __VA_ARGS__);                                      \
            n += k_ > 0 ? (size_t)k_ : 0;                                                          \
        }                                                                                          \
    } while (0)
    out[0] = 0;
    if (c->notes) PUT("%s\n\n", c->notes);
    PUT("**As run.** Workload: ");
    switch (w->kind) {
    case KVG_BENCH_WL_SHARED_PREFIX:
        PUT("shared_prefix, %u groups x %u prompts, system prompt %u + question %u tokens%s, ",
            w->groups, w->prompts_per_group, w->system_len, w->question_len,
            w->printable ? " (printable bytes, joined by a space)" : "");
        break;
    case KVG_BENCH_WL_CHAT:
        PUT("chat, %u turns, %u system prompts of %u tokens, user messages of %u tokens, think "
            "time %.3g s, ",
            w->turns, w->chat_groups, w->chat_system_len, w->user_len, w->think_s);
        break;
    case KVG_BENCH_WL_TRACE:
        PUT("trace %s at speed %.3g, ", w->trace_path, w->trace_speed);
        break;
    case KVG_BENCH_WL_AGENT:
        PUT("agent sessions over %s, %u deployments, instructions and tools at %.3gx the agents' "
            "sizes, %u-%u turns, tool results of %u-%u characters, tool time %.3g s, "
            "tokenizer %s%s%s, ",
            w->agent_api == KVG_BENCH_AGENT_RESPONSES  ? "the Responses API (Codex-like)"
            : w->agent_api == KVG_BENCH_AGENT_MESSAGES ? "the Messages API (Claude Code-like)"
                                                       : "both APIs (every other session)",
            w->chat_groups, w->agent_scale, w->turns_min ? w->turns_min : w->turns, w->turns,
            w->user_len, KVG_MAX(w->user_len, w->user_len_max), w->think_s,
            w->tokenizer[0] ? w->tokenizer : "builtin:bytes",
            w->tokenizer_config[0] ? " with " : "", w->tokenizer_config);
        if (w->max_context) PUT("bodies up to %u bytes, ", w->max_context);
        break;
    }
    if (w->kind == KVG_BENCH_WL_AGENT)
        PUT("answers as long as the engine makes them (EOS, mean %.3g tokens; Messages' "
            "max_tokens %u); load stages",
            c->des.mean_output, w->output_len);
    else
        PUT("%u output tokens%s; load stages", w->output_len,
            w->ignore_eos ? " (ignore_eos)" : " (max; the engine stops earlier)");
    if (w->kind != KVG_BENCH_WL_TRACE)
        for (size_t i = 0; i < w->nstages; i++) {
            if (w->stage[i].conc)
                PUT("%s%u in flight x %.3g s", i ? ", " : " ", w->stage[i].conc, w->stage[i].secs);
            else
                PUT("%s%.3g/s x %.3g s", i ? ", " : " ", w->stage[i].rate, w->stage[i].secs);
        }
    PUT(" (the first %zu not measured)", w->warmup);
    if (c->des.timeout_s > 0)
        PUT("; requests without a first token after %.3g s are given up", c->des.timeout_s);
    PUT(".\n\nEngines: %u x %s", c->mode == KVG_BENCH_LIVE && !c->spawn_sims ? 0 : c->des.engines,
        p->name);
    const struct kvg_sim_profile *named = kvg_sim_profile_find(p->name);
    if (named && named->t_prefill_token > 0 && p->t_prefill_token != named->t_prefill_token)
        PUT(" with prefill costs x%.3g", p->t_prefill_token / named->t_prefill_token);
    PUT(" (block %u, KV %llu tokens, %u seqs, %u-token step budget)", p->block_size,
        (unsigned long long)p->kv_capacity_tokens, p->max_num_seqs, p->max_num_batched_tokens);
    if (c->mode == KVG_BENCH_OFFLINE)
        PUT(", simulated in virtual time; load signals scraped every %u ms; KV events %s.",
            c->des.scrape_ms,
            c->des.kv_path == KVG_BENCH_KV_NONE ? "off"
            : c->des.kv_path == KVG_BENCH_KV_DIRECT
                ? "fed to the index after every step"
                : "msgpack-encoded and decoded after every step");
    else if (c->spawn_sims)
        PUT(", %u `kvgate sim` processes at --speed %.3g behind one `kvgate serve`.", c->spawn_sims,
            c->speed);
    else
        PUT(", behind %s.", c->target);
#undef PUT
}
