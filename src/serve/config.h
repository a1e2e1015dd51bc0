/* kvgate serve's configuration: command-line flags, named as in sglang's and
 * vLLM's routers where the meaning is the same, and an optional YAML file
 * (--config) whose keys are the same names with '_' for '-' (and workers:, a
 * list of {url, kv_events_endpoint, ...}). The file is read first and flags
 * override it; SIGHUP re-reads the file. config.c's option table (base/opt.h)
 * is the one list of both. */
#ifndef KVG_SERVE_CONFIG_H
#define KVG_SERVE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "net/http.h"
#include "router/circuit.h"
#include "pd/pd.h"
#include "proxy/proxy.h"
#include "router/policy.h"
#include "router/catalog.h"
#include "base/opt.h"
#include "trace/trace.h"
#define KVG_CFG_MAX_WORKERS KVG_OPT_LIST_MAX /* a list flag's values: struct kvg_strlist */

/* One models: entry (config_models.c): the catalog's spec, first (the
 * entry's rows are the spec's, at the same offsets), and the model's
 * serving mode. */
struct kvg_serve_model {
    struct kvg_catalog_spec spec;
    struct kvg_pd_config serving; /* its serving: section (unset keys: the defaults) */
    int serving_given;            /* it has one; else the top level's mode and settings */
};
struct kvg_serve_config {
    char host[128];
    int port;
    int threads;
    int tokenizer_nice;                  /* niceness added to the pool threads (10) */
    int loop_slice_us;                   /* the loops' scheduler slice, 0: the kernel's (0) */
    int tokenizer_threads;               /* the proxy's work threads, 0: 4 */
    struct kvg_strlist workers;          /* --worker-urls */
    struct kvg_strlist kv_endpoints;     /* --kv-events-endpoints, same order ("none": no events) */
    struct kvg_strlist replay_endpoints; /* --replay-endpoints, same order ("none") */
    char tokenizer[512], tokenizer_config[512];
    char chat_template[512]; /* --chat-template: overrides the tokenizer config's */
    uint64_t kv_index_max_entries;
    uint64_t tokenizer_cache_bytes; /* the exact prefix cache's bound (0: off) */
    char policy[64];
    char config_path[512];
    struct kvg_http_limits limits;
    struct kvg_proxy_config proxy; /* timeouts, retries, access log, engine metrics' age */
    /* health */
    int health_enabled;
    uint32_t health_interval_ms, health_timeout_ms;
    uint32_t health_failure_threshold, health_success_threshold;
    char health_endpoint[128];
    struct kvg_cb_config cb;
    uint32_t drain_timeout_ms;
    uint32_t scrape_interval_ms; /* engine /metrics; 0 = off */
    uint32_t block_size;         /* engines' KV block size (checked against theirs) */
    char tls_cert[512], tls_key[512];
    int tls_port; /* HTTPS listener (plain HTTP stays on port) */
    struct kvg_policy_opts policy_opts;
    char keys_path[512];
    struct kvg_strlist admin_hosts;    /* host names the admin API answers for (gateway/guard.h) */
    struct kvg_strlist translate_apis; /* responses, messages: sent to the engines as chat */
    char upstream_api_key[256];        /* every engine's key, unless its own is given */
    struct kvg_strlist upstream_keys;  /* --upstream-api-keys, same order ("none") */
    int metrics_require_key;
    int metrics_tenant_labels;    /* kvgate_tokens_total{model,tenant,kind} */
    double slo_ttft_s, slo_itl_s; /* kvgate_slo_requests_total's targets (0: no such series) */
    char quota_store[256];
    uint32_t quota_timeout_ms;
    int quota_fail_closed;
    uint32_t quota_default_max_tokens;
    uint32_t quota_output_cap; /* --quota-output-cap: 0 off */
    int quota_require_max_tokens;
    double critical_max_waiting, sheddable_max_waiting, sheddable_max_kv;
    double batch_max_waiting, batch_max_kv;
    uint32_t queue_timeout_ms, queue_size, batch_deadline_ms;
    int log_level;
    /* Kubernetes discovery (sglang's flag names) */
    int service_discovery;
    struct kvg_strlist selector, prefill_selector, decode_selector,
        encode_selector;                                       /* key=value terms */
    char sd_namespace[64];                                     /* "": every namespace */
    int sd_port;                                               /* pods' serving port */
    char sd_api_url[256], sd_ca_file[512], sd_token_file[512]; /* "": in-cluster */
    int dp_aware;             /* External DP: every qualified group member is a rank */
    char model_label[128];    /* models: a discovered pod's label naming its model ("" none) */
    int spawn_sims;           /* embedded default: local simulated engines when no workers */
    char autoscale_path[512]; /* --autoscale FILE: the embedded autoscaler */
    int autoscale_dry_run;    /* --dry-run: it plans and reports, acts on nothing */
    int read_usage;           /* --read-usage: accepted, no effect (usage is always read) */
    /* Disaggregated serving (config_pd.c): vllm-router's flags. --prefill
     * and --decode add workers with their role to --worker-urls; the roles
     * and labels of every worker end up in worker_roles / worker_labels,
     * parallel to workers ("regular" / "none" for the unsaid). */
    int vllm_pd, sglang_pd; /* --vllm-pd-disaggregation, --pd-disaggregation */
    struct kvg_strlist prefill_urls, decode_urls, worker_roles, worker_labels;
    struct kvg_strlist encode_urls;      /* --encode (EPD) */
    char epd_config[4096];               /* vllm-router's --epd-config JSON, "" none */
    struct kvg_strlist worker_bootstrap; /* per worker: bootstrap port or "none" (--prefill) */
    struct kvg_pd_config pd;
    /* models: (config_models.c, docs/models.md): many models behind one
     * address, each with its workers (folded into the lists above once
     * checked), names, tokenizer, policy; none: the flags are the one model. */
    struct kvg_serve_model *models;
    size_t nmodels;
    int models_folded;
    /* Traces (trace/trace.h): --otlp-endpoint ("": none), --trace-sample. */
    struct kvg_trace_config trace;
    /* Replicas (serve/peers.c, docs/replicas.md): the other kvgate replicas
     * this one exchanges routing history with (none: it routes alone), the
     * shared secret they present, the batch period and cap, and the name it
     * gives itself in its batches ("": http://<host>:<port>). */
    struct kvg_strlist peers;
    char peer_token[256];
    uint32_t exchange_ms;
    size_t peer_batch_bytes;
    char peer_self[512];
    /* --peer-service: a name whose every address is a peer ("": none;
     * peers_dns.c). */
    char peer_service[512];
};

/* Folds --prefill/--decode into the worker list, checks the roles and the PD
 * settings (config_pd.c); with models:, each model's roles against its
 * serving mode instead (kvg_serve_config_serving). KVG_ECONFIG with a
 * message. */
int kvg_serve_config_pd(struct kvg_serve_config *c, char *err, size_t errlen);

/* Checks the models: section whole (router/catalog.h's rules; errors name
 * file:line) and adds its workers to the worker lists with their
 * endpoints, keys, roles, labels and bootstrap ports, once; the top-level
 * worker lists must then be empty. 0 or KVG_ECONFIG with err. */
int kvg_serve_config_models(struct kvg_serve_config *c, const char *file, char *err, size_t errlen);
/* The catalog of c (file: its config file, for file:line): its models:
 * entries, each taking the top level's tokenizer, policy, policy options
 * and block size where it gives none; or, without them, the flags' one
 * model answering to any name. *out as kvg_catalog_build's. */
int kvg_serve_models_catalog(const struct kvg_serve_config *c, const char *file,
                             struct kvg_catalog **out, char *err, size_t errlen);
/* With models: and an --autoscale file whose actuator is local: the names
 * its pools' `model:` give, appended to out (those models' workers are the
 * replicas it starts: their entries list none). 0, or the file's error
 * (KVG_ECONFIG in err). autoscale_setup.c. */
int kvg_serve_autoscale_scaled(const struct kvg_serve_config *c, struct kvg_strlist *out, char *err,
                               size_t errlen);
/* Each model's serving mode (its serving: section, else the top level's
 * PD flags, whose mode c->vllm_pd / c->sglang_pd say) against its
 * workers' roles: a PD mode needs prefill and decode workers, vLLM EPD an
 * encode worker, and roles need a mode that uses them; the section's
 * values checked as the flags' are. Errors name file:line and the entry
 * (config_models.c). */
int kvg_serve_config_serving(const struct kvg_serve_config *c, const char *file, char *err,
                             size_t errlen);
/* The serving mode and settings model entry i serves with (its own, else
 * the top level's c->pd with the mode of the flags). */
void kvg_serve_model_serving(const struct kvg_serve_config *c, size_t i, struct kvg_pd_config *out);
/* The PD settings' values a table cannot check alone (ranges, policy
 * names); who names them in the message ("--pd-reject-kv-frac" style for
 * the flags: ""; a model's "file:line: models[i] 'name': serving"). */
int kvg__serve_pd_values(const struct kvg_pd_config *pd, const char *who, char *err, size_t errlen);
/* config.c's table reads models: rows with these (config_models.c). */
extern const struct kvg_opt kvg__serve_model_row[];
int kvg__serve_model_init(void *parent, void *item, size_t index, char *err, size_t errlen);
void kvg__serve_model_seen(void *item, const struct kvg_opt *o);

void kvg_serve_config_default(struct kvg_serve_config *c);
void kvg_serve_config_free(struct kvg_serve_config *c);
/* serve's option table (base/opt.h): src/cmd/serve.c parses the command
 * line and --config with it, SIGHUP re-reads the file with it. */
const struct kvg_opt *kvg_serve_config_table(void);
/* The checks across options once everything is read (ranges the table
 * cannot say, list lengths that must agree, PD and discovery settings); it
 * also derives the policy options' block size. 0 or KVG_ECONFIG with err. */
int kvg_serve_config_check(struct kvg_serve_config *c, char *err, size_t errlen);
/* Reads the YAML file alone into a fresh configuration (SIGHUP re-reads the
 * worker list from it), its models: checked and folded in. The caller frees
 * it with kvg_serve_config_free. */
int kvg_serve_config_load_file(const char *path, struct kvg_serve_config *out, char *err,
                               size_t errlen);
/* The same for a running process (SIGHUP): whether discovery is on and its
 * model label are running's (they need a restart), whatever the file says. */
int kvg_serve_config_reload_file(const char *path, const struct kvg_serve_config *running,
                                 struct kvg_serve_config *out, char *err, size_t errlen);
/* The flags (by name, comma-separated into out) whose values differ between
 * a and b among those SIGHUP cannot apply: everything but the worker list
 * and its KV event endpoints. Returns how many. */
size_t kvg_serve_config_diff_restart(const struct kvg_serve_config *a,
                                     const struct kvg_serve_config *b, char *out, size_t cap);

#endif
