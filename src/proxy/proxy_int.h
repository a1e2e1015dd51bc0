/* One proxied request's state, shared by the proxy's files: proxy.c
 * (routing, forwarding, relaying) and admit.c (keys, quotas, priorities,
 * usage accounting). Not a public face. */
#ifndef KVG_PROXY_INT_H
#define KVG_PROXY_INT_H

#include "gateway/admission.h"
#include "gateway/gateway.h"
#include "gateway/keys.h"
#include "gateway/quota.h"
#include "gateway/usage.h"
#include "proxy/route_input.h"

#define MAX_TRIED 16
#define MAX_NONSTREAM_BODY (64u * 1024 * 1024)
#define MAX_FWD_HEADERS 64

/* Quota state (a few KB): allocated only when a key with limits is used. */
struct proxy_quota {
    struct kvg_quota_req req;
    struct kvg_quota_lease lease;
    struct kvg_quota_result res;
};

struct proxy_req {
    struct kvg_loop_ctx *lc;
    struct kvg_http_req *req;  /* NULL once answered or aborted */
    struct kvg_route_input ri; /* parsed request, routing text, token ids */
    uv_work_t work;            /* tokenizing a long prompt off the loop */
    int tokenizing;            /* work queued: pr must outlive it */
    char request_id[80];
    struct kvg_pick pick; /* current pick (pick.w holds a reference) */
    struct kvg_worker *tried[MAX_TRIED];
    size_t ntried;
    struct kvg_http_call *call;
    uv_timer_t retry_timer;
    uint32_t attempts;
    int up_status; /* upstream status, 0 before its head */
    int relayed;   /* head sent to the client */
    int sse;       /* upstream answers text/event-stream */
    char content_type[128];
    struct kvg_buf body; /* non-stream answer; a relayed stream's filtered bytes */
    uint64_t t0_ns, ttfb_ns;
    uint64_t bytes_up;
    char worker_url[512];
    const char *path; /* static string: the endpoint */
    enum kvg_gw_route route;

    /* Gateway policy (admit.c). */
    struct kvg_keys_set *keys;        /* reference while the request lives; NULL: no auth */
    const struct kvg_keys_entry *key; /* inside keys */
    int prio;                         /* KVG_ADM_* or an integer */
    struct proxy_quota *quota;        /* only for requests a quota applies to (owned) */
    struct kvg_quota_op *qop;         /* reservation in flight */
    int quota_checked;
    struct kvg_adm_waiter *waiter; /* queued for capacity */
    uint64_t queue_deadline_ms;
    struct kvg_buf fwd_body;         /* the body as forwarded, when rewritten */
    struct kvg_usage_sse sse_filter; /* usage from (and the injected chunk out of) a stream */
    int sse_filter_on;
    struct kvg_usage usage;      /* what the engine reported */
    struct proxy_req *next_free; /* on the loop's free list */
};

/* proxy.c */
void kvg_proxy_attempt(struct proxy_req *pr);
/* Answers with an OpenAI-style error and ends the request. */
void kvg_proxy_error(struct proxy_req *pr, int status, const char *type, const char *code,
                     const char *msg, const struct kvg_http_header *extra, size_t nextra);

/* admit.c: the stages before routing, in order. Each either moves the
 * request on or answers it. */
/* Keys: 401/403. Returns 0 to go on, 1 when answered. */
int kvg_proxy_authorize(struct proxy_req *pr);
/* Rewrites a stream request to ask for usage when the client did not (only
 * for requests a quota counts: kvg_proxy_admit calls it). */
void kvg_proxy_prepare_usage(struct proxy_req *pr);
/* Quota reservation, then priority admission, then kvg_proxy_attempt. */
void kvg_proxy_admit(struct proxy_req *pr);
/* Filter for the pool: may this request's priority go to w now? */
int kvg_proxy_worker_filter(void *ud, struct kvg_worker *w);
/* Rate-limit headers for the answer (0 when no quota applies). */
size_t kvg_proxy_quota_headers(struct proxy_req *pr, struct kvg_http_header *out, size_t max,
                               struct kvg_quota_headers *store);
/* Feeds engine bytes of a stream through the usage filter into out. */
int kvg_proxy_usage_feed(struct proxy_req *pr, const char *p, size_t n, struct kvg_buf *out);
/* The request ends: cancel what is pending, reconcile the quota with the
 * usage seen, tell the admission queue a slot freed, drop the key set. */
void kvg_proxy_account(struct proxy_req *pr);

#endif
