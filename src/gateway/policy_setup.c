/* kvgate serve's gateway policy: the API keys (SIGHUP swaps them), the quota
 * store (in process, or Redis shared by replicas), and the priority
 * admission queue with its defaults from seed 000 / the Gateway API
 * Inference Extension: critical (and standard) requests only to workers with
 * fewer than 50 waiting, sheddable ones only to workers with fewer than 5
 * waiting and KV below 80%, pool saturation = mean of max(waiting/5, kv/0.8). */
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "gateway/gateway.h"

/* The queue's question: can some healthy worker take a request of this
 * priority now? (Called with the queue's lock held; takes the pool's.) */
static int probe(void *ud, int prio)
{
    struct kvg_gateway *gw = ud;
    struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
    size_t n = kvg_pool_snapshot(&gw->pool, ws, KVG_POOL_MAX_WORKERS);
    int ok = 0;
    uint64_t now = kvg_now_ms();
    for (size_t i = 0; i < n; i++) {
        if (!ok && atomic_load(&ws[i]->healthy) &&
            kvg_adm_worker_ok(&gw->adm_cfg, prio, ws[i], now))
            ok = 1;
        kvg_worker_unref(ws[i]);
    }
    return ok;
}

int kvg_gw_policy_init(struct kvg_gateway *gw, char *err, size_t errlen)
{
    struct kvg_serve_config *c = &gw->cfg;
    struct kvg_keys_set *set = NULL;
    int rc;
    if (c->keys_path[0]) {
        if ((rc = kvg_keys_load(c->keys_path, &set, err, errlen))) return rc;
        gw->auth_on = 1;
        KVG_INFO("API keys: %zu keys from %s", set->nkeys, c->keys_path);
    } else {
        KVG_INFO("no --keys file: requests are not authenticated and no quota applies");
    }
    kvg_keys_holder_init(&gw->keys, set); /* takes over our reference */
    struct kvg_quota_opts qo;
    kvg_quota_opts_default(&qo);
    qo.timeout_ms = c->quota_timeout_ms;
    qo.fail_open = !c->quota_fail_closed;
    if ((rc = kvg_quota_new(c->quota_store, &qo, &gw->quota, err, errlen))) return rc;
    kvg_adm_config_default(&gw->adm_cfg);
    struct kvg_adm_config *a = &gw->adm_cfg;
    a->critical_max_waiting = c->critical_max_waiting;
    a->standard_max_waiting = c->critical_max_waiting; /* standard waits like critical */
    a->standard_max_kv = 2.0;                          /* (no KV bound of its own) */
    a->sheddable_max_waiting = c->sheddable_max_waiting;
    a->sheddable_max_kv = c->sheddable_max_kv;
    a->stale_ms = c->metrics_staleness_ms;
    a->queue_timeout_ms = c->queue_timeout_ms;
    a->queue_max = c->queue_size;
    if ((rc = kvg_adm_queue_new(a, probe, gw, &gw->adm))) {
        snprintf(err, errlen, "admission queue: %s", kvg_strerror(rc));
        return rc;
    }
    return 0;
}

int kvg_gw_policy_loop_open(struct kvg_gateway *gw, struct kvg_loop_ctx *lc)
{
    int rc = kvg_quota_loop_open(gw->quota, &lc->loop, &lc->qloop);
    if (!rc) rc = kvg_adm_loop_open(gw->adm, &lc->loop, &lc->aloop);
    return rc;
}

void kvg_gw_policy_loop_close(struct kvg_loop_ctx *lc)
{
    if (lc->aloop) kvg_adm_loop_close(lc->aloop);
    if (lc->qloop) kvg_quota_loop_close(lc->qloop);
    lc->aloop = NULL;
    lc->qloop = NULL;
}

void kvg_gw_policy_reload(struct kvg_gateway *gw)
{
    if (!gw->cfg.keys_path[0]) return;
    char err[512];
    struct kvg_keys_set *set;
    if (kvg_keys_load(gw->cfg.keys_path, &set, err, sizeof err)) {
        KVG_ERROR("SIGHUP: keys not reloaded, the old ones stay: %s", err);
        return;
    }
    size_t n = set->nkeys;
    kvg_keys_swap(&gw->keys, set); /* takes over our reference */
    KVG_INFO("SIGHUP: %zu API keys reloaded from %s", n, gw->cfg.keys_path);
}

void kvg_gw_policy_free(struct kvg_gateway *gw)
{
    if (gw->adm) kvg_adm_queue_free(gw->adm);
    if (gw->quota) kvg_quota_free(gw->quota);
    kvg_keys_holder_destroy(&gw->keys);
    gw->adm = NULL;
    gw->quota = NULL;
}
