/* Priority admission: the per-worker rules, pool saturation, and the
 * gateway queue with priority bands and per-tenant round-robin. The rules,
 * the queue's order and its threading are described in admission.h. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/err.h"
#include "base/util.h"
#include "gateway/admission.h"

#define TENANT_MAX 128

/* s[0..n) without the blanks around it. */
static void trim(const char **s, size_t *n)
{
    while (*n && (**s == ' ' || **s == '\t')) (*s)++, (*n)--;
    while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t')) (*n)--;
}

int kvg_adm_priority_parse(const char *s, size_t n, int *out)
{
    static const struct {
        const char *name;
        int prio;
    } names[] = {{"critical", KVG_ADM_CRITICAL},
                 {"standard", KVG_ADM_STANDARD},
                 {"sheddable", KVG_ADM_SHEDDABLE}};
    trim(&s, &n);
    for (size_t i = 0; i < KVG_ARRAY_LEN(names); i++)
        if (n == strlen(names[i].name) && !strncasecmp(s, names[i].name, n)) {
            *out = names[i].prio;
            return 0;
        }
    char tmp[16];
    if (n == 0 || n >= sizeof tmp) return -EINVAL;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    int64_t v;
    if (kvg_parse_i64(tmp, &v) || v < KVG_ADM_PRIO_MIN || v > KVG_ADM_PRIO_MAX) return -EINVAL;
    *out = (int)v;
    return 0;
}

int kvg_adm_class(int prio)
{
    if (prio == KVG_ADM_BATCH) return KVG_ADM_BATCH;
    return prio > 0 ? KVG_ADM_CRITICAL : prio < 0 ? KVG_ADM_SHEDDABLE : KVG_ADM_STANDARD;
}

const char *kvg_adm_class_name(int prio)
{
    int c = kvg_adm_class(prio);
    if (c == KVG_ADM_BATCH) return "batch";
    return c > 0 ? "critical" : c < 0 ? "sheddable" : "standard";
}

int kvg_adm_traffic_parse(const char *s, size_t n, int *batch)
{
    trim(&s, &n);
    if (n == 11 && !strncasecmp(s, "interactive", n)) {
        *batch = 0;
        return 0;
    }
    if (n == 5 && !strncasecmp(s, "batch", n)) {
        *batch = 1;
        return 0;
    }
    return -EINVAL;
}

int kvg_adm_deadline_parse(const char *s, size_t n, uint32_t *ms)
{
    trim(&s, &n);
    double unit = 1;
    if (n && (s[n - 1] == 's' || s[n - 1] == 'm' || s[n - 1] == 'h')) {
        unit = s[n - 1] == 'h' ? 3600 : s[n - 1] == 'm' ? 60 : 1;
        n--;
    }
    char tmp[24];
    if (n == 0 || n >= sizeof tmp) return -EINVAL;
    for (size_t i = 0; i < n; i++) /* digits and one '.': no sign, exponent, inf or nan */
        if (!((s[i] >= '0' && s[i] <= '9') || s[i] == '.')) return -EINVAL;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    char *end;
    double v = strtod(tmp, &end) * unit;
    if (*end || !(v > 0) || v > KVG_ADM_DEADLINE_MAX_S) return -EINVAL;
    uint64_t m = (uint64_t)(v * 1000 + 0.5);
    *ms = (uint32_t)(m ? m : 1);
    return 0;
}

void kvg_adm_config_default(struct kvg_adm_config *c)
{
    c->critical_max_waiting = 50;
    c->standard_max_waiting = 5;
    c->standard_max_kv = 0.8;
    c->sheddable_max_waiting = 5;
    c->sheddable_max_kv = 0.8;
    c->batch_max_waiting = 1;
    c->batch_max_kv = 0.8;
    c->sat_queue = 5;
    c->sat_kv = 0.8;
    c->shed_pool_saturation = 1.0;
    c->own_busy_factor = 2.0;
    c->own_busy_min = 8;
    c->stale_ms = 1500;
    c->queue_timeout_ms = 30000;
    c->queue_max = 1024;
    c->retry_after_s = 1;
    c->batch_deadline_ms = 30 * 60 * 1000;
}

static int known(double v)
{
    return v >= 0; /* false for NaN too */
}

static int fresh(const struct kvg_adm_config *c, const struct kvg_engine_load *l, uint64_t now_ms)
{
    if (l->at_ms == 0) return 0;
    return c->stale_ms == 0 || now_ms <= l->at_ms || now_ms - l->at_ms <= c->stale_ms;
}

enum kvg_adm_judgement kvg_adm_load_judge(const struct kvg_adm_config *c, int prio,
                                          const struct kvg_engine_load *l, uint64_t now_ms)
{
    if (!fresh(c, l, now_ms)) return KVG_ADM_UNKNOWN;
    double max_waiting, max_kv = -1; /* < 0: the rule does not read KV */
    switch (kvg_adm_class(prio)) {
    case KVG_ADM_CRITICAL:
        max_waiting = c->critical_max_waiting;
        break;
    case KVG_ADM_STANDARD:
        max_waiting = c->standard_max_waiting, max_kv = c->standard_max_kv;
        break;
    case KVG_ADM_BATCH:
        max_waiting = c->batch_max_waiting, max_kv = c->batch_max_kv;
        break;
    default:
        max_waiting = c->sheddable_max_waiting, max_kv = c->sheddable_max_kv;
        break;
    }
    int kw = known(l->waiting), kk = max_kv >= 0 && known(l->kv_usage);
    /* Each known signal may say "busy" on its own; an unknown one says nothing. */
    if ((kw && l->waiting >= max_waiting) || (kk && l->kv_usage >= max_kv)) return KVG_ADM_BUSY;
    return kw || kk ? KVG_ADM_FITS : KVG_ADM_UNKNOWN;
}

int kvg_adm_load_ok(const struct kvg_adm_config *c, int prio, const struct kvg_engine_load *l,
                    uint64_t now_ms)
{
    return kvg_adm_load_judge(c, prio, l, now_ms) != KVG_ADM_BUSY;
}

int kvg_adm_own_busy(const struct kvg_adm_config *c, uint32_t in_flight, double others_mean)
{
    if (others_mean < 0 || c->own_busy_factor <= 0) return 0;
    return in_flight >= c->own_busy_min && in_flight > c->own_busy_factor * others_mean;
}

int kvg_adm_ok(const struct kvg_adm_config *c, int prio, const struct kvg_engine_load *l,
               uint64_t now_ms, uint32_t in_flight, double others_mean)
{
    enum kvg_adm_judgement j = kvg_adm_load_judge(c, prio, l, now_ms);
    if (j != KVG_ADM_UNKNOWN) return j == KVG_ADM_FITS;
    return !kvg_adm_own_busy(c, in_flight, others_mean);
}

double kvg_adm_others_mean(uint64_t sum, size_t n, uint32_t mine)
{
    return n > 1 ? (double)(sum - mine) / (double)(n - 1) : -1;
}

int kvg_adm_worker_ok(const struct kvg_adm_config *c, int prio, struct kvg_worker *w,
                      uint64_t now_ms, double others_mean)
{
    pthread_mutex_lock(&w->mu);
    struct kvg_engine_load l = w->load;
    pthread_mutex_unlock(&w->mu);
    return kvg_adm_ok(c, prio, &l, now_ms, atomic_load(&w->in_flight), others_mean);
}

double kvg_adm_load_saturation(const struct kvg_adm_config *c, const struct kvg_engine_load *l,
                               uint64_t now_ms)
{
    if (!fresh(c, l, now_ms)) return -1;
    double s = -1;
    if (known(l->waiting)) s = l->waiting / c->sat_queue;
    if (known(l->kv_usage)) s = KVG_MAX(s, l->kv_usage / c->sat_kv);
    return s;
}

/* The mean of n_known known saturations among n workers: 0 when none is
 * known (unknown is never saturated), 1 for an empty pool. */
static double mean_saturation(double sum, size_t n_known, size_t n)
{
    if (n == 0) return 1.0;
    return n_known ? sum / (double)n_known : 0;
}

double kvg_adm_pool_saturation(const struct kvg_adm_config *c, const struct kvg_engine_load *loads,
                               size_t n, uint64_t now_ms)
{
    double s = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        double x = kvg_adm_load_saturation(c, &loads[i], now_ms);
        if (x >= 0) s += x, k++;
    }
    return mean_saturation(s, k, n);
}

static enum kvg_adm_verdict verdict(const struct kvg_adm_config *c, int prio, size_t ok,
                                    double pool_sat)
{
    int sheddable = kvg_adm_class(prio) == KVG_ADM_SHEDDABLE;
    if (sheddable && c->shed_pool_saturation > 0 && pool_sat >= c->shed_pool_saturation)
        return KVG_ADM_REJECT;
    if (ok) return KVG_ADM_ADMIT;
    return sheddable ? KVG_ADM_REJECT : KVG_ADM_QUEUE;
}

enum kvg_adm_verdict kvg_adm_decide(const struct kvg_adm_config *c, int prio,
                                    const struct kvg_engine_load *loads, const uint32_t *in_flight,
                                    size_t n, uint64_t now_ms, size_t *nok)
{
    uint64_t sum = 0;
    for (size_t i = 0; in_flight && i < n; i++) sum += in_flight[i];
    size_t ok = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t mine = in_flight ? in_flight[i] : 0;
        ok += kvg_adm_ok(c, prio, &loads[i], now_ms, mine, kvg_adm_others_mean(sum, n, mine)) != 0;
    }
    if (nok) *nok = ok;
    return verdict(c, prio, ok, kvg_adm_pool_saturation(c, loads, n, now_ms));
}

enum kvg_adm_verdict kvg_adm_decide_workers(const struct kvg_adm_config *c, int prio,
                                            struct kvg_worker *const *ws, size_t n, uint64_t now_ms,
                                            size_t *nok)
{
    /* One pass over the loads, no copy of every load: the same arithmetic
     * as kvg_adm_decide (known saturations' mean, count of workers that
     * pass). In-flight counts are read first: the mean of the others needs
     * them all. */
    uint32_t inf[n ? n : 1];
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) sum += inf[i] = atomic_load(&ws[i]->in_flight);
    size_t ok = 0, k = 0;
    double sat = 0;
    for (size_t i = 0; i < n; i++) {
        pthread_mutex_lock(&ws[i]->mu);
        struct kvg_engine_load l = ws[i]->load;
        pthread_mutex_unlock(&ws[i]->mu);
        ok += kvg_adm_ok(c, prio, &l, now_ms, inf[i], kvg_adm_others_mean(sum, n, inf[i])) != 0;
        double x = kvg_adm_load_saturation(c, &l, now_ms);
        if (x >= 0) sat += x, k++;
    }
    if (nok) *nok = ok;
    return verdict(c, prio, ok, mean_saturation(sat, k, n));
}

/* ---- the queue ---- */

enum { W_QUEUED, W_GRANTED, W_DISPATCHING, W_DONE };

struct flow;
struct band;

struct kvg_adm_waiter {
    struct kvg_adm_waiter *next, *prev; /* in its flow's FIFO */
    struct kvg_adm_waiter *rnext;       /* in its loop's ready list */
    struct flow *flow;
    struct kvg_adm_loop *lq;
    int state;
    int status; /* for W_GRANTED: what the callback will get */
    int prio;
    int group; /* -1 none */
    uv_timer_t timer;
    kvg_adm_wait_cb cb;
    void *ud;
};

struct flow {                 /* one tenant's line within a band */
    struct flow *next, *prev; /* ring */
    struct band *band;
    struct kvg_adm_waiter *head, *tail;
    size_t n;
    char tenant[TENANT_MAX];
};

struct band {
    struct band *next; /* descending priority */
    int prio;
    struct flow *cursor; /* the flow served next; NULL when empty */
};

struct kvg_adm_loop {
    struct kvg_adm_queue *q;
    uv_loop_t *loop;
    uv_async_t async;
    struct kvg_adm_waiter *ready, *ready_tail; /* granted, callbacks not yet run */
    struct kvg_adm_loop *next;                 /* in q->loops */
    int wake;
};

struct kvg_adm_queue {
    pthread_mutex_t mu;
    struct kvg_adm_config c;
    kvg_adm_probe probe;
    void *probe_ud;
    struct band *bands;
    struct kvg_adm_loop *loops;
    size_t len, len_batch; /* waiters, and of them batch ones */
    size_t len_group[KVG_ADM_GROUPS], batch_group[KVG_ADM_GROUPS]; /* the same per group */
    _Atomic uint64_t queued, granted, timeouts, evicted, refused_full, cancelled, batch_expired;
};

int kvg_adm_queue_new(const struct kvg_adm_config *c, kvg_adm_probe probe, void *probe_ud,
                      struct kvg_adm_queue **out)
{
    struct kvg_adm_queue *q = calloc(1, sizeof *q);
    if (!q) return -ENOMEM;
    if (c)
        q->c = *c;
    else
        kvg_adm_config_default(&q->c);
    q->probe = probe;
    q->probe_ud = probe_ud;
    pthread_mutex_init(&q->mu, NULL);
    *out = q;
    return 0;
}

void kvg_adm_queue_free(struct kvg_adm_queue *q)
{
    if (!q) return;
    /* Every loop closed first, so no waiter and no band remain. */
    pthread_mutex_destroy(&q->mu);
    free(q);
}

/* Removes w from its flow, and the flow (and band) when they empty. Mutex held. */
static void flow_remove(struct kvg_adm_queue *q, struct kvg_adm_waiter *w)
{
    struct flow *f = w->flow;
    if (w->prev)
        w->prev->next = w->next;
    else
        f->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        f->tail = w->prev;
    w->next = w->prev = NULL;
    w->flow = NULL;
    q->len--;
    q->len_batch -= w->prio == KVG_ADM_BATCH;
    if (w->group >= 0) {
        q->len_group[w->group]--;
        q->batch_group[w->group] -= w->prio == KVG_ADM_BATCH;
    }
    if (--f->n) return;
    struct band *b = f->band;
    if (f->next == f) {
        b->cursor = NULL;
    } else {
        f->prev->next = f->next;
        f->next->prev = f->prev;
        if (b->cursor == f) b->cursor = f->next;
    }
    free(f);
    if (b->cursor) return;
    for (struct band **pp = &q->bands; *pp; pp = &(*pp)->next)
        if (*pp == b) {
            *pp = b->next;
            break;
        }
    free(b);
}

static struct flow *flow_get(struct kvg_adm_queue *q, int prio, const char *tenant)
{
    struct band **pp = &q->bands;
    while (*pp && (*pp)->prio > prio) pp = &(*pp)->next;
    struct band *b = *pp;
    if (!b || b->prio != prio) {
        b = calloc(1, sizeof *b);
        if (!b) return NULL;
        b->prio = prio;
        b->next = *pp;
        *pp = b;
    }
    if (b->cursor) {
        struct flow *f = b->cursor;
        do {
            if (!strcmp(f->tenant, tenant)) return f;
            f = f->next;
        } while (f != b->cursor);
    }
    struct flow *f = calloc(1, sizeof *f);
    if (!f) {
        if (!b->cursor) {
            *pp = b->next;
            free(b);
        }
        return NULL;
    }
    f->band = b;
    size_t tl = strnlen(tenant, TENANT_MAX - 1);
    memcpy(f->tenant, tenant, tl);
    if (!b->cursor) {
        f->next = f->prev = f;
        b->cursor = f;
    } else {
        /* A new tenant joins at the end of the round, behind those already waiting. */
        f->next = b->cursor;
        f->prev = b->cursor->prev;
        f->prev->next = f;
        b->cursor->prev = f;
    }
    return f;
}

/* Hands w's outcome to its loop. Mutex held. */
static void grant(struct kvg_adm_waiter *w, int status)
{
    struct kvg_adm_loop *lq = w->lq;
    w->state = W_GRANTED;
    w->status = status;
    w->rnext = NULL;
    if (lq->ready_tail)
        lq->ready_tail->rnext = w;
    else
        lq->ready = w;
    lq->ready_tail = w;
    lq->wake = 1;
}

static void wake_loops(struct kvg_adm_queue *q)
{
    for (struct kvg_adm_loop *lq = q->loops; lq; lq = lq->next)
        if (lq->wake) {
            lq->wake = 0;
            uv_async_send(&lq->async);
        }
}

static void waiter_closed(uv_handle_t *h)
{
    free(h->data);
}

static void finish(struct kvg_adm_waiter *w, int status)
{
    w->state = W_DONE;
    uv_timer_stop(&w->timer);
    kvg_adm_wait_cb cb = w->cb;
    void *ud = w->ud;
    uv_close((uv_handle_t *)&w->timer, waiter_closed);
    if (cb) cb(ud, status);
}

static void on_async(uv_async_t *a)
{
    struct kvg_adm_loop *lq = a->data;
    struct kvg_adm_queue *q = lq->q;
    pthread_mutex_lock(&q->mu);
    struct kvg_adm_waiter *list = lq->ready;
    lq->ready = lq->ready_tail = NULL;
    /* A callback below may cancel a later waiter of this list: the state
     * tells kvg_adm_cancel to only silence it (finish closes it here). */
    for (struct kvg_adm_waiter *w = list; w; w = w->rnext) w->state = W_DISPATCHING;
    pthread_mutex_unlock(&q->mu);
    while (list) {
        struct kvg_adm_waiter *w = list;
        list = w->rnext;
        finish(w, w->status);
    }
}

static void on_timeout(uv_timer_t *t)
{
    struct kvg_adm_waiter *w = t->data;
    struct kvg_adm_queue *q = w->lq->q;
    pthread_mutex_lock(&q->mu);
    int queued = w->state == W_QUEUED;
    if (queued) flow_remove(q, w);
    if (queued) w->state = W_DONE;
    pthread_mutex_unlock(&q->mu);
    if (!queued) return; /* granted meanwhile: the grant wins */
    atomic_fetch_add(&q->timeouts, 1);
    if (w->prio == KVG_ADM_BATCH) atomic_fetch_add(&q->batch_expired, 1);
    finish(w, KVG_ETIMEOUT);
}

int kvg_adm_loop_open(struct kvg_adm_queue *q, uv_loop_t *loop, struct kvg_adm_loop **out)
{
    struct kvg_adm_loop *lq = calloc(1, sizeof *lq);
    if (!lq) return -ENOMEM;
    lq->q = q;
    lq->loop = loop;
    int rc = uv_async_init(loop, &lq->async, on_async);
    if (rc) {
        free(lq);
        return rc;
    }
    lq->async.data = lq;
    pthread_mutex_lock(&q->mu);
    lq->next = q->loops;
    q->loops = lq;
    pthread_mutex_unlock(&q->mu);
    *out = lq;
    return 0;
}

static void loop_closed(uv_handle_t *h)
{
    free(h->data);
}

void kvg_adm_loop_close(struct kvg_adm_loop *lq)
{
    struct kvg_adm_queue *q = lq->q;
    struct kvg_adm_waiter *fail = NULL;
    pthread_mutex_lock(&q->mu);
    for (struct kvg_adm_loop **pp = &q->loops; *pp; pp = &(*pp)->next)
        if (*pp == lq) {
            *pp = lq->next;
            break;
        }
    /* Fail this loop's queued waiters (the ready ones are already out).
     * Rescanning after each removal keeps the walk valid while flows and
     * bands free themselves; it runs once, at shutdown. */
    for (;;) {
        struct kvg_adm_waiter *found = NULL;
        for (struct band *b = q->bands; b && !found; b = b->next) {
            struct flow *f = b->cursor;
            do {
                for (struct kvg_adm_waiter *w = f->head; w && !found; w = w->next)
                    if (w->lq == lq) found = w;
                f = f->next;
            } while (!found && f != b->cursor);
        }
        if (!found) break;
        flow_remove(q, found);
        found->state = W_DONE;
        found->rnext = fail;
        fail = found;
    }
    for (struct kvg_adm_waiter *w = lq->ready; w; w = w->rnext) w->state = W_DONE;
    struct kvg_adm_waiter *ready = lq->ready;
    lq->ready = lq->ready_tail = NULL;
    pthread_mutex_unlock(&q->mu);
    while (ready) {
        struct kvg_adm_waiter *w = ready;
        ready = w->rnext;
        finish(w, w->status == 0 ? KVG_ECLOSED : w->status);
    }
    while (fail) {
        struct kvg_adm_waiter *w = fail;
        fail = w->rnext;
        finish(w, KVG_ECLOSED);
    }
    uv_close((uv_handle_t *)&lq->async, loop_closed);
}

/* The queue is full: evict the newest waiter of the lowest band's largest
 * tenant if the newcomer outranks that band. Mutex held. Returns 1 if room. */
static int evict_for(struct kvg_adm_queue *q, int prio)
{
    struct band *low = q->bands;
    while (low && low->next) low = low->next;
    if (!low || low->prio >= prio) return 0;
    struct flow *big = low->cursor, *f = low->cursor;
    do {
        if (f->n > big->n) big = f;
        f = f->next;
    } while (f != low->cursor);
    struct kvg_adm_waiter *w = big->tail;
    flow_remove(q, w);
    grant(w, -ENOSPC);
    atomic_fetch_add(&q->evicted, 1);
    return 1;
}

int kvg_adm_enqueue(struct kvg_adm_loop *lq, int prio, const char *tenant, int group,
                    uint64_t deadline_ms, int front, kvg_adm_wait_cb cb, void *ud,
                    struct kvg_adm_waiter **out)
{
    struct kvg_adm_queue *q = lq->q;
    struct kvg_adm_waiter *w = calloc(1, sizeof *w);
    if (!w) return -ENOMEM;
    w->lq = lq;
    w->prio = prio;
    w->group = group >= 0 && group < KVG_ADM_GROUPS ? group : -1;
    w->cb = cb;
    w->ud = ud;
    pthread_mutex_lock(&q->mu);
    if (q->len >= q->c.queue_max && !evict_for(q, prio)) {
        pthread_mutex_unlock(&q->mu);
        free(w);
        atomic_fetch_add(&q->refused_full, 1);
        return -ENOSPC;
    }
    struct flow *f = flow_get(q, prio, tenant ? tenant : "");
    if (!f) {
        wake_loops(q);
        pthread_mutex_unlock(&q->mu);
        free(w);
        return -ENOMEM;
    }
    w->flow = f;
    if (front) {
        w->next = f->head;
        if (f->head) f->head->prev = w;
        f->head = w;
        if (!f->tail) f->tail = w;
    } else {
        w->prev = f->tail;
        if (f->tail) f->tail->next = w;
        f->tail = w;
        if (!f->head) f->head = w;
    }
    f->n++;
    q->len++;
    q->len_batch += prio == KVG_ADM_BATCH;
    if (w->group >= 0) {
        q->len_group[w->group]++;
        q->batch_group[w->group] += prio == KVG_ADM_BATCH;
    }
    w->state = W_QUEUED;
    uv_timer_init(lq->loop, &w->timer);
    w->timer.data = w;
    uint64_t now = kvg_now_ms();
    if (!deadline_ms) deadline_ms = now + q->c.queue_timeout_ms;
    uv_timer_start(&w->timer, on_timeout, deadline_ms > now ? deadline_ms - now : 0, 0);
    wake_loops(q); /* an eviction above */
    pthread_mutex_unlock(&q->mu);
    atomic_fetch_add(&q->queued, 1);
    *out = w;
    return 0;
}

/* Pops the next waiter: highest band, the band's current tenant, FIFO.
 * Mutex held. */
static struct kvg_adm_waiter *pop(struct kvg_adm_queue *q)
{
    struct band *b = q->bands;
    if (!b) return NULL;
    struct flow *f = b->cursor;
    struct kvg_adm_waiter *w = f->head;
    b->cursor = f->next; /* round-robin: the next tenant goes next time */
    flow_remove(q, w);
    return w;
}

static unsigned grant_locked(struct kvg_adm_queue *q, unsigned max)
{
    unsigned n = 0;
    while (n < max && q->bands) {
        if (q->probe && !q->probe(q->probe_ud, q->bands->prio)) break;
        grant(pop(q), 0);
        n++;
    }
    return n;
}

unsigned kvg_adm_capacity_available(struct kvg_adm_queue *q, unsigned max)
{
    pthread_mutex_lock(&q->mu);
    unsigned n = grant_locked(q, max);
    wake_loops(q);
    pthread_mutex_unlock(&q->mu);
    atomic_fetch_add(&q->granted, n);
    return n;
}

void kvg_adm_cancel(struct kvg_adm_waiter *w)
{
    if (!w) return;
    struct kvg_adm_queue *q = w->lq->q;
    int close_here = 0, was;
    unsigned regranted = 0;
    pthread_mutex_lock(&q->mu);
    was = w->state;
    if (was == W_QUEUED) {
        flow_remove(q, w);
        close_here = 1;
    } else if (was == W_GRANTED) {
        struct kvg_adm_loop *lq = w->lq;
        struct kvg_adm_waiter **pp = &lq->ready, *last = NULL;
        while (*pp && *pp != w) {
            last = *pp;
            pp = &(*pp)->rnext;
        }
        if (*pp) *pp = w->rnext;
        if (lq->ready_tail == w) lq->ready_tail = last;
        close_here = 1;
    } else if (was == W_DISPATCHING) {
        w->cb = NULL; /* on_async's loop closes it */
    }
    /* An unused grant of capacity passes on to the next waiter. */
    if ((was == W_GRANTED || was == W_DISPATCHING) && w->status == 0)
        regranted = grant_locked(q, 1);
    wake_loops(q);
    pthread_mutex_unlock(&q->mu);
    if (was == W_DONE) return; /* its callback already ran or is running */
    atomic_fetch_add(&q->cancelled, 1);
    atomic_fetch_add(&q->granted, regranted);
    if (!close_here) return;
    w->state = W_DONE;
    w->cb = NULL;
    uv_timer_stop(&w->timer);
    uv_close((uv_handle_t *)&w->timer, waiter_closed);
}

void kvg_adm_stats(struct kvg_adm_queue *q, struct kvg_adm_stats *s)
{
    s->queued = atomic_load(&q->queued);
    s->granted = atomic_load(&q->granted);
    s->timeouts = atomic_load(&q->timeouts);
    s->evicted = atomic_load(&q->evicted);
    s->refused_full = atomic_load(&q->refused_full);
    s->cancelled = atomic_load(&q->cancelled);
    s->batch_expired = atomic_load(&q->batch_expired);
    memset(s->waiting_class, 0, sizeof s->waiting_class);
    pthread_mutex_lock(&q->mu);
    s->waiting = q->len;
    memcpy(s->waiting_group, q->len_group, sizeof s->waiting_group);
    memcpy(s->batch_group, q->batch_group, sizeof s->batch_group);
    for (const struct band *b = q->bands; b; b = b->next) {
        const struct flow *f = b->cursor;
        if (!f) continue;
        do { /* the band's flows are a ring */
            s->waiting_class[KVG_ADM_CLASS_INDEX(b->prio)] += f->n;
            f = f->next;
        } while (f != b->cursor);
    }
    pthread_mutex_unlock(&q->mu);
}

size_t kvg_adm_waiting(struct kvg_adm_queue *q)
{
    pthread_mutex_lock(&q->mu);
    size_t n = q->len;
    pthread_mutex_unlock(&q->mu);
    return n;
}
