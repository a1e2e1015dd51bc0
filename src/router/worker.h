/* A worker (one engine endpoint) as the router sees it, and the pool of them.
 *
 * Workers are shared by every loop thread: counters are atomics, the list is
 * behind a read-write lock that requests hold only while choosing. A worker
 * is reference-counted so that a request in flight keeps its worker alive
 * after the worker left the pool (kvg_worker_unref frees it).
 *
 * Nothing here touches the network: the offline benchmark builds workers and
 * runs the very same policies on them in virtual time. */
#ifndef KVG_ROUTER_WORKER_H
#define KVG_ROUTER_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "net/http_client.h"
#include "router/model_list.h"

#define KVG_WORKER_LORA_SENT 8

enum kvg_cb_state { KVG_CB_CLOSED = 0, KVG_CB_OPEN = 1, KVG_CB_HALF_OPEN = 2 };

struct kvg_worker;

/* Engine-reported load, from its /metrics; a value < 0 is unknown. A
 * sample older than the pool's staleness limit counts as unknown too: stale
 * is never idle. */
struct kvg_engine_load {
    double waiting;
    double running;
    double kv_usage;     /* 0..1 */
    uint64_t at_ms;      /* monotonic time of the sample; 0 = never */
    uint32_t block_size; /* engine's KV block size, 0 unknown */
    uint64_t kv_blocks;  /* engine's KV capacity in blocks, 0 unknown */
    int flavor;          /* enum kvg_metrics_flavor */
    /* This router's in_flight when the sample was stored: what it changed
     * since is known at once, the others' only at the next sample. */
    uint32_t inflight_at;
    /* Its peer_picks when the sample was stored: the peers' picks heard
     * since are the ones the sample may not hold yet. */
    uint32_t peer_at;
};

/* The outcome of a worker's last /metrics scrape (scrape.c). */
enum kvg_scrape_state {
    KVG_SCRAPE_NEVER = 0,   /* not scraped yet (or scrapes are off) */
    KVG_SCRAPE_OK,          /* parsed, with at least one load signal */
    KVG_SCRAPE_NO_SIGNALS,  /* parsed, but none of the load metrics kvgate knows */
    KVG_SCRAPE_UNREACHABLE, /* connect, reset or timeout */
    KVG_SCRAPE_HTTP_ERROR,  /* answered, not 200 */
    KVG_SCRAPE_BAD_BODY,    /* 200, but not Prometheus text (or over the size cap) */
};
/* "never", "ok", "no_signals", "unreachable", "http_error", "bad_body". */
const char *kvg_worker_scrape_state_name(int state);

/* What a worker does in a serving mode (docs/design.md). A pick whose context
 * names roles (kvg_route_ctx.roles, the PD legs) only sees those. */
enum kvg_worker_role {
    KVG_ROLE_REGULAR = 0,
    KVG_ROLE_PREFILL,
    KVG_ROLE_DECODE,
    KVG_ROLE_ENCODE,
};
/* "regular", "prefill", "decode", "encode". */
const char *kvg_worker_role_name(int role);

/* The load sample if fresh (at most max_age_ms old), else all unknown. */
struct kvg_engine_load kvg_worker_load(struct kvg_worker *w, uint64_t now_ms, uint64_t max_age_ms);

struct kvg_worker {
    char url[512];         /* as configured; "URL@r" names data-parallel rank r behind URL */
    uint64_t url_hash;     /* FNV-1a 64 of url (base/hash.h's seed): how peers and stored
                            * responses name the worker */
    int dp_rank;           /* r of "URL@r", -1 for a plain URL (the engine balances its ranks) */
    char kv_endpoint[256]; /* ZMQ endpoint of its KV events, "" if none */
    char replay_endpoint[256]; /* its replay ROUTER, "" if none */
    struct kvg_http_target target;
    int slot; /* small integer id, stable while in the pool (KV index key) */

    /* Models served, from the engine's /v1/models (or configured). */
    pthread_mutex_t mu;           /* guards models, load and scrape_* */
    struct kvg_model_list models; /* owned */
    /* Entries of its /v1/models over the list's caps (model_list.h): each
     * distinct list's are counted once and logged once. */
    _Atomic uint64_t models_dropped;
    uint64_t models_drop_hash;     /* the last list's dropped ids (under mu); 0 none */
    _Atomic int models_cut_logged; /* its /v1/models went past the read's cap (router/health.c) */
    _Atomic int bootstrap_port;    /* an SGLang prefill's bootstrap port, 0 none */
    /* 1 << enum kvg_api_kind (api/api.h) of the endpoints it answered "no
     * such path": the proxy sends those requests to it as chat. */
    _Atomic unsigned apis_missing;
    char labels[256]; /* locality, "node=..,rack=..,zone=.." (under the pool's lock) */
    /* The model a discovered pod's label names (--model-label: a models:
     * entry's name or alias), "" none (under the pool's lock). */
    char model_label[256];
    /* Its host's: its /v1/models lists models, none of them the one its
     * models: entry (or label) names; set and logged once per change. */
    _Atomic int model_unconfirmed;
    char api_key[256]; /* the engine's own API key ("" none), sent on every call to it */
    struct kvg_engine_load load;
    /* LoRA adapters the engine has active (vLLM's vllm:lora_requests_info:
     * running and waiting, comma-separated), from the last scrape. */
    char lora_active[512];
    int lora_max;        /* its max_lora, 0 unknown */
    uint64_t lora_at_ms; /* when read; 0 = never */
    /* Adapters kvgate itself sent here lately (hash, time): an adapter a
     * request was just routed to is loaded there, whatever the metrics say yet. */
    uint64_t lora_sent[KVG_WORKER_LORA_SENT];
    uint64_t lora_sent_ms[KVG_WORKER_LORA_SENT];
    int scrape_state;               /* enum kvg_scrape_state, written by the scraper */
    unsigned scrape_known;          /* signals the last good sample had: KVG_METRICS_HAS_* */
    char scrape_error[128];         /* what the last failed scrape said, "" if none */
    _Atomic uint64_t scrape_errors; /* failed scrapes (unreachable, http_error, bad_body) */
    /* The scraper's loop only: a scrape in flight, since when, and whether
     * its being stuck was logged. */
    int scrape_busy, scrape_stuck_logged;
    uint64_t scrape_started_ms;

    _Atomic int role;        /* enum kvg_worker_role; set by whoever added the worker */
    _Atomic int member_rank; /* a discovered pod's index in its group (--dp-aware), else -1 */
    _Atomic int healthy;
    _Atomic int removed;
    /* Scale-down (the autoscaler): a draining worker takes no new request,
     * its requests in flight finish. */
    _Atomic int draining;
    /* Started and registered by the host's autoscaler (serve's local
     * actuator), which removes it itself: a reload's worker list
     * (kvg_pool_set) leaves it in the pool. */
    _Atomic int scaled;
    /* Slow start: the share of its candidacies a worker takes, in 1/1000
     * (1000, the default: all). A newly ready replica is ramped up from
     * below 1000 while its cache warms; it still takes every request when
     * no full-share worker is a candidate. */
    _Atomic uint32_t share_permille;
    _Atomic uint32_t in_flight; /* router-side: +1 at dispatch, -1 at every end */
    /* Other replicas' picks of it heard through the exchange (router/exchange.h),
     * counted up only: load.peer_at marks those before the last sample. */
    _Atomic uint32_t peer_picks;
    /* The other replicas' in-flight counts of it, summed over those heard
     * within the exchange's ttl (router/exchange.h, kvg_exchange_peers);
     * peer_view is 1 while at least one is: the load is then this router's
     * count plus theirs (kvg_policy_shared_load). */
    _Atomic uint32_t peer_in_flight;
    _Atomic int peer_view;
    _Atomic uint64_t processed;
    _Atomic uint64_t cached_blocks; /* prefix blocks routed to where they were cached */
    _Atomic uint64_t active_prefill_tokens;
    _Atomic uint64_t active_decode_blocks;
    _Atomic uint64_t pd_prefill_requests; /* PD legs sent here (kvgate_pd_requests_total) */
    _Atomic uint64_t pd_decode_requests;
    _Atomic uint64_t pd_encode_requests; /* EPD encode legs sent here */
    _Atomic uint64_t ok_requests;        /* requests it answered 2xx (pool release, KVG_OUT_OK) */
    _Atomic uint64_t no_store_answers;   /* ... whose usage showed < 1 uncached block */
    _Atomic uint64_t usage_checks;       /* answers whose usage.prompt_tokens kvgate compared */
    _Atomic uint64_t usage_mismatches;   /* ... and found different from its own count */

    /* Routing mode (router/mode.h), guarded by mu. */
    struct kvg_worker_mode {
        int mode;          /* enum kvg_route_mode; -1 before the first evaluation */
        char reason[192];  /* why, for /workers, /debug/route and the log */
        uint64_t loss;     /* the subscriber's loss counters' sum when last seen */
        uint64_t loss_ms;  /* when that sum last grew (0: never) */
        uint64_t win_c[2]; /* usage-check window: counters at its two last marks */
        uint64_t win_m[2];
    } rmode;

    /* Circuit breaker (see circuit.c). */
    _Atomic int cb_state;
    _Atomic uint32_t cb_fails, cb_successes;
    _Atomic uint64_t cb_opened_ms;
    _Atomic uint64_t cb_answers; /* recent answers << 32 | error answers (circuit.h) */

    /* Health checking state, touched by the health checker only. */
    uint32_t hc_fails, hc_successes;
    int hc_checked;
    int hc_ever_healthy;
    int hc_busy;     /* HC_* bits (health.c): a check, a /v1/models call in flight */
    int hc_last_err; /* the last failed check's error (0: it answered), for the log */

    _Atomic int refs;
};

/* Creates a worker for url (resolves it). "URL@r" (r a decimal rank, as
 * sglang's router and vLLM's external data parallelism name them) is the
 * logical worker of data-parallel rank r: requests go to URL with vLLM's
 * X-data-parallel-rank header, its KV events come from the rank's own
 * publisher (kvg_worker_rank_endpoint). *out has one reference. */
int kvg_worker_new(const char *url, struct kvg_worker **out);
/* The same with url's target already resolved (t: its URL part's, as
 * kvg_resolve_url gives it; copied): no name is looked up. NULL t resolves. */
int kvg_worker_new_at(const char *url, const struct kvg_http_target *t, struct kvg_worker **out);
/* The length of url without its "@r" rank: the part a target is made of. */
size_t kvg_worker_url_base(const char *url);
void kvg_worker_ref(struct kvg_worker *w);
void kvg_worker_unref(struct kvg_worker *w);
/* The KV-event endpoint of data-parallel rank `rank` given the engine's
 * configured one, as vLLM derives it: a tcp port (or the replay port) plus
 * the rank; inproc://x becomes inproc://x_dp<rank>. rank < 1 copies it.
 * -EINVAL when the endpoint has no port to offset or the result overflows. */
int kvg_worker_rank_endpoint(const char *endpoint, int rank, char *out, size_t cap);
/* True if the worker lists `model` (or lists nothing yet / model is empty). */
int kvg_worker_serves(struct kvg_worker *w, const char *model, size_t len);
/* 1 when w's /v1/models names `model` (an id of its list; an empty or
 * unknown list names nothing): a name that is a known model, not only
 * what a client sent. */
int kvg_worker_lists(struct kvg_worker *w, const char *model, size_t len);
/* Sets the key kvgate sends the engine (NULL or "": none). Any thread. */
void kvg_worker_set_api_key(struct kvg_worker *w, const char *key);
/* "Authorization: Bearer <key>" for a call to w into *h, its value in
 * buf[cap]: 1 when w has a key, 0 when not (nothing written). */
int kvg_worker_auth_header(struct kvg_worker *w, char *buf, size_t cap, struct kvg_http_header *h);
/* The context length w reported for `model` in its /v1/models (max_model_len),
 * or 0 when it did not say. */
uint32_t kvg_worker_max_model_len(struct kvg_worker *w, const char *model, size_t len);
/* Sets w's models from the `data` array of its /v1/models answer (a cJSON
 * array, borrowed; anything else, or no memory, leaves them as they were):
 * ids, each one's max_model_len, and whether it is a LoRA adapter (a
 * `parent`). Entries over the list's caps are logged and counted
 * (models_dropped). */
struct cJSON;
void kvg_worker_set_models(struct kvg_worker *w, const struct cJSON *data);
/* 1 when w lists `model` in its /v1/models with a parent (a LoRA adapter). */
int kvg_worker_model_is_adapter(struct kvg_worker *w, const char *model, size_t len);

/* Whether adapter `name` is loaded on w: 1 when its last fresh
 * vllm:lora_requests_info (at most max_age_ms old) lists it running or
 * waiting, or kvgate routed a request for it there within max_age_ms; else 0.
 * *nactive (nullable) gets how many adapters the metrics list active, and
 * *max_lora (nullable) the engine's adapter slots (0 unknown). */
int kvg_worker_lora_loaded(struct kvg_worker *w, const char *name, size_t len, uint64_t now_ms,
                           uint64_t max_age_ms, int *nactive, int *max_lora);
/* Records that a request for adapter `name` was routed to w at now_ms. */
void kvg_worker_lora_sent(struct kvg_worker *w, const char *name, size_t len, uint64_t now_ms);

#endif
