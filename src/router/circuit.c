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

/* Both counts in one word (answers << 32 | errors), so a reader never sees
 * them from different moments and halving needs no lock. */
void kvg_cb_note_answer(struct kvg_worker *w, int error)
{
    uint64_t old = atomic_load(&w->cb_answers), next;
    do {
        uint64_t n = (old >> 32) + 1, e = (old & 0xffffffffu) + (error ? 1 : 0);
        if (n >= KVG_CB_WINDOW) { /* older answers weigh half: the window follows the engine */
            n /= 2;
            e /= 2;
        }
        next = n << 32 | e;
    } while (!atomic_compare_exchange_weak(&w->cb_answers, &old, next));
}

void kvg_cb_answers(const struct kvg_worker *w, uint32_t *answers, uint32_t *errors)
{
    uint64_t v = atomic_load(&((struct kvg_worker *)w)->cb_answers);
    *answers = (uint32_t)(v >> 32);
    *errors = (uint32_t)(v & 0xffffffffu);
}

int kvg_cb_outlier(uint32_t n, uint32_t err, uint32_t others_n, uint32_t others_err)
{
    if (n < KVG_CB_MIN_ANSWERS || others_n < KVG_CB_MIN_ANSWERS) return 0;
    /* err/n - others_err/others_n >= 1/2, in integers. */
    int64_t lhs = 2 * ((int64_t)err * others_n - (int64_t)others_err * n);
    return lhs >= (int64_t)n * others_n;
}
