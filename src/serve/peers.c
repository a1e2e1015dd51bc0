/* The replicas' exchange, live (router/exchange.h, docs/replicas.md): every
 * pick of this replica goes into the outbox (the pool's on_pick hook);
 * every --exchange-ms the main loop's timer takes the outbox as one batch
 * and POSTs it to each peer's /peers/batch, one call in flight per peer and
 * never on a request's path. A peer that fails (refused, timed out, not
 * 200) is down: its batches are dropped (counted) until its backoff ends,
 * its address is resolved again and a batch goes through, and meanwhile
 * this replica routes on what it has. With nothing to send a replica still
 * sends an empty batch every second, so that a peer's state is known.
 * Every batch carries this replica's in-flight count of each worker
 * (exchange version 3), and a batch goes whenever those changed: a peer's
 * load guard reads them (router/exchange.h, kvg_exchange_peers). A peer not
 * heard for three periods (2.5 s at least: the heartbeat's, with margin)
 * is forgotten, its counts with it.
 *
 * The receiving side runs on the loop that got the request: the head check
 * takes the peer token (or an admin key, or loopback without keys, as the
 * admin API) and the body's declared size, the handler the content type,
 * the size and every record before any is applied; then each record goes
 * to the policy of the model its worker serves, without waiting for a lock
 * (struct kvg_route_ctx's nowait).
 *
 * The list of peers is replaced whole by a SIGHUP (kvg__serve_peers_set):
 * the loops read it through a holder (base/holder.h) for /workers and a
 * batch's sender; the main loop, its only writer, sends from it. A peer
 * that stays moves to the new list as it is (state, counts, call in
 * flight); one that goes has its call cancelled and its series removed,
 * its memory freed when the last list (or resolve) holding it lets go. */
#include <errno.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "base/hash.h"
#include "base/holder.h"
#include "base/log.h"
#include "metrics/metrics.h"
#include "net/resolve.h"
#include "router/catalog.h"
#include "router/exchange.h"
#include "serve/peers.h"
#include "serve/serve.h"

enum peer_state { PEER_UNKNOWN, PEER_UP, PEER_DOWN };
static const char *const state_names[] = {"unknown", "up", "down"};

/* Backoff after a failure: doubling from this, up to the cap. */
#define BACKOFF_MIN_MS 200
#define BACKOFF_MAX_MS 5000
/* A call's bounds: a peer slower than this is down. */
#define CONNECT_TIMEOUT_MS 1000
#define CALL_TIMEOUT_MS 2000
/* An empty batch this often when there is nothing to send. */
#define HEARTBEAT_MS 1000

/* One encoded batch, shared by the calls that send it (borrowed bodies). */
struct batch {
    int refs;
    uint32_t nrec;
    struct kvg_buf b;
};

struct peer {
    _Atomic int refs; /* the lists holding it, and its resolve in flight */
    struct kvg_serve_peers *ps;
    char url[512];
    struct kvg_http_target t;
    int resolved, resolving;
    struct kvg_http_call *call; /* the one in flight, NULL none */
    struct batch *sending;      /* its body */
    /* Main loop only, except where atomic: /workers and /metrics read them
     * from any thread. */
    _Atomic int state;
    _Atomic uint64_t last_ok_ms, sent, received, dropped;
    uint32_t fails;
    uint64_t retry_at_ms;
    int status;       /* the failed call's HTTP status, 0: no answer */
    char answer[160]; /* the start of its body, for the log */
    size_t nanswer;
    struct kvg_metrics_series *m_up, *m_sent, *m_received, *m_dropped;
    int removed; /* main loop: no longer listed (a resolve's answer is dropped) */
};

/* One version of the peer list; each entry one reference to its peer. */
struct peer_list {
    _Atomic int refs;
    size_t n;
    struct peer *p[];
};

struct kvg_serve_peers {
    struct kvg_serve *sv;
    struct kvg_exchange *x;           /* the outbox */
    struct kvg_exchange_peers *heard; /* the peers' in-flight counts (owned) */
    uint64_t loads_sig;               /* main loop: the counts of the last batch sent */
    _Atomic size_t heard_n;           /* the peers heard within the ttl, at the last tick */
    uint64_t sender, seq, last_send_ms;
    char self[512];
    uv_loop_t *loop;
    uv_timer_t timer;
    int timer_on, stopping;
    struct kvg_http_client *client;
    struct kvg_holder list; /* the current struct peer_list, for the loops */
    struct peer_list *cur;  /* the same, the holder's reference: main loop only */
    /* Main loop: what the list is made of, the peers given (--peers,
     * peers:) and those --peer-service's name gave (peers_dns.c). */
    struct kvg_strlist given, found;
    /* Batches from elsewhere: refused (by reason) and records of unknown
     * workers or from a sender no --peers names. */
    _Atomic uint64_t refused, unknown_workers, from_others;
    struct kvg_metrics_family *f_up, *f_records;
};

static void batch_unref(struct batch *b)
{
    if (b && --b->refs == 0) {
        kvg_buf_free(&b->b);
        free(b);
    }
}

static void peer_series_remove(struct peer *p)
{
    kvg_metrics_series_remove(p->m_up);
    kvg_metrics_series_remove(p->m_sent);
    kvg_metrics_series_remove(p->m_received);
    kvg_metrics_series_remove(p->m_dropped);
}

static void peer_unref(struct peer *p)
{
    if (atomic_fetch_sub(&p->refs, 1) != 1) return;
    peer_series_remove(p); /* a list that failed to be made, or the last one at exit */
    kvg_metrics_series_release(p->m_up);
    kvg_metrics_series_release(p->m_sent);
    kvg_metrics_series_release(p->m_received);
    kvg_metrics_series_release(p->m_dropped);
    free(p);
}

static void list_ref(void *l)
{
    atomic_fetch_add(&((struct peer_list *)l)->refs, 1);
}

static void list_unref(void *v)
{
    struct peer_list *l = v;
    if (!l || atomic_fetch_sub(&l->refs, 1) != 1) return;
    for (size_t i = 0; i < l->n; i++) peer_unref(l->p[i]);
    free(l);
}

static void set_state(struct peer *p, enum peer_state s)
{
    int was = atomic_exchange(&p->state, s);
    kvg_metrics_set(p->m_up, s == PEER_UP);
    if (was == (int)s) return;
    if (s == PEER_UP)
        KVG_INFO("peer %s: up, exchanging routing history", p->url);
    else
        KVG_WARN("peer %s: down (%s), routing without its history until it answers", p->url,
                 p->status ? "an error answer" : "no answer");
}

static void failed(struct peer *p, uint32_t lost)
{
    atomic_fetch_add(&p->dropped, lost);
    kvg_metrics_add(p->m_dropped, lost);
    p->fails++;
    uint64_t back = BACKOFF_MIN_MS << (p->fails < 6 ? p->fails - 1 : 5);
    p->retry_at_ms = kvg_now_ms() + (back < BACKOFF_MAX_MS ? back : BACKOFF_MAX_MS);
    p->resolved = 0; /* a restarted peer may come back elsewhere */
    set_state(p, PEER_DOWN);
}

static void on_head(void *ud, int status, const struct kvg_http_header *h, size_t n)
{
    (void)h;
    (void)n;
    ((struct peer *)ud)->status = status;
}

static void on_body(void *ud, const char *b, size_t n)
{
    struct peer *p = ud;
    size_t room = sizeof p->answer - 1 - p->nanswer;
    if (n > room) n = room;
    memcpy(p->answer + p->nanswer, b, n);
    p->nanswer += n;
    p->answer[p->nanswer] = 0;
}

static void on_done(void *ud, int err)
{
    struct peer *p = ud;
    struct batch *b = p->sending;
    p->call = NULL;
    p->sending = NULL;
    uint32_t nrec = b ? b->nrec : 0;
    if (!err && p->status == 200) {
        p->fails = 0;
        atomic_store(&p->last_ok_ms, kvg_now_ms());
        atomic_fetch_add(&p->sent, nrec);
        kvg_metrics_add(p->m_sent, nrec);
        set_state(p, PEER_UP);
    } else {
        if (p->status)
            KVG_DEBUG("peer %s: batch answered %d: %s", p->url, p->status, p->answer);
        else
            KVG_DEBUG("peer %s: batch failed: %s", p->url, kvg_strerror(err));
        failed(p, nrec);
    }
    batch_unref(b);
}

static void send_to(struct peer *p, struct batch *b)
{
    struct kvg_serve_peers *ps = p->ps;
    char auth[300];
    struct kvg_http_header h[2] = {{KVG_STR("content-type"), KVG_STR(KVG_EXCHANGE_CONTENT_TYPE)}};
    size_t nh = 1;
    if (ps->sv->cfg.peer_token[0]) {
        int len = snprintf(auth, sizeof auth, "Bearer %s", ps->sv->cfg.peer_token);
        h[nh++] = (struct kvg_http_header){KVG_STR("authorization"), {auth, (size_t)len}};
    }
    struct kvg_http_call_opts o = {.connect_timeout_ms = CONNECT_TIMEOUT_MS,
                                   .first_byte_timeout_ms = CALL_TIMEOUT_MS,
                                   .idle_timeout_ms = CALL_TIMEOUT_MS,
                                   .total_timeout_ms = CALL_TIMEOUT_MS,
                                   .borrow_body = 1};
    static const struct kvg_http_call_cbs cbs = {on_head, on_body, on_done};
    p->status = 0;
    p->nanswer = 0;
    p->answer[0] = 0;
    p->sending = b;
    b->refs++;
    int rc = kvg_http_call_start(ps->client, &p->t, "POST", KVG_STR(KVG_SERVE_PEERS_PATH), h, nh,
                                 b->b.data, b->b.len, &o, &cbs, p, &p->call);
    if (rc) {
        p->call = NULL;
        p->sending = NULL;
        b->refs--;
        KVG_DEBUG("peer %s: cannot send: %s", p->url, kvg_strerror(rc));
        failed(p, b->nrec);
    }
}

static void resolved(void *ud, int status, const struct kvg_http_target *t)
{
    struct peer *p = ud;
    p->resolving = 0;
    if (p->ps->stopping || p->removed) {
        peer_unref(p); /* the resolve's reference */
        return;
    }
    if (status) {
        KVG_DEBUG("peer %s: %s", p->url, kvg_strerror(status));
        failed(p, 0);
    } else {
        p->t = *t;
        p->resolved = 1;
    }
    peer_unref(p);
}

/* A hash of the pool's in-flight counts: a batch goes when they changed. */
static uint64_t loads_sig(struct kvg_pool *p)
{
    uint64_t h = KVG_HASH_FNV1A64_SEED;
    pthread_rwlock_rdlock(&p->lock);
    for (size_t i = 0; i < p->n; i++) {
        uint32_t c = atomic_load_explicit(&p->w[i]->in_flight, memory_order_relaxed);
        uintptr_t w = (uintptr_t)p->w[i];
        h = kvg_hash_fnv1a64(h, &w, sizeof w);
        h = kvg_hash_fnv1a64(h, &c, sizeof c);
    }
    pthread_rwlock_unlock(&p->lock);
    return h;
}

/* The timer: this period's batch to every peer that can take it. */
static void tick(uv_timer_t *t)
{
    struct kvg_serve_peers *ps = t->data;
    uint64_t now = kvg_now_ms();
    atomic_store(&ps->heard_n, kvg_exchange_peers_expire(ps->heard, &ps->sv->pool, now));
    struct kvg_exchange_stats st;
    kvg_exchange_stats(ps->x, &st);
    uint64_t sig = loads_sig(&ps->sv->pool);
    if (!st.queued && sig == ps->loads_sig && now - ps->last_send_ms < HEARTBEAT_MS) return;
    ps->loads_sig = sig;
    struct batch *b = calloc(1, sizeof *b);
    if (!b) return;
    b->refs = 1;
    kvg_buf_init(&b->b, 0);
    int n = kvg_exchange_flush(ps->x, ps->sender, ++ps->seq, ps->self, &b->b);
    if (n < 0) {
        KVG_WARN("peers: cannot encode a batch: %s", kvg_strerror(n));
        batch_unref(b);
        return;
    }
    b->nrec = (uint32_t)n;
    ps->last_send_ms = now;
    for (size_t i = 0; i < ps->cur->n; i++) {
        struct peer *p = ps->cur->p[i];
        if (p->call || now < p->retry_at_ms || p->resolving) {
            /* Still sending the last one (a slow peer), or backing off:
             * this batch is lost to it. One call per peer bounds memory. */
            atomic_fetch_add(&p->dropped, b->nrec);
            kvg_metrics_add(p->m_dropped, b->nrec);
            continue;
        }
        if (!p->resolved) {
            atomic_fetch_add(&p->dropped, b->nrec);
            kvg_metrics_add(p->m_dropped, b->nrec);
            p->resolving = 1;
            atomic_fetch_add(&p->refs, 1); /* the resolve's, dropped in resolved() */
            if (kvg_resolve_url(ps->loop, p->url, resolved, p)) {
                p->resolving = 0;
                atomic_fetch_sub(&p->refs, 1); /* the list still holds it */
                failed(p, 0);
            }
            continue;
        }
        send_to(p, b);
    }
    batch_unref(b);
}

static void self_name(const struct kvg_serve_config *c, char *out, size_t cap)
{
    if (c->peer_self[0]) {
        snprintf(out, cap, "%s", c->peer_self);
        return;
    }
    const char *h = c->host;
    char host[256] = "";
    if (!h[0] || !strcmp(h, "0.0.0.0") || !strcmp(h, "::")) {
        gethostname(host, sizeof host - 1);
        h = host;
    }
    snprintf(out, cap, strchr(h, ':') ? "http://[%s]:%d" : "http://%s:%d", h, c->port);
}

/* A new peer at url (checked by the configuration: serve/config.c), state
 * unknown, its series at zero. *out holds one reference. */
static int peer_new(struct kvg_serve_peers *ps, const char *url, struct peer **out, char *err,
                    size_t errlen)
{
    struct peer *p = calloc(1, sizeof *p);
    if (!p) return kvg_err_set(err, errlen, -ENOMEM, "peers: out of memory");
    p->refs = 1;
    p->ps = ps;
    if (strlen(url) >= sizeof p->url) {
        free(p);
        return kvg_err_set(err, errlen, KVG_ECONFIG, "peers: '%s' is too long", url);
    }
    snprintf(p->url, sizeof p->url, "%s", url);
    const char *v[] = {p->url}, *vs[] = {p->url, "sent"}, *vr[] = {p->url, "received"},
               *vd[] = {p->url, "dropped"};
    int rc;
    if ((rc = kvg_metrics_series(ps->f_up, v, 1, &p->m_up)) ||
        (rc = kvg_metrics_series(ps->f_records, vs, 2, &p->m_sent)) ||
        (rc = kvg_metrics_series(ps->f_records, vr, 2, &p->m_received)) ||
        (rc = kvg_metrics_series(ps->f_records, vd, 2, &p->m_dropped))) {
        peer_unref(p);
        return kvg_err_set(err, errlen, rc, "peers: metrics: %s", kvg_strerror(rc));
    }
    *out = p;
    return 0;
}

/* The list urls names, its peers taken from cur where listed there (a
 * reference more each), new ones made. *out holds one reference. */
static int list_make(struct kvg_serve_peers *ps, const struct peer_list *cur,
                     const struct kvg_strlist *urls, struct peer_list **out, char *err,
                     size_t errlen)
{
    struct peer_list *l = calloc(1, sizeof *l + urls->n * sizeof l->p[0]);
    if (!l) return kvg_err_set(err, errlen, -ENOMEM, "peers: out of memory");
    l->refs = 1;
    for (size_t i = 0; i < urls->n; i++) {
        struct peer *p = NULL;
        for (size_t j = 0; cur && j < cur->n && !p; j++)
            if (!strcmp(cur->p[j]->url, urls->v[i])) p = cur->p[j];
        if (p) {
            atomic_fetch_add(&p->refs, 1);
        } else {
            int rc = peer_new(ps, urls->v[i], &p, err, errlen);
            if (rc) {
                list_unref(l);
                return rc;
            }
        }
        l->p[l->n++] = p;
    }
    *out = l;
    return 0;
}

static int listed(const struct peer_list *l, const struct peer *p)
{
    for (size_t i = 0; l && i < l->n; i++)
        if (l->p[i] == p) return 1;
    return 0;
}

/* The list of given then found (each URL once) made current: the peers
 * that stay move over, the others go. */
static int apply(struct kvg_serve_peers *ps, const struct kvg_strlist *given,
                 const struct kvg_strlist *found, size_t *added, size_t *removed, char *err,
                 size_t errlen)
{
    struct kvg_strlist *urls = calloc(1, sizeof *urls);
    struct peer_list *next = NULL;
    int rc = urls ? 0 : -ENOMEM;
    const struct kvg_strlist *parts[] = {given, found};
    for (size_t k = 0; k < 2 && !rc; k++)
        for (size_t i = 0; i < parts[k]->n && !rc; i++) {
            size_t j = 0;
            while (j < urls->n && strcmp(urls->v[j], parts[k]->v[i])) j++;
            if (j == urls->n) rc = kvg_strlist_add(urls, parts[k]->v[i]);
        }
    if (rc) rc = kvg_err_set(err, errlen, rc, "peers: %s", kvg_strerror(rc));
    if (!rc) rc = list_make(ps, ps->cur, urls, &next, err, errlen);
    if (urls) kvg_strlist_free(urls);
    free(urls);
    if (rc) return rc;
    *added = *removed = 0;
    for (size_t i = 0; i < next->n; i++) *added += !listed(ps->cur, next->p[i]);
    /* The ones that go: no more calls or series now; their memory when the
     * last list holding them is let go (a loop may be reading one). */
    for (size_t i = 0; ps->cur && i < ps->cur->n; i++) {
        struct peer *p = ps->cur->p[i];
        if (listed(next, p)) continue;
        (*removed)++;
        p->removed = 1;
        if (p->call) kvg_http_call_cancel(p->call);
        p->call = NULL;
        batch_unref(p->sending);
        p->sending = NULL;
        peer_series_remove(p);
    }
    ps->cur = next;
    kvg_holder_swap(&ps->list, next);
    return 0;
}

/* dst becomes a copy of src; -ENOMEM leaves dst empty. */
static int copy_list(struct kvg_strlist *dst, const struct kvg_strlist *src)
{
    kvg_strlist_free(dst);
    for (size_t i = 0; i < src->n; i++) {
        int rc = kvg_strlist_add(dst, src->v[i]);
        if (rc) {
            kvg_strlist_free(dst);
            return rc;
        }
    }
    return 0;
}

int kvg__serve_peers_set(struct kvg_serve *sv, const struct kvg_strlist *urls, size_t *added,
                         size_t *removed, char *err, size_t errlen)
{
    struct kvg_serve_peers *ps = sv->peers;
    *added = *removed = 0;
    if (!ps)
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "the exchange starts with the process (it records every pick): this "
                           "one started without peers, a restart applies them");
    int rc = apply(ps, urls, &ps->found, added, removed, err, errlen);
    if (!rc && (rc = copy_list(&ps->given, urls)))
        rc = kvg_err_set(err, errlen, rc, "peers: %s", kvg_strerror(rc));
    return rc;
}

int kvg__serve_peers_found(struct kvg_serve *sv, const struct kvg_strlist *found, size_t *added,
                           size_t *removed, char *err, size_t errlen)
{
    struct kvg_serve_peers *ps = sv->peers;
    int rc = apply(ps, &ps->given, found, added, removed, err, errlen);
    if (!rc && (rc = copy_list(&ps->found, found)))
        rc = kvg_err_set(err, errlen, rc, "peers: %s", kvg_strerror(rc));
    return rc;
}

int kvg__serve_peers_init(struct kvg_serve *sv, char *err, size_t errlen)
{
    const struct kvg_serve_config *c = &sv->cfg;
    if (!c->peers.n && !c->peer_service[0]) return 0;
    struct kvg_serve_peers *ps = calloc(1, sizeof *ps);
    if (!ps) return -ENOMEM;
    sv->peers = ps;
    ps->sv = sv;
    kvg_holder_init(&ps->list, NULL, list_ref, list_unref);
    int rc = kvg_exchange_new(c->peer_batch_bytes, &ps->x);
    if (!rc) rc = kvg_exchange_peers_new(kvg_exchange_peers_ttl_ms(c->exchange_ms), &ps->heard);
    if (rc) return kvg_err_set(err, errlen, rc, "peers: %s", kvg_strerror(rc));
    kvg_exchange_set_loads(ps->x, &sv->pool);
    struct kvg_rng r;
    kvg_rng_seed(&r, kvg_now_ns() ^ ((uint64_t)getpid() << 32));
    ps->sender = kvg_rng_next(&r);
    self_name(c, ps->self, sizeof ps->self);
    const char *up_l[] = {"peer"}, *rec_l[] = {"peer", "dir"};
    if ((rc = kvg_metrics_gauge(sv->metrics.reg, "kvgate_peer_up",
                                "1 when the peer replica took this one's last batch of routing "
                                "history, 0 when it is down (docs/replicas.md).",
                                up_l, 1, &ps->f_up)) ||
        (rc = kvg_metrics_counter(sv->metrics.reg, "kvgate_peer_records_total",
                                  "Routing records exchanged with a peer replica: sent (taken), "
                                  "received (applied here), dropped (lost to a slow or down peer "
                                  "or the batch cap).",
                                  rec_l, 2, &ps->f_records)))
        return kvg_err_set(err, errlen, rc, "peers: metrics: %s", kvg_strerror(rc));
    size_t added, removed;
    if ((rc = kvg__serve_peers_set(sv, &c->peers, &added, &removed, err, errlen))) return rc;
    sv->pool.on_pick = kvg_exchange_on_pick;
    sv->pool.on_pick_ud = ps->x;
    KVG_INFO("peers: %zu, a batch every %u ms as %s", ps->cur->n, c->exchange_ms, ps->self);
    return 0;
}

int kvg__serve_peers_start(struct kvg_serve *sv, uv_loop_t *loop)
{
    struct kvg_serve_peers *ps = sv->peers;
    if (!ps) return 0;
    ps->loop = loop;
    int rc = kvg_http_client_new(loop, NULL, &ps->client);
    if (rc) return rc;
    uv_timer_init(loop, &ps->timer);
    ps->timer.data = ps;
    ps->timer_on = 1;
    return uv_timer_start(&ps->timer, tick, sv->cfg.exchange_ms, sv->cfg.exchange_ms);
}

void kvg__serve_peers_stop(struct kvg_serve *sv)
{
    struct kvg_serve_peers *ps = sv->peers;
    if (!ps) return;
    ps->stopping = 1;
    if (ps->timer_on) {
        uv_timer_stop(&ps->timer);
        uv_close((uv_handle_t *)&ps->timer, NULL);
        ps->timer_on = 0;
    }
    for (size_t i = 0; ps->cur && i < ps->cur->n; i++) {
        struct peer *p = ps->cur->p[i];
        if (p->call) kvg_http_call_cancel(p->call);
        p->call = NULL;
        batch_unref(p->sending);
        p->sending = NULL;
    }
    if (ps->client) kvg_http_client_close(ps->client);
    ps->client = NULL;
}

void kvg__serve_peers_free(struct kvg_serve *sv)
{
    struct kvg_serve_peers *ps = sv->peers;
    if (!ps) return;
    kvg_holder_destroy(&ps->list); /* every peer with its list: no resolve is left */
    kvg_strlist_free(&ps->given);
    kvg_strlist_free(&ps->found);
    kvg_exchange_free(ps->x);
    kvg_exchange_peers_free(ps->heard);
    free(ps);
    sv->peers = NULL;
}

void kvg__serve_peers_json(struct kvg_serve *sv, struct cJSON *root)
{
    struct kvg_serve_peers *ps = sv->peers;
    if (!ps) return;
    cJSON *o = cJSON_AddObjectToObject(root, "peers_exchange");
    struct kvg_exchange_stats st;
    kvg_exchange_stats(ps->x, &st);
    cJSON_AddStringToObject(o, "self", ps->self);
    cJSON_AddNumberToObject(o, "exchange_ms", sv->cfg.exchange_ms);
    cJSON_AddNumberToObject(o, "published", (double)st.published);
    cJSON_AddNumberToObject(o, "dropped_over_cap", (double)st.dropped);
    cJSON_AddNumberToObject(o, "batches", (double)st.batches);
    cJSON_AddNumberToObject(o, "refused_batches", (double)atomic_load(&ps->refused));
    cJSON_AddNumberToObject(o, "unknown_worker_records", (double)atomic_load(&ps->unknown_workers));
    cJSON_AddNumberToObject(o, "records_from_others", (double)atomic_load(&ps->from_others));
    /* 0: this replica routes on its own counts and the engines' alone. */
    cJSON_AddNumberToObject(o, "peers_heard", (double)atomic_load(&ps->heard_n));
    cJSON *arr = cJSON_AddArrayToObject(root, "peers");
    uint64_t now = kvg_now_ms();
    struct peer_list *l = kvg_holder_acquire(&ps->list);
    for (size_t i = 0; l && i < l->n; i++) {
        struct peer *p = l->p[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "url", p->url);
        cJSON_AddStringToObject(e, "state", state_names[atomic_load(&p->state) % 3]);
        uint64_t ok = atomic_load(&p->last_ok_ms);
        if (ok)
            cJSON_AddNumberToObject(e, "last_ok_ms_ago", (double)(now - ok));
        else
            cJSON_AddNullToObject(e, "last_ok_ms_ago");
        cJSON_AddNumberToObject(e, "sent", (double)atomic_load(&p->sent));
        cJSON_AddNumberToObject(e, "received", (double)atomic_load(&p->received));
        cJSON_AddNumberToObject(e, "dropped", (double)atomic_load(&p->dropped));
        cJSON_AddItemToArray(arr, e);
    }
    list_unref(l);
}

/* ---- Receiving. */

int kvg__serve_peers_head(struct kvg_serve *sv, struct kvg_http_req *req,
                          struct kvg_http_refusal *out)
{
    const char *tok = sv->cfg.peer_token;
    struct kvg_str auth = kvg_http_req_header(req, "authorization");
    if (tok[0]) {
        size_t tl = strlen(tok);
        if (auth.len != tl + 7 || strncasecmp(auth.p, "Bearer ", 7) ||
            CRYPTO_memcmp(auth.p + 7, tok, tl)) {
            *out = (struct kvg_http_refusal){.status = 401, .code = "invalid_peer_token"};
            snprintf(out->message, sizeof out->message,
                     "a peer's batch needs the peer token (Authorization: Bearer)");
            return 1;
        }
    } else {
        struct kvg_gate_deny d;
        char cred[600];
        struct kvg_str c =
            kvg_gate_credential(auth, kvg_http_req_header(req, "x-api-key"), cred, sizeof cred);
        if (kvg_gate_check_head(&sv->gate, KVG_GATE_ADMIN, c, req->peer, &req->head_note, &d)) {
            *out = d.r;
            return 1;
        }
    }
    /* The declared size, before the body is read (a view: copied to parse). */
    struct kvg_str cl = kvg_http_req_header(req, "content-length");
    char num[16] = "";
    if (cl.len && cl.len < sizeof num) {
        memcpy(num, cl.p, cl.len);
        num[cl.len] = 0;
    }
    if (cl.len && (cl.len >= sizeof num || strtoull(num, NULL, 10) > sv->cfg.peer_batch_bytes)) {
        *out = (struct kvg_http_refusal){.status = 413, .code = "batch_too_large"};
        snprintf(out->message, sizeof out->message, "a batch is at most %zu bytes",
                 sv->cfg.peer_batch_bytes);
        return 1;
    }
    return 0;
}

struct rx {
    struct kvg_serve *sv;
    struct kvg_catalog *cat;
    uint64_t now;
    uint32_t applied, unknown;
};

/* The policy of the model r's worker serves (NULL: the pool's). */
static struct kvg_policy *policy_for(const struct rx *x, const char *url)
{
    if (!x->cat) return NULL;
    int m = kvg_catalog_worker_model(x->cat, url, "");
    if (m < 0) return NULL;
    const struct kvg_proxy_model *pm = x->cat->models[m].host;
    return pm ? pm->policy : NULL;
}

static int apply_one(void *ud, const struct kvg_exchange_rec *r)
{
    struct rx *x = ud;
    char url[KVG_EXCHANGE_MAX_STR + 1];
    snprintf(url, sizeof url, "%.*s", (int)r->worker.len, r->worker.p);
    int rc = kvg_exchange_apply(&x->sv->pool, policy_for(x, url), r, x->now, 1);
    if (rc == KVG_ENOTFOUND)
        x->unknown++;
    else if (!rc)
        x->applied++;
    return rc == KVG_ENOTFOUND ? 0 : rc;
}

void kvg__serve_peers_receive(struct kvg_serve *sv, struct kvg_http_req *req)
{
    struct kvg_serve_peers *ps = sv->peers;
    struct kvg_str ct = kvg_http_req_header(req, "content-type");
    if (!ps) {
        kvg_http_res_error(req, 404, NULL, "no_peers",
                           "this replica exchanges no routing history (start it with --peers)",
                           NULL, 0);
        return;
    }
    if (!kvg_str_eq_nocase(ct, KVG_EXCHANGE_CONTENT_TYPE)) {
        atomic_fetch_add(&ps->refused, 1);
        kvg_http_res_error(req, 415, NULL, "bad_content_type",
                           "a peer's batch is " KVG_EXCHANGE_CONTENT_TYPE, NULL, 0);
        return;
    }
    struct kvg_exchange_head h;
    const char *why = "";
    int rc = kvg_exchange_decode(req->body.data, req->body.len, sv->cfg.peer_batch_bytes, &h, NULL,
                                 NULL, &why);
    if (rc < 0) {
        atomic_fetch_add(&ps->refused, 1);
        char msg[200];
        snprintf(msg, sizeof msg, "bad batch of routing history: %s", why);
        kvg_http_res_error(req, rc == KVG_ETOOBIG ? 413 : 400, NULL,
                           rc == KVG_ETOOBIG ? "batch_too_large" : "bad_batch", msg, NULL, 0);
        return;
    }
    if (h.sender == ps->sender) { /* --peers names this replica too */
        kvg_http_res_send(req, 200, "application/json", NULL, 0, "{\"self\":true}", 13);
        return;
    }
    struct rx x = {.sv = sv, .now = kvg_now_ms()};
    if (sv->catalogs_on) x.cat = kvg_serve_catalog(sv);
    rc = kvg_exchange_decode(req->body.data, req->body.len, sv->cfg.peer_batch_bytes, NULL,
                             apply_one, &x, &why);
    kvg_catalog_unref(x.cat);
    if (rc >= 0)
        rc = kvg_exchange_peers_apply(ps->heard, &sv->pool, &h, req->body.data, req->body.len,
                                      x.now);
    if (rc < 0) {
        kvg_http_res_error(req, 500, NULL, NULL, kvg_strerror(rc), NULL, 0);
        return;
    }
    atomic_fetch_add(&ps->unknown_workers, x.unknown);
    struct peer *from = NULL;
    struct peer_list *l = kvg_holder_acquire(&ps->list);
    for (size_t i = 0; h.from.len && l && i < l->n; i++)
        if (strlen(l->p[i]->url) == h.from.len && !memcmp(l->p[i]->url, h.from.p, h.from.len))
            from = l->p[i];
    if (from) {
        atomic_fetch_add(&from->received, x.applied);
        kvg_metrics_add(from->m_received, x.applied);
    } else {
        atomic_fetch_add(&ps->from_others, x.applied);
    }
    list_unref(l);
    char body[96];
    int len = snprintf(body, sizeof body, "{\"applied\":%u,\"unknown_workers\":%u}", x.applied,
                       x.unknown);
    kvg_http_res_send(req, 200, "application/json", NULL, 0, body, (size_t)len);
}
