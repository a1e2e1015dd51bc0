/* `kvgate sim`: the simulated engine's flags (src/simsrv/simsrv.h runs it),
 * one option table over struct kvg_simsrv_opts: it parses the command line and
 * prints --help with the defaults of kvg_simsrv_opts_default. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/opt.h"
#include "base/util.h"
#include "cmd/cmd.h"
#include "sim/sim.h"
#include "simsrv/simsrv.h"

/* ENUM entries kept as their index write an int. */
_Static_assert(sizeof(enum kvg_simsrv_flavor) == sizeof(int), "flavor is an ENUM index");

/* In the order of the enums they index (simsrv/simsrv.h; metrics modes as
 * kvg_simsrv_metrics_mode_parse numbers them; kv_events_map: 0 array, 1 map). */
static const char *const flavors[] = {"vllm", "sglang", "llamacpp", NULL};
static const char *const roles[] = {"both", "prefill", "decode", "encode", NULL};
static const char *const metrics_modes[] = {"full",    "no-kv", "waiting-only", "none", "error",
                                            "garbage", NULL};
static const char *const encodings[] = {"array", "map", NULL};
static const char *const load_policies[] = {"recompute", "fail", NULL}; /* kv_load_fail 0, 1 */

/* --disconnect-after-tokens K: an int64_t where -1 is off. */
static int parse_disconnect(void *obj, const struct kvg_opt *o, const char *v, size_t index,
                            char *err, size_t errlen)
{
    (void)o, (void)index;
    uint64_t u;
    if (kvg_parse_u64(v, &u) || u > (1u << 30))
        return kvg_err_set(err, errlen, KVG_ECONFIG, "expects an integer 0..%u, got '%s'", 1u << 30,
                           v);
    ((struct kvg_simsrv_opts *)obj)->disconnect_after = (int64_t)u;
    return 0;
}

static int format_disconnect(const void *obj, const struct kvg_opt *o, char *out, size_t cap)
{
    (void)o;
    int64_t k = ((const struct kvg_simsrv_opts *)obj)->disconnect_after;
    if (k < 0) return -1; /* off: nothing to show or emit */
    snprintf(out, cap, "%lld", (long long)k);
    return 0;
}

/* --metrics-fail-after S:M: after S seconds /metrics turns to M. */
static int parse_fail_after(void *obj, const struct kvg_opt *o, const char *v, size_t index,
                            char *err, size_t errlen)
{
    (void)o, (void)index;
    struct kvg_simsrv_opts *s = obj;
    const char *colon = strchr(v, ':');
    char secs[32];
    double d;
    int mode = -1;
    if (colon && (size_t)(colon - v) < sizeof secs) {
        memcpy(secs, v, (size_t)(colon - v));
        secs[colon - v] = 0;
        mode = kvg_simsrv_metrics_mode_parse(colon + 1);
    }
    if (mode < KVG_SIMSRV_METRICS_NONE || kvg_parse_double(secs, &d) || !(d >= 0))
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "expects SECS:none|error|garbage (SECS >= 0), got '%s'", v);
    s->metrics_after_s = d;
    s->metrics_later = mode;
    return 0;
}

static int format_fail_after(const void *obj, const struct kvg_opt *o, char *out, size_t cap)
{
    (void)o;
    const struct kvg_simsrv_opts *s = obj;
    if (s->metrics_after_s < 0) return -1; /* never */
    snprintf(out, cap, "%g:%s", s->metrics_after_s, metrics_modes[s->metrics_later]);
    return 0;
}

/* --disable-endpoints a,b: API names (kvg_simsrv_api_parse) as bits. */
static int parse_disabled(void *obj, const struct kvg_opt *o, const char *v, size_t index,
                          char *err, size_t errlen)
{
    (void)o, (void)index;
    uint32_t mask = 0;
    for (const char *p = v; *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        int api = kvg_simsrv_api_parse(p, n);
        if (api < 0)
            return kvg_err_set(err, errlen, KVG_ECONFIG,
                               "unknown API '%.*s' (chat, completions, responses, messages, "
                               "generate, embeddings, pooling, classify, score, rerank, tokenize, "
                               "detokenize, audio)",
                               (int)n, p);
        mask |= 1u << api;
        p += n + (e != NULL);
    }
    ((struct kvg_simsrv_opts *)obj)->disabled = mask;
    return 0;
}

static int format_disabled(const void *obj, const struct kvg_opt *o, char *out, size_t cap)
{
    (void)o;
    uint32_t mask = ((const struct kvg_simsrv_opts *)obj)->disabled;
    size_t len = 0;
    if (!mask) return -1; /* none: nothing to show or emit */
    out[0] = 0;
    for (int i = 0; i < KVG_SIMSRV_API_N; i++)
        if (mask & (1u << i)) {
            int n = snprintf(out + len, cap - len, "%s%s", len ? "," : "", kvg_simsrv_api_name(i));
            if (n < 0 || (size_t)n >= cap - len) break;
            len += (size_t)n;
        }
    return 0;
}

#define F(field) offsetof(struct kvg_simsrv_opts, field)
#define S(field) sizeof(((struct kvg_simsrv_opts *)0)->field)

static const struct kvg_opt flags[] = {
    {"host", NULL, KVG_OPT_STR, F(host), S(host), .meta = "H", .help = "listen address",
     .section = "engine"},
    {"port", NULL, KVG_OPT_INT, F(port), .meta = "P", .help = "listen port", .min = 0,
     .max = 65535},
    {"model", NULL, KVG_OPT_STR, F(model), S(model), .meta = "NAME", .help = "served model name"},
    {"served-model-name", NULL, KVG_OPT_STR, F(served_names), S(served_names), .meta = "a,b",
     .help = "served model names, \"a,b\" or \"a b\" (vLLM's list: every one accepted and "
             "listed, the first the one answers report); overrides --model"},
    {"profile", NULL, KVG_OPT_STR, F(profile), S(profile), .meta = "NAME",
     .help = "engine profile (listed below)"},
    {"flavor", NULL, KVG_OPT_ENUM, F(flavor), .help = "wire and metrics dialect",
     .choices = flavors},
    /* 0, the default of these three, stands for the profile's value. */
    {"block-size", NULL, KVG_OPT_U32, F(block_size),
     .help = "KV block size in tokens (default: the profile's)", .min = 0, .max = 1u << 16,
     .flags = KVG_OPT_F_NODEFAULT},
    {"kv-capacity-tokens", NULL, KVG_OPT_U64, F(kv_capacity_tokens),
     .help = "KV cache size (default: the profile's)", .min = 0, .max = (double)(1ull << 40),
     .flags = KVG_OPT_F_NODEFAULT},
    {"max-num-seqs", NULL, KVG_OPT_U32, F(max_num_seqs),
     .help = "running batch limit (default: the profile's)", .min = 0, .max = 1u << 20,
     .flags = KVG_OPT_F_NODEFAULT},
    {"cpu-kv-capacity-tokens", NULL, KVG_OPT_U64, F(cpu_kv_capacity_tokens),
     .help = "CPU tier (vLLM's CPU offloading): GPU evictions move there (events with medium "
             "CPU), hits come back at a copy cost (0: no CPU tier)",
     .min = 0, .max = (double)(1ull << 40)},
    {"cpu-kv-load-secs-per-token", NULL, KVG_OPT_DOUBLE, F(cpu_load_s_per_token), .meta = "S",
     .help = "that copy cost (default: the profile's)", .min = 0, .max = 1,
     .flags = KVG_OPT_F_NODEFAULT},
    {"dp-size", NULL, KVG_OPT_U32, F(dp_size),
     .help = "N data-parallel ranks behind this URL (X-data-parallel-rank picks one), each with "
             "its own cache, batch and events on the endpoint's port + rank, metrics labelled "
             "engine=rank",
     .min = 0, .max = KVG_SIMSRV_MAX_DP},
    {"lora-adapters", NULL, KVG_OPT_STR, F(lora_adapters), S(lora_adapters), .meta = "a,b",
     .help =
         "LoRA adapters served on top of --model (in /v1/models with a parent; their blocks seeded "
         "by name; vllm:lora_requests_info)"},
    {"speed", NULL, KVG_OPT_DOUBLE, F(speed), .help = "run the clock X times faster than real time",
     .min = 1e-3, .max = 1e6},
    {"seed", NULL, KVG_OPT_U64, F(seed), .meta = "S", .help = "output seed"},
    {"tokenizer", NULL, KVG_OPT_STR, F(tokenizer), S(tokenizer), .meta = "FILE|builtin:bytes",
     .help = "tokenizer.json"},
    {"tokenizer-config", NULL, KVG_OPT_STR, F(tokenizer_config), S(tokenizer_config),
     .meta = "FILE", .help = "tokenizer_config.json (chat template)"},
    {"log-level", NULL, KVG_OPT_LEVEL, F(log_level), .help = "log threshold"},
    {"kv-events-endpoint", NULL, KVG_OPT_STR, F(kv_events_endpoint), S(kv_events_endpoint),
     .meta = "EP", .help = "publish KV events on a ZMQ PUB (e.g. tcp://127.0.0.1:5557)",
     .section = "KV events"},
    {"kv-events-encoding", NULL, KVG_OPT_ENUM, F(kv_events_map), .help = "event encoding",
     .choices = encodings},
    {"kv-events-topic", NULL, KVG_OPT_STR, F(kv_topic), S(kv_topic), .meta = "T",
     .help = "topic frame (default: \"\")"},
    {"replay-endpoint", NULL, KVG_OPT_STR, F(replay_endpoint), S(replay_endpoint), .meta = "EP",
     .help = "ZMQ ROUTER answering replay requests"},
    {"role", NULL, KVG_OPT_ENUM, F(role),
     .help = "what the engine does (both: aggregated, answers either leg; encode: an "
             "encoder-only engine for EPD)",
     .section = "disaggregated serving (vLLM NixlConnector protocol)", .choices = roles},
    {"side-channel-port", NULL, KVG_OPT_INT, F(side_channel_port), .meta = "P",
     .help = "a prefill's KV side channel (default 5600 with --role prefill or encode, as "
             "VLLM_NIXL_SIDE_CHANNEL_PORT, but none with --flavor sglang, whose KV goes "
             "through --bootstrap-port; else none)",
     .min = 0, .max = 65535, .flags = KVG_OPT_F_NODEFAULT},
    {"kv-hold-timeout-secs", NULL, KVG_OPT_DOUBLE, F(kv_hold_timeout_s), .meta = "S",
     .help = "free a prefill's unread blocks after S", .min = 0, .max = 1e7},
    {"labels", NULL, KVG_OPT_STR, F(labels), S(labels), .meta = "k=v,...",
     .help = "node=, rack=, zone=: the KV link's bandwidth"},
    {"kv-load-failure-policy", NULL, KVG_OPT_ENUM, F(kv_load_fail),
     .help = "a failed KV pull (fail: vLLM's default)", .choices = load_policies},
    {"kv-transfer-extra-secs", NULL, KVG_OPT_DOUBLE, F(kv_transfer_extra_s), .meta = "S",
     .help = "fault: every KV transfer takes S longer", .min = 0, .max = 1e6},
    {"bootstrap-port", NULL, KVG_OPT_INT, F(bootstrap_port), .meta = "N",
     .help = "SGLang's protocol: a prefill's bootstrap listener (0: none)", .min = 0, .max = 65535},
    {"bootstrap-timeout-secs", NULL, KVG_OPT_DOUBLE, F(bootstrap_timeout_s), .meta = "S",
     .help = "a decode waits this long for its room's KV", .min = 0, .max = 1e6},
    {"encoder-urls", NULL, KVG_OPT_STR, F(encoder_urls), S(encoder_urls), .meta = "URL[,URL]",
     .help = "SGLang's EPD: a prefill calls these encoders for media"},
    {"disable-endpoints", NULL, KVG_OPT_CUSTOM, F(disabled), .meta = "a,b",
     .help = "answer these APIs' paths as unknown ones (an older or other engine build): chat, "
             "completions, responses, messages, generate, embeddings, pooling, classify, score, "
             "rerank, tokenize, detokenize, audio",
     .section = "endpoints", .parse = parse_disabled, .format = format_disabled},
    {"responses-store", NULL, KVG_OPT_BOOL, F(responses_store),
     .help = "keep Responses (vLLM's VLLM_ENABLE_RESPONSES_API_STORE=1): GET/DELETE "
             "/v1/responses/{id} and previous_response_id"},
    {"responses-store-max", NULL, KVG_OPT_U32, F(responses_store_max),
     .help = "stored responses kept (the oldest evicted; 256 MB at most in all)", .min = 1,
     .max = 1u << 20},
    {"embedding-dim", NULL, KVG_OPT_U32, F(embedding_dim),
     .help = "length of the embeddings and pooling outputs", .min = 1, .max = KVG_SIMSRV_MAX_DIM},
    {"max-batch", NULL, KVG_OPT_U32, F(max_batch),
     .help = "inputs (or pairs) of one embeddings, pooling, classify, score or rerank request",
     .min = 1, .max = 1u << 16},
    {"max-audio-filesize-mb", NULL, KVG_OPT_DOUBLE, F(max_audio_mb), .meta = "MB",
     .help = "largest audio file (vLLM's VLLM_MAX_AUDIO_CLIP_FILESIZE_MB)", .min = 0, .max = 1024},
    {"enable-sleep-mode", NULL, KVG_OPT_BOOL, F(enable_sleep_mode),
     .help = "vLLM's sleep mode: POST /sleep?level=1|2, POST /wake_up[?tags=..], GET "
             "/is_sleeping, routes present only with VLLM_SERVER_DEV_MODE=1 as vLLM; the sglang "
             "flavor: /release_memory_occupation and /resume_memory_occupation",
     .section = "sleep mode"},
    {"wake-secs-level1", NULL, KVG_OPT_DOUBLE, F(wake_s[0]), .meta = "S",
     .help = "a wake from level 1 takes S engine seconds (default: the profile's)", .min = 0,
     .max = 1e6, .flags = KVG_OPT_F_NODEFAULT},
    {"wake-secs-level2", NULL, KVG_OPT_DOUBLE, F(wake_s[1]), .meta = "S",
     .help = "from level 2 (default: the profile's)", .min = 0, .max = 1e6,
     .flags = KVG_OPT_F_NODEFAULT},
    {"fail-rate", NULL, KVG_OPT_DOUBLE, F(fail_rate), .meta = "P",
     .help = "answer --fail-status to this fraction of requests", .section = "fault injection",
     .min = 0, .max = 1},
    {"fail-status", NULL, KVG_OPT_U32, F(fail_status), .meta = "N",
     .help = "the status of those answers: 500, or 503 or 429 (an engine shedding load)",
     .min = 400, .max = 599},
    {"hang-rate", NULL, KVG_OPT_DOUBLE, F(hang_rate), .meta = "P",
     .help = "never answer this fraction (socket kept open)", .min = 0, .max = 1},
    {"disconnect-after-tokens", NULL, KVG_OPT_CUSTOM, F(disconnect_after), .meta = "K",
     .help = "cut every stream after K tokens (default: never)", .parse = parse_disconnect,
     .format = format_disconnect},
    {"cold-start-secs", NULL, KVG_OPT_DOUBLE, F(cold_start_s), .meta = "S",
     .help = "/health and completions answer 503 for S seconds", .min = 0, .max = 1e6},
    {"kv-events-drop", NULL, KVG_OPT_DOUBLE, F(kv_events_drop), .meta = "P",
     .help = "drop KV event batches with probability P", .min = 0, .max = 1},
    {"metrics-mode", NULL, KVG_OPT_ENUM, F(metrics_mode), .help = "what /metrics answers",
     .choices = metrics_modes},
    {"metrics-fail-after", NULL, KVG_OPT_CUSTOM, F(metrics_after_s), .meta = "S:M",
     .help = "after S seconds, /metrics turns to M: none|error|garbage (default: never)",
     .parse = parse_fail_after, .format = format_fail_after},
    KVG_OPT_END,
};

#undef F
#undef S

void kvg_cmd_sim_usage(FILE *out)
{
    fprintf(out, "usage: kvgate sim --port P --model NAME [options]\n\n"
                 "A simulated inference engine speaking vLLM's HTTP API (chat, completions, "
                 "responses, messages, pooling, score/rerank, tokenizer, audio; SGLang's "
                 "/generate, llama.cpp's routes by --flavor), metrics and KV events.\n\n");
    struct kvg_simsrv_opts d;
    kvg_simsrv_opts_default(&d);
    kvg_opt_help(flags, &d, out);
    fprintf(out, "\nprofiles:\n");
    for (size_t i = 0; kvg_sim_profile_at(i); i++)
        fprintf(out, "  %-24s %s\n", kvg_sim_profile_at(i)->name,
                kvg_sim_profile_at(i)->description);
}

int kvg_cmd_sim_parse(struct kvg_simsrv_opts *o, int argc, char **argv, char *err, size_t errlen)
{
    kvg_simsrv_opts_default(o);
    return kvg_opt_parse_argv(flags, o, argc, argv, 1, err, errlen);
}

int kvg_cmd_sim_main(int argc, char **argv)
{
    struct kvg_simsrv_opts o;
    char err[600];
    int rc = kvg_cmd_sim_parse(&o, argc, argv, err, sizeof err);
    if ((rc = kvg__cmd_parsed(rc, "sim", err, kvg_cmd_sim_usage)) >= 0) return rc;
    /* vLLM reads it as an integer: any non-zero one turns dev mode on. */
    const char *dev = getenv("VLLM_SERVER_DEV_MODE");
    o.dev_mode = dev && atoi(dev) != 0;
    return kvg_simsrv_main(&o);
}
