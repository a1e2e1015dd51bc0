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
 * It is this process's knowledge: replicas of kvgate do not share it. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/hash.h"
#include "proxy/proxy_int.h"

#define WAYS 4
#define BUCKETS 16384
#define LEARN_MAX 8192 /* the id comes in the answer's first bytes or not at all */

struct slot {
    uint64_t id, worker; /* 0: free */
    uint64_t age;
};

static struct {
    pthread_mutex_t mu;
    uint64_t clock;
    struct slot s[BUCKETS][WAYS];
} table = {.mu = PTHREAD_MUTEX_INITIALIZER};

static uint64_t id_hash(const char *id, size_t n)
{
    uint64_t h = kvg_hash_fnv1a64(KVG_HASH_FNV1A64_SEED, id, n);
    return h ? h : 1;
}

static void put(uint64_t id, uint64_t worker)
{
    pthread_mutex_lock(&table.mu);
    struct slot *b = table.s[id % BUCKETS], *v = &b[0];
    for (int i = 0; i < WAYS; i++) {
        if (b[i].id == id || !b[i].id) {
            v = &b[i];
            break;
        }
        if (b[i].age < v->age) v = &b[i];
    }
    *v = (struct slot){id, worker, ++table.clock};
    pthread_mutex_unlock(&table.mu);
}

static uint64_t get(uint64_t id)
{
    uint64_t w = 0;
    pthread_mutex_lock(&table.mu);
    struct slot *b = table.s[id % BUCKETS];
    for (int i = 0; i < WAYS; i++)
        if (b[i].id == id) w = b[i].worker;
    pthread_mutex_unlock(&table.mu);
    return w;
}

static void forget(uint64_t id)
{
    pthread_mutex_lock(&table.mu);
    struct slot *b = table.s[id % BUCKETS];
    for (int i = 0; i < WAYS; i++)
        if (b[i].id == id) b[i] = (struct slot){0, 0, 0};
    pthread_mutex_unlock(&table.mu);
}

/* Whether a worker with this URL hash is in the pool. */
static int in_pool(struct kvg_pool *pool, uint64_t worker)
{
    struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
    size_t n = kvg_pool_snapshot(pool, ws, KVG_POOL_MAX_WORKERS);
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        if (kvg_hash_fnv1a64_str(KVG_HASH_FNV1A64_SEED, ws[i]->url) == worker) found = 1;
        kvg_worker_unref(ws[i]);
    }
    return found;
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
    uint64_t w = get(id_hash(id, strlen(id)));
    if (w && in_pool(pr->pl->px->pool, w)) {
        pr->stored_worker = w;
        return 0;
    }
    char msg[300];
    snprintf(msg, sizeof msg,
             w ? "Response '%.128s' was stored by a worker that is no longer in the pool."
               : "Response with id '%.128s' not found.",
             id);
    kvg__proxy_error(pr, 404, "invalid_request_error", "response_not_found", msg,
                     pr->route == KVG_API_RESPONSES ? "previous_response_id" : NULL, NULL, 0);
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
        put(id_hash(id, len), kvg_hash_fnv1a64_str(KVG_HASH_FNV1A64_SEED, pr->worker_url));
        pr->stored_learn = 0;
    } else if (pr->learn.len >= LEARN_MAX) {
        pr->stored_learn = 0;
    }
    if (!pr->stored_learn) kvg_buf_free(&pr->learn);
}

void kvg__proxy_stored_end(struct proxy_req *pr, int status)
{
    kvg_buf_free(&pr->learn);
    if (pr->route == KVG_API_RESPONSE_ID && !strcmp(pr->method, "DELETE") && status >= 200 &&
        status < 300)
        forget(id_hash(pr->obj_id, strlen(pr->obj_id)));
}
