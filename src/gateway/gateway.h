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

struct kvg_tok;
struct kvg_chat;
struct kvg_kv_index;
struct kvg_kv_sub;

struct kvg_gateway {
    struct kvg_serve_config cfg;
    struct kvg_pool pool;
    struct kvg_tok *tok;     /* the served model's tokenizer (builtin:bytes by default) */
    struct kvg_chat *chat;   /* its chat template */
    struct kvg_kv_index *kv; /* precise KV index; NULL when no worker publishes events */
    struct kvg_kv_sub *sub;  /* its subscribers */
    int wants_tokens;        /* the policy reads token ids: tokenize each request */
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
/* Router set-up (router_setup.c): tokenizer, chat template, KV index and
 * subscribers, the policy and the pool with its hooks. Message in err. */
int kvg_gw_router_init(struct kvg_gateway *gw, char *err, size_t errlen);
void kvg_gw_router_free(struct kvg_gateway *gw);
/* kvgate serve's entry point (serve.c). */
int kvg_gateway_serve_main(int argc, char **argv);

#endif
