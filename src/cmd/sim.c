/* `kvgate sim`: the simulated engine's flags (src/simsrv/simsrv.h runs it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/util.h"
#include "cmd/cmd.h"
#include "sim/kv_events.h"
#include "simsrv/simsrv.h"

static void usage(void)
{
    printf(
        "usage: kvgate sim --port P --model NAME [options]\n\n"
        "A simulated inference engine speaking vLLM's HTTP API, metrics and KV events.\n\n"
        "  --host H                    listen address (127.0.0.1)\n"
        "  --port P                    listen port (8000)\n"
        "  --model NAME                served model name (sim-model)\n"
        "  --profile NAME              engine profile (tiny; see below)\n"
        "  --flavor vllm|sglang|llamacpp   wire and metrics dialect (vllm)\n"
        "  --block-size N              KV block size in tokens (the profile's)\n"
        "  --kv-capacity-tokens N      KV cache size (the profile's)\n"
        "  --max-num-seqs N            running batch limit (the profile's)\n"
        "  --cpu-kv-capacity-tokens N  CPU tier (vLLM's CPU offloading): GPU evictions move there\n"
        "                              (events with medium CPU), hits come back at a copy cost\n"
        "  --cpu-kv-load-secs-per-token S  that copy cost (the profile's)\n"
        "  --dp-size N                 N data-parallel ranks behind this URL "
        "(X-data-parallel-rank\n"
        "                              picks one), each with its own cache, batch and events on\n"
        "                              the endpoint's port + rank, metrics labelled engine=rank\n"
        "  --lora-adapters a,b         LoRA adapters served on top of --model (in /v1/models with\n"
        "                              a parent; their blocks seeded by name; "
        "vllm:lora_requests_info)\n"
        "  --kv-events-endpoint EP     publish KV events on a ZMQ PUB (e.g. tcp://127.0.0.1:5557)\n"
        "  --kv-events-encoding array|map  event encoding (array)\n"
        "  --kv-events-topic T         topic frame (\"\")\n"
        "  --replay-endpoint EP        ZMQ ROUTER answering replay requests\n"
        "  --speed X                   run the clock X times faster than real time (1)\n"
        "  --seed S                    output seed (0)\n"
        "  --tokenizer FILE|builtin:bytes   (builtin:bytes)\n"
        "  --tokenizer-config FILE     tokenizer_config.json (chat template)\n"
        "disaggregated serving (vLLM NixlConnector protocol):\n"
        "  --role prefill|decode|encode|both  what the engine does (both: aggregated, answers "
        "either\n"
        "                              leg; encode: an encoder-only engine for EPD)\n"
        "  --side-channel-port P       a prefill's KV side channel (default 5600 with --role\n"
        "                              prefill, as VLLM_NIXL_SIDE_CHANNEL_PORT)\n"
        "  --kv-hold-timeout-secs S    free a prefill's unread blocks after S (480)\n"
        "  --labels k=v,...            node=, rack=, zone=: the KV link's bandwidth\n"
        "  --kv-load-failure-policy fail|recompute   a failed KV pull (fail, vLLM's default)\n"
        "  --kv-transfer-extra-secs S  fault: every KV transfer takes S longer\n"
        "  --bootstrap-port N          SGLang's protocol: a prefill's bootstrap listener\n"
        "  --bootstrap-timeout-secs S  a decode waits this long for its room's KV (120)\n"
        "  --encoder-urls URL[,URL]    SGLang's EPD: a prefill calls these encoders for media\n"
        "fault injection:\n"
        "  --fail-rate P               answer 500 to this fraction of requests\n"
        "  --hang-rate P               never answer this fraction (socket kept open)\n"
        "  --disconnect-after-tokens K cut every stream after K tokens\n"
        "  --cold-start-secs S         /health and completions answer 503 for S seconds\n"
        "  --kv-events-drop P          drop KV event batches with probability P\n"
        "  --metrics-mode M            full|no-kv|waiting-only|none|error|garbage (full)\n"
        "  --metrics-fail-after S:M    after S seconds, /metrics turns to none|error|garbage\n"
        "  --log-level L               debug|info|warn|error (info)\n\nprofiles:\n");
    for (size_t i = 0; kvg_sim_profile_at(i); i++)
        printf("  %-24s %s\n", kvg_sim_profile_at(i)->name, kvg_sim_profile_at(i)->description);
}

static int parse(struct kvg_simsrv_opts *o, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage();
            return 1;
        }
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "kvgate sim: %s needs a value\n", a);
            return -1;
        }
        i++;
        uint64_t u;
        double d;
        int bad = 0;
#define STR(flag, field)                                                                           \
    else if (!strcmp(a, flag)) bad =                                                               \
        snprintf(o->field, sizeof o->field, "%s", v) >= (int)sizeof o->field
#define NUM(flag, field, max)                                                                      \
    else if (!strcmp(a, flag))                                                                     \
    {                                                                                              \
        bad = kvg_parse_u64(v, &u) || u > (max);                                                   \
        o->field = u;                                                                              \
    }
#define DBL(flag, field, lo, hi)                                                                   \
    else if (!strcmp(a, flag))                                                                     \
    {                                                                                              \
        bad = kvg_parse_double(v, &d) || d < (lo) || d > (hi);                                     \
        o->field = d;                                                                              \
    }
        if (0) {
        }
        STR("--host", host);
        NUM("--port", port, 65535)
        STR("--model", model);
        STR("--profile", profile);
        NUM("--block-size", block_size, 1u << 16)
        NUM("--kv-capacity-tokens", kv_capacity_tokens, 1ull << 40)
        NUM("--max-num-seqs", max_num_seqs, 1u << 20)
        NUM("--cpu-kv-capacity-tokens", cpu_kv_capacity_tokens, 1ull << 40)
        DBL("--cpu-kv-load-secs-per-token", cpu_load_s_per_token, 0, 1)
        NUM("--dp-size", dp_size, KVG_SIMSRV_MAX_DP)
        STR("--kv-events-endpoint", kv_events_endpoint);
        STR("--lora-adapters", lora_adapters);
        STR("--kv-events-topic", kv_topic);
        STR("--replay-endpoint", replay_endpoint);
        DBL("--speed", speed, 1e-3, 1e6)
        NUM("--seed", seed, UINT64_MAX)
        STR("--tokenizer", tokenizer);
        STR("--tokenizer-config", tokenizer_config);
        DBL("--fail-rate", fail_rate, 0, 1)
        DBL("--hang-rate", hang_rate, 0, 1)
        NUM("--disconnect-after-tokens", disconnect_after, 1u << 30)
        DBL("--cold-start-secs", cold_start_s, 0, 1e6)
        DBL("--kv-events-drop", kv_events_drop, 0, 1)
        NUM("--side-channel-port", side_channel_port, 65535)
        DBL("--kv-hold-timeout-secs", kv_hold_timeout_s, 0, 1e7)
        DBL("--kv-transfer-extra-secs", kv_transfer_extra_s, 0, 1e6)
        NUM("--bootstrap-port", bootstrap_port, 65535)
        DBL("--bootstrap-timeout-secs", bootstrap_timeout_s, 0, 1e6)
        STR("--labels", labels);
        STR("--encoder-urls", encoder_urls);
        else if (!strcmp(a, "--role"))
        {
            if (!strcmp(v, "both"))
                o->role = KVG_SIMSRV_ROLE_BOTH;
            else if (!strcmp(v, "prefill"))
                o->role = KVG_SIMSRV_ROLE_PREFILL;
            else if (!strcmp(v, "decode"))
                o->role = KVG_SIMSRV_ROLE_DECODE;
            else if (!strcmp(v, "encode"))
                o->role = KVG_SIMSRV_ROLE_ENCODE;
            else
                bad = 1;
        }
        else if (!strcmp(a, "--kv-load-failure-policy"))
        {
            bad = strcmp(v, "fail") && strcmp(v, "recompute");
            o->kv_load_fail = !strcmp(v, "fail");
        }
        else if (!strcmp(a, "--flavor"))
        {
            if (!strcmp(v, "vllm"))
                o->flavor = KVG_SIMSRV_FLAVOR_VLLM;
            else if (!strcmp(v, "sglang"))
                o->flavor = KVG_SIMSRV_FLAVOR_SGLANG;
            else if (!strcmp(v, "llamacpp"))
                o->flavor = KVG_SIMSRV_FLAVOR_LLAMACPP;
            else
                bad = 1;
        }
        else if (!strcmp(a, "--metrics-mode"))
        {
            o->metrics_mode = kvg_simsrv_metrics_mode_parse(v);
            bad = o->metrics_mode < 0;
        }
        else if (!strcmp(a, "--metrics-fail-after"))
        {
            const char *colon = strchr(v, ':');
            char secs[32];
            bad = !colon || (size_t)(colon - v) >= sizeof secs;
            if (!bad) {
                memcpy(secs, v, (size_t)(colon - v));
                secs[colon - v] = 0;
                o->metrics_later = kvg_simsrv_metrics_mode_parse(colon + 1);
                bad = kvg_parse_double(secs, &o->metrics_after_s) || o->metrics_after_s < 0 ||
                      o->metrics_later < KVG_SIMSRV_METRICS_NONE;
            }
        }
        else if (!strcmp(a, "--kv-events-encoding"))
        {
            int e = kvg_sim_kv_encoding_parse(v);
            bad = e < 0;
            o->kv_events_map = e == KVG_SIM_KV_MAP;
        }
        else if (!strcmp(a, "--log-level"))
        {
            o->log_level = kvg_log_parse_level(v);
            bad = o->log_level < 0;
        }
        else
        {
            fprintf(stderr, "kvgate sim: unknown flag '%s' (see kvgate sim --help)\n", a);
            return -1;
        }
#undef STR
#undef NUM
#undef DBL
        if (bad) {
            fprintf(stderr, "kvgate sim: bad value for %s: '%s'\n", a, v);
            return -1;
        }
    }
    return 0;
}

int kvg_cmd_sim_main(int argc, char **argv)
{
    struct kvg_simsrv_opts o;
    kvg_simsrv_opts_default(&o);
    int rc = parse(&o, argc, argv);
    if (rc) return rc > 0 ? 0 : 2;
    return kvg_simsrv_main(&o);
}
