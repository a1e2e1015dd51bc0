/* kvgate serve flags: one option table (base/opt.h) says each flag's name,
 * alias, type, range and help; the YAML file (--config), --help and the
 * SIGHUP comparison go through the same table. The policy options are the
 * router's table (router/policy_opts.c), included. */
#include "serve/config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/log.h"
#include "base/util.h"
#include "base/opt.h"
#include "discovery/rules.h"
#include "net/http_client.h"

#define O(field) offsetof(struct kvg_serve_config, field)
#define S(field) sizeof(((struct kvg_serve_config *)0)->field)
/* Weights, factors, thresholds: any number from 0 up. */
#define NONNEG .min = 0, .max = INFINITY

/* A YAML workers: entry; each key is one worker's value of a list flag. */
static const struct kvg_opt worker_row[] = {
    {"url", NULL, KVG_OPT_LIST, O(workers), .help = "--worker-urls",
     .flags = KVG_OPT_F_PRIMARY | KVG_OPT_F_REQUIRED},
    {"kv_events_endpoint", NULL, KVG_OPT_LIST, O(kv_endpoints), .help = "--kv-events-endpoints"},
    {"replay_endpoint", NULL, KVG_OPT_LIST, O(replay_endpoints), .help = "--replay-endpoints"},
    {"upstream_api_key", NULL, KVG_OPT_LIST, O(upstream_keys), .help = "--upstream-api-keys"},
    {"role", NULL, KVG_OPT_LIST, O(worker_roles), .help = "--worker-roles"},
    {"labels", NULL, KVG_OPT_LIST, O(worker_labels), .help = "--worker-labels"},
    {"bootstrap_port", NULL, KVG_OPT_LIST, O(worker_bootstrap), .help = "--worker-bootstrap-ports"},
    KVG_OPT_END,
};

/* --peers, peers: each value one URL or a comma-separated list of them (one
 * environment variable in a manifest), a trailing '/' dropped; checked as
 * read, so that a bad one is refused naming its flag or file:line (and a
 * SIGHUP keeps the running list). A later list replaces the earlier. */
static int parse_peers(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                       size_t errlen)
{
    struct kvg_strlist *l = (struct kvg_strlist *)(void *)((char *)obj + o->off);
    if (index == 0) kvg_strlist_free(l);
    for (const char *u = v, *e; *u; u = *e ? e + 1 : e) {
        u += strspn(u, " \t");
        e = strchr(u, ',');
        if (!e) e = u + strlen(u);
        size_t len = (size_t)(e - u);
        while (len && (u[len - 1] == '/' || u[len - 1] == ' ')) len--;
        if (!len) continue;
        char url[512], host[256], port[16];
        struct kvg_http_target t;
        if (len >= sizeof url)
            return kvg_err_set(err, errlen, KVG_ECONFIG, "'%.40s...' is too long", u);
        memcpy(url, u, len);
        url[len] = 0;
        if (kvg_http_target_split(url, &t, host, port))
            return kvg_err_set(err, errlen, KVG_ECONFIG, "'%s' is not an http://host:port URL",
                               url);
        for (size_t i = 0; i < l->n; i++)
            if (!strcmp(l->v[i], url))
                return kvg_err_set(err, errlen, KVG_ECONFIG, "'%s' twice", url);
        int rc = kvg_strlist_add(l, url);
        if (rc == -ENOSPC)
            return kvg_err_set(err, errlen, KVG_ECONFIG, "at most %d peers", KVG_OPT_LIST_MAX);
        if (rc) return rc;
    }
    return 0;
}

/* The list as one comma-separated value (what SIGHUP's comparison reads). */
static int format_peers(const void *obj, const struct kvg_opt *o, char *out, size_t cap)
{
    const struct kvg_strlist *l = (const void *)((const char *)obj + o->off);
    size_t len = 0;
    out[0] = 0;
    for (size_t i = 0; i < l->n && len < cap; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? "," : "", l->v[i]);
    return 0;
}

static const struct kvg_opt flags[] = {
    {"host", NULL, KVG_OPT_STR, O(host), S(host), .section = "listening", .meta = "ADDR",
     .help = "address to listen on"},
    {"port", NULL, KVG_OPT_INT, O(port), 0, .help = "port to listen on", .min = 0, .max = 65535},
    {"threads", NULL, KVG_OPT_INT, O(threads), 0, .help = "event-loop threads (number of cores)",
     .min = 1, .max = 256, .flags = KVG_OPT_F_NODEFAULT},
    {"tokenizer-threads", NULL, KVG_OPT_INT, O(tokenizer_threads), 0,
     .help = "threads that parse, tokenize and route long prompts off the loops (0 = 4)", .min = 0,
     .max = 1024},
    {"tokenizer-nice", NULL, KVG_OPT_INT, O(tokenizer_nice), 0,
     .help = "niceness added to the tokenizer threads, so long prompts yield the CPU to the loops "
             "(0 = as the loops)",
     .min = 0, .max = 19},
    {"loop-slice-us", NULL, KVG_OPT_INT, O(loop_slice_us), 0,
     .help =
         "time slice the loop threads ask the scheduler for: under 1 ms, a woken loop preempts a "
         "busy tokenizer thread or neighbour at once, for some CPU (Linux 6.12+; 0 = the "
         "kernel's, the default)",
     .min = 0, .max = 1000000},
    {"worker-urls", NULL, KVG_OPT_LIST, O(workers), 0, .section = "workers", .meta = "URL...",
     .help = "engine URLs (http://host:port)"},
    {"kv-events-endpoints", NULL, KVG_OPT_LIST, O(kv_endpoints), 0, .meta = "ENDPOINT...",
     .help =
         "each worker's KV event ZMQ endpoint, same order as --worker-urls ('none': no events)"},
    {"replay-endpoints", NULL, KVG_OPT_LIST, O(replay_endpoints), 0, .meta = "ENDPOINT...",
     .help = "each worker's KV event replay endpoint, same order ('none')"},
    {"workers", NULL, KVG_OPT_ROWS, 0, 0, .sub = worker_row,
     .help = "the workers, one mapping each (or a URL alone); a key some worker gives sets its "
             "list flag for all, 'none' for the others"},
    {"models", NULL, KVG_OPT_ROWS, O(models), sizeof(struct kvg_serve_model),
     .sub = kvg__serve_model_row, .init = kvg__serve_model_init, .seen = kvg__serve_model_seen,
     .count_off = O(nmodels), .max_rows = KVG_CATALOG_MAX_MODELS, .flags = KVG_OPT_F_ALLOC,
     .help = "many models behind one address, one mapping each (docs/models.md)"},
    {"tokenizer", NULL, KVG_OPT_STR, O(tokenizer), S(tokenizer), .section = "tokenizer",
     .meta = "PATH",
     .help = "the served model's directory (its tokenizer.json and "
             "tokenizer_config.json) or its tokenizer.json, or builtin:bytes"},
    {"tokenizer-config", NULL, KVG_OPT_STR, O(tokenizer_config), S(tokenizer_config),
     .meta = "FILE", .help = "tokenizer_config.json (chat template, BOS/EOS)"},
    {"chat-template", NULL, KVG_OPT_STR, O(chat_template), S(chat_template), .meta = "FILE",
     .help = "a Jinja chat template file used instead of the tokenizer config's (vLLM's "
             "--chat-template)"},
    {"tokenizer-cache-bytes", NULL, KVG_OPT_U64, O(tokenizer_cache_bytes), 0,
     .help =
         "memory for the exact tokenizer prefix cache: prompts starting like earlier ones reuse "
         "their ids (0 = off)"},
    {"kv-index-max-entries", NULL, KVG_OPT_U64, O(kv_index_max_entries), 0,
     .help = "bound on (block, worker) entries of the KV index"},
    {"config", NULL, KVG_OPT_STR, O(config_path), S(config_path), .section = "general",
     .meta = "FILE", .help = "YAML file with the same keys"},
    {"policy", NULL, KVG_OPT_STR, O(policy), S(policy), .section = "routing", .meta = "NAME",
     .help = "routing policy (the KV policies read the precise index with "
             "--kv-events-endpoints, else what kvgate routed where)"},
    {"max-payload-size", NULL, KVG_OPT_SIZE, O(limits.max_body_bytes), 0, .section = "limits",
     .help = "largest request body in bytes, > 0 (the README says why)"},
    {"max-buffered-bytes", NULL, KVG_OPT_U64, O(limits.max_buffered_bytes), 0,
     .help = "request bodies held at once by the whole process, > 0; past it 503"},
    {"max-header-size", NULL, KVG_OPT_SIZE, O(limits.max_header_bytes), 0,
     .help = "largest request head in bytes, > 0"},
    {"header-timeout-secs", NULL, KVG_OPT_SECS_MS, O(limits.header_timeout_ms), 0,
     .help = "time to receive a request head, > 0"},
    {"body-timeout-secs", NULL, KVG_OPT_SECS_MS, O(limits.body_deadline_ms), 0,
     .help = "time to receive a request body after its head, > 0"},
    {"keepalive-timeout-secs", NULL, KVG_OPT_SECS_MS, O(limits.idle_timeout_ms), 0,
     .help = "idle keep-alive connections close after, > 0"},
    {"max-connections", NULL, KVG_OPT_U32, O(limits.max_conns), 0,
     .help = "open client connections per thread, 0 = no limit"},
    {"send-buffer-bytes", NULL, KVG_OPT_U32, O(limits.send_buffer_bytes), 0,
     .help = "kernel send buffer of client connections, 0 = the system's"},
    {"request-timeout-secs", NULL, KVG_OPT_SECS_MS, O(proxy.request_timeout_ms), 0,
     .section = "proxy", .help = "whole answer of a non-streaming request"},
    {"stream-idle-timeout-secs", NULL, KVG_OPT_SECS_MS, O(proxy.stream_idle_timeout_ms), 0,
     .help = "silence allowed between stream chunks"},
    {"connect-timeout-ms", NULL, KVG_OPT_MS, O(proxy.connect_timeout_ms), 0,
     .help = "upstream connect"},
    {"health-check-interval-secs", NULL, KVG_OPT_SECS_MS, O(health_interval_ms), 0,
     .section = "health checks", .help = "time between active health checks of each worker"},
    {"health-check-timeout-secs", NULL, KVG_OPT_SECS_MS, O(health_timeout_ms), 0,
     .help = "a health check answer's deadline"},
    {"health-failure-threshold", NULL, KVG_OPT_U32, O(health_failure_threshold), 0,
     .help = "failed checks in a row that take a worker out"},
    {"health-success-threshold", NULL, KVG_OPT_U32, O(health_success_threshold), 0,
     .help = "passed checks in a row that bring it back"},
    {"health-check-endpoint", NULL, KVG_OPT_STR, O(health_endpoint), S(health_endpoint),
     .meta = "PATH", .help = "the path health checks GET"},
    {"disable-health-check", NULL, KVG_OPT_NBOOL, O(health_enabled), 0,
     .help = "no active health checks"},
    {"retry-max-retries", NULL, KVG_OPT_U32, O(proxy.retry_max), 0,
     .section = "retries and circuit breaker",
     .help = "retries of a request that failed before its first byte"},
    {"retry-initial-backoff-ms", NULL, KVG_OPT_MS, O(proxy.retry_initial_ms), 0,
     .help = "the first retry's wait"},
    {"retry-max-backoff-ms", NULL, KVG_OPT_MS, O(proxy.retry_max_backoff_ms), 0,
     .help = "the longest wait between retries"},
    {"retry-backoff-multiplier", NULL, KVG_OPT_DOUBLE, O(proxy.retry_multiplier), 0,
     .help = "each retry waits this times the previous", NONNEG},
    {"retry-jitter-factor", NULL, KVG_OPT_DOUBLE, O(proxy.retry_jitter), 0,
     .help = "random share added to or taken from each wait", NONNEG},
    {"disable-retries", NULL, KVG_OPT_NBOOL, O(proxy.retries_enabled), 0, .help = "never retry"},
    {"cb-failure-threshold", NULL, KVG_OPT_U32, O(cb.failure_threshold), 0,
     .help = "failures in a row that open a worker's circuit"},
    {"cb-success-threshold", NULL, KVG_OPT_U32, O(cb.success_threshold), 0,
     .help = "successes in a row (half-open) that close it"},
    {"cb-timeout-duration-secs", NULL, KVG_OPT_SECS_MS64, O(cb.timeout_ms), 0,
     .help = "how long an open circuit stays open before a trial request"},
    {"disable-circuit-breaker", NULL, KVG_OPT_NBOOL, O(cb.enabled), 0,
     .help = "no circuit breaker"},
    {"drain-timeout", "shutdown-grace-period-secs", KVG_OPT_SECS_MS, O(drain_timeout_ms), 0,
     .section = "proxy", .help = "seconds SIGTERM waits for streams in flight"},
    {"load-monitor-interval-ms", "metrics-scrape-interval-ms", KVG_OPT_MS, O(scrape_interval_ms), 0,
     .section = "engine metrics", .help = "how often each engine's /metrics is read, 0 = never"},
    {"metrics-staleness-ms", NULL, KVG_OPT_MS, O(proxy.metrics_staleness_ms), 0,
     .help = "engine metrics older than this count as unknown"},
    {"block-size", NULL, KVG_OPT_U32, O(block_size), 0, .section = "routing",
     .help = "engines' KV block size"},
    {NULL, NULL, KVG_OPT_INCLUDE, O(policy_opts), .sub = kvg_policy_opt_table},
    {"keys", NULL, KVG_OPT_STR, O(keys_path), S(keys_path), .section = "authentication and quotas",
     .meta = "FILE",
     .help = "API keys file (YAML, SHA-256 hashes, limits, priorities, admin role); none: no "
             "authentication, and the admin API answers loopback clients only"},
    {"admin-hosts", NULL, KVG_OPT_LIST, O(admin_hosts), 0, .meta = "NAME...",
     .flags = KVG_OPT_F_NODEFAULT,
     .help = "host names the admin API answers for (Host header, port ignored; '*': any); "
             "default: localhost, 127.0.0.1, ::1 and --host"},
    {"metrics-require-key", NULL, KVG_OPT_BOOL, O(metrics_require_key), 0,
     .help = "with --keys: /metrics and /v1/models need a valid key too"},
    {"metrics-tenant-labels", NULL, KVG_OPT_BOOL, O(metrics_tenant_labels), 0,
     .help = "kvgate_tokens_total gets a tenant label (the keys file's tenants: one series per "
             "model, tenant and kind)"},
    {"slo-ttft-secs", NULL, KVG_OPT_DOUBLE, O(slo_ttft_s), 0, .meta = "S", .min = 0, .max = 3600,
     .help = "with --slo-itl-secs: count each finished request against these targets in "
             "kvgate_slo_requests_total{model,result} (what kvgate autoscale reads for its SLO "
             "misses; docs/observability.md); 0: no such series"},
    {"slo-itl-secs", NULL, KVG_OPT_DOUBLE, O(slo_itl_s), 0, .meta = "S", .min = 0, .max = 60,
     .help = "the mean inter-token latency target of --slo-ttft-secs's series"},
    {"translate-apis", NULL, KVG_OPT_LIST, O(translate_apis), 0, .meta = "API...",
     .section = "routing",
     .help = "responses, messages: the engines do not serve these APIs (older vLLM or SGLang "
             "builds, llama.cpp): kvgate sends them as chat completions and translates the "
             "answers back; without it, a worker is translated for once it answers such a "
             "request 404 (no such path)"},
    {"upstream-api-key", NULL, KVG_OPT_STR, O(upstream_api_key), S(upstream_api_key), .meta = "KEY",
     .help = "sent to the engines as Authorization: Bearer (the client's own never is)"},
    {"upstream-api-keys", NULL, KVG_OPT_LIST, O(upstream_keys), 0, .meta = "KEY...",
     .help = "each worker's own key, same order as --worker-urls ('none': --upstream-api-key); "
             "better in the YAML file (upstream_api_key per worker) than on a command line"},
    {"quota-store", NULL, KVG_OPT_STR, O(quota_store), S(quota_store), .meta = "STORE",
     .help = "where quota counters live: memory, or redis://host:port to share them"},
    {"quota-timeout-ms", NULL, KVG_OPT_MS, O(quota_timeout_ms), 0,
     .help = "quota store answer deadline"},
    {"quota-fail-closed", NULL, KVG_OPT_BOOL, O(quota_fail_closed), 0,
     .help = "quota store unreachable: reject (default: admit)"},
    {"default-max-tokens", "quota-default-max-tokens", KVG_OPT_U32, O(quota_default_max_tokens), 0,
     .help =
         "output tokens a quota reserves for a request without max_tokens when no engine reports "
         "the model's max_model_len (llama.cpp's default context, which it fills)"},
    {"quota-output-cap", NULL, KVG_OPT_U32, O(quota_output_cap), 0, .meta = "N",
     .help = "a request a token quota applies to that names no output limit (Codex sends none) "
             "gets this one (max_tokens, max_output_tokens) and reserves it, instead of its "
             "context's remainder; 0: off"},
    {"require-max-tokens", NULL, KVG_OPT_BOOL, O(quota_require_max_tokens), 0,
     .help = "a request a token quota applies to must set max_tokens (else 400)"},
    {"critical-max-waiting", NULL, KVG_OPT_DOUBLE, O(critical_max_waiting), 0,
     .section = "admission",
     .help = "critical and standard requests go to workers with fewer waiting", NONNEG},
    {"sheddable-max-waiting", NULL, KVG_OPT_DOUBLE, O(sheddable_max_waiting), 0,
     .help = "sheddable requests go to workers with fewer waiting", NONNEG},
    {"sheddable-max-kv", NULL, KVG_OPT_DOUBLE, O(sheddable_max_kv), 0,
     .help = "... and KV usage below this", NONNEG},
    {"queue-timeout-secs", NULL, KVG_OPT_SECS_MS, O(queue_timeout_ms), 0,
     .help = "how long a request waits in the gateway queue for a worker"},
    {"queue-size", NULL, KVG_OPT_U32, O(queue_size), 0, .help = "gateway queue length"},
    {"batch-max-waiting", NULL, KVG_OPT_DOUBLE, O(batch_max_waiting), 0,
     .help = "batch requests (class: batch, x-kvgate-class) go to workers with fewer waiting, "
             "after every interactive request",
     NONNEG},
    {"batch-max-kv", NULL, KVG_OPT_DOUBLE, O(batch_max_kv), 0,
     .help = "... and KV usage below this", NONNEG},
    {"batch-deadline-secs", NULL, KVG_OPT_SECS_MS, O(batch_deadline_ms), 0,
     .help = "how long a batch request waits in the gateway queue when neither its key's "
             "deadline nor x-kvgate-deadline says (then 429 batch_deadline_exceeded)",
     .min = 1, .max = 86400},
    {"tls-cert", NULL, KVG_OPT_STR, O(tls_cert), S(tls_cert), .section = "TLS", .meta = "FILE",
     .help = "PEM certificate chain: serve HTTPS too"},
    {"tls-key", NULL, KVG_OPT_STR, O(tls_key), S(tls_key), .meta = "FILE",
     .help = "PEM private key for --tls-cert"},
    {"tls-port", NULL, KVG_OPT_INT, O(tls_port), 0, .help = "HTTPS port", .min = 0, .max = 1000000},
    {"service-discovery", NULL, KVG_OPT_BOOL, O(service_discovery), 0,
     .section = "Kubernetes discovery",
     .help = "find workers in Kubernetes: watch EndpointSlices, pods matching the selectors"},
    {"selector", NULL, KVG_OPT_LIST, O(selector), 0, .meta = "KEY=VALUE...",
     .help = "discovery: labels (key=value...) of regular worker pods"},
    {"vllm-pd-disaggregation", NULL, KVG_OPT_BOOL, O(vllm_pd), 0,
     .section = "disaggregated serving",
     .help = "prefill/decode pairs, vLLM's NIXL two-hop protocol (vllm-router's flag)"},
    {"pd-disaggregation", NULL, KVG_OPT_BOOL, O(sglang_pd), 0,
     .help = "prefill/decode pairs, SGLang's bootstrap protocol (sglang's flag)"},
    {"prefill", NULL, KVG_OPT_LIST_APPEND, O(prefill_urls), 0, .meta = "URL [PORT]",
     .help = "prefill worker URL [BOOTSTRAP_PORT|none], repeatable"},
    {"decode", NULL, KVG_OPT_LIST_APPEND, O(decode_urls), 0, .meta = "URL",
     .help = "decode worker URL, repeatable"},
    {"encode", NULL, KVG_OPT_LIST_APPEND, O(encode_urls), 0, .meta = "URL [PORT]",
     .help = "encode worker URL, repeatable"},
    {"epd-config", NULL, KVG_OPT_STR, O(epd_config), S(epd_config), .meta = "JSON",
     .help = "vllm-router's EPD config, {\"encoder_urls\": [URL, ...]}: --epd-disaggregation with "
             "those "
             "--encode workers"},
    {"worker-roles", NULL, KVG_OPT_LIST, O(worker_roles), 0, .section = "workers",
     .meta = "ROLE...",
     .help =
         "regular|prefill|decode|encode per --worker-urls entry, same order (YAML workers' role:)"},
    {"worker-labels", NULL, KVG_OPT_LIST, O(worker_labels), 0, .meta = "LABELS...",
     .help = "node=..,rack=..,zone=.. per --worker-urls entry, same order, none for none (YAML "
             "labels:)"},
    {"worker-bootstrap-ports", NULL, KVG_OPT_LIST, O(worker_bootstrap), 0, .meta = "PORT...",
     .help =
         "an SGLang prefill's bootstrap port per --worker-urls entry, same order, none for none "
         "(YAML bootstrap_port:)"},
    {NULL, NULL, KVG_OPT_INCLUDE, O(pd), .sub = kvg_pd_opt_table},
    {"prefill-selector", NULL, KVG_OPT_LIST, O(prefill_selector), 0,
     .section = "Kubernetes discovery", .meta = "KEY=VALUE...",
     .help = "discovery: labels of prefill worker pods"},
    {"decode-selector", NULL, KVG_OPT_LIST, O(decode_selector), 0, .meta = "KEY=VALUE...",
     .help = "discovery: labels of decode worker pods"},
    {"encode-selector", NULL, KVG_OPT_LIST, O(encode_selector), 0, .meta = "KEY=VALUE...",
     .help = "discovery: labels of encode worker pods (the encode stage only, never answering)"},
    {"service-discovery-namespace", NULL, KVG_OPT_STR, O(sd_namespace), S(sd_namespace),
     .meta = "NAMESPACE", .help = "discovery: the namespace to watch (every namespace)"},
    {"service-discovery-port", NULL, KVG_OPT_INT, O(sd_port), 0,
     .help = "discovery: the port the engines serve on in each pod (0: the EndpointSlice's)",
     .min = 0, .max = 1000000},
    {"model-label", NULL, KVG_OPT_STR, O(model_label), S(model_label), .meta = "KEY",
     .help = "discovery with models: the pod label whose value names the model (an entry's name "
             "or alias) the pod serves (docs/models.md)"},
    {"service-discovery-api-url", NULL, KVG_OPT_STR, O(sd_api_url), S(sd_api_url), .meta = "URL",
     .help = "discovery: API server (https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT)"},
    {"service-discovery-ca-file", NULL, KVG_OPT_STR, O(sd_ca_file), S(sd_ca_file), .meta = "FILE",
     .help = "discovery: CA of the API server (the service account's ca.crt)"},
    {"service-discovery-token-file", NULL, KVG_OPT_STR, O(sd_token_file), S(sd_token_file),
     .meta = "FILE", .help = "discovery: bearer token file (the service account's token)"},
    {"dp-aware", NULL, KVG_OPT_BOOL, O(dp_aware), 0,
     .help =
         "discovery: External DP groups, every member matching the selector is a worker (its DP "
         "rank is its LeaderWorkerSet worker index); without it only member 0 of a group"},
    {"log-level", NULL, KVG_OPT_LEVEL, O(log_level), 0, .section = "logging",
     .help = "how much to log"},
    {"no-access-log", NULL, KVG_OPT_NBOOL, O(proxy.access_log), 0,
     .help = "no JSON line per request"},
    {"otlp-endpoint", NULL, KVG_OPT_STR, O(trace.endpoint), S(trace.endpoint), .section = "tracing",
     .meta = "URL",
     .help = "export OpenTelemetry spans over OTLP/HTTP (protobuf) to URL/v1/traces, e.g. "
             "http://127.0.0.1:4318 (docs/tracing.md); none when unset"},
    {"trace-sample", NULL, KVG_OPT_DOUBLE, O(trace.sample), 0,
     .help = "share of requests traced when the client sends no traceparent (a client's "
             "traceparent decides for its request)",
     .min = 0, .max = 1},
    {"trace-flush-ms", NULL, KVG_OPT_MS, O(trace.flush_ms), 0,
     .help = "the longest a finished span waits for its batch to be sent (the OpenTelemetry "
             "SDKs' OTEL_BSP_SCHEDULE_DELAY)"},
    {"otlp-timeout-secs", NULL, KVG_OPT_SECS_MS, O(trace.timeout_ms), 0,
     .help = "an export's connect and read timeout: a collector slower than this loses the batch "
             "(counted in kvgate_trace_spans_dropped_total)"},
    {"peers", NULL, KVG_OPT_CUSTOM, O(peers), 0, .section = "replicas", .meta = "URL...",
     .parse = parse_peers, .format = format_peers, .flags = KVG_OPT_F_MULTI | KVG_OPT_F_NODEFAULT,
     .help = "the other kvgate replicas in front of the same engines (space- or "
             "comma-separated; none by default): each one's routing history (the prompts it "
             "sent where) reaches the others every --exchange-ms, so that without engine KV "
             "events they route as one; the file's peers: is re-read on SIGHUP "
             "(docs/replicas.md)"},
    {"peer-token", NULL, KVG_OPT_STR, O(peer_token), S(peer_token), .meta = "SECRET",
     .help = "the secret replicas present to each other (Authorization: Bearer); without it a "
             "peer's batch needs an admin key with --keys, else a loopback client"},
    {"exchange-ms", NULL, KVG_OPT_U32, O(exchange_ms), 0, .min = 10, .max = 60000,
     .help = "how often a replica sends its peers the picks it made since its last batch"},
    {"peer-batch-bytes", NULL, KVG_OPT_SIZE, O(peer_batch_bytes), 0, .min = 4096, .max = 16 << 20,
     .help = "the cap of one batch, sent or received (413 past it); past it a replica's "
             "oldest records are dropped and counted"},
    {"peer-self", NULL, KVG_OPT_STR, O(peer_self), S(peer_self), .meta = "URL",
     .help = "the address peers know this replica by, named in its batches (default "
             "http://HOST:PORT of --host, the host name for a wildcard address)"},
    {"peer-service", NULL, KVG_OPT_STR, O(peer_service), S(peer_service), .meta = "URL",
     .help = "http://NAME:PORT: every address NAME resolves to is a peer as http://ADDR:PORT "
             "(a Kubernetes headless Service of the replicas), beside --peers; resolved again "
             "every 10 s, so that replicas added or gone join or leave the list"},
    {"autoscale", NULL, KVG_OPT_STR, O(autoscale_path), S(autoscale_path), .section = "autoscaling",
     .meta = "FILE",
     .help = "YAML file of pools to autoscale (GET /autoscale, /autoscale/metrics)"},
    {"dry-run", NULL, KVG_OPT_BOOL, O(autoscale_dry_run), 0,
     .help = "with --autoscale: plan and report, act on nothing"},
    {"read-usage", NULL, KVG_OPT_BOOL, O(read_usage), 0,
     .help = "accepted for old configurations: every request's token usage is read now "
             "(streams ask the engine for it)"},
    KVG_OPT_END,
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
    c->exchange_ms = 100;
    c->peer_batch_bytes = 256 * 1024;
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
    c->batch_max_waiting = 1;
    c->batch_max_kv = 0.8;
    c->batch_deadline_ms = 30 * 60 * 1000;
    snprintf(c->tokenizer, sizeof c->tokenizer, "builtin:bytes");
    c->kv_index_max_entries = 1u << 23;
    c->tokenizer_cache_bytes = 64u << 20;
    c->tokenizer_nice = 10;
    kvg_policy_opts_default(&c->policy_opts);
    c->sd_port = 80;
    c->log_level = KVG_LOG_INFO;
    c->proxy.access_log = 1;
    kvg_trace_config_default(&c->trace);
}

void kvg_serve_config_free(struct kvg_serve_config *c)
{
    kvg_opt_free(flags, c);
    kvg_strlist_free(&c->peers); /* a CUSTOM list: kvg_opt_free leaves it */
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
        if (given || c->dp_aware || c->model_label[0])
            return kvg_err_set(err, errlen, KVG_ECONFIG,
                               "--selector, --prefill-selector, --decode-selector, "
                               "--encode-selector, --dp-aware and --model-label need "
                               "--service-discovery");
        return 0;
    }
    if (!given)
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "--service-discovery needs --selector, --prefill-selector or "
                           "--decode-selector");
    if (c->sd_port < 0 || c->sd_port > 65535)
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "--service-discovery-port: 1..65535, or 0 for the EndpointSlice's");
    return 0;
}

const struct kvg_opt *kvg_serve_config_table(void)
{
    return flags;
}

int kvg_serve_config_check(struct kvg_serve_config *c, char *err, size_t errlen)
{
    int rc;
    /* Before anything starts (the embedded engines included). */
    if (!kvg_policy_known(c->policy))
        return kvg_err_set(err, errlen, KVG_ECONFIG, "unknown --policy '%s' (known: %s)", c->policy,
                           kvg_policy_names());
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
    if (c->threads < 1 || c->threads > 256)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "--threads: 1..256");
    if (c->loop_slice_us && (c->loop_slice_us < 100 || c->loop_slice_us > 100000))
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "--loop-slice-us: 100..100000 (the kernel's range), or 0");
    c->policy_opts.block_size = c->block_size;
    if (c->block_size == 0)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "--block-size must be at least 1");
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
    if (!(c->slo_ttft_s > 0) != !(c->slo_itl_s > 0)) /* a request's outcome needs both */
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "--slo-ttft-secs and --slo-itl-secs go together");
    if (c->health_failure_threshold == 0 || c->health_success_threshold == 0)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "health thresholds must be at least 1");
    if ((rc = kvg_serve_config_models(c, c->config_path, err, errlen))) return rc;
    char host[256], port[16];
    struct kvg_http_target t;
    if (c->peer_service[0] && kvg_http_target_split(c->peer_service, &t, host, port))
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "--peer-service: '%s' is not an http://host:port URL", c->peer_service);
    rc = kvg_serve_config_pd(c, err, errlen);
    return rc ? rc : check_discovery(c, err, errlen);
}

int kvg_serve_config_reload_file(const char *path, const struct kvg_serve_config *running,
                                 struct kvg_serve_config *out, char *err, size_t errlen)
{
    kvg_serve_config_default(out);
    int rc = kvg_opt_load_yaml(flags, out, path, err, errlen);
    /* Its own name, for the file:line of later checks (kvg_serve_config_pd). */
    if (!rc) snprintf(out->config_path, sizeof out->config_path, "%s", path);
    if (!rc && running) {
        /* Discovery starts with the process: a flag's choice holds for the
         * file's models: too (a model of a discovered pool lists no workers). */
        out->service_discovery = running->service_discovery;
        memcpy(out->model_label, running->model_label, sizeof out->model_label);
        /* So is the autoscaler: its local pools' models list no workers. */
        memcpy(out->autoscale_path, running->autoscale_path, sizeof out->autoscale_path);
    }
    if (!rc) rc = kvg_serve_config_models(out, path, err, errlen);
    if (rc) kvg_serve_config_free(out);
    return rc;
}

int kvg_serve_config_load_file(const char *path, struct kvg_serve_config *out, char *err,
                               size_t errlen)
{
    return kvg_serve_config_reload_file(path, NULL, out, err, errlen);
}

/* What SIGHUP applies: the worker list with its event endpoints, roles,
 * labels and bootstrap ports, the models, the peers (and the file's own
 * name). */
static int reloadable(void *ud, const struct kvg_opt *o, size_t off)
{
    (void)ud;
    (void)o;
    return off == O(workers) || off == O(kv_endpoints) || off == O(replay_endpoints) ||
           off == O(worker_roles) || off == O(worker_labels) || off == O(worker_bootstrap) ||
           off == O(prefill_urls) || off == O(decode_urls) || off == O(config_path) ||
           off == O(models) || off == O(peers);
}

size_t kvg_serve_config_diff_restart(const struct kvg_serve_config *a,
                                     const struct kvg_serve_config *b, char *out, size_t cap)
{
    return kvg_opt_diff(flags, a, b, reloadable, NULL, out, cap);
}
