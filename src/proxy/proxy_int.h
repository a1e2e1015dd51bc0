/* One proxied request's state (proxy.c). Not a public face. */
#ifndef KVG_PROXY_PROXY_INT_H
#define KVG_PROXY_PROXY_INT_H

#include "gateway/gate.h"
#include "proxy/proxy.h"
#include "proxy/route_input.h"
#include "trace/trace.h"

#define MAX_TRIED 16
#define MAX_NONSTREAM_BODY (64u * 1024 * 1024)
#define MAX_FWD_HEADERS 64

/* One model's token and latency series (obs.c): pointers into the
 * registry, which keeps them (they are never removed). */
struct kvg__proxy_mseries {
    struct kvg_metrics_series *tokens[3], *ttft, *itl;
    struct kvg_metrics_series *requests[4]; /* by status class: 2xx, 4xx, 5xx, other */
    struct kvg_metrics_series *slo[KVG_PROXY_SLO_RESULTS]; /* kvg_proxy_slo_result()'s order */
};
/* tracing.c: a request's trace context and the times of its phases (0:
 * not reached), set by TR_MARK where each phase starts and ends. */
struct proxy_leg {
    uint8_t id[8];
    uint64_t t0;
    const char *name; /* "upstream", "decode", "prefill"; NULL: no leg open */
};
struct proxy_trace {
    struct kvg_trace_ctx ctx;
    int on; /* sampled: spans are built */
    uint64_t parse0, parse1, tok0, tok1, auth0, auth1, admit0, admit1, route0;
    struct proxy_leg legs[2];          /* 0: the answer's leg (upstream, decode), 1: the prefill */
    char tp[KVG_TRACE_PARENT_LEN + 1]; /* traceparent for the next leg's headers ("" none) */
};
#define TR_MARK(pr, field)                                                                         \
    do {                                                                                           \
        if ((pr)->tr.on) (pr)->tr.field = kvg_now_ns();                                            \
    } while (0)

struct proxy_req {
    struct kvg_proxy_loop *pl;
    struct kvg_http_req *req;      /* NULL once answered or aborted */
    struct kvg_rinput ri;          /* parsed request, routing text, token ids */
    struct kvg_proxy_wq_item work; /* a big request's parse, tokenizing or pick off the loop */
    int working;                   /* work queued: pr must outlive it */
    int offloop;                   /* a big body: its CPU work runs on the work threads */
    struct kvg_buf rbody;          /* offloop: the body, taken from req (an abort frees req) */
    struct kvg_buf hdrs;           /* offloop: the request headers copied for the pick */
    struct kvg_rng rng;            /* offloop: the pick's (the loop's is the loop thread's) */
    int parse_rc, pick_rc, pick_known;
    char parse_msg[256];
    char request_id[80];
    struct kvg_pick pick; /* current pick (pick.w holds a reference) */
    struct kvg_worker *tried[MAX_TRIED];
    size_t ntried;
    struct kvg_http_call *call;
    uv_timer_t retry_timer;
    uint32_t attempts;
    uint32_t connect_fails; /* attempts that could not connect to their worker */
    int up_status;          /* upstream status, 0 before its head */
    int relayed;            /* head sent to the client */
    int sse;                /* upstream answers text/event-stream */
    char content_type[128];
    struct kvg_buf body; /* non-stream answer; a relayed stream's filtered bytes */
    uint64_t t0_ns, ttfb_ns;
    uint64_t first_ns, last_ns; /* the engine's first and last body bytes */
    uint64_t bytes_up;
    char worker_url[512];
    const char *path;                  /* static string: the endpoint */
    const struct kvg_api_endpoint *ep; /* static; NULL for a request to no endpoint */
    int route;                         /* ep's kind, or KVG_PROXY_ROUTE_NONE */
    char obj_id[128];                  /* the path's {id} ("" none) */
    const char *method;                /* static: llhttp's name of the method */
    char path_buf[200];                /* a request to no endpoint: its path, cut */
    char served_as[48];                /* how it was served when not as asked ("" as asked) */
    uint64_t stored_worker;            /* hash of the worker's URL it must go to (0 any) */
    int stored_learn;                  /* learning the answer's response id */
    struct kvg_buf learn;              /* the answer's first bytes, until the id is in them */
    struct kvg__stored_lookup *lookup; /* the workers asked for an unknown stored id (owned) */
    int xlate;                         /* this attempt is the chat request, its answer translated */
    int probe;                         /* a 404 read whole: the worker may lack the endpoint */
    int xcapped;                       /* the gate's output cap set in ri.chat_body */
    /* The served model (px->catalog): its index, its routing state, the
     * name the client asked for when that was another (an alias, a split),
     * and then the client's body with the served name (model_body). */
    struct kvg_catalog *cat; /* the catalog it was resolved in: a reference, dropped at its end */
    int cmodel;
    const struct kvg_proxy_model *pm;
    char asked[256];
    size_t asked_len;
    struct kvg_buf model_body;
    /* An upload's model field: where its value lies in the client's body
     * (multipart.c), so that a rename replaces exactly those bytes. */
    size_t mp_model_off, mp_model_len;
    /* Fallbacks taken (models.c): how many (0: served as resolved), the
     * model resolved first, the one served now, the next of the first's
     * fallbacks to consider, why and from which model the last one was
     * taken (static strings, catalog names), the attempts before it (those
     * of an earlier gate admission), and whether an engine shed this model's
     * request (429/503 before any byte). */
    int fallen, primary, fb_target;
    size_t fb_next;
    const char *fb_reason, *fb_from;
    uint32_t attempts0;
    int shed_seen;
    struct kvg_api_xctx xctx;     /* what a translated answer names */
    struct kvg_api_sse_xlate *xl; /* a translated stream's translator (owned) */
    struct kvg_buf xout;          /* scratch: a translated stream's bytes for the client */
    struct kvg_gate_req gate;     /* the gateway's view: key, priority, quota, usage */
    struct kvg_pd_req pdr;        /* its PD legs, when its model has a PD mode (kvg__proxy_pd) */
    /* pd_legs.c: split into PD legs (the decision made), and when its
     * prefill leg ended (kvg_now_ns; t0_ns when it had none on a prefill
     * worker; 0 not ended), for the autoscaler's misses by leg. */
    int pd_split;
    uint64_t prefill_end_ns;
    /* obs.c: the series of the model that answered (set when the engine's
     * head came), the token clock (token-carrying events seen, the first
     * and last one's arrival), the answer's error code ("" none; from the
     * engine's body when engine_error) and the routing mode of the pick. */
    struct kvg__proxy_mseries ms;
    int ms_set;
    uint64_t tok_events, tok_first_ns, tok_last_ns;
    char error_code[64];
    int engine_error;
    const char *routing_mode;    /* static; NULL before a pick */
    struct proxy_req *next_free; /* on the loop's free list */
    /* Its spans, when the proxy has px->tracer (tracing.c). */
    struct proxy_trace tr;
};

/* Copies req's headers into b (initialised here; the caller frees it):
 * (u32 name length, name, u32 value length, value) one after the other.
 * 0 or -ENOMEM. */
int kvg__proxy_snap_headers(struct kvg_buf *b, const struct kvg_http_req *req);
/* kvg_http_req_header over such a copy (hctx is the kvg_buf): the first
 * header of that name, case-insensitive; empty when there is none. */
struct kvg_str kvg__proxy_snap_header(const void *hctx, const char *name);

/* wire.c: headers, request ids, metrics and the access log. */
int kvg__proxy_is_hop(struct kvg_str name);
size_t kvg__proxy_forward_headers(struct proxy_req *pr, struct kvg_http_header *fwd, size_t cap);
void kvg__proxy_request_id(struct proxy_req *pr, struct kvg_http_req *req);
/* An answer into the request series: its route, status, error code (NULL
 * or "": none; a static string, or "engine"), duration and time to first
 * byte (< 0: none). */
void kvg__proxy_metrics_request(const struct kvg_proxy_metrics *m, int r, int status,
                                const char *error_code, double duration_s, double ttfb_s);
/* The request's access-log line (before the gate's accounting: the key
 * and the usage are still held). */
void kvg__proxy_access_log(struct proxy_req *pr, int status);

/* obs.c: what is observed of a request for the metrics and the log. */
/* The engine's head came from w: the series of the model it answers for
 * (the catalog's served model, or a name w lists; else "unknown"). */
void kvg__proxy_obs_model(struct proxy_req *pr, struct kvg_worker *w);
/* Frees the loop's series cache (kvg_proxy_loop_free). */
void kvg__proxy_mcache_free(struct kvg_proxy_loop *pl);
/* After stream bytes went through the usage filter: token-carrying events
 * that completed since the last call are clocked at pr->last_ns (their
 * read's arrival); the first is the request's first token (the TTFT of
 * the histogram, the access log and the host's observer, told at once as
 * KVG_PROXY_OBS_FIRST), each later
 * one observes an inter-token gap (k events read at once share the wait
 * since the previous one: k gaps of wait / k). */
void kvg__proxy_obs_tokens(struct proxy_req *pr);
/* kvgate answered an error with this code (a static string; NULL: none). */
void kvg__proxy_obs_error(struct proxy_req *pr, const char *code, const char *type);
/* The engine answered status with this whole body: its error's code, for
 * the access log (engine_error set for the series). */
void kvg__proxy_obs_engine_error(struct proxy_req *pr, int status, const char *body, size_t len);
/* The request's usage and stream timing into the token and latency series
 * and the host's observer (before the gate's accounting). */
void kvg__proxy_observe_end(struct proxy_req *pr, int status);
/* The answer counted by its model and status class (the model resolved as
 * kvg__proxy_obs_model names it, when no worker's answer did). */
void kvg__proxy_obs_answered(struct proxy_req *pr, int status);
/* The error code of an error body into out (cap bytes, cut): in its
 * `error` object, or the body itself when `error` is none: a string code,
 * else its type (not Anthropic's envelope "error"), else a numeric code.
 * 1 found, 0 none (out ""). */
int kvg__proxy_error_code(const char *body, size_t len, char *out, size_t cap);

/* tracing.c: the request's context from the client's traceparent (on
 * arrival); an attempt begins (the previous leg's span ends); the pick is
 * made and its leg goes out (the route span, a new leg id in tr.tp);
 * the prefill leg goes out and ends (status < 0: it was never sent); the
 * request ends (the phases' spans and the server span). Nothing without
 * px->tracer. */
void kvg__proxy_trace_begin(struct proxy_req *pr);
void kvg__proxy_trace_attempt(struct proxy_req *pr);
void kvg__proxy_trace_leg(struct proxy_req *pr);
void kvg__proxy_trace_prefill(struct proxy_req *pr);
void kvg__proxy_trace_prefill_end(struct proxy_req *pr, int status);
void kvg__proxy_trace_end(struct proxy_req *pr, int status);

/* proxy.c: a request's life, shared with pd_legs.c and stored.c. */
/* The gateway's quota and admission, then the first attempt. */
void kvg__proxy_admit(struct proxy_req *pr);
/* Whether the catalog lets w serve pr's model (a worker listed under
 * another model's entry does not). */
int kvg__proxy_catalog_has(const struct proxy_req *pr, const struct kvg_worker *w);
/* The PD router of pr's served model (its model's serving mode; before
 * its model is known, the proxy's); NULL: one leg. */
struct kvg_pd *kvg__proxy_pd(const struct proxy_req *pr);
const struct kvg_buf *kvg__proxy_req_body(const struct proxy_req *pr); /* the client's */
const struct kvg_buf *kvg__proxy_forward_body(struct proxy_req *pr);   /* what the engine gets */
/* The next attempt: a pick (or the PD decision first) and the upstream call. */
void kvg__proxy_attempt(struct proxy_req *pr);
/* Gives the pick back to the pool with this outcome (none held: nothing). */
void kvg__proxy_release_worker(struct proxy_req *pr, enum kvg_outcome out);
/* Ends pr's life: accounting, access log, metrics; pr is freed after. */
void kvg__proxy_finish(struct proxy_req *pr, int status);
/* An OpenAI-style error answer (extra headers first), then finish. */
void kvg__proxy_error(struct proxy_req *pr, int status, const char *type, const char *code,
                      const char *msg, const char *param, const struct kvg_http_header *extra,
                      size_t nextra);
void kvg__proxy_client_error(struct proxy_req *pr, int status, const char *code, const char *msg);
/* The gateway's refusal d (admit.c), in the endpoint's error shape. */
void kvg__proxy_answer_deny(struct proxy_req *pr, const struct kvg_gate_deny *d);
/* After the stream started: an SSE error event and [DONE] (the caller finishes). */
void kvg__proxy_sse_error_end(struct proxy_req *pr, const char *msg);

/* models.c: pr's served model from its name (aliases, a split by its
 * session key) and its routing state; 0, or KVG_ENOTFOUND for a name no
 * model answers to (a 404). Thread-safe. And, on the loop, the body
 * renamed for the served model when the client asked by another name. */
int kvg__proxy_model_resolve(struct proxy_req *pr);
int kvg__proxy_model_rename(struct proxy_req *pr);
/* The name of pr's served model of models: (the catalog's, held by pr),
 * "" when none: the single-model flags', or not resolved (yet). */
const char *kvg__proxy_model_served(const struct proxy_req *pr);
/* Fallbacks (docs/models.md): whether pr's model has one left to try
 * (thread-safe); whether its prompt (tokenized) is past its model's
 * context; whether its prompt is tokenized for that check. */
int kvg__proxy_model_can_fall(const struct proxy_req *pr);
/* The model label of pr's series kept outside proxy/obs.c (its PD
 * series): the catalog's served model; with the single-model flags the
 * name asked when a worker of the pool lists it (as kvgate_model_requests_total
 * names it), else "unknown". The result may be buf (cap bytes). */
const char *kvg__proxy_model_label(struct proxy_req *pr, char *buf, size_t cap);
int kvg__proxy_model_too_long(const struct proxy_req *pr);
int kvg__proxy_model_checks_context(const struct proxy_req *pr);
/* On the loop, before anything reached the client and with no pick held:
 * the next fallback (why: "no_healthy_worker", "gateway_shed",
 * "engine_shed", "context_length") chosen, counted, and the request
 * started again for it from its parse (proxy.c). 1: it goes on there; 0:
 * none is left (the caller answers as it would have). */
int kvg__proxy_fall_back(struct proxy_req *pr, const char *why);
/* models.c's half of it: the next fallback recorded in pr, counted; 0,
 * or -1 when none is left. */
int kvg__proxy_model_next_fallback(struct proxy_req *pr, const char *why);

/* local.c: whether kvgate answers pr itself (its endpoint's routing is
 * LOCAL and the tokenizer is the model's), and the answer (pr tokenized). */
int kvg__proxy_local_ok(const struct proxy_req *pr);
void kvg__proxy_local_answer(struct proxy_req *pr);

/* stored.c: the objects an engine keeps in its memory (vLLM's stored
 * responses), and which worker holds each. Before admission: a request
 * naming one (GET/DELETE /v1/responses/{id}, previous_response_id) is
 * bound to that worker (pr->stored_worker): 0, admit it now. One this
 * process does not know (another replica's) is asked of the model's
 * workers (GET /v1/responses/{id}): 1, and the request goes on to
 * kvg__proxy_admit when one holds it, else is answered 404 (or 503 when
 * the lookups' budget is spent); 1 also when answered at once. */
int kvg__proxy_stored_route(struct proxy_req *pr);
/* The client left: a lookup's calls cancelled (none: nothing). */
void kvg__proxy_stored_cancel(struct proxy_req *pr);
/* An answer's bytes as they come (2xx of a Responses request): the id of
 * the response the worker created is learnt from them. */
void kvg__proxy_stored_learn(struct proxy_req *pr, const char *p, size_t n);
/* The request ended with this status: a DELETE that succeeded forgets the id. */
void kvg__proxy_stored_end(struct proxy_req *pr, int status);

/* translate.c: Responses and Messages to engines that lack them, as chat
 * completions. wanted: this request to w goes translated. probe: an
 * answer of this status is read whole (a 404 of a request that could be
 * translated). missing: the 404 read says "no such path" (w is marked). */
int kvg__proxy_xlate_wanted(const struct proxy_req *pr, const struct kvg_worker *w);
int kvg__proxy_xlate_probe(const struct proxy_req *pr, int status);
int kvg__proxy_xlate_missing(struct proxy_req *pr, struct kvg_worker *w);
/* The attempt goes translated: ids made, the stream translator set up. */
int kvg__proxy_xlate_begin(struct proxy_req *pr);
/* Stream bytes of the engine's chat answer in, the client's out; end:
 * the closing events (cut: the stream broke). */
int kvg__proxy_xlate_feed(struct proxy_req *pr, const char *p, size_t n, struct kvg_buf *out);
int kvg__proxy_xlate_end(struct proxy_req *pr, int cut, struct kvg_buf *out);
/* A whole chat answer (pr->body) as the API's answer, into out. */
int kvg__proxy_xlate_answer(struct proxy_req *pr, int status, struct kvg_buf *out);
void kvg__proxy_xlate_free(struct proxy_req *pr);

/* multipart.c: an upload's route input (its model form field). */
int kvg__proxy_multipart_input(struct proxy_req *pr, const struct kvg_buf *body);

/* relay.c: the upstream call's callbacks (the answer relayed), and what
 * the request's dispatch shares with them: kvgate's own shortage (no
 * engine's fault: 503), a retry after backoff (0: scheduled), the answer
 * when no attempt is left, the client's socket drained. */
extern const struct kvg_http_call_cbs kvg__proxy_up_cbs;
int kvg__proxy_local_error(int err);
void kvg__proxy_local_failure(struct proxy_req *pr, int err);
int kvg__proxy_schedule_retry(struct proxy_req *pr);
void kvg__proxy_upstream_failed(struct proxy_req *pr, const char *msg);
void kvg__proxy_on_drain(struct kvg_http_req *req, void *ud);

/* pd_legs.c: the PD decision and, for prefill_decode, the prefill leg (on
 * the loop: a pool pick and an HTTP call). 1 when the request went on (or
 * was answered) elsewhere, 0 when the decode pick follows now
 * (decode_only). */
int kvg__proxy_pd_start(struct proxy_req *pr, struct kvg_route_ctx *ctx);
/* Whether pr's endpoint is split into legs under the PD mode (else served
 * whole by a decode worker; said once per endpoint in the log). */
int kvg__proxy_pd_splits(const struct proxy_req *pr);

#endif
