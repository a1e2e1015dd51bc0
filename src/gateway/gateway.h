/* The gateway process (kvgate serve): shared state and the per-thread
 * context every handler gets. */
#ifndef KVG_GATEWAY_GATEWAY_H
#define KVG_GATEWAY_GATEWAY_H

#include <pthread.h>
#include <stdatomic.h>
#include <uv.h>

#include "base/util.h"
#include "gateway/admission.h"
#include "gateway/config.h"
#include "gateway/keys.h"
#include "gateway/quota.h"
#include "gateway/gw_metrics.h"
#include "http/client.h"
#include "http/http.h"
#include "router/pool.h"

struct kvg_tok;
struct kvg_jinja_chat;
struct kvg_kv_index;
struct kvg_kv_sub;

struct kvg_gateway {
    struct kvg_serve_config cfg;
    struct kvg_pool pool;
    struct kvg_tok *tok;     /* the served model's tokenizer (builtin:bytes by default) */
    struct kvg_jinja_chat *chat;   /* its chat template */
    struct kvg_kv_index *kv; /* precise KV index; NULL when no worker publishes events */
    struct kvg_kv_sub *sub;  /* its subscribers */
    int wants_tokens;        /* the policy reads token ids: tokenize each request */
    int wants_text;          /* the policy reads the routing text */
    /* Gateway policy (admit.c in src/proxy). */
    int auth_on;                 /* --keys given */
    struct kvg_keys_holder keys; /* the current key set (SIGHUP swaps it) */
    struct kvg_quota *quota;     /* token/request/concurrency limits */
    struct kvg_adm_queue *adm;   /* priority admission queue */
    struct kvg_adm_config adm_cfg;
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
    struct kvg_quota_loop *qloop; /* this loop's end of the quota store */
    struct kvg_adm_loop *aloop;   /* this loop's end of the admission queue */
    struct proxy_req *pr_free;    /* finished proxy requests kept for reuse (proxy.c) */
    unsigned pr_nfree;
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
struct proxy_req;
void kvg_proxy_handle(struct kvg_loop_ctx *lc, struct kvg_http_req *req);
/* Frees the loop's cached proxy state (after its loop stopped). */
void kvg_proxy_loop_free(struct kvg_loop_ctx *lc);
/* Router set-up (router_setup.c): tokenizer, chat template, KV index and
 * subscribers, the policy and the pool with its hooks. Message in err. */
int kvg_gw_router_init(struct kvg_gateway *gw, char *err, size_t errlen);
void kvg_gw_router_free(struct kvg_gateway *gw);
/* Gateway policy set-up (policy_setup.c): keys, quota store, admission
 * queue; per-loop ends opened by kvg_gw_policy_loop_open. */
int kvg_gw_policy_init(struct kvg_gateway *gw, char *err, size_t errlen);
int kvg_gw_policy_loop_open(struct kvg_gateway *gw, struct kvg_loop_ctx *lc);
void kvg_gw_policy_loop_close(struct kvg_loop_ctx *lc);
/* SIGHUP: re-reads the keys file; the old set stays on error. */
void kvg_gw_policy_reload(struct kvg_gateway *gw);
void kvg_gw_policy_free(struct kvg_gateway *gw);
/* kvgate serve's entry point (serve.c). */
int kvg_gateway_serve_main(int argc, char **argv);

#endif
