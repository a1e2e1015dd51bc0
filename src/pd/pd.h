/* Disaggregated serving: prefill/decode pairs (vLLM's NIXL two-hop protocol).
 *
 * The proxy calls this part for the PD legs of a request; it reads the
 * router's pool (arrows proxy -> pd -> router). What it decides:
 *   - per request, prefill then decode, or decode alone (llm-d's prefix
 *     decider: few tokens left to compute -> no prefill hop);
 *   - the prefill worker (the configured policy over prefill workers) and
 *     the decode worker (kvgate's decode pick: no prefix chasing; KV blocks
 *     in use plus this request's, requests in flight, and a preference for
 *     the prefill's rack, then zone, within a load bound);
 *   - the prefill leg itself (kvg_pd_req): its body (max_tokens 1, no
 *     stream, kv_transfer_params asking for a remote decode), its deadline
 *     from dispatch, its cancellation, and the kv_transfer_params its answer
 *     hands to the decode leg.
 * The decode leg runs on the proxy's ordinary single-leg path, with the body
 * and pick context this part gives it. The lifecycle:
 *
 *   DECIDE --decode_only--------------------------> DECODE -> DONE
 *     \--prefill_decode--> PREFILL --ok (params)---> DECODE -> DONE
 *                            |  \--failed/timeout--> FAILED (decode never sent)
 *                            \--client gone--------> CANCELLED (prefill aborted)
 *   DECODE failing before its first byte is retried once on another decode
 *   while the prefill still holds the blocks (kvg_pd_decode_may_retry); when
 *   the prefill's engine restarted meanwhile (its engine id changed), the
 *   retry goes back to DECIDE and prefills again (kvg_pd_decode_recheck). */
#ifndef KVG_PD_PD_H
#define KVG_PD_PD_H

#include <pthread.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/opt.h"
#include "net/http_client.h"
#include "metrics/metrics.h"
#include "router/pool.h"

/* VLLM: the NIXL two-hop protocol (prefill first, then the decode with its
 * kv_transfer_params); SGLANG: the bootstrap protocol (both legs at once,
 * the same body with bootstrap_host/port/room). */
enum kvg_pd_mode { KVG_PD_OFF = 0, KVG_PD_VLLM, KVG_PD_SGLANG };

struct kvg_pd_config {
    enum kvg_pd_mode mode;
    uint32_t threshold_tokens; /* --pd-threshold-tokens: fewer uncached -> decode alone (512) */
    uint32_t
        prefill_timeout_ms;     /* the prefill leg, from its dispatch (--pd-prefill-timeout-secs) */
    uint32_t hold_timeout_ms;   /* the prefill engines' block hold (vLLM's 480 s) */
    double locality_load_bound; /* a nearer decode is taken unless its cost exceeds the best's
                                   by this factor (1.5) */
    char prefill_policy[64];    /* "" : the pool's --policy */
    char decode_policy[64];
    /* Early rejection (Mooncake §7.4), off unless early_rejection: */
    int early_rejection;
    double reject_kv_frac;       /* a decode has room below this share of its KV (0.95) */
    double prefill_tokens_per_s; /* to predict when a prefill finishes (8000) */
    double decode_secs; /* Mooncake's uniform decode time t_d (10 s) */ /* "" or "pd_decode":
                                                                           kvgate's decode pick */
    /* EPD (--epd-disaggregation, pd/encode.c): under VLLM, requests with
     * media go to an encode worker first; under SGLANG the prefill engines
     * call their encoders themselves (--encoder-urls) and the router only
     * keeps encode workers out of every pick. */
    int epd;
    char encode_policy[64]; /* "" : least_load */
};

void kvg_pd_config_default(struct kvg_pd_config *c);

/* The PD settings' option table (pd_opts.c, base/opt.h) over struct
 * kvg_pd_config, all but the mode: serve's top level includes it (its
 * flags' names), and kvg_pd_serving_table, a models: entry's serving:
 * section, is `mode` (aggregated, vllm-pd, sglang-pd; required) and
 * these. */
extern const struct kvg_opt kvg_pd_opt_table[];
extern const struct kvg_opt kvg_pd_serving_table[];
/* "aggregated", "vllm-pd", "sglang-pd". */
const char *kvg_pd_mode_name(enum kvg_pd_mode m);

/* ---- Pure parts (unit-tested). */

enum kvg_pd_decision { KVG_PD_PREFILL_DECODE = 0, KVG_PD_DECODE_ONLY = 1 };
/* "prefill_decode", "decode_only". */
const char *kvg_pd_decision_name(int d);

/* llm-d's prefix-based decider: the tokens the decode worker would still
 * compute (prompt minus what it has cached) against the threshold. */
enum kvg_pd_decision kvg_pd_decide(uint64_t prompt_tokens, uint64_t decode_cached_tokens,
                                   uint32_t threshold_tokens);

/* How near two workers' labels put them: 0 same node, 1 same rack, 2 same
 * zone, 3 farther or unknown. */
int kvg_pd_locality(const char *a, const char *b);

/* kvgate's decode pick as a router policy ("pd_decode"): cost = KV blocks in
 * use (active_decode_blocks, or the engine's KV usage in blocks when larger)
 * plus this request's blocks, normalised by capacity when known, plus the
 * requests in flight; the lowest cost wins, except that a candidate nearer
 * to ctx->near_labels (rack, then zone) is taken while its cost is within
 * load_bound x the best cost + 1. *out is the caller's (ops->destroy). */
int kvg_pd_decode_policy_new(double load_bound, struct kvg_policy **out);

/* Mooncake's early rejection based on prediction: each decode's KV blocks
 * when a prefill starting now would finish (prefill_s from now): its blocks
 * in use, minus the share its running requests release by then (decode
 * durations taken uniform, decode_s: a fraction prefill_s / decode_s ends),
 * plus an even share of the blocks already committed to prefills in flight,
 * plus this request's. 1 when some decode would stay within max_frac of its
 * capacity, or when a capacity is unknown (nothing to predict with). */
struct kvg_pd_decode_view {
    double used_blocks, capacity_blocks; /* capacity 0: unknown */
};
int kvg_pd_has_room(const struct kvg_pd_decode_view *v, size_t n, double req_blocks,
                    double committed_blocks, double prefill_s, double decode_s, double max_frac);

/* ---- The live part. */

/* A PD request's counters and histograms (pd/series.c), each with the
 * label model: the served model the request is (kvg_pd_input's model). */
enum kvg_pd_series_kind {
    KVG_PD_S_PAIRS,       /* kvgate_pd_decisions_total{decision="prefill_decode"} */
    KVG_PD_S_DECODE_ONLY, /* ... {decision="decode_only"} */
    KVG_PD_S_TRANSFER,    /* kvgate_pd_kv_transfer_seconds */
    KVG_PD_S_PREFILL_FAILURES,
    KVG_PD_S_DECODE_RETRIES,
    KVG_PD_S_EARLY_REJECTIONS,
    KVG_PD_S_WASTED_PREFILLS,
    KVG_PD_S_ENCODE_FAILURES,
    KVG_PD_S_ENCODE_SECONDS,
    KVG_PD_S_RESTARTS,   /* kvgate_pd_prefill_restarts_total */
    KVG_PD_S_RERUNS,     /* kvgate_pd_prefill_reruns_total */
    KVG_PD_S_AGGREGATED, /* kvgate_pd_aggregated_total (counted by the proxy) */
    /* kvgate_pd_leg_outcomes_total{leg, outcome} (counted by the proxy) */
    KVG_PD_S_PREFILL_OK,
    KVG_PD_S_PREFILL_ERROR,
    KVG_PD_S_PREFILL_GONE,
    KVG_PD_S_DECODE_OK,
    KVG_PD_S_DECODE_ERROR,
    KVG_PD_S_DECODE_GONE,
    KVG_PD_NSERIES
};
/* One model's series (kvg_pd_series_for), kept by the router until it is
 * freed. */
struct kvg_pd_series {
    struct kvg_pd_series *next;
    char model[256];
    struct kvg_metrics_series *s[KVG_PD_NSERIES];
};

struct kvg_pd {
    struct kvg_pd_config cfg;
    struct kvg_pool *pool;             /* not owned */
    struct kvg_policy *prefill_policy; /* owned; NULL: the pool's */
    struct kvg_policy *decode_policy;  /* owned */
    _Atomic uint64_t committed_blocks; /* KV of the prefills in flight, bound for a decode */
    struct kvg_pd_engines *engines;    /* owned: each prefill worker's engine id (engines.c) */
    struct kvg_policy *encode_policy;  /* owned; EPD only */
    /* The families (the registry's; NULL without one) and each model's
     * series in them (owned, under series_mu). */
    struct kvg_metrics_family *fam[KVG_PD_NSERIES];
    pthread_mutex_t series_mu;
    struct kvg_pd_series *series;
};

/* model's series in pd's families (model: a served model's name, the label
 * every PD series carries), made at its first call; NULL without a registry
 * (or out of memory, or a family at its cap: not counted). Any thread. */
struct kvg_pd_series *kvg_pd_series_for(struct kvg_pd *pd, const char *model);
/* One more in ms's series which (ms NULL: not counted). Lock-free. */
void kvg_pd_series_inc(const struct kvg_pd_series *ms, enum kvg_pd_series_kind which);

/* Builds the PD router over pool (whose workers carry roles). reg: where
 * its metrics go (NULL none). *out is the caller's: kvg_pd_free. */
int kvg_pd_new(const struct kvg_pd_config *c, const struct kvg_policy_opts *popts,
               struct kvg_pool *pool, struct kvg_metrics_registry *reg, struct kvg_pd **out,
               char *err, size_t errlen);
void kvg_pd_free(struct kvg_pd *pd);

enum kvg_pd_state {
    KVG_PD_DECIDE = 0,
    KVG_PD_PREFILL,
    KVG_PD_DECODE,
    KVG_PD_DONE,
    KVG_PD_FAILED,
    KVG_PD_CANCELLED,
    KVG_PD_ENCODE, /* EPD: the encode leg runs; the prefill is picked, not sent */
};

/* How the prefill leg ended, for the proxy's answer to the client. */
struct kvg_pd_result {
    int ok;     /* params in hand: send the decode */
    int status; /* else: the status to answer (the prefill's own 4xx, 502, 503, 504) */
    const char *code, *message;
    const char *body; /* the prefill's error body when it answered 4xx (passed through) */
    size_t body_len;
};

typedef void (*kvg_pd_prefill_cb)(void *ud, const struct kvg_pd_result *res);

/* One request's PD state, embedded in the proxy's request (zeroed). */
struct kvg_pd_req {
    enum kvg_pd_state state;
    enum kvg_pd_decision decision;
    struct kvg_pick prefill; /* while the prefill runs */
    struct kvg_http_call *call;
    struct kvg_buf answer;      /* the prefill's answer (capped) */
    struct kvg_buf decode_body; /* the client's body + the prefill's kv_transfer_params */
    struct kvg_buf decode_base; /* SGLang: the decode's body before the decode's rank */
    int status;
    char prefill_url[512];
    char prefill_labels[256];
    char engine_id[64];       /* the prefill engine holding the blocks (its remote_engine_id) */
    uint64_t prefill_done_ms; /* monotonic */
    uint64_t decode_sent_ns;
    int64_t prompt_tokens;  /* usage.prompt_tokens of the prefill, -1 unknown */
    int64_t prefill_cached; /* its prompt_tokens_details.cached_tokens (0 unsaid) */
    uint32_t decode_attempts;
    uint64_t committed; /* this request's share of pd->committed_blocks */
    int concurrent;     /* SGLang: the decode runs while the prefill does */
    kvg_pd_prefill_cb cb;
    void *ud;
    struct kvg_pd *pd;
    const char *body; /* the client's body, borrowed while the prefill runs */
    size_t body_len;
    /* EPD (pd/encode.c): the encode leg, and the prefill leg it holds back
     * (its body, headers and path copied: the caller's are gone by then). */
    struct kvg_pick encoder;
    struct kvg_http_call *ecall;
    char encoder_url[512];
    uint32_t media_items;     /* image parts in the request's messages */
    uint64_t encode_sent_ns;  /* monotonic */
    char *held_body;          /* owned: the prefill leg's body, without ec_transfer_params */
    struct kvg_buf held_hdrs; /* the prefill leg's header bytes */
    struct kvg_http_header held_h[80];
    size_t held_nh;
    char held_path[64];
    uint32_t held_connect_ms;
    struct kvg_http_client *cl; /* not owned */
    struct kvg_pd_series *ms;   /* its model's series (pd's; NULL: not counted) */
};

/* What the proxy knows of the request. */
struct kvg_pd_input {
    const char *body; /* the client's JSON (borrowed for the call) */
    size_t body_len;
    uint64_t prompt_tokens;                /* tokenized count, or an estimate */
    const char *path;                      /* "/v1/chat/completions" ... */
    const struct kvg_http_header *headers; /* to forward (x-request-id included) */
    size_t nheaders;
    uint32_t connect_timeout_ms;
    const char *model; /* the served model, its series' label (NULL: not counted) */
};

/* Decides the request (counts the decision) and, for prefill_decode, picks
 * a prefill worker (ctx: the proxy's routing context; its roles and policy
 * are set here) and sends the prefill leg; cb runs once when it ends (not
 * after kvg_pd_cancel). Returns 0 when the leg is under way or the decision
 * is decode_only (r->state DECODE, cb not called), else a negative code:
 * KVG_ENOWORKER when no prefill worker can take it, -EBUSY when early
 * rejection predicts no decode will have room (counted; nothing sent).
 * The proxy answers an early rejection by the request's priority (the
 * gateway's classes, gateway/admission.h): sheddable (priority < 0) gets
 * 429, as GIE drops a sheddable request and Mooncake's Conductor rejects;
 * standard and critical get 503 (the service is short of decode room, not
 * the client over a limit); both carry Retry-After: 1 and the code
 * decode_capacity. */
int kvg_pd_begin(struct kvg_pd *pd, struct kvg_pd_req *r, struct kvg_http_client *cl,
                 struct kvg_route_ctx *ctx, const struct kvg_pd_input *in, kvg_pd_prefill_cb cb,
                 void *ud);
/* Sets ctx up for a decode pick (roles, policy, the prefill's labels). */
void kvg_pd_decode_ctx(struct kvg_pd *pd, struct kvg_pd_req *r, struct kvg_route_ctx *ctx);
/* The body to send the decode worker: the prefill's params spliced in, or
 * NULL for the client's own (decode_only). */
const struct kvg_buf *kvg_pd_decode_body(const struct kvg_pd_req *r);
/* A decode attempt to w is being sent (counts it; starts the transfer
 * clock). Under SGLANG the shared body gets w's data-parallel rank (or
 * none) in place of the prefill's. 0, or -ENOMEM (nothing sent, nothing
 * counted). */
int kvg_pd_decode_sent(struct kvg_pd *pd, struct kvg_pd_req *r, struct kvg_worker *w);
/* Whether a URL@rank worker's rank goes in the body (SGLang's
 * data_parallel_rank, set by this part) rather than the
 * X-data-parallel-rank header (vLLM's, set by the caller). */
int kvg_pd_rank_in_body(const struct kvg_pd *pd);
/* The decode's first byte arrived: the KV transfer is over. */
void kvg_pd_decode_first_byte(struct kvg_pd *pd, struct kvg_pd_req *r);
/* The decode refused the request (429/503) after its prefill ran: the
 * prefill was wasted (counted; what early rejection avoids). */
void kvg_pd_decode_refused(struct kvg_pd *pd, struct kvg_pd_req *r);
/* May a decode that failed before its first byte go to another decode?
 * Once, while the prefill's blocks are still held. */
int kvg_pd_decode_may_retry(struct kvg_pd *pd, struct kvg_pd_req *r, uint64_t now_ms);
/* Before a decode is sent again (a retry): when the prefill's engine has
 * restarted since it ran (the worker's engine id changed, as a later
 * prefill answer showed), its blocks are gone and no decode may pull them:
 * r is set back to DECIDE (returns 1, counted, logged) so the caller runs
 * kvg_pd_begin again; else 0. */
int kvg_pd_decode_recheck(struct kvg_pd *pd, struct kvg_pd_req *r);
/* The engine id last seen from the prefill worker at url into out; 0 when
 * none was seen (then out is ""). Any thread. */
int kvg_pd_engine_id(struct kvg_pd *pd, const char *url, char *out, size_t cap);
/* The client left: the prefill leg is aborted (its engine frees the
 * request), its pick released. Idempotent; cb is not called. */
void kvg_pd_cancel(struct kvg_pd *pd, struct kvg_pd_req *r);
/* Frees what r holds (after the request ended). */
void kvg_pd_req_free(struct kvg_pd_req *r);
/* "decide", "prefill", "decode", "done", "failed", "cancelled", "encode". */
const char *kvg_pd_state_name(int s);

/* ---- EPD, the encode stage (pd/encode.c). */

/* Image parts in a chat request's messages (content parts of type
 * image_url, input_image or image_embeds, or carrying such a member): the
 * media an encoder turns into embeddings. 0 for text-only requests and for
 * anything that is not a chat body. */
uint32_t kvg_pd_media_items(const cJSON *req);

/* Reads an encoder's answer (bytes from the engine): 0 and *out (the
 * caller's: cJSON_Delete) the ec_transfer_params object when it has one with
 * a non-empty mm_hashes list of strings, *nitems their count; else an error
 * with why in err. */
int kvg_pd_ec_params_parse(const char *body, size_t len, cJSON **out, size_t *nitems, char *err,
                           size_t errlen);

/* Under VLLM EPD, for a request with media: picks an encode worker and
 * sends it the request (max_tokens 1, no stream); the prefill leg r holds
 * (picked, body built) goes out when the encoder's ec_transfer_params are
 * in, spliced into its body. 1 when the encode leg was started (r->cb
 * follows), 0 when the request needs none (text, or SGLANG), or a negative
 * code (KVG_ENOWORKER: no healthy encoder). Called by kvg_pd_begin. */
int kvg__pd_encode_begin(struct kvg_pd *pd, struct kvg_pd_req *r, struct kvg_route_ctx *ctx,
                         const struct kvg_pd_input *in, const char *prefill_body,
                         const struct kvg_http_header *h, size_t nh);
/* Sends r's prefill leg (r->prefill picked, r->pd and r->cl set). */
void kvg__pd_prefill_send(struct kvg_pd_req *r, const char *path, const struct kvg_http_header *h,
                          size_t nh, const char *body, uint32_t connect_timeout_ms);
/* The client left during the encode leg: aborts it, releases both picks. */
void kvg__pd_encode_cancel(struct kvg_pd *pd, struct kvg_pd_req *r);
/* The encode stage's policy (from kvg_pd_new). */
int kvg__pd_encode_init(struct kvg_pd *pd, const struct kvg_policy_opts *popts, char *err,
                        size_t errlen);
void kvg__pd_encode_free(struct kvg_pd *pd);
/* /debug/route: the encode stage of a request (its media items and the
 * encoder a pick would choose now) into o. */
void kvg_pd_encode_explain(struct kvg_pd *pd, const struct kvg_route_ctx *ctx, const cJSON *req,
                           cJSON *o);

#endif
