/* Which worker holds a stored response. vLLM keeps a Responses request's
 * result in the serving process's memory: a later request naming it
 * (previous_response_id, GET or DELETE /v1/responses/{id}, its cancel) must
 * reach that process, and a request naming one no worker is known to hold
 * gets a 404 in the Responses error shape, never another worker's silent
 * "not found" or, worse, an answer without the earlier turns.
 *
 * The id is learnt from the answer itself: the first "id" string of a
 * Responses answer is the response's (the object's first member, and in a
 * stream the response.created event's response.id). The table maps a hash
 * of the id to a hash of the worker's URL: 4-way buckets, a full bucket
 * forgets its oldest entry, so it holds the last ~64k responses in 1 MB.
 * It is this process's knowledge: replicas of kvgate behind one balancer
 * do not share it, so an id this process never saw may be another
 * replica's. Such an id is asked of the model's healthy workers
 * (GET /v1/responses/{id}, which vLLM and kvgate sim answer 200 from
 * their store): at most PROBE_PARALLEL at a time, each worker once, each
 * call bounded by PROBE_TIMEOUT_MS; the one that answers 200 is learnt and
 * the request goes there. Only a miss costs a round trip. Against a flood
 * of made-up ids: an id no worker had is remembered for NEG_TTL_MS
 * (a bounded table like the other), and the probes of the whole process
 * are bounded by PROBES_PER_S (a lookup that finds the budget spent is
 * answered 503, retryable, never a false 404). Each probe sent counts in
 * kvgate_stored_response_probes_total. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/hash.h"
#include "base/util.h"
#include "proxy/proxy_int.h"

#define WAYS 4
#define BUCKETS 16384
#define NEG_BUCKETS 1024
#define LEARN_MAX 8192 /* the id comes in the answer's first bytes or not at all */
#define PROBE_PARALLEL 4
#define PROBE_TIMEOUT_MS 2000
#define PROBES_PER_S 50
#define NEG_TTL_MS 5000

struct slot {
    uint64_t id, worker; /* 0: free; the negative table: worker is the expiry, ms */
    uint64_t age;
};

/* The ids' workers, and the ids no worker had (a smaller table of the same
 * shape). */
static struct slot slots[BUCKETS][WAYS], neg_slots[NEG_BUCKETS][WAYS];
static struct table {
    pthread_mutex_t mu;
    uint64_t clock;
    size_t nb;
    struct slot (*s)[WAYS];
} table = {PTHREAD_MUTEX_INITIALIZER, 0, BUCKETS, slots},
  negative = {PTHREAD_MUTEX_INITIALIZER, 0, NEG_BUCKETS, neg_slots};

/* The probes of this second (every loop thread's). */
static struct {
    pthread_mutex_t mu;
    uint64_t second, used;
} budget = {.mu = PTHREAD_MUTEX_INITIALIZER};

static uint64_t id_hash(const char *id, size_t n)
{
    uint64_t h = kvg_hash_fnv1a64(KVG_HASH_FNV1A64_SEED, id, n);
    return h ? h : 1;
}

static void put(struct table *t, uint64_t id, uint64_t worker)
{
    pthread_mutex_lock(&t->mu);
    struct slot *b = t->s[id % t->nb], *v = &b[0];
    for (int i = 0; i < WAYS; i++) {
        if (b[i].id == id || !b[i].id) {
            v = &b[i];
            break;
        }
        if (b[i].age < v->age) v = &b[i];
    }
    *v = (struct slot){id, worker, ++t->clock};
    pthread_mutex_unlock(&t->mu);
}

static uint64_t get(struct table *t, uint64_t id)
{
    uint64_t w = 0;
    pthread_mutex_lock(&t->mu);
    struct slot *b = t->s[id % t->nb];
    for (int i = 0; i < WAYS; i++)
        if (b[i].id == id) w = b[i].worker;
    pthread_mutex_unlock(&t->mu);
    return w;
}

static void forget(struct table *t, uint64_t id)
{
    pthread_mutex_lock(&t->mu);
    struct slot *b = t->s[id % t->nb];
    for (int i = 0; i < WAYS; i++)
        if (b[i].id == id) b[i] = (struct slot){0, 0, 0};
    pthread_mutex_unlock(&t->mu);
}

/* One probe from this second's budget: 1, or 0 when it is spent. */
static int budget_take(void)
{
    uint64_t now = kvg_now_ms() / 1000;
    int ok;
    pthread_mutex_lock(&budget.mu);
    if (budget.second != now) budget.second = now, budget.used = 0;
    ok = budget.used < PROBES_PER_S;
    budget.used += (uint64_t)ok;
    pthread_mutex_unlock(&budget.mu);
    return ok;
}

/* Whether a worker with this URL hash is in the pool. */
static int in_pool(struct kvg_pool *pool, uint64_t worker)
{
    struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
    size_t n = kvg_pool_snapshot(pool, ws, KVG_POOL_MAX_WORKERS);
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        if (ws[i]->url_hash == worker) found = 1;
        kvg_worker_unref(ws[i]);
    }
    return found;
}

/* A lookup: the workers to ask (a reference each), the next one, the
 * calls in flight. Owned by its request (pr->lookup). */
struct probe {
    struct kvg__stored_lookup *lk;
    struct kvg_worker *w;
    struct kvg_http_call *call; /* NULL: not in flight */
    int status;
    char head[512]; /* the answer's first bytes: its object's id is in them */
    size_t hl;
};
struct kvg__stored_lookup {
    struct proxy_req *pr;
    struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
    size_t n, next, inflight;
    int skipped;    /* a worker left unasked: the budget was spent */
    uint64_t found; /* the URL hash of the worker that answered 200 */
    struct probe p[PROBE_PARALLEL];
};

static void lookup_free(struct proxy_req *pr)
{
    struct kvg__stored_lookup *lk = pr->lookup;
    if (!lk) return;
    for (size_t i = 0; i < PROBE_PARALLEL; i++)
        if (lk->p[i].call) kvg_http_call_cancel(lk->p[i].call);
    for (size_t i = 0; i < lk->n; i++) kvg_worker_unref(lk->ws[i]);
    free(lk);
    pr->lookup = NULL;
}

void kvg__proxy_stored_cancel(struct proxy_req *pr)
{
    lookup_free(pr);
}

static const char *stored_id(const struct proxy_req *pr)
{
    return pr->route == KVG_API_RESPONSE_ID ? pr->obj_id : pr->ri.prev_id;
}

static void not_found(struct proxy_req *pr, const char *id, int gone)
{
    char msg[300];
    snprintf(msg, sizeof msg,
             gone ? "Response '%.128s' was stored by a worker that is no longer in the pool."
                  : "Response with id '%.128s' not found.",
             id);
    kvg__proxy_error(pr, 404, "invalid_request_error", "response_not_found", msg,
                     pr->route == KVG_API_RESPONSES ? "previous_response_id" : NULL, NULL, 0);
}

/* Every worker asked, or one found it: the request goes on or is answered. */
static void lookup_end(struct kvg__stored_lookup *lk)
{
    struct proxy_req *pr = lk->pr;
    const char *id = stored_id(pr);
    uint64_t found = lk->found, h = id_hash(id, strlen(id));
    int skipped = lk->skipped;
    lookup_free(pr);
    if (found) {
        put(&table, h, found);
        pr->stored_worker = found;
        kvg__proxy_admit(pr);
    } else if (skipped) {
        static const struct kvg_http_header retry = {KVG_STR("retry-after"), KVG_STR("1")};
        kvg__proxy_error(pr, 503, "server_error", "stored_lookup_busy",
                         "Too many lookups of unknown response ids: try again shortly.",
                         pr->route == KVG_API_RESPONSES ? "previous_response_id" : NULL, &retry, 1);
    } else {
        put(&negative, h, kvg_now_ms() + NEG_TTL_MS);
        not_found(pr, id, 0);
    }
}

static void probe_start(struct kvg__stored_lookup *lk, struct probe *p);

static void probe_head(void *ud, int status, const struct kvg_http_header *h, size_t n)
{
    (void)h, (void)n;
    ((struct probe *)ud)->status = status;
}

static void probe_body(void *ud, const char *p, size_t n)
{
    struct probe *pb = ud;
    size_t take = KVG_MIN(n, sizeof pb->head - pb->hl);
    memcpy(pb->head + pb->hl, p, take);
    pb->hl += take;
}

static const char *first_id(const char *b, size_t n, size_t *len);

/* A 200 whose object is the response asked for (an engine that answers
 * 200 to every path holds nothing). */
static int holds(const struct probe *p, const char *id)
{
    size_t len = 0;
    const char *got = p->status == 200 ? first_id(p->head, p->hl, &len) : NULL;
    return got && len == strlen(id) && !memcmp(got, id, len);
}

static void probe_done(void *ud, int err)
{
    struct probe *p = ud;
    struct kvg__stored_lookup *lk = p->lk;
    p->call = NULL;
    lk->inflight--;
    if (!err && !lk->found && holds(p, stored_id(lk->pr))) lk->found = p->w->url_hash;
    if (!lk->found) probe_start(lk, p);
    if (lk->found || !lk->inflight) lookup_end(lk); /* frees lk: the other calls cancelled */
}

static const struct kvg_http_call_cbs probe_cbs = {probe_head, probe_body, probe_done};

/* The next unasked worker into slot p, while the budget lasts. */
static void probe_start(struct kvg__stored_lookup *lk, struct probe *p)
{
    struct proxy_req *pr = lk->pr;
    const char *id = stored_id(pr);
    char path[200], bearer[300];
    int pl = snprintf(path, sizeof path, "/v1/responses/%s", id);
    while (lk->next < lk->n) {
        if (!budget_take()) {
            lk->skipped = 1;
            return;
        }
        struct kvg_worker *w = lk->ws[lk->next++];
        struct kvg_http_header hs[2] = {
            {KVG_STR("x-request-id"), {pr->request_id, strlen(pr->request_id)}}};
        size_t nh = 1 + (size_t)kvg_worker_auth_header(w, bearer, sizeof bearer, &hs[1]);
        struct kvg_http_call_opts o = {.connect_timeout_ms = PROBE_TIMEOUT_MS,
                                       .first_byte_timeout_ms = PROBE_TIMEOUT_MS,
                                       .idle_timeout_ms = PROBE_TIMEOUT_MS,
                                       .total_timeout_ms = PROBE_TIMEOUT_MS};
        *p = (struct probe){.lk = lk, .w = w};
        if (pr->pl->px->m->stored_probes) kvg_metrics_inc(pr->pl->px->m->stored_probes);
        if (!kvg_http_call_start(pr->pl->client, &w->target, "GET",
                                 (struct kvg_str){path, (size_t)pl}, hs, nh, NULL, 0, &o,
                                 &probe_cbs, p, &p->call)) {
            lk->inflight++;
            return;
        }
        p->call = NULL; /* not reachable from here: the next one */
    }
}

/* Whether id may go into a probe's path as it is: the engines' ids are
 * letters, digits, '_' and '-' (resp_<hex>); anything else (a '/', "..",
 * a '?') would make the probe another request, so it is not asked. */
static int probe_safe(const char *id)
{
    size_t n = strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-");
    return n && !id[n] && n < 128;
}

/* Asks the model's healthy workers for an id this process does not know.
 * 0: the lookup is on (the request goes on from lookup_end), or a negative
 * code (nothing to ask: the caller answers). */
static int lookup_begin(struct proxy_req *pr)
{
    struct kvg__stored_lookup *lk = calloc(1, sizeof *lk);
    if (!lk) return -ENOMEM;
    lk->pr = pr;
    struct kvg_worker *all[KVG_POOL_MAX_WORKERS];
    size_t n = kvg_pool_snapshot(pr->pl->px->pool, all, KVG_POOL_MAX_WORKERS);
    for (size_t i = 0; i < n; i++) {
        struct kvg_worker *w = all[i];
        if (atomic_load(&w->healthy) && !atomic_load(&w->removed) && !atomic_load(&w->draining) &&
            kvg_worker_serves(w, pr->ri.model, pr->ri.model_len) && kvg__proxy_catalog_has(pr, w))
            lk->ws[lk->n++] = w;
        else
            kvg_worker_unref(w);
    }
    pr->lookup = lk;
    for (size_t i = 0; i < PROBE_PARALLEL && lk->next < lk->n; i++) probe_start(lk, &lk->p[i]);
    if (!lk->inflight) {
        int rc = lk->skipped ? -EBUSY : KVG_ENOTFOUND;
        lookup_free(pr);
        return rc;
    }
    return 0;
}

int kvg__proxy_stored_route(struct proxy_req *pr)
{
    const char *id = NULL;
    if (pr->route == KVG_API_RESPONSE_ID)
        id = pr->obj_id;
    else if (pr->route == KVG_API_RESPONSES && pr->ri.prev_id[0])
        id = pr->ri.prev_id;
    if (pr->route == KVG_API_RESPONSES) pr->stored_learn = 1;
    if (!id) return 0;
    uint64_t h = id_hash(id, strlen(id)), w = get(&table, h);
    if (w && in_pool(pr->pl->px->pool, w)) {
        pr->stored_worker = w;
        return 0;
    }
    if (!w && probe_safe(id) && get(&negative, h) <= kvg_now_ms()) {
        int rc = lookup_begin(pr);
        if (!rc) return 1;
        if (rc == -EBUSY) {
            struct kvg__stored_lookup none = {.pr = pr, .skipped = 1};
            lookup_end(&none);
            return 1;
        }
    }
    not_found(pr, id, w != 0);
    return 1;
}

/* The first "id" string member in b[0, n): its value's bytes, or NULL. */
static const char *first_id(const char *b, size_t n, size_t *len)
{
    static const char key[] = "\"id\":";
    const char *p = b, *end = b + n;
    while ((p = memmem(p, (size_t)(end - p), key, sizeof key - 1))) {
        const char *v = p + sizeof key - 1;
        while (v < end && (*v == ' ' || *v == '\t')) v++;
        if (v < end && *v == '"') {
            const char *e = memchr(v + 1, '"', (size_t)(end - v - 1));
            if (!e) return NULL; /* not all of it yet */
            *len = (size_t)(e - v - 1);
            return v + 1;
        }
        p = v;
    }
    return NULL;
}

void kvg__proxy_stored_learn(struct proxy_req *pr, const char *p, size_t n)
{
    if (!pr->stored_learn || pr->up_status < 200 || pr->up_status >= 300) return;
    if (!pr->learn.limit) kvg_buf_init(&pr->learn, LEARN_MAX);
    size_t take = KVG_MIN(n, LEARN_MAX - pr->learn.len);
    if (kvg_buf_append(&pr->learn, p, take)) {
        pr->stored_learn = 0;
        return;
    }
    size_t len = 0;
    const char *id = first_id(pr->learn.data, pr->learn.len, &len);
    if (id && len && len < 128) {
        put(&table, id_hash(id, len), kvg_hash_fnv1a64_str(KVG_HASH_FNV1A64_SEED, pr->worker_url));
        pr->stored_learn = 0;
    } else if (pr->learn.len >= LEARN_MAX) {
        pr->stored_learn = 0;
    }
    if (!pr->stored_learn) kvg_buf_free(&pr->learn);
}

void kvg__proxy_stored_end(struct proxy_req *pr, int status)
{
    lookup_free(pr);
    kvg_buf_free(&pr->learn);
    if (pr->route == KVG_API_RESPONSE_ID && !strcmp(pr->method, "DELETE") && status >= 200 &&
        status < 300)
        forget(&table, id_hash(pr->obj_id, strlen(pr->obj_id)));
}
