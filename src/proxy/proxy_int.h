/* One proxied request's state (proxy.c). Not a public face. */
#ifndef KVG_PROXY_INT_H
#define KVG_PROXY_INT_H

#include "gateway/gate.h"
#include "proxy/proxy.h"
#include "proxy/route_input.h"

#define MAX_TRIED 16
#define MAX_NONSTREAM_BODY (64u * 1024 * 1024)
#define MAX_FWD_HEADERS 64

struct proxy_req {
    struct kvg_proxy_loop *pl;
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
    uint32_t connect_fails; /* attempts that could not connect to their worker */
    int up_status;          /* upstream status, 0 before its head */
    int relayed;            /* head sent to the client */
    int sse;                /* upstream answers text/event-stream */
    char content_type[128];
    struct kvg_buf body; /* non-stream answer; a relayed stream's filtered bytes */
    uint64_t t0_ns, ttfb_ns;
    uint64_t bytes_up;
    char worker_url[512];
    const char *path; /* static string: the endpoint */
    enum kvg_proxy_route route;
    struct kvg_gate_req gate;    /* the gateway's view: key, priority, quota, usage */
    struct proxy_req *next_free; /* on the loop's free list */
};

#endif
