/* kvgate serve: the process. This part wires every other one together (the
 * listener, the gateway's decisions, the router and its KV index, the proxy,
 * kvgate's own metrics) and nothing includes it. Shared state and the
 * per-thread context every handler gets. */
#ifndef KVG_SERVE_SERVE_H
#define KVG_SERVE_SERVE_H

#include <pthread.h>
#include <stdatomic.h>
#include <uv.h>

#include "base/util.h"
#include "gateway/gate.h"
#include "gateway/guard.h"
#include "net/http_client.h"
#include "net/http.h"
#include "proxy/proxy.h"
#include "router/pool.h"
#include "serve/config.h"
#include "serve/metrics.h"
#include "ui/history.h"

struct cJSON;
struct kvg_tok;
struct kvg_jinja_chat;

/* Requests sent to a worker slot in the last interval (GET /serving). */
struct kvg_serve_sent {
    char url[512];
    uint64_t at_mark;       /* the worker's processed count at the interval's start */
    uint64_t last_interval; /* sent during the last whole interval */
    uint64_t at_sample;     /* the worker's processed count at the last sample */
};

/* What the status page's samples are differences of: kvgate's own
 * counters, cumulative, read once a second (status.c, read_totals). */
#define KVG_SERVE_UI_BUCKETS 32
struct kvg_serve_ui_totals {
    uint64_t answered, c4xx, c5xx;
    double tokens[3]; /* prompt, cached, completion */
    uint64_t ttft[KVG_SERVE_UI_BUCKETS], itl[KVG_SERVE_UI_BUCKETS];
    size_t nttft, nitl;
    const double *ttft_bounds, *itl_bounds; /* the series', alive as long as they are */
    double match_sum;                       /* the routed prefix match ratio's histogram */
    uint64_t match_n;
};

/* The status page's samples and the serving view's state (status.c). */
struct kvg_serve_status {
    struct kvg_ui_history hist;
    struct kvg_ui_sample *scratch; /* owned: one sample being built (main loop) */
    uv_timer_t timer;              /* main loop, once a second */
    int timer_on;
    uint64_t ticks;
    double last_t;                   /* kvg_now_s() of the last sample */
    struct kvg_serve_ui_totals prev; /* at the last sample */
    pthread_mutex_t mu;              /* guards sent[], view_hash, generation */
    int mu_ok;
    struct kvg_serve_sent *sent; /* owned, KVG_POOL_MAX_WORKERS, by worker slot */
    uint64_t view_hash, generation;
};
struct kvg_kv_index;
struct kvg_kv_sub;
struct kvg_discovery;
struct kvg_serve_autoscale;

struct kvg_serve {
    struct kvg_serve_config cfg;
    struct kvg_pool pool;
    struct kvg_pd *pd;                /* prefill/decode pairing, NULL when not disaggregated */
    struct kvg_tok *tok;              /* the served model's tokenizer (builtin:bytes by default) */
    struct kvg_tok_pcache *tok_cache; /* its prefix cache (NULL: off) */
    struct kvg_jinja_chat *chat;      /* its chat template */
    struct kvg_kv_index *kv;          /* precise KV index; NULL when no worker publishes events */
    /* The served models (models_setup.c): the current catalog, swapped by
     * SIGHUP; catalogs_on once it is set up. */
    struct kvg_catalog_holder catalogs;
    int catalogs_on;
    struct kvg_kv_sub *sub; /* its subscribers */
    /* Per worker slot, the data-parallel rank its events must carry + 1
     * (0: a plain URL), set when the worker joins; read by the subscriber
     * thread on every batch. */
    _Atomic int slot_rank[KVG_POOL_MAX_WORKERS];
    _Atomic uint64_t dp_rank_mismatches; /* batches of another rank than their worker's */
    struct kvg_gate gate;                /* keys, quotas, admission */
    struct kvg_guard admin_guard;        /* the admin API against web pages (--admin-hosts) */
    struct kvg_proxy proxy;              /* what every loop's proxy shares */
    struct kvg_proxy_wq *wq;             /* the proxy's work threads (owned) */
    _Atomic int draining;
    double started_s;
    uv_async_t health_kick; /* any thread: "check the workers now" (main loop) */
    struct ssl_ctx_st *tls;
    struct kvg_serve_metrics metrics;
    struct kvg_serve_status status;
    int tok_fallback;      /* the model's tokenizer could not be used (builtin:bytes instead) */
    int events_configured; /* some worker was given a KV events endpoint */
    struct kvg_discovery *disc;            /* --service-discovery, else NULL */
    struct kvg_serve_autoscale *autoscale; /* --autoscale FILE; NULL without (autoscale_setup.c) */
    struct kvg_serve_peers *peers;         /* --peers; NULL without (peers.c) */
    struct kvg_serve_peers_dns *peers_dns; /* --peer-service; NULL without (peers_dns.c) */
};

/* One per event-loop thread. */
struct kvg_serve_loop {
    struct kvg_serve *sv;
    uv_loop_t loop;
    struct kvg_http_server *srv;
    struct kvg_http_server *srv_tls; /* NULL without --tls-cert */
    struct kvg_http_client *client;
    struct kvg_gate_loop gate;   /* this loop's end of the quota store and admission queue */
    struct kvg_proxy_loop proxy; /* this loop's proxy */
    struct kvg_proxy_wq_home wq; /* its work threads' way back */
    uv_async_t wake;             /* "look at sv->draining / force_close" */
    uv_timer_t drain_timer;
    _Atomic int force_close;
    _Atomic int done;
    pthread_t thread;
    struct kvg_rng rng;
    int index;
};

/* The request handler of every loop: the endpoint table (endpoints.c). */
void kvg_serve_handle(struct kvg_http_req *req, void *ud);
/* GET /workers's document (caller deletes it), also the status page's. */
struct cJSON *kvg_serve_workers_json(struct kvg_serve *sv);
/* The status page and the serving view (status.c): sampling on the main
 * loop, then the handlers. */
int kvg_serve_status_start(struct kvg_serve *sv, uv_loop_t *loop);
void kvg_serve_status_stop(struct kvg_serve *sv);
void kvg_serve_status_free(struct kvg_serve *sv);
void kvg_serve_ui_page(struct kvg_serve *sv, struct kvg_http_req *req);
/* GET /ui/state: {"policy", "started", "now", "generation", "autoscale" and
 * "quotas" (whether GET /autoscale and /quota/usage answer), "workers" (as
 * GET /workers), "history" (ui/history.h), "pd" (the PD counters, in PD
 * mode)}. */
void kvg_serve_ui_state(struct kvg_serve *sv, struct kvg_http_req *req);
void kvg_serve_serving(struct kvg_serve *sv, struct kvg_http_req *req);
/* The serving view's generation: it moves when a worker joins, leaves or
 * changes state. */
uint64_t kvg_serve_generation(struct kvg_serve *sv);
/* Every request head, before its body: keys, the admin role (endpoints.c). */
int kvg_serve_head_check(struct kvg_http_req *req, void *ud, struct kvg_http_refusal *out);
/* The server refused a request past its head (a limit): the endpoint's
 * error shape, the access-log line and the count (net/http.h). */
void kvg_serve_refused(const struct kvg_http_req *req, void *ud, struct kvg_http_refusal *out);
/* Router set-up (router_setup.c): tokenizer, chat template, KV index and
 * subscribers, the policy and the pool with its hooks. Message in err. */
int kvg_serve_router_init(struct kvg_serve *sv, char *err, size_t errlen);
void kvg_serve_router_free(struct kvg_serve *sv);
/* Gives c's workers in pool their role, labels and bootstrap port (none
 * unless c names them): at startup and on every SIGHUP reload. 0, or
 * KVG_ENOTFOUND for a worker of c the pool does not hold (not added). */
int kvg_serve_apply_roles(struct kvg_pool *pool, const struct kvg_serve_config *c);
/* Starts Kubernetes discovery into the pool when --service-discovery is on
 * (after health_kick is initialised: joins kick a health check). */
int kvg_serve_discovery_start(struct kvg_serve *sv, char *err, size_t errlen);
/* The key kvgate sends the engine at url: its own from c, else c's common
 * one ("" none). */
const char *kvg_serve_upstream_key(const struct kvg_serve_config *c, const char *url);
/* Re-judges every worker's routing mode (router/mode.h), logging changes.
 * Any thread; called by a timer and before the mode is shown. */
void kvg_serve_modes_refresh(struct kvg_serve *sv);
/* The gateway's decisions and the proxy, from the configuration
 * (gate_setup.c); after kvg_serve_router_init. */
int kvg_serve_gate_init(struct kvg_serve *sv, char *err, size_t errlen);
/* The served models' catalog and each one's tokenizer and policy for the
 * proxy (models_setup.c); after kvg_serve_gate_init. Freed with
 * kvg_serve_models_free (before the router's). Message in err. */
int kvg_serve_models_init(struct kvg_serve *sv, char *err, size_t errlen);
void kvg_serve_models_free(struct kvg_serve *sv);
/* The catalog of a reloaded configuration f, each model with its state
 * (a model that stayed as it was keeps its own: its policy's history, its
 * tokenizer); not installed: kvg_catalog_swap(&sv->catalogs, *out) does.
 * KVG_ECONFIG with file:line in err, refusing what it cannot build (a
 * models: section may be given or taken away: the flags' one model and
 * a section's models are catalogs alike). Main loop. */
int kvg_serve_models_prepare(struct kvg_serve *sv, const struct kvg_serve_config *f,
                             struct kvg_catalog **out, char *err, size_t errlen);
/* The model of cat that worker w (from a pool snapshot) serves: its
 * entry's, or its pod's label's (router/catalog.h); -1 none. */
int kvg_serve_worker_model(struct kvg_serve *sv, const struct kvg_catalog *cat,
                           const struct kvg_worker *w);
/* Marks (model_unconfirmed) and logs, once per change, each worker whose
 * /v1/models lists models but not the one it is under (the pick leaves it
 * out for that model). Main loop, once a second. */
void kvg_serve_models_confirm(struct kvg_serve *sv);
/* Logs each discovered worker whose pod's model label names no model of
 * the current catalog (it serves nothing until a reload names it). */
void kvg_serve_models_unserved(struct kvg_serve *sv);
/* A reference to the current catalog (NULL before models_init); the caller
 * unrefs it. */
struct kvg_catalog *kvg_serve_catalog(struct kvg_serve *sv);
/* Each served model's requests waiting in the gateway queue now into
 * kvgate_admission_queue_model_waiting{model} (the series goes with the
 * model's count: a reload that drops the model drops it). */
void kvg_serve_models_queue_metrics(struct kvg_serve *sv);
/* endpoints.c's, for its other files: a document sent (and deleted); a
 * worker's routing mode as "routing": {...}. debug_route.c: POST
 * /debug/route. */
void kvg__serve_send_cjson(struct kvg_http_req *req, int status, struct cJSON *j);
void kvg__serve_add_mode(struct cJSON *o, struct kvg_worker *w);
void kvg__serve_debug_route(struct kvg_serve_loop *lc, struct kvg_http_req *req);
/* The embedded autoscaler (autoscale_setup.c): --autoscale FILE loaded and
 * its gauges registered (nothing without the flag); its timer on loop;
 * stopped with the main loop; freed at exit. Message in err. */
int kvg_serve_autoscale_init(struct kvg_serve *sv, char *err, size_t errlen);
/* 1 when --autoscale names a file whose actuator is `local` (read early:
 * the embedded default then starts no simulated engines of its own). */
int kvg_serve_autoscale_is_local(const struct kvg_serve_config *c);
/* A reload's catalog against the running autoscaler: each pool's model:
 * must still name the model its replicas serve (with models:; none
 * without). 0, or KVG_ECONFIG naming the autoscale file, pool and model. */
int kvg_serve_autoscale_models_check(struct kvg_serve *sv, const struct kvg_catalog *cat, char *err,
                                     size_t errlen);
int kvg_serve_autoscale_start(struct kvg_serve *sv, uv_loop_t *loop);
void kvg_serve_autoscale_stop(struct kvg_serve *sv);
void kvg_serve_autoscale_free(struct kvg_serve *sv);
/* The gauges' values, at scrape time. */
void kvg_serve_autoscale_refresh_metrics(struct kvg_serve *sv);
/* GET /autoscale (keda 0) or /autoscale/metrics (keda 1) into out;
 * KVG_ENOTFOUND without --autoscale. */
int kvg_serve_autoscale_body(struct kvg_serve *sv, int keda, struct kvg_buf *out);
/* Runs the gateway with cfg (parsed by src/cmd/serve.c; this takes over its
 * lists and leaves cfg zeroed) until drained. Returns the process exit
 * status: 0 after a drain, 1 or 2 when it could not start (the reason on
 * stderr). */
int kvg_serve_run(struct kvg_serve_config *cfg);

#endif
