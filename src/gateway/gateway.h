/* The gateway process (kvgate serve): shared state and the per-thread
 * context every handler gets. */
#ifndef KVG_GATEWAY_GATEWAY_H
#define KVG_GATEWAY_GATEWAY_H

#include <pthread.h>
#include <stdatomic.h>
#include <uv.h>

#include "base/util.h"
#include "gateway/config.h"
#include "gateway/gw_metrics.h"
#include "http/client.h"
#include "http/http.h"
#include "router/pool.h"

struct kvg_gateway {
    struct kvg_serve_config cfg;
    struct kvg_pool pool;
    _Atomic int draining;
    _Atomic uint64_t requests_total;
    double started_s;
    uv_async_t health_kick; /* any thread: "check the workers now" (main loop) */
    struct ssl_ctx_st *tls;
    struct kvg_gw_metrics metrics;
};

/* One per event-loop thread. */
struct kvg_loop_ctx {
    struct kvg_gateway *gw;
    uv_loop_t loop;
    struct kvg_http_server *srv;
    struct kvg_http_server *srv_tls; /* NULL without --tls-cert */
    struct kvg_http_client *client;
    uv_async_t wake; /* "look at gw->draining / force_close" */
    uv_timer_t drain_timer;
    _Atomic int force_close;
    _Atomic int done;
    pthread_t thread;
    struct kvg_rng rng;
    int index;
};

/* The request handler of every loop: endpoint table (endpoints.c). */
void kvg_gateway_handle(struct kvg_http_req *req, void *ud);
/* POST /v1/chat/completions and /v1/completions (proxy/proxy.c). */
void kvg_proxy_handle(struct kvg_loop_ctx *lc, struct kvg_http_req *req);
/* kvgate serve's entry point (serve.c). */
int kvg_gateway_serve_main(int argc, char **argv);

#endif
