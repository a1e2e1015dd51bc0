/* kvgate serve flags: one table says each flag's name, aliases, type, unit
 * and help; the YAML file goes through the same table (yaml_args.c). */
#include "serve/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/log.h"
#include "base/util.h"
#include "discovery/rules.h"

enum ftype {
    F_STR,
    F_INT,
    F_U32,
    F_SIZE,
    F_SIZE64,
    F_SECS_MS,
    F_SECS_MS64,
    F_MS,
    F_DOUBLE,
    F_BOOL,
    F_NBOOL,
    F_LIST,
    F_LIST_APPEND, /* repeatable: each use adds (vllm-router's --prefill/--decode) */
    F_LEVEL
};

struct flag {
    const char *name, *alias;
    enum ftype type;
    size_t off;
    size_t size; /* for F_STR */
    const char *help;
};

#define O(field) offsetof(struct kvg_serve_config, field)
#define S(field) sizeof(((struct kvg_serve_config *)0)->field)

static const struct flag flags[] = {
    {"host", NULL, F_STR, O(host), S(host), "address to listen on (127.0.0.1)"},
    {"port", NULL, F_INT, O(port), 0, "port to listen on (8080)"},
    {"threads", NULL, F_INT, O(threads), 0, "event-loop threads (number of cores)"},
    {"tokenizer-threads", NULL, F_INT, O(tokenizer_threads), 0,
     "threads that parse, tokenize and route long prompts off the loops (0 = 4)"},
    {"tokenizer-nice", NULL, F_INT, O(tokenizer_nice), 0,
     "niceness added to the tokenizer threads, so long prompts yield the CPU to the loops "
     "(10; 0 = as the loops)"},
    {"loop-slice-us", NULL, F_INT, O(loop_slice_us), 0,
     "time slice the loop threads ask the scheduler for: under 1 ms, a woken loop preempts a "
     "busy tokenizer thread or neighbour at once, for some CPU (Linux 6.12+; 0 = the "
     "kernel's, the default)"},
    {"worker-urls", NULL, F_LIST, O(workers), 0, "engine URLs (http://host:port)"},
    {"kv-events-endpoints", NULL, F_LIST, O(kv_endpoints), 0,
     "each worker's KV event ZMQ endpoint, same order as --worker-urls ('none': no events)"},
    {"replay-endpoints", NULL, F_LIST, O(replay_endpoints), 0,
     "each worker's KV event replay endpoint, same order ('none')"},
    {"tokenizer", NULL, F_STR, O(tokenizer), S(tokenizer),
     "tokenizer.json of the served model, or builtin:bytes (builtin:bytes)"},
    {"tokenizer-config", NULL, F_STR, O(tokenizer_config), S(tokenizer_config),
     "tokenizer_config.json (chat template, BOS/EOS)"},
    {"chat-template", NULL, F_STR, O(chat_template), S(chat_template),
     "a Jinja chat template file used instead of the tokenizer config's (vLLM's --chat-template)"},
    {"tokenizer-cache-bytes", NULL, F_SIZE64, O(tokenizer_cache_bytes), 0,
     "memory for the exact tokenizer prefix cache: prompts starting like earlier ones reuse "
     "their ids (67108864; 0 = off)"},
    {"kv-index-max-entries", NULL, F_SIZE64, O(kv_index_max_entries), 0,
     "bound on (block, worker) entries of the KV index (8388608)"},
    {"config", NULL, F_STR, O(config_path), S(config_path), "YAML file with the same keys"},
    {"policy", NULL, F_STR, O(policy), S(policy),
     "routing policy (prefix_affinity; the KV policies read the precise index with "
     "--kv-events-endpoints, else what kvgate routed where)"},
    {"max-payload-size", NULL, F_SIZE, O(limits.max_body_bytes), 0,
     "largest request body in bytes, > 0 (67108864; the README says why)"},
    {"max-buffered-bytes", NULL, F_SIZE64, O(limits.max_buffered_bytes), 0,
     "request bodies held at once by the whole process, > 0; past it 503 (1073741824)"},
    {"max-header-size", NULL, F_SIZE, O(limits.max_header_bytes), 0,
     "largest request head in bytes, > 0 (65536)"},
    {"header-timeout-secs", NULL, F_SECS_MS, O(limits.header_timeout_ms), 0,
     "time to receive a request head, > 0 (30)"},
    {"body-timeout-secs", NULL, F_SECS_MS, O(limits.body_deadline_ms), 0,
     "time to receive a request body after its head, > 0 (300)"},
    {"keepalive-timeout-secs", NULL, F_SECS_MS, O(limits.idle_timeout_ms), 0,
     "idle keep-alive connections close after, > 0 (75)"},
    {"max-connections", NULL, F_U32, O(limits.max_conns), 0,
     "open client connections per thread, 0 = no limit (0)"},
    {"send-buffer-bytes", NULL, F_U32, O(limits.send_buffer_bytes), 0,
     "kernel send buffer of client connections, 0 = the system's (0)"},
    {"request-timeout-secs", NULL, F_SECS_MS, O(proxy.request_timeout_ms), 0,
     "whole answer of a non-streaming request (1800)"},
    {"stream-idle-timeout-secs", NULL, F_SECS_MS, O(proxy.stream_idle_timeout_ms), 0,
     "silence allowed between stream chunks (600)"},
    {"connect-timeout-ms", NULL, F_MS, O(proxy.connect_timeout_ms), 0, "upstream connect (5000)"},
    {"health-check-interval-secs", NULL, F_SECS_MS, O(health_interval_ms), 0, "(60)"},
    {"health-check-timeout-secs", NULL, F_SECS_MS, O(health_timeout_ms), 0, "(5)"},
    {"health-failure-threshold", NULL, F_U32, O(health_failure_threshold), 0, "(3)"},
    {"health-success-threshold", NULL, F_U32, O(health_success_threshold), 0, "(2)"},
    {"health-check-endpoint", NULL, F_STR, O(health_endpoint), S(health_endpoint), "(/health)"},
    {"disable-health-check", NULL, F_NBOOL, O(health_enabled), 0, "no active health checks"},
    {"retry-max-retries", NULL, F_U32, O(proxy.retry_max), 0, "(5)"},
    {"retry-initial-backoff-ms", NULL, F_MS, O(proxy.retry_initial_ms), 0, "(50)"},
    {"retry-max-backoff-ms", NULL, F_MS, O(proxy.retry_max_backoff_ms), 0, "(30000)"},
    {"retry-backoff-multiplier", NULL, F_DOUBLE, O(proxy.retry_multiplier), 0, "(1.5)"},
    {"retry-jitter-factor", NULL, F_DOUBLE, O(proxy.retry_jitter), 0, "(0.2)"},
    {"disable-retries", NULL, F_NBOOL, O(proxy.retries_enabled), 0, "never retry"},
    {"cb-failure-threshold", NULL, F_U32, O(cb.failure_threshold), 0, "(10)"},
    {"cb-success-threshold", NULL, F_U32, O(cb.success_threshold), 0, "(3)"},
    {"cb-timeout-duration-secs", NULL, F_SECS_MS64, O(cb.timeout_ms), 0, "(60)"},
    {"disable-circuit-breaker", NULL, F_NBOOL, O(cb.enabled), 0, "no circuit breaker"},
    {"drain-timeout", "shutdown-grace-period-secs", F_SECS_MS, O(drain_timeout_ms), 0,
     "seconds SIGTERM waits for streams in flight (180)"},
    {"load-monitor-interval-ms", "metrics-scrape-interval-ms", F_MS, O(scrape_interval_ms), 0,
     "how often each engine's /metrics is read, 0 = never (500)"},
    {"metrics-staleness-ms", NULL, F_MS, O(proxy.metrics_staleness_ms), 0,
     "engine metrics older than this count as unknown (5000)"},
    {"block-size", NULL, F_U32, O(block_size), 0, "engines' KV block size (16)"},
    {"prefix-token-count", NULL, F_U32, O(policy_opts.prefix_token_count), 0,
     "prefix_hash: tokens hashed (256)"},
    {"prefix-hash-load-factor", NULL, F_DOUBLE, O(policy_opts.prefix_hash_load_factor), 0,
     "prefix_hash: load share before spilling (1.25)"},
    {"max-idle-secs", "sticky-key-idle-secs", F_SECS_MS64, O(policy_opts.max_idle_ms), 0,
     "manual: forget keys idle this long (14400)"},
    {"assignment-mode", NULL, F_STR, O(assignment_mode), S(assignment_mode),
     "manual: random|min_load (random)"},
    {"router-kv-overlap-score-weight", "kv-overlap-score-weight", F_DOUBLE,
     O(policy_opts.overlap_weight), 0, "kv_aware: weight of prefill blocks in the cost (1.0)"},
    {"router-host-tier-cost", NULL, F_DOUBLE, O(policy_opts.host_tier_cost), 0,
     "kv_aware/score: a host-memory (CPU) prefix block's cost as a fraction of computing it, "
     "from PCIe bandwidth vs prefill speed (0.031)"},
    {"router-temperature", NULL, F_DOUBLE, O(policy_opts.temperature), 0,
     "kv_aware: softmax sampling temperature, 0 = argmin (0)"},
    {"router-ttl-secs", NULL, F_SECS_MS, O(policy_opts.approx_ttl_ms), 0,
     "kv_aware without KV events: how long routed blocks count as cached (120)"},
    {"affinity-min-match", NULL, F_DOUBLE, O(policy_opts.affinity_min_match), 0,
     "prefix_affinity: share of the prompt a worker must hold to keep it (0.5)"},
    {"affinity-load-bound", NULL, F_DOUBLE, O(policy_opts.affinity_load_bound), 0,
     "prefix_affinity: a holder with more in flight than this x the mean + 1 is skipped (2)"},
    {"session-header", NULL, F_STR, O(policy_opts.session_header), S(policy_opts.session_header),
     "session_affinity: header naming the session, read before x-session-id (none)"},
    {"session-load-bound", NULL, F_DOUBLE, O(policy_opts.session_load_bound), 0,
     "session_affinity: a home past ceil(this x (in flight + 1) / workers) is left (1.25)"},
    {"session-fallback", NULL, F_STR, O(policy_opts.session_fallback),
     S(policy_opts.session_fallback),
     "session_affinity: the policy for requests without a session or past the bound "
     "(prefix_affinity)"},
    {"predict-prefill-tps", NULL, F_DOUBLE, O(policy_opts.predict_prefill_tps), 0,
     "predicted_latency: prefill tokens/s assumed until an engine's answers teach it (10000)"},
    {"predict-itl-bound", NULL, F_DOUBLE, O(policy_opts.predict_itl_bound), 0,
     "predicted_latency: decode blocks in flight over this x the mean are not eligible (2)"},
    {"cache-threshold", "cache-match-threshold", F_DOUBLE, O(policy_opts.cache_threshold), 0,
     "cache_aware: match ratio above which the matched worker is used (0.3)"},
    {"balance-abs-threshold", NULL, F_U32, O(policy_opts.balance_abs), 0,
     "cache_aware: imbalance when max - min load exceeds this (64)"},
    {"balance-rel-threshold", NULL, F_DOUBLE, O(policy_opts.balance_rel), 0,
     "cache_aware: ... and max > min times this (1.5)"},
    {"eviction-interval", "eviction-interval-secs", F_SECS_MS64,
     O(policy_opts.eviction_interval_ms), 0, "cache_aware: tree eviction period (120)"},
    {"max-tree-size", NULL, F_SIZE64, O(policy_opts.max_tree_size), 0,
     "cache_aware: characters kept per worker (67108864)"},
    {"cache-aware-miss", NULL, F_STR, O(cache_aware_miss), S(cache_aware_miss),
     "cache_aware: a miss goes to min_load or smallest_tree (min_load)"},
    {"scorer-precise-prefix-weight", NULL, F_DOUBLE, O(policy_opts.w_prefix_precise), 0,
     "score: precise prefix scorer weight (3)"},
    {"scorer-approx-prefix-weight", NULL, F_DOUBLE, O(policy_opts.w_prefix_approx), 0,
     "score: approximate prefix scorer weight (0)"},
    {"scorer-queue-weight", NULL, F_DOUBLE, O(policy_opts.w_queue), 0,
     "score: queue scorer weight (2)"},
    {"scorer-kv-weight", NULL, F_DOUBLE, O(policy_opts.w_kv_util), 0,
     "score: KV utilisation scorer weight (2)"},
    {"router-lora-load-cost", NULL, F_DOUBLE, O(policy_opts.lora_load_cost), 0,
     "kv_aware/score: a cold LoRA adapter load, in prefill blocks (16)"},
    {"router-lora-max-workers", NULL, F_U32, O(policy_opts.lora_max_workers), 0,
     "kv_aware/score: workers a hot adapter spreads over before each more costs a prefill, "
     "0 = unbounded (2)"},
    {"scorer-lora-weight", NULL, F_DOUBLE, O(policy_opts.w_lora), 0,
     "score: LoRA scorer weight (1)"},
    {"scorer-load-weight", NULL, F_DOUBLE, O(policy_opts.w_load), 0,
     "score: load-aware scorer weight (0)"},
    {"keys", NULL, F_STR, O(keys_path), S(keys_path),
     "API keys file (YAML, SHA-256 hashes, limits, priorities, admin role); none: no "
     "authentication, and the admin API answers loopback clients only"},
    {"metrics-require-key", NULL, F_BOOL, O(metrics_require_key), 0,
     "with --keys: /metrics and /v1/models need a valid key too"},
    {"upstream-api-key", NULL, F_STR, O(upstream_api_key), S(upstream_api_key),
     "sent to the engines as Authorization: Bearer (the client's own never is)"},
    {"upstream-api-keys", NULL, F_LIST, O(upstream_keys), 0,
     "each worker's own key, same order as --worker-urls ('none': --upstream-api-key); "
     "better in the YAML file (upstream_api_key per worker) than on a command line"},
    {"quota-store", NULL, F_STR, O(quota_store), S(quota_store),
     "where quota counters live: memory, or redis://host:port to share them (memory)"},
    {"quota-timeout-ms", NULL, F_MS, O(quota_timeout_ms), 0, "quota store answer deadline (50)"},
    {"quota-fail-closed", NULL, F_BOOL, O(quota_fail_closed), 0,
     "quota store unreachable: reject (default: admit)"},
    {"default-max-tokens", "quota-default-max-tokens", F_U32, O(quota_default_max_tokens), 0,
     "output tokens a quota reserves for a request without max_tokens when no engine reports "
     "the model's max_model_len (4096: llama.cpp's default context, which it fills)"},
    {"require-max-tokens", NULL, F_BOOL, O(quota_require_max_tokens), 0,
     "a request a token quota applies to must set max_tokens (else 400)"},
    {"critical-max-waiting", NULL, F_DOUBLE, O(critical_max_waiting), 0,
     "critical and standard requests go to workers with fewer waiting (50)"},
    {"sheddable-max-waiting", NULL, F_DOUBLE, O(sheddable_max_waiting), 0,
     "sheddable requests go to workers with fewer waiting (5)"},
    {"sheddable-max-kv", NULL, F_DOUBLE, O(sheddable_max_kv), 0,
     "... and KV usage below this (0.8)"},
    {"queue-timeout-secs", NULL, F_SECS_MS, O(queue_timeout_ms), 0,
     "how long a request waits in the gateway queue for a worker (60)"},
    {"queue-size", NULL, F_U32, O(queue_size), 0, "gateway queue length (1024)"},
    {"tls-cert", NULL, F_STR, O(tls_cert), S(tls_cert), "PEM certificate chain: serve HTTPS too"},
    {"tls-key", NULL, F_STR, O(tls_key), S(tls_key), "PEM private key for --tls-cert"},
    {"tls-port", NULL, F_INT, O(tls_port), 0, "HTTPS port (8443)"},
    {"service-discovery", NULL, F_BOOL, O(service_discovery), 0,
     "find workers in Kubernetes: watch EndpointSlices, pods matching the selectors"},
    {"selector", NULL, F_LIST, O(selector), 0,
     "discovery: labels (key=value...) of regular worker pods"},
    {"vllm-pd-disaggregation", NULL, F_BOOL, O(vllm_pd), 0,
     "prefill/decode pairs, vLLM's NIXL two-hop protocol (vllm-router's flag)"},
    {"pd-disaggregation", NULL, F_BOOL, O(sglang_pd), 0,
     "prefill/decode pairs, SGLang's bootstrap protocol (sglang's flag)"},
    {"prefill", NULL, F_LIST_APPEND, O(prefill_urls), 0,
     "prefill worker URL [BOOTSTRAP_PORT|none], repeatable"},
    {"decode", NULL, F_LIST_APPEND, O(decode_urls), 0, "decode worker URL, repeatable"},
    {"epd-disaggregation", NULL, F_BOOL, O(pd.epd), 0,
     "an encode stage: vLLM (--vllm-pd-disaggregation) sends media to an --encode worker "
     "first; SGLang's prefills call their encoders themselves"},
    {"encode", NULL, F_LIST_APPEND, O(encode_urls), 0, "encode worker URL, repeatable"},
    {"epd-config", NULL, F_STR, O(epd_config), S(epd_config),
     "vllm-router's EPD config, {\"encoder_urls\": [URL, ...]}: --epd-disaggregation with those "
     "--encode workers"},
    {"encode-policy", NULL, F_STR, O(pd.encode_policy), S(pd.encode_policy),
     "policy over encode workers (least_load)"},
    {"worker-roles", NULL, F_LIST, O(worker_roles), 0,
     "regular|prefill|decode|encode per --worker-urls entry, same order (YAML workers' role:)"},
    {"worker-labels", NULL, F_LIST, O(worker_labels), 0,
     "node=..,rack=..,zone=.. per --worker-urls entry, same order, none for none (YAML "
     "labels:)"},
    {"worker-bootstrap-ports", NULL, F_LIST, O(worker_bootstrap), 0,
     "an SGLang prefill's bootstrap port per --worker-urls entry, same order, none for none "
     "(YAML bootstrap_port:)"},
    {"prefill-policy", NULL, F_STR, O(pd.prefill_policy), S(pd.prefill_policy),
     "policy over prefill workers (unset: --policy)"},
    {"decode-policy", NULL, F_STR, O(pd.decode_policy), S(pd.decode_policy),
     "policy over decode workers (unset: kvgate's decode pick, pd_decode)"},
    {"pd-threshold-tokens", NULL, F_U32, O(pd.threshold_tokens), 0,
     "fewer uncached prompt tokens than this go to a decode worker alone (512)"},
    {"pd-prefill-timeout-secs", NULL, F_SECS_MS, O(pd.prefill_timeout_ms), 0,
     "a prefill leg's deadline from its dispatch (300)"},
    {"pd-kv-hold-timeout-secs", NULL, F_SECS_MS, O(pd.hold_timeout_ms), 0,
     "how long prefill engines hold unread KV (vLLM's 480): a decode retry only within it"},
    {"pd-early-rejection", NULL, F_BOOL, O(pd.early_rejection), 0,
     "reject at the door (503) when no decode is predicted to have room once the prefill is done "
     "(Mooncake)"},
    {"pd-reject-kv-frac", NULL, F_DOUBLE, O(pd.reject_kv_frac), 0,
     "early rejection: a decode has room below this share of its KV blocks (0.95)"},
    {"pd-prefill-tokens-per-sec", NULL, F_DOUBLE, O(pd.prefill_tokens_per_s), 0,
     "early rejection: prefill speed, to predict when a prefill ends (8000)"},
    {"pd-decode-time-secs", NULL, F_DOUBLE, O(pd.decode_secs), 0,
     "early rejection: Mooncake's uniform decode time t_d (10)"},
    {"prefill-selector", NULL, F_LIST, O(prefill_selector), 0,
     "discovery: labels of prefill worker pods"},
    {"decode-selector", NULL, F_LIST, O(decode_selector), 0,
     "discovery: labels of decode worker pods"},
    {"encode-selector", NULL, F_LIST, O(encode_selector), 0,
     "discovery: labels of encode worker pods (the encode stage only, never answering)"},
    {"service-discovery-namespace", NULL, F_STR, O(sd_namespace), S(sd_namespace),
     "discovery: the namespace to watch (every namespace)"},
    {"service-discovery-port", NULL, F_INT, O(sd_port), 0,
     "discovery: the port the engines serve on in each pod (80)"},
    {"service-discovery-api-url", NULL, F_STR, O(sd_api_url), S(sd_api_url),
     "discovery: API server (https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT)"},
    {"service-discovery-ca-file", NULL, F_STR, O(sd_ca_file), S(sd_ca_file),
     "discovery: CA of the API server (the service account's ca.crt)"},
    {"service-discovery-token-file", NULL, F_STR, O(sd_token_file), S(sd_token_file),
     "discovery: bearer token file (the service account's token)"},
    {"dp-aware", NULL, F_BOOL, O(dp_aware), 0,
     "discovery: External DP groups, every member matching the selector is a worker (its DP "
     "rank is its LeaderWorkerSet worker index); without it only member 0 of a group"},
    {"log-level", NULL, F_LEVEL, O(log_level), 0, "debug|info|warn|error (info)"},
    {"no-access-log", NULL, F_NBOOL, O(proxy.access_log), 0, "no JSON line per request"},
    {"autoscale", NULL, F_STR, O(autoscale_path), S(autoscale_path),
     "YAML file of pools to autoscale (GET /autoscale, /autoscale/metrics)"},
    {"dry-run", NULL, F_BOOL, O(autoscale_dry_run), 0,
     "with --autoscale: plan and report, act on nothing"},
    {"read-usage", NULL, F_BOOL, O(read_usage), 0,
     "read every request's token usage (streams ask the engine for it) for kvgate_tokens_total "
     "and the token latency histograms, as kvgate autoscale reads them (on with --autoscale)"},
};

void kvg_serve_config_default(struct kvg_serve_config *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->host, sizeof c->host, "127.0.0.1");
    c->port = 8080;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    c->threads = n > 0 ? (int)n : 1;
    snprintf(c->policy, sizeof c->policy, "%s", KVG_POLICY_DEFAULT);
    kvg_pd_config_default(&c->pd);
    kvg_http_limits_default(&c->limits);
    c->proxy.request_timeout_ms = 1800 * 1000;
    c->proxy.stream_idle_timeout_ms = 600 * 1000;
    c->proxy.connect_timeout_ms = 5000;
    c->health_enabled = 1;
    c->health_interval_ms = 60 * 1000;
    c->health_timeout_ms = 5 * 1000;
    c->health_failure_threshold = 3;
    c->health_success_threshold = 2;
    snprintf(c->health_endpoint, sizeof c->health_endpoint, "/health");
    c->proxy.retries_enabled = 1;
    c->proxy.retry_max = 5;
    c->proxy.retry_initial_ms = 50;
    c->proxy.retry_max_backoff_ms = 30000;
    c->proxy.retry_multiplier = 1.5;
    c->proxy.retry_jitter = 0.2;
    kvg_cb_config_default(&c->cb);
    c->drain_timeout_ms = 180 * 1000;
    c->scrape_interval_ms = 500;
    c->proxy.metrics_staleness_ms = 5000;
    c->block_size = 16;
    c->tls_port = 8443;
    snprintf(c->quota_store, sizeof c->quota_store, "memory");
    c->quota_timeout_ms = 50;
    c->quota_default_max_tokens = 4096;
    c->critical_max_waiting = 50;
    c->sheddable_max_waiting = 5;
    c->sheddable_max_kv = 0.8;
    c->queue_timeout_ms = 60000;
    c->queue_size = 1024;
    snprintf(c->tokenizer, sizeof c->tokenizer, "builtin:bytes");
    c->kv_index_max_entries = 1u << 23;
    c->tokenizer_cache_bytes = 64u << 20;
    c->tokenizer_nice = 10;
    kvg_policy_opts_default(&c->policy_opts);
    snprintf(c->assignment_mode, sizeof c->assignment_mode, "random");
    snprintf(c->cache_aware_miss, sizeof c->cache_aware_miss, "min_load");
    c->sd_port = 80;
    c->log_level = KVG_LOG_INFO;
    c->proxy.access_log = 1;
}

void kvg_serve_config_free(struct kvg_serve_config *c)
{
    kvg_strlist_free(&c->workers);
    kvg_strlist_free(&c->kv_endpoints);
    kvg_strlist_free(&c->replay_endpoints);
    kvg_strlist_free(&c->upstream_keys);
    kvg_strlist_free(&c->selector);
    kvg_strlist_free(&c->prefill_selector);
    kvg_strlist_free(&c->decode_selector);
    kvg_strlist_free(&c->encode_selector);
    kvg_strlist_free(&c->encode_urls);
    kvg_strlist_free(&c->prefill_urls);
    kvg_strlist_free(&c->decode_urls);
    kvg_strlist_free(&c->worker_roles);
    kvg_strlist_free(&c->worker_labels);
    kvg_strlist_free(&c->worker_bootstrap);
}

void kvg_serve_usage(void)
{
    printf("usage: kvgate serve [--worker-urls URL...] [--config FILE] [options]\n\n"
           "Without workers, kvgate serve starts a few local simulated engines and\n"
           "fronts them (the embedded default).\n\noptions:\n");
    for (size_t i = 0; i < KVG_ARRAY_LEN(flags); i++)
        printf("  --%-28s %s\n", flags[i].name, flags[i].help);
}

static const struct flag *lookup(const char *name)
{
    for (size_t i = 0; i < KVG_ARRAY_LEN(flags); i++)
        if (!strcmp(name, flags[i].name) || (flags[i].alias && !strcmp(name, flags[i].alias)))
            return &flags[i];
    return NULL;
}

/* Applies one flag with its values (argv[i+1..]); returns values consumed. */
static int apply(struct kvg_serve_config *c, const struct flag *f, int argc, char **argv, int i,
                 char *err, size_t errlen)
{
    char *base = (char *)c + f->off;
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    int has_v = v && strncmp(v, "--", 2);
    uint64_t u;
    double d;
    int64_t s;
    switch (f->type) {
    case F_BOOL:
        *(int *)base = 1;
        return 0;
    case F_NBOOL:
        *(int *)base = 0;
        return 0;
    case F_LIST:
    case F_LIST_APPEND: {
        int k = 0;
        if (!has_v)
            return kvg_err_set(err, errlen, KVG_ECONFIG, "--%s needs at least one value", f->name);
        struct kvg_strlist *l = (struct kvg_strlist *)base;
        if (f->type == F_LIST) kvg_strlist_free(l); /* a later list replaces an earlier one */
        while (i + 1 + k < argc && strncmp(argv[i + 1 + k], "--", 2)) {
            int rc = kvg_strlist_add(l, argv[i + 1 + k]);
            if (rc == -ENOSPC)
                return kvg_err_set(err, errlen, KVG_ECONFIG, "--%s: at most %d values", f->name,
                                   KVG_CFG_MAX_WORKERS);
            if (rc) return rc;
            k++;
        }
        return k;
    }
    default:
        break;
    }
    if (!has_v) return kvg_err_set(err, errlen, KVG_ECONFIG, "--%s needs a value", f->name);
    switch (f->type) {
    case F_STR:
        if (strlen(v) >= f->size)
            return kvg_err_set(err, errlen, KVG_ECONFIG, "--%s: value too long", f->name);
        memcpy(base, v, strlen(v) + 1);
        break;
    case F_INT:
        if (kvg_parse_i64(v, &s) || s < 0 || s > 1000000)
            return kvg_err_set(err, errlen, KVG_ECONFIG, "--%s: '%s' is not a valid number",
                               f->name, v);
        *(int *)base = (int)s;
        break;
    case F_U32:
    case F_MS:
        if (kvg_parse_u64(v, &u) || u > UINT32_MAX)
            return kvg_err_set(err, errlen, KVG_ECONFIG, "--%s: '%s' is not a valid number",
                               f->name, v);
        *(uint32_t *)base = (uint32_t)u;
        break;
    case F_SIZE:
        if (kvg_parse_u64(v, &u))
            return kvg_err_set(err, errlen, KVG_ECONFIG, "--%s: '%s' is not a size", f->name, v);
        *(size_t *)base = (size_t)u;
        break;
    case F_SIZE64:
        if (kvg_parse_u64(v, &u))
            return kvg_err_set(err, errlen, KVG_ECONFIG, "--%s: '%s' is not a number", f->name, v);
        *(uint64_t *)base = u;
        break;
    case F_SECS_MS:
        if (kvg_parse_double(v, &d) || d < 0 || d > 4e6)
            return kvg_err_set(err, errlen, KVG_ECONFIG, "--%s: '%s' is not a number of seconds",
                               f->name, v);
        *(uint32_t *)base = (uint32_t)(d * 1000);
        break;
    case F_SECS_MS64:
        if (kvg_parse_double(v, &d) || d < 0 || d > 1e12)
            return kvg_err_set(err, errlen, KVG_ECONFIG, "--%s: '%s' is not a number of seconds",
                               f->name, v);
        *(uint64_t *)base = (uint64_t)(d * 1000);
        break;
    case F_DOUBLE:
        if (kvg_parse_double(v, &d) || d < 0)
            return kvg_err_set(err, errlen, KVG_ECONFIG, "--%s: '%s' is not a valid number",
                               f->name, v);
        *(double *)base = d;
        break;
    case F_LEVEL: {
        int l = kvg_log_parse_level(v);
        if (l < 0)
            return kvg_err_set(err, errlen, KVG_ECONFIG, "--%s: unknown level '%s'", f->name, v);
        *(int *)base = l;
        break;
    }
    default:
        break;
    }
    return 1;
}

static int check_discovery(const struct kvg_serve_config *c, char *err, size_t errlen)
{
    const struct kvg_strlist *sel[] = {&c->selector, &c->prefill_selector, &c->decode_selector,
                                       &c->encode_selector};
    const char *names[] = {"selector", "prefill-selector", "decode-selector", "encode-selector"};
    size_t given = 0;
    for (size_t i = 0; i < 4; i++) {
        struct kvg_discovery_selector s;
        char why[256];
        if (kvg_discovery_selector_parse((const char *const *)sel[i]->v, sel[i]->n, &s, why,
                                         sizeof why))
            return kvg_err_set(err, errlen, KVG_ECONFIG, "--%s: %s", names[i], why);
        given += sel[i]->n;
    }
    if (!c->service_discovery) {
        if (given || c->dp_aware)
            return kvg_err_set(err, errlen, KVG_ECONFIG,
                               "--selector, --prefill-selector, --decode-selector, "
                               "--encode-selector and --dp-aware need --service-discovery");
        return 0;
    }
    if (!given)
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "--service-discovery needs --selector, --prefill-selector or "
                           "--decode-selector");
    if (c->sd_port < 1 || c->sd_port > 65535)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "--service-discovery-port: 1..65535");
    return 0;
}

static int parse_args(struct kvg_serve_config *c, int argc, char **argv, int first, char *err,
                      size_t errlen)
{
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2))
            return kvg_err_set(err, errlen, KVG_ECONFIG,
                               "unexpected argument '%s' (flags start with --)", a);
        char name[128];
        const char *eq = strchr(a + 2, '=');
        size_t nl = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (nl >= sizeof name) return kvg_err_set(err, errlen, KVG_ECONFIG, "unknown flag '%s'", a);
        memcpy(name, a + 2, nl);
        name[nl] = 0;
        const struct flag *f = lookup(name);
        if (!f)
            return kvg_err_set(err, errlen, KVG_ECONFIG,
                               "unknown flag '--%s' (see kvgate serve --help)", name);
        int used;
        if (eq) {
            char *pair[2] = {(char *)a, (char *)eq + 1};
            used = apply(c, f, 2, pair, 0, err, errlen);
            if (used >= 0) used = 0;
        } else {
            used = apply(c, f, argc, argv, i, err, errlen);
        }
        if (used < 0) return used;
        i += used;
    }
    return 0;
}

int kvg_serve_config_parse(struct kvg_serve_config *c, int argc, char **argv, char *err,
                           size_t errlen)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            kvg_serve_usage();
            return 1;
        }
    /* The file first, so that flags override it. */
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--config")) continue;
        char **fa;
        int fn;
        int rc = kvg_yaml_to_args(argv[i + 1], &fa, &fn, err, errlen);
        if (rc) return KVG_ECONFIG;
        rc = parse_args(c, fn, fa, 0, err, errlen);
        for (int k = 0; k < fn; k++) free(fa[k]);
        free(fa);
        if (rc) return rc;
    }
    int rc = parse_args(c, argc, argv, 1, err, errlen);
    if (rc) return rc;
    /* 0 would silently mean "no limit" for these: refuse it. */
    const struct {
        const char *flag;
        uint64_t v;
    } positive[] = {{"max-payload-size", c->limits.max_body_bytes},
                    {"max-buffered-bytes", c->limits.max_buffered_bytes},
                    {"max-header-size", c->limits.max_header_bytes},
                    {"header-timeout-secs", c->limits.header_timeout_ms},
                    {"body-timeout-secs", c->limits.body_deadline_ms},
                    {"keepalive-timeout-secs", c->limits.idle_timeout_ms}};
    for (size_t i = 0; i < KVG_ARRAY_LEN(positive); i++)
        if (!positive[i].v)
            return kvg_err_set(err, errlen, KVG_ECONFIG,
                               "--%s must be greater than 0 (0 would mean no limit)",
                               positive[i].flag);
    if (c->port < 0 || c->port > 65535)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "--port: out of range");
    if (c->threads < 1 || c->threads > 256)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "--threads: 1..256");
    if (c->tokenizer_nice < 0 || c->tokenizer_nice > 19)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "--tokenizer-nice: 0..19");
    if (c->loop_slice_us && (c->loop_slice_us < 100 || c->loop_slice_us > 100000))
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "--loop-slice-us: 100..100000 (the kernel's range), or 0");
    if (c->tokenizer_threads < 0 || c->tokenizer_threads > 1024)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "--tokenizer-threads: 0..1024");
    if (strcmp(c->cache_aware_miss, "min_load") && strcmp(c->cache_aware_miss, "smallest_tree"))
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "--cache-aware-miss: min_load or smallest_tree");
    c->policy_opts.miss_to_smallest_tree = !strcmp(c->cache_aware_miss, "smallest_tree");
    c->policy_opts.block_size = c->block_size;
    if (c->block_size == 0)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "--block-size must be at least 1");
    if (strcmp(c->assignment_mode, "random") && strcmp(c->assignment_mode, "min_load"))
        return kvg_err_set(err, errlen, KVG_ECONFIG, "--assignment-mode: random or min_load");
    c->policy_opts.assignment_min_load = !strcmp(c->assignment_mode, "min_load");
    if (c->kv_endpoints.n && c->kv_endpoints.n != c->workers.n)
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "--kv-events-endpoints needs one entry per worker URL (%zu, not %zu)",
                           c->workers.n, c->kv_endpoints.n);
    if (c->replay_endpoints.n && c->replay_endpoints.n != c->workers.n)
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "--replay-endpoints needs one entry per worker URL (%zu, not %zu)",
                           c->workers.n, c->replay_endpoints.n);
    if (c->upstream_keys.n && c->upstream_keys.n != c->workers.n)
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "--upstream-api-keys needs one entry per worker URL (%zu, not %zu)",
                           c->workers.n, c->upstream_keys.n);
    if (!c->tls_cert[0] != !c->tls_key[0])
        return kvg_err_set(err, errlen, KVG_ECONFIG, "--tls-cert and --tls-key go together");
    if (!(c->policy_opts.host_tier_cost >= 0 && c->policy_opts.host_tier_cost <= 1))
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "--router-host-tier-cost: 0..1 (a fraction of a prefill)");
    if (!(c->policy_opts.lora_load_cost >= 0))
        return kvg_err_set(err, errlen, KVG_ECONFIG, "--router-lora-load-cost: at least 0");
    if (c->health_failure_threshold == 0 || c->health_success_threshold == 0)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "health thresholds must be at least 1");
    rc = kvg_serve_config_pd(c, err, errlen);
    return rc ? rc : check_discovery(c, err, errlen);
}

int kvg_serve_config_load_file(const char *path, struct kvg_serve_config *out, char *err,
                               size_t errlen)
{
    kvg_serve_config_default(out);
    char **fa;
    int fn;
    int rc = kvg_yaml_to_args(path, &fa, &fn, err, errlen);
    if (rc) return rc;
    rc = parse_args(out, fn, fa, 0, err, errlen);
    for (int k = 0; k < fn; k++) free(fa[k]);
    free(fa);
    if (rc) kvg_serve_config_free(out);
    return rc;
}

static int field_equal(const struct flag *f, const struct kvg_serve_config *a,
                       const struct kvg_serve_config *b)
{
    const char *x = (const char *)a + f->off, *y = (const char *)b + f->off;
    switch (f->type) {
    case F_STR:
        return strcmp(x, y) == 0;
    case F_LIST:
    case F_LIST_APPEND: {
        const struct kvg_strlist *l = (const void *)x, *m = (const void *)y;
        if (l->n != m->n) return 0;
        for (size_t i = 0; i < l->n; i++)
            if (strcmp(l->v[i], m->v[i])) return 0;
        return 1;
    }
    case F_U32:
    case F_MS:
    case F_SECS_MS:
        return *(const uint32_t *)x == *(const uint32_t *)y;
    case F_SIZE:
        return *(const size_t *)x == *(const size_t *)y;
    case F_SIZE64:
    case F_SECS_MS64:
        return *(const uint64_t *)x == *(const uint64_t *)y;
    case F_DOUBLE:
        return *(const double *)x == *(const double *)y;
    default: /* F_INT, F_BOOL, F_NBOOL, F_LEVEL */
        return *(const int *)x == *(const int *)y;
    }
}

size_t kvg_serve_config_diff_restart(const struct kvg_serve_config *a,
                                     const struct kvg_serve_config *b, char *out, size_t cap)
{
    size_t n = 0, len = 0;
    if (cap) out[0] = 0;
    for (size_t i = 0; i < KVG_ARRAY_LEN(flags); i++) {
        const struct flag *f = &flags[i];
        /* What SIGHUP applies: the worker list with its event endpoints,
         * roles, labels and bootstrap ports. */
        if (f->off == O(workers) || f->off == O(kv_endpoints) || f->off == O(replay_endpoints) ||
            f->off == O(worker_roles) || f->off == O(worker_labels) ||
            f->off == O(worker_bootstrap) || f->off == O(prefill_urls) ||
            f->off == O(decode_urls) || f->off == O(config_path))
            continue;
        if (field_equal(f, a, b)) continue;
        size_t j = 0;
        while (j < i && flags[j].off != f->off) j++;
        if (j < i) continue; /* another flag of the same field: named once */
        int k = snprintf(out + len, cap > len ? cap - len : 0, "%s%s", n ? ", " : "", f->name);
        if (k > 0 && len + (size_t)k < cap) len += (size_t)k;
        n++;
    }
    return n;
}

void kvg_strlist_free(struct kvg_strlist *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->v[i]);
    l->n = 0;
}

int kvg_strlist_add(struct kvg_strlist *l, const char *s)
{
    if (l->n == KVG_CFG_MAX_WORKERS) return -ENOSPC;
    if (!(l->v[l->n] = strdup(s))) return -ENOMEM;
    l->n++;
    return 0;
}
