/* The gateway's decisions about one request, as the proxy asks for them:
 *
 *   kvg_gate_authorize  API key (401), the key's models (403), priority (400);
 *   kvg_gate_admit      token quota (429), then priority admission against
 *                       the pool (429 shed, or queued, 503 on timeout);
 *   kvg_gate_account    at the end, whatever happened: the quota reconciled
 *                       with the usage seen, the queue slot given back.
 *
 * Between admit and account, every request has its usage read by the
 * gate (quotas, the routing mode's self-check, the host's token metrics
 * and access log): kvg_gate_forward_body (a stream's body rewritten to ask
 * for its usage), kvg_gate_usage_feed / _end (a stream through the usage
 * filter) and kvg_gate_usage_json (a whole answer).
 *
 * The proxy includes this header and nothing else of the gateway; the gate
 * never calls the proxy but through the admit callback. */
#ifndef KVG_GATEWAY_GATE_H
#define KVG_GATEWAY_GATE_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "base/buf.h"
#include "gateway/admission.h"
#include "gateway/keys.h"
#include "gateway/quota.h"
#include "gateway/usage.h"
#include "net/http.h"
#include "metrics/metrics.h"
#include "router/pool.h"

struct kvg_gate_opts {
    const char *keys_path;   /* "" or NULL: no keys, no quotas */
    const char *quota_store; /* "" (in process) or redis://... */
    uint32_t quota_timeout_ms;
    int quota_fail_closed;
    uint32_t default_max_tokens; /* the reservation of a request without max_tokens */
    int metrics_require_key;     /* /metrics and /v1/models need a valid key too */
    /* A request without max_tokens may generate to the end of the model's
     * context: it reserves max_model_len (the engine's /v1/models) minus the
     * prompt, or default_max_tokens when no engine says its context; with
     * require_max_tokens, a request a token limit applies to must say. */
    int require_max_tokens;
    /* > 0: such a request is given this output limit instead (in its
     * forwarded body, as the endpoint's own member: kvg_gate_request's
     * budget_member) and reserves it, not the context's remainder, which a
     * coding agent's 1M-token context made larger than any per-minute
     * budget. 0: off, the remainder is reserved. */
    uint32_t output_cap;
    struct kvg_adm_config adm;
    /* Scale from zero: with no healthy worker at all, a request waits in the
     * queue (its length is the autoscaler's demand signal) instead of the
     * router's 503; past the queue timeout it gets 503 + Retry-After. The
     * host wakes the queue when a worker becomes ready. */
    int hold_when_empty;
    /* Several models (serve's models:): the group (0..KVG_ADM_GROUPS-1) of
     * a request's served model, -1 none; called on any loop thread. A
     * waiter is counted in its group (kvg_adm_stats: each autoscale pool
     * reads its model's queue), and hold_when_empty holds a request of a
     * group when no ready worker serves its model, and no other. NULL:
     * hold_when_empty holds when no worker at all is ready. */
    int (*model_group)(void *ud, const char *model, size_t len);
    void *model_group_ud;
};

/* Shared by every loop thread. */
struct kvg_gate {
    struct kvg_gate_opts o; /* paths are copied */
    char keys_path[512];
    int auth_on;                     /* a keys file was given */
    struct kvg_keys_holder keys;     /* the current key set (reload swaps it) */
    struct kvg_quota *quota;         /* token/request/concurrency limits */
    struct kvg_adm_queue *adm;       /* priority admission queue */
    struct kvg_pool *pool;           /* not owned: what admission judges */
    struct kvg_metrics_series *shed; /* not owned, may be NULL: sheddable 429s */
};

/* pool is the caller's and must outlive g. Message in err. */
int kvg_gate_init(struct kvg_gate *g, const struct kvg_gate_opts *o, struct kvg_pool *pool,
                  char *err, size_t errlen);
/* Only the keys (keys_path "" or NULL: none), for a process whose requests
 * need kvg_gate_check_head and nothing else (the autoscale daemon): no
 * quota, no admission. kvg_gate_free frees it. Message in err. */
int kvg_gate_init_keys(struct kvg_gate *g, const char *keys_path, char *err, size_t errlen);
/* Re-reads the keys file; the old set stays (and the error is logged) on
 * failure. */
void kvg_gate_reload(struct kvg_gate *g);
void kvg_gate_free(struct kvg_gate *g);

/* One loop thread's end of the quota store and the admission queue. */
struct kvg_gate_loop {
    struct kvg_gate *g;
    struct kvg_quota_loop *q;
    struct kvg_adm_loop *a;
};
int kvg_gate_loop_open(struct kvg_gate *g, uv_loop_t *loop, struct kvg_gate_loop *gl);
void kvg_gate_loop_close(struct kvg_gate_loop *gl);

/* An answer the gateway gives instead of routing: r's headers point into
 * the deny itself or to static strings. */
struct kvg_gate_deny {
    struct kvg_http_refusal r;
    int shed; /* admission's: the pool is saturated (not the key's limit) */
    struct kvg_quota_headers qh;
    char retry_after[16];
};

/* Who may reach an endpoint. PUBLIC: anyone (health, readiness). READ:
 * anyone, or any valid key with metrics_require_key (/metrics, /v1/models).
 * API: any valid key when keys are on. ADMIN (the worker API, debug, reload):
 * a key with admin: true when keys are on; without keys, a client on the
 * loopback interface only. */
enum kvg_gate_access { KVG_GATE_PUBLIC, KVG_GATE_READ, KVG_GATE_API, KVG_GATE_ADMIN };

/* Checks a request head before its body is read: 0 to read on, 1 denied
 * (d filled: 401 without a valid key, 403 without the admin role or off
 * loopback). peer is the client's "ip:port". note (may be NULL) keeps the
 * key's digest for kvg_gate_authorize of the same request. */
int kvg_gate_check_head(struct kvg_gate *g, enum kvg_gate_access a, struct kvg_str authorization,
                        const char *peer, struct kvg_http_note *note, struct kvg_gate_deny *d);
/* The credential a request carries, as the Authorization value the key
 * checks take: its Authorization header, or else Anthropic's x-api-key as
 * "Bearer <key>" (written into buf, cap bytes). When both come they must
 * name the same key: two keys are no credential (an empty, non-NULL view:
 * a 401). A NULL view: none. */
struct kvg_str kvg_gate_credential(struct kvg_str authorization, struct kvg_str x_api_key,
                                   char *buf, size_t cap);
/* 1 when peer ("ip:port", "[ip6]:port") is on the loopback interface. */
int kvg_gate_peer_loopback(const char *peer);

/* Called once when admission decided: deny NULL means "route it now"
 * (again, after a grant); otherwise answer with deny. It may be called from
 * inside kvg_gate_admit. */
typedef void (*kvg_gate_admit_cb)(void *ud, const struct kvg_gate_deny *deny);

/* A served model's own limits (a models: entry's max_inflight and
 * max_queue, docs/models.md): its requests the gateway holds at once
 * (admitted or waiting in the gateway queue, until they end), and those of
 * them waiting in the queue. Past either, the request is shed (d.shed, so
 * the host may try a fallback): 429 model_overloaded, or 503 queue_full,
 * both with Retry-After: 1. The counts are shared by every loop (atomics)
 * and belong to the model, not to one catalog: a reload that keeps the
 * model keeps them; the limits are those of the catalog the request was
 * resolved in. */
struct kvg_gate_mcount {
    _Atomic int64_t inflight, queued;
    struct kvg_metrics_series *shed[2]; /* not owned (may be NULL): past max_inflight, max_queue */
};
struct kvg_gate_mlimit {
    struct kvg_gate_mcount *c;        /* NULL: no limit */
    uint32_t max_inflight, max_queue; /* 0: none */
    const char *model;                /* for the message; the caller's while the request lives */
};

/* What the gate knows of a request between authorize and account. Zeroed by
 * the caller; the caller embeds it. */
struct kvg_gate_req {
    struct kvg_gate_loop *gl;
    struct kvg_keys_set *keys;        /* reference while the request lives; NULL: no auth */
    const struct kvg_keys_entry *key; /* inside keys */
    int prio;                         /* KVG_ADM_* or an integer; KVG_ADM_BATCH: batch */
    uint32_t deadline_ms;             /* batch: the longest it waits in the queue */
    const char *model;                /* the request's (not owned) */
    size_t model_len;
    struct kvg_gate_quota *quota; /* only for requests a quota applies to (owned) */
    struct kvg_quota_op *qop;     /* reservation in flight */
    int quota_checked;
    struct kvg_adm_waiter *waiter; /* queued for capacity */
    uint64_t queue_deadline_ms;
    uint64_t inflight_sum; /* candidates' in-flight at the last admission (for the filter) */
    uint32_t inflight_n;   /* number of those candidates */
    kvg_gate_admit_cb cb;
    void *ud;
    struct kvg_buf fwd_body;         /* the body as forwarded, when rewritten */
    struct kvg_usage_sse sse_filter; /* usage from (and the injected chunk out of) a stream */
    int sse_filter_on;
    struct kvg_usage usage; /* what the engine reported */
    int up_status;          /* the engine's answer status; 0 before its head */
    /* A PD request: the prompt and cached tokens its prefill leg reported
     * (-1 unset; both only when pd_set). The decode's usage counts the KV it
     * pulled as cached (vllm#44607): the prefill's numbers are the truth. */
    int pd_set;
    int64_t pd_prompt, pd_cached;
    int no_tokens;             /* kvg_gate_request's: nothing charged, no usage read */
    uint32_t capped;           /* the output limit the gate set (output_cap), 0 none */
    struct kvg_gate_mlimit ml; /* its model's limits (kvg_gate_request's) */
    int ml_in, ml_queued;      /* counted in ml.c->inflight, ->queued */
};

/* The request as admission sees it. */
struct kvg_gate_request {
    const char *body;
    size_t body_len;
    const struct cJSON *json; /* the parsed body (for the include_usage rewrite) */
    int stream;
    uint32_t max_tokens;   /* 0: not given */
    int64_t prompt_tokens; /* -1: not tokenized */
    /* The endpoint's stream reports usage unasked (Responses, Messages,
     * SGLang's generate): the body is not rewritten to ask, and no event
     * is kept from the client. */
    int usage_unasked;
    /* The endpoint generates no tokens (embeddings, pooling, classify,
     * score, rerank): its input is reserved, no output; its usage charged. */
    int no_output;
    /* Nothing is computed (a stored response read, deleted or cancelled):
     * nothing is reserved or charged, and a usage in the answer (a retrieved
     * response carries the one it was charged when made) is not read. */
    int no_tokens;
    /* The body's member that limits the output ("max_tokens",
     * "max_output_tokens"; NULL: none kvgate may set): where output_cap
     * goes in a request that names no limit. */
    const char *budget_member;
    /* Its served model's limits (c NULL: none). */
    struct kvg_gate_mlimit limit;
};

/* Keys and priority: 0 to go on, 1 when the request is denied (deny
 * filled): 401 without a valid key, 403 for a model the key may not use or a
 * priority above the key's max_priority, 400 for a priority that is none. note (may be
 * NULL): the head check's digest of the same header, reused. authorization and
 * priority are the headers' values ({NULL, 0} when absent); model stays the caller's while gr
 * lives. */
int kvg_gate_authorize(struct kvg_gate_loop *gl, struct kvg_gate_req *gr,
                       struct kvg_str authorization, struct kvg_http_note *note,
                       struct kvg_str priority, const char *model, size_t model_len,
                       struct kvg_gate_deny *deny);
/* The traffic class, after kvg_gate_authorize: interactive (the default)
 * or batch, from the key's class or the header x-kvgate-class, and a batch
 * request's deadline from the key's, the header x-kvgate-deadline (seconds,
 * or s/m/h) or the gateway's default (adm.batch_deadline_ms). A request may
 * lower its class and shorten its deadline, never raise its class past its
 * key's max_class nor lengthen the deadline past its key's (403). A batch
 * request waits in the queue until its deadline, counted from now; past it,
 * 429 batch_deadline_exceeded. 0 to go on, 1 denied (400 for a value that
 * is none). cls and deadline are the headers' values ({NULL, 0} absent). */
int kvg_gate_classify(struct kvg_gate_req *gr, struct kvg_str cls, struct kvg_str deadline,
                      struct kvg_gate_deny *deny);
/* Quota reservation, then priority admission; cb says the outcome. */
void kvg_gate_admit(struct kvg_gate_req *gr, const struct kvg_gate_request *rq,
                    kvg_gate_admit_cb cb, void *ud);
/* Filter for the pool: may this request's priority go to w now? ud is gr. */
int kvg_gate_worker_filter(void *ud, struct kvg_worker *w);
/* Rate-limit headers for the answer (0 when no quota applies). */
size_t kvg_gate_quota_headers(struct kvg_gate_req *gr, struct kvg_http_header *out, size_t max,
                              struct kvg_quota_headers *store);
/* The body to forward: the rewritten one, or NULL for the client's own. */
const struct kvg_buf *kvg_gate_forward_body(const struct kvg_gate_req *gr);
/* 1 when a stream's bytes go through kvg_gate_usage_feed. */
int kvg_gate_filters_stream(const struct kvg_gate_req *gr);
/* Feeds engine bytes of a stream through the usage filter into out. */
int kvg_gate_usage_feed(struct kvg_gate_req *gr, const char *p, size_t n, struct kvg_buf *out);
/* The stream's events that carried tokens so far (the usage filter's
 * count; 0 when the stream is not filtered): the proxy's token clock. */
uint64_t kvg_gate_token_events(const struct kvg_gate_req *gr);
/* The stream ended: what the filter still holds goes to out. */
void kvg_gate_usage_end(struct kvg_gate_req *gr, struct kvg_buf *out);
/* The prefill leg of a PD request answered with this usage: its prompt
 * and cached tokens replace the decode's in the cost; output tokens stay
 * the decode's. */
void kvg_gate_usage_prefill(struct kvg_gate_req *gr, int64_t prompt_tokens, int64_t cached_tokens);
/* A whole answer: its usage (read from every answer that computed
 * something: the token metrics and the access log need it too). */
void kvg_gate_usage_json(struct kvg_gate_req *gr, const char *body, size_t len);
/* The usage the gate read so far (a stream's filter, or a whole answer a
 * quota counts): NULL when it read none. */
const struct kvg_usage *kvg_gate_usage_seen(const struct kvg_gate_req *gr);
/* The usage the request ends with, before kvg_gate_account: the engine's
 * (u->found 0 when it said none), a PD request's prompt and cached tokens
 * from its prefill leg. Returns the completion tokens a stream relayed (0
 * for a whole answer or an unfiltered stream). */
uint64_t kvg_gate_usage_final(const struct kvg_gate_req *gr, struct kvg_usage *u);
/* The output limit the gate gave a request that named none (output_cap),
 * 0 when it gave none: a body sent in another form (translated) carries
 * it too. */
uint32_t kvg_gate_output_cap(const struct kvg_gate_req *gr);
/* The status of the engine's answer that is relayed (not one retried). */
void kvg_gate_upstream_status(struct kvg_gate_req *gr, int status);
/* The request ends: cancel what is pending, reconcile the quota with the
 * usage seen (answered: some engine bytes came back), give the queue slot
 * back (routed: the request was sent to a worker), drop the key set. The
 * cost charged: the engine's usage, with completion tokens at least those
 * relayed in a stream; a stream without usage (cut before its last chunk):
 * the prompt and the tokens relayed; an engine error without usage: 0; a
 * 2xx answer without usage: the reservation. */
void kvg_gate_account(struct kvg_gate_req *gr, int answered, int routed);

#endif
