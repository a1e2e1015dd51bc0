/* Forwarding an OpenAI request (POST /v1/chat/completions, /v1/completions)
 * to the worker the router picks, and relaying the answer; see proxy.c.
 *
 * The proxy asks the gateway (gateway/gate.h) whether a request may go and
 * tells it how it ended; it asks the router's pool for a worker. It knows
 * nothing of the process around it: kvg serve fills these structures. */
#ifndef KVG_PROXY_PROXY_H
#define KVG_PROXY_PROXY_H

#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#include "api/api.h"
#include "base/util.h"
#include "gateway/gate.h"
#include "net/http_client.h"
#include "net/http.h"
#include "metrics/metrics.h"
#include "pd/pd.h"
#include "proxy/route_input.h"
#include "proxy/workq.h"
#include "router/catalog.h"
#include "router/pool.h"
#include "trace/trace.h"

struct kvg_proxy_config {
    uint32_t request_timeout_ms;     /* non-stream answers: whole response */
    uint32_t stream_idle_timeout_ms; /* streams: between chunks (and to the first) */
    uint32_t connect_timeout_ms;
    int retries_enabled;
    uint32_t retry_max, retry_initial_ms, retry_max_backoff_ms;
    double retry_multiplier, retry_jitter;
    uint32_t metrics_staleness_ms; /* older engine samples count as unknown */
    int access_log;                /* one JSON line per request */
};

/* The proxy's series are kept per endpoint kind (api/api.h), plus one
 * for requests to no endpoint (KVG_PROXY_ROUTE_NONE: a 404 or 405). */
#define KVG_PROXY_ROUTE_NONE KVG_API_NKINDS
#define KVG_PROXY_NROUTES (KVG_API_NKINDS + 1)
/* kvgate_slo_requests_total's result label: met, ttft_missed, itl_missed,
 * both_missed, failed (i in 0..KVG_PROXY_SLO_RESULTS). */
#define KVG_PROXY_SLO_RESULTS 5
const char *kvg_proxy_slo_label(int i);
/* The `route` label of a kind's series: its first path in the table. */
const char *kvg_proxy_route_label(int route);

/* The series the proxy observes (not owned: the process registers them). */
struct kvg_proxy_metrics {
    struct kvg_metrics_series *requests[KVG_PROXY_NROUTES][6]; /* status class 1xx..5xx, other */
    struct kvg_metrics_series *duration[KVG_PROXY_NROUTES];
    struct kvg_metrics_series *ttfb[KVG_PROXY_NROUTES];
    struct kvg_metrics_series *retries, *client_gone, *upstream_errors, *no_worker;
    /* GET /v1/responses/{id} sent to workers to find a stored response
     * another replica of kvgate routed (proxy/stored.c). NULL: not kept. */
    struct kvg_metrics_series *stored_probes;
    struct kvg_metrics_series *match_ratio;
    /* Per served model (proxy/obs.c takes their series, by the catalog's
     * model name or a name the answering worker lists; never another name
     * a client sent): kvgate_tokens_total{model[,tenant],kind} from the
     * engines' usage (kind prompt, cached, completion; tenant only with
     * tenant_labels), a stream's time to its first token-carrying event
     * and the gaps between such events. NULL: not kept. */
    struct kvg_metrics_family *tokens_f, *ttft_f, *itl_f;
    /* kvgate_model_requests_total{model,class}: every answer by its model
     * (the served one, as the series above name it) and status class. */
    struct kvg_metrics_family *mrequests_f;
    /* kvgate_slo_requests_total{model,result}: every finished request
     * (served, failed, or its client gone) by its outcome against the
     * targets below: met, ttft_missed, itl_missed, both_missed, failed
     * (which misses both). NULL: no targets, not counted. */
    struct kvg_metrics_family *slo_f;
    double slo_ttft_s, slo_itl_s;
    int tenant_labels;
    /* kvgate_responses_total{route,status,error_code}: every answer by its
     * status and error code (kvgate's own, or "engine" for an engine's
     * error, whose own code goes to the access log); the 200s without a
     * code made at start (responses_ok[route]), the rest when first seen. */
    struct kvg_metrics_family *responses_f;
    struct kvg_metrics_series *responses_ok[KVG_PROXY_NROUTES];
    /* The PD series (a request's served PD mode, its aggregated requests
     * and legs' outcomes too) are its PD router's, per model (pd/pd.h,
     * struct kvg_pd_series). */
    /* Fallbacks taken, by {model, to, reason} (docs/models.md); NULL: not
     * counted. */
    struct kvg_metrics_family *fallbacks;
};

/* What the proxy saw of one request, for the host's observer. */
enum kvg_proxy_obs_kind { KVG_PROXY_OBS_ARRIVE, KVG_PROXY_OBS_FIRST, KVG_PROXY_OBS_FINISH };
struct kvg_proxy_obs {
    enum kvg_proxy_obs_kind kind;
    int status; /* FINISH: the answer's status (499: the client left) */
    int failed; /* FINISH: a 5xx, or the client left before any byte */
    /* FIRST, FINISH: a stream's first token-carrying event after arrival
     * (the token clock of proxy/obs.c, what kvgate_time_to_first_token_seconds
     * observes: not a Responses stream's response.created nor a role-only
     * chunk); < 0 none. */
    double ttft_s;
    /* FINISH: (last token event - first) / (tokens - 1) of a stream; < 0 none */
    double itl_s;
    /* FINISH, a request split into PD legs: seconds from arrival to its
     * prefill leg's end (0: it had none, served whole by a decode worker or
     * refused for want of decode room; INFINITY: the leg never ended); < 0
     * one leg (kvg_autoscale_obs_judge's prefill_s). */
    double prefill_s;
    int64_t prompt_tokens, completion_tokens, cached_tokens; /* FINISH: usage, -1 unknown */
    /* The served model of models: (after its alias, split or fallback;
     * valid during the call), "" for the single-model flags' one. An
     * arrival is observed once its model is known (a request that names
     * none kvgate serves is no model's demand), once more for each
     * fallback it starts again as. */
    const char *model;
};

/* One served model's routing state: its tokenizer and chat template, its
 * policy (NULL: the pool's), what that policy reads, and whether kvgate
 * may answer tokenizer endpoints from it. The host's, set in its catalog
 * entry's host slot (router/catalog.h) before serving; immutable. */
struct kvg_proxy_model {
    struct kvg_rinput_tokenizer rt;
    struct kvg_policy *policy;
    int wants_tokens, wants_text, tokenizer_exact;
    struct kvg_pd *pd; /* its prefill/decode pairs (not owned); NULL: one leg per request */
    /* Its requests in flight and queued, against its entry's limits (not
     * owned; NULL: not counted, as the flags' one model). */
    struct kvg_gate_mcount *count;
};

/* Shared by every loop thread; nothing in it is owned by the proxy. */
struct kvg_proxy {
    const struct kvg_proxy_config *cfg;
    struct kvg_pool *pool;
    struct kvg_gate *gate;
    struct kvg_rinput_tokenizer rt;
    int wants_tokens; /* the policy reads token ids: tokenize each request */
    int wants_text;   /* the policy reads the routing text */
    /* rt's tokenizer is the served model's own (not the bytes fallback):
     * kvgate answers count_tokens, /tokenize and /detokenize itself. */
    int tokenizer_exact;
    /* The served models and the names clients may ask for (not owned;
     * each model's host slot a struct kvg_proxy_model; a reload swaps the
     * catalog, a request holds the one it was resolved in). NULL: the one
     * model of rt and the pool's policy. */
    struct kvg_catalog_holder *catalog;
    /* 1 << enum kvg_api_kind the engines are declared not to serve
     * (--translate-apis): sent as chat completions, answers translated. */
    unsigned translate_apis;
    const struct kvg_proxy_metrics *m;
    /* Prefill/decode pairs (not owned); NULL: one leg per request. A
     * request of a served model follows its model's (struct
     * kvg_proxy_model's pd) instead. */
    struct kvg_pd *pd;
    /* The pick of requests routed by load (embeddings, scoring, audio) and
     * of stored responses: least load, whatever the pool's policy (owned by
     * the host, may be NULL: the pool's policy). */
    struct kvg_policy *load_policy;
    struct kvg_trace *tracer; /* spans exported (not owned); NULL: no tracing */
    _Atomic uint64_t requests_total;
    /* Optional, set before serving: told each request's first pick, on its
     * loop thread, with the parsed request (borrowed; ri->json still held)
     * and the worker (the autoscaler's routing history). */
    void (*on_routed)(void *ud, const struct kvg_rinput *ri, struct kvg_worker *w);
    void *on_routed_ud;
    /* Optional, set before serving: told each request's arrival, a
     * stream's first token and the end, on its loop thread (the
     * autoscaler's signals); must be cheap. */
    void (*on_observe)(void *ud, const struct kvg_proxy_obs *o);
    void *on_observe_ud;
};

/* A request served outside the proxy (the autoscaler's prewarm replays a
 * hot prompt straight to a new replica and it answered 200): body (chat or
 * completions JSON) goes through the proxy's own route input (routing text,
 * token ids and block hashes as the policy and tokenizer are configured:
 * its model's, with models:), then that policy (the model's, else the
 * pool's) records it as placed on the worker named url (kvg_pool_place).
 * Thread-safe. 0, KVG_EPARSE for a body the proxy would refuse,
 * KVG_ENOTFOUND for an unknown url or model. */
int kvg_proxy_place(struct kvg_proxy *px, const char *url, const char *body, size_t len, int chat);

/* A request's session key, as a weighted split reads it (docs/models.md):
 * the body's (Responses' prompt_cache_key, Claude Code's session), else
 * the usual session headers (header: a lookup over hctx). Empty: none. */
struct kvg_str kvg_proxy_session_key(const struct kvg_rinput *ri,
                                     struct kvg_str (*header)(const void *hctx, const char *name),
                                     const void *hctx);
/* A served model's context: its entry's max_model_len, else the largest
 * its workers report (0: unknown). Thread-safe. */
uint32_t kvg_proxy_model_context(struct kvg_proxy *px, const struct kvg_catalog_model *m);
/* 1 when a prompt of this many tokens (and max_tokens, 0: not given) does
 * not fit a context of that many (0: unknown, anything fits): what sends
 * a request to its model's fallback (docs/models.md). */
int kvg_proxy_model_past_context(uint32_t context, size_t prompt_tokens, uint32_t max_tokens);

/* One per loop thread: its loop, upstream client, gate end and random
 * numbers (the caller's), and the proxy's cache of finished requests. */
struct kvg_proxy_loop {
    struct kvg_proxy *px;
    uv_loop_t *loop;
    struct kvg_http_client *client;
    struct kvg_gate_loop *gate;
    struct kvg_rng *rng;
    struct proxy_req *free_list;
    unsigned nfree;
    struct kvg__proxy_mcache *mcache; /* obs.c: this loop's per-model series (owned) */
    struct kvg_proxy_wq_home *wq;     /* the caller's; NULL: every step on the loop */
};

/* Takes over req, a request of endpoint ep (api/api.h; id: the path's
 * {id} segment, or NULL): it is answered, or aborted, by the proxy. */
void kvg_proxy_handle(struct kvg_proxy_loop *pl, struct kvg_http_req *req,
                      const struct kvg_api_endpoint *ep, const char *id, size_t id_len);
/* Why a request of kind k is not split into PD legs by pd (served whole
 * by a decode worker instead), NULL when it is: what the engines' own code
 * accepts transfer fields on. */
const char *kvg_proxy_pd_unsplit_reason(const struct kvg_pd *pd, enum kvg_api_kind k);
/* A request the server refused before its handler with r (why: "head"
 * for a missing or wrong key or the admin guard, "limit" for a body past
 * a limit): its access-log line, and, for an engine endpoint, its count
 * (by status and r's code). On its loop thread. */
void kvg_proxy_refused(const struct kvg_proxy *px, const struct kvg_http_req *req,
                       const struct kvg_http_refusal *r, const char *why);
/* A request to no endpoint: the 404 (allow 0) or 405 with Allow in OpenAI's
 * shape, counted and logged as every request is. */
void kvg_proxy_no_endpoint(struct kvg_proxy_loop *pl, struct kvg_http_req *req, unsigned allow);
/* Frees the loop's cached request state (after its loop stopped). */
void kvg_proxy_loop_free(struct kvg_proxy_loop *pl);

#endif
