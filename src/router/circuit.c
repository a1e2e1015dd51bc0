/* Circuit breaker; see circuit.h. Every open and close is logged: it
 * changes where requests go, and an operator must see why. */
#include "router/circuit.h"

#include "base/log.h"

void kvg_cb_config_default(struct kvg_cb_config *c)
{
    c->enabled = 1;
    c->failure_threshold = 10;
    c->success_threshold = 3;
    c->timeout_ms = 60 * 1000;
}

int kvg_cb_allows(const struct kvg_cb_config *c, struct kvg_worker *w, uint64_t now_ms)
{
    if (!c->enabled) return 1;
    int st = atomic_load(&w->cb_state);
    if (st != KVG_CB_OPEN) return 1;
    if (now_ms - atomic_load(&w->cb_opened_ms) < c->timeout_ms) return 0;
    int expect = KVG_CB_OPEN;
    if (atomic_compare_exchange_strong(&w->cb_state, &expect, KVG_CB_HALF_OPEN)) {
        atomic_store(&w->cb_successes, 0);
        KVG_INFO("worker %s: circuit half-open: trying requests again", w->url);
    }
    return 1;
}

void kvg_cb_record(const struct kvg_cb_config *c, struct kvg_worker *w, int success,
                   uint64_t now_ms)
{
    if (!c->enabled) return;
    int st = atomic_load(&w->cb_state);
    if (success) {
        atomic_store(&w->cb_fails, 0);
        int expect = KVG_CB_HALF_OPEN;
        if (st == KVG_CB_HALF_OPEN &&
            atomic_fetch_add(&w->cb_successes, 1) + 1 >= c->success_threshold &&
            atomic_compare_exchange_strong(&w->cb_state, &expect, KVG_CB_CLOSED))
            KVG_INFO("worker %s: circuit closed after %u successes", w->url, c->success_threshold);
        return;
    }
    atomic_store(&w->cb_successes, 0);
    if (st == KVG_CB_HALF_OPEN ||
        (st == KVG_CB_CLOSED && atomic_fetch_add(&w->cb_fails, 1) + 1 >= c->failure_threshold)) {
        atomic_store(&w->cb_opened_ms, now_ms);
        /* Only the thread that moves it logs: concurrent failures open it once. */
        if (atomic_exchange(&w->cb_state, KVG_CB_OPEN) != KVG_CB_OPEN)
            KVG_WARN("worker %s: circuit open after %s: no requests for %llu s", w->url,
                     st == KVG_CB_HALF_OPEN ? "a failure while half-open" : "consecutive failures",
                     (unsigned long long)(c->timeout_ms / 1000));
    }
}
