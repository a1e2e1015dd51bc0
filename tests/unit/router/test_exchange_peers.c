/* The peers' in-flight counts (router/exchange.h, version 3 batches and
 * struct kvg_exchange_peers): a batch carries its sender's count of every
 * worker; a receiver sums its live senders' counts per worker URL, a
 * sender's new counts replace its last, a silent one is forgotten after
 * the ttl (and the load falls back to the engine's sample), the table
 * stays within its cap of senders, and a malformed load section refuses
 * the batch whole. The load replicas see alike (kvg_policy_shared_load)
 * is this router's count plus the peers', or the engine's where more. */
#include "support/test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/bytes.h"
#include "base/err.h"
#include "router/exchange.h"
#include "router/pool.h"

#define URL_A "http://127.0.0.1:9401"
#define URL_B "http://127.0.0.1:9402"

static struct kvg_rng rng;

static void pool_of(struct kvg_pool *pool)
{
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new("prefix_hash", &o, &p), 0);
    CHECK_INT(kvg_pool_init(pool, p, NULL), 0);
    CHECK_INT(kvg_pool_add(pool, URL_A), 0);
    CHECK_INT(kvg_pool_add(pool, URL_B), 0);
}

static struct kvg_worker *worker(struct kvg_pool *p, const char *url)
{
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->w[i]->url, url)) return p->w[i];
    return NULL;
}

static void set_inflight(struct kvg_pool *p, uint32_t a, uint32_t b)
{
    atomic_store(&worker(p, URL_A)->in_flight, a);
    atomic_store(&worker(p, URL_B)->in_flight, b);
}

/* Sender `id`'s batch (its pool's counts) applied on `to` at now. */
static int deliver(struct kvg_exchange *x, uint64_t id, struct kvg_exchange_peers *t,
                   struct kvg_pool *to, uint64_t now)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    CHECK(kvg_exchange_flush(x, id, 1, NULL, &b) >= 0);
    struct kvg_exchange_head h;
    const char *why;
    CHECK(kvg_exchange_decode(b.data, b.len, b.len, &h, NULL, NULL, &why) >= 0);
    int rc = kvg_exchange_peers_apply(t, to, &h, b.data, b.len, now);
    kvg_buf_free(&b);
    return rc;
}

static uint32_t peer_count(struct kvg_pool *p, const char *url)
{
    return atomic_load(&worker(p, url)->peer_in_flight);
}

static double shared(struct kvg_pool *p, const char *url, uint64_t now)
{
    struct kvg_route_ctx c = {.rng = &rng, .now_ms = now, .load_max_age_ms = 500};
    return kvg_policy_shared_load(worker(p, url), &c);
}

/* Replica A's outbox carrying its pool's counts, replica B hearing them. */
struct pair {
    struct kvg_pool a, b;
    struct kvg_exchange *x;
    struct kvg_exchange_peers *t;
};

static void pair_open(struct pair *p, uint64_t ttl_ms)
{
    pool_of(&p->a);
    pool_of(&p->b);
    CHECK_INT(kvg_exchange_new(0, &p->x), 0);
    kvg_exchange_set_loads(p->x, &p->a);
    CHECK_INT(kvg_exchange_peers_new(ttl_ms, &p->t), 0);
}

static void pair_close(struct pair *p)
{
    kvg_exchange_peers_free(p->t);
    kvg_exchange_free(p->x);
    kvg_pool_destroy(&p->a);
    kvg_pool_destroy(&p->b);
}

TEST(a_batch_carries_the_senders_in_flight_counts)
{
    struct kvg_pool a, b;
    pool_of(&a);
    pool_of(&b);
    struct kvg_exchange *x;
    CHECK_INT(kvg_exchange_new(0, &x), 0);
    struct kvg_exchange_peers *t;
    CHECK_INT(kvg_exchange_peers_new(300, &t), 0);
    /* Without a pool the batch is version 1 and says nothing of load. */
    set_inflight(&a, 3, 0);
    CHECK_INT(deliver(x, 7, t, &b, 1000), 0);
    CHECK_INT(atomic_load(&worker(&b, URL_A)->peer_view), 0);
    kvg_exchange_set_loads(x, &a);
    CHECK_INT(deliver(x, 7, t, &b, 1000), 2); /* both workers' counts */
    CHECK_INT(peer_count(&b, URL_A), 3);
    CHECK_INT(peer_count(&b, URL_B), 0);
    CHECK_INT(atomic_load(&worker(&b, URL_B)->peer_view), 1);
    /* B's own request plus A's three; no engine sample */
    atomic_store(&worker(&b, URL_A)->in_flight, 1);
    CHECK_NEAR(shared(&b, URL_A, 1000), 4, 1e-9);
    /* Records and counts in one batch: the records still decode whole. */
    uint64_t h[2] = {11, 12};
    CHECK_INT(kvg_exchange_publish(x, URL_B, KVG_STR_NULL, 16, 32, h, 2, KVG_STR_NULL), 1);
    struct kvg_buf buf;
    kvg_buf_init(&buf, 0);
    CHECK_INT(kvg_exchange_flush(x, 7, 2, NULL, &buf), 1);
    CHECK_INT(((const uint8_t *)buf.data)[4], 3);
    struct kvg_exchange_head hd;
    const char *why;
    CHECK_INT(kvg_exchange_decode(buf.data, buf.len, buf.len, &hd, NULL, NULL, &why), 1);
    CHECK_INT(hd.version, 3);
    kvg_buf_free(&buf);
    kvg_exchange_peers_free(t);
    kvg_exchange_free(x);
    kvg_pool_destroy(&a);
    kvg_pool_destroy(&b);
}

TEST(senders_add_up_and_a_senders_new_counts_replace_its_last)
{
    struct kvg_pool a, b, c;
    pool_of(&a);
    pool_of(&b);
    pool_of(&c);
    struct kvg_exchange *xa, *xc;
    CHECK_INT(kvg_exchange_new(0, &xa), 0);
    CHECK_INT(kvg_exchange_new(0, &xc), 0);
    kvg_exchange_set_loads(xa, &a);
    kvg_exchange_set_loads(xc, &c);
    struct kvg_exchange_peers *t;
    CHECK_INT(kvg_exchange_peers_new(300, &t), 0);
    set_inflight(&a, 3, 1);
    set_inflight(&c, 4, 0);
    CHECK_INT(deliver(xa, 1, t, &b, 1000), 2);
    CHECK_INT(deliver(xc, 3, t, &b, 1000), 2);
    CHECK_INT(peer_count(&b, URL_A), 7);
    CHECK_INT(peer_count(&b, URL_B), 1);
    /* A's requests end: its next batch replaces its counts, C's stay */
    set_inflight(&a, 0, 0);
    CHECK_INT(deliver(xa, 1, t, &b, 1100), 2);
    CHECK_INT(peer_count(&b, URL_A), 4);
    CHECK_INT(peer_count(&b, URL_B), 0);
    kvg_exchange_peers_free(t);
    kvg_exchange_free(xa);
    kvg_exchange_free(xc);
    kvg_pool_destroy(&a);
    kvg_pool_destroy(&b);
    kvg_pool_destroy(&c);
}

TEST(a_silent_sender_is_forgotten_after_the_ttl)
{
    struct pair p;
    pair_open(&p, 300);
    set_inflight(&p.a, 5, 0);
    CHECK_INT(deliver(p.x, 1, p.t, &p.b, 1000), 2);
    /* The engine's sample (2 + 0) says less than the fleet's count: 5. */
    struct kvg_worker *w = worker(&p.b, URL_A);
    pthread_mutex_lock(&w->mu);
    w->load.waiting = 0;
    w->load.running = 2;
    w->load.at_ms = 1150;
    pthread_mutex_unlock(&w->mu);
    CHECK_INT(kvg_exchange_peers_expire(p.t, &p.b, 1200), 1);
    CHECK_NEAR(shared(&p.b, URL_A, 1200), 5, 1e-9);
    /* ... and where it says more (requests from elsewhere), it is the load */
    pthread_mutex_lock(&w->mu);
    w->load.running = 9;
    pthread_mutex_unlock(&w->mu);
    CHECK_NEAR(shared(&p.b, URL_A, 1200), 9, 1e-9);
    pthread_mutex_lock(&w->mu);
    w->load.running = 2;
    w->load.at_ms = 1390;
    pthread_mutex_unlock(&w->mu);
    /* Past the ttl the peer is gone (dead, or cut off): the engine's sample */
    CHECK_INT(kvg_exchange_peers_expire(p.t, &p.b, 1400), 0);
    CHECK_INT(peer_count(&p.b, URL_A), 0);
    CHECK_INT(atomic_load(&w->peer_view), 0);
    CHECK_NEAR(shared(&p.b, URL_A, 1400), 2, 1e-9);
    /* It comes back: counted again at its first batch */
    CHECK_INT(deliver(p.x, 1, p.t, &p.b, 1500), 2);
    CHECK_INT(peer_count(&p.b, URL_A), 5);
    pair_close(&p);
}

TEST(senders_past_the_cap_push_out_the_one_heard_longest_ago)
{
    struct pair p;
    pair_open(&p, 100000);
    set_inflight(&p.a, 1, 0);
    /* Sender ids 1..cap+1, one a millisecond: each counts 1 of URL_A. */
    for (uint64_t id = 1; id <= KVG_EXCHANGE_MAX_PEERS + 1; id++)
        CHECK_INT(deliver(p.x, id, p.t, &p.b, 1000 + id), 2);
    CHECK_INT(peer_count(&p.b, URL_A), KVG_EXCHANGE_MAX_PEERS);
    CHECK_INT(kvg_exchange_peers_expire(p.t, &p.b, 2000), KVG_EXCHANGE_MAX_PEERS);
    /* Sender 1 went: its next batch takes the place of the oldest left. */
    set_inflight(&p.a, 10, 0);
    CHECK_INT(deliver(p.x, 1, p.t, &p.b, 3000), 2);
    CHECK_INT(peer_count(&p.b, URL_A), KVG_EXCHANGE_MAX_PEERS - 1 + 10);
    pair_close(&p);
}

/* The counts and the records together stay within the batch's cap: the
 * oldest records go, counted dropped, the counts stay. */
TEST(a_batch_with_counts_keeps_within_its_cap)
{
    struct kvg_pool a;
    pool_of(&a);
    /* 40 more workers: their counts want 1.2 KiB of the 4 */
    for (int i = 0; i < 40; i++) {
        char url[64];
        snprintf(url, sizeof url, "http://127.0.1.%d:8000", 10 + i);
        CHECK_INT(kvg_pool_add(&a, url), 0);
    }
    struct kvg_exchange *x;
    CHECK_INT(kvg_exchange_new(4096, &x), 0);
    uint64_t h[50];
    for (int i = 0; i < 50; i++) h[i] = 1000 + (uint64_t)i;
    /* 40 records of 10 blocks: the outbox keeps what fits its 4 KiB */
    for (int i = 0; i < 40; i++)
        CHECK_INT(kvg_exchange_publish(x, URL_A, KVG_STR_NULL, 16, 160, h + i, 10, KVG_STR_NULL),
                  1);
    struct kvg_exchange_stats st;
    kvg_exchange_stats(x, &st);
    CHECK(st.queued_bytes > 3900);
    int queued = (int)st.queued;
    uint64_t dropped = st.dropped;
    kvg_exchange_set_loads(x, &a);
    set_inflight(&a, 2, 1);
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    int n = kvg_exchange_flush(x, 1, 1, NULL, &b);
    CHECK(n > 0 && n < queued);
    CHECK(b.len <= 4096);
    kvg_exchange_stats(x, &st);
    CHECK_INT(st.dropped - dropped, (uint64_t)(queued - n));
    struct kvg_exchange_head hd;
    const char *why;
    CHECK_INT(kvg_exchange_decode(b.data, b.len, 4096, &hd, NULL, NULL, &why), n);
    struct kvg_pool c;
    pool_of(&c);
    struct kvg_exchange_peers *t;
    CHECK_INT(kvg_exchange_peers_new(300, &t), 0);
    CHECK_INT(kvg_exchange_peers_apply(t, &c, &hd, b.data, b.len, 1000), 42);
    CHECK_INT(peer_count(&c, URL_A), 2);
    kvg_exchange_peers_free(t);
    kvg_pool_destroy(&c);
    kvg_buf_free(&b);
    kvg_exchange_free(x);
    kvg_pool_destroy(&a);
}

static int never(void *ud, const struct kvg_exchange_rec *r)
{
    (void)r;
    ++*(int *)ud;
    return 0;
}

TEST(a_malformed_load_section_refuses_the_batch_whole)
{
    struct kvg_pool a;
    pool_of(&a);
    struct kvg_exchange *x;
    CHECK_INT(kvg_exchange_new(0, &x), 0);
    kvg_exchange_set_loads(x, &a);
    set_inflight(&a, 2, 3);
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    CHECK_INT(kvg_exchange_flush(x, 1, 1, NULL, &b), 0);
    const char *why;
    int calls = 0;
    for (size_t len = 0; len < b.len; len++)
        CHECK_INT(kvg_exchange_decode(b.data, len, b.len, NULL, never, &calls, &why), KVG_EPARSE);
    /* The head (30 bytes), the two URLs' strings, then the load section:
     * u16 nload, and (u16 worker, u32 in_flight) each. */
    size_t at = 30 + 2 * (2 + strlen(URL_A));
    uint8_t *c = malloc(b.len);
    CHECK(c != NULL);
    memcpy(c, b.data, b.len);
    CHECK_INT(kvg_get_le16(c + at), 2);
    kvg_put_le16(c + at + 2, 2); /* a string index past the table */
    CHECK_INT(kvg_exchange_decode(c, b.len, b.len, NULL, never, &calls, &why), KVG_EPARSE);
    CHECK_STR(why, "load's worker out of range");
    memcpy(c, b.data, b.len);
    kvg_put_le32(c + at + 4, KVG_EXCHANGE_MAX_INFLIGHT + 1);
    CHECK_INT(kvg_exchange_decode(c, b.len, b.len, NULL, never, &calls, &why), KVG_EPARSE);
    CHECK_STR(why, "load over the bound");
    memcpy(c, b.data, b.len);
    kvg_put_le16(c + at, 3); /* more loads than bytes */
    CHECK_INT(kvg_exchange_decode(c, b.len, b.len, NULL, never, &calls, &why), KVG_EPARSE);
    CHECK_INT(calls, 0);
    /* At the bound it is taken. */
    memcpy(c, b.data, b.len);
    kvg_put_le32(c + at + 4, KVG_EXCHANGE_MAX_INFLIGHT);
    CHECK_INT(kvg_exchange_decode(c, b.len, b.len, NULL, never, &calls, &why), 0);
    free(c);
    kvg_buf_free(&b);
    kvg_exchange_free(x);
    kvg_pool_destroy(&a);
}

/* A hostile or odd sender: its load section names URL_A twice (taken at
 * the larger) and a worker this replica does not have (counted nowhere). */
TEST(a_duplicate_or_unknown_worker_in_the_counts)
{
    static const char *strs[] = {URL_A, "http://127.0.0.1:9499"};
    uint8_t b[256];
    size_t n = 0;
    memcpy(b, "KVGX", 4);
    b[4] = 3;
    b[5] = 0;
    kvg_put_le16(b + 6, 2);
    kvg_put_le64(b + 8, 77);
    kvg_put_le64(b + 16, 1);
    kvg_put_le16(b + 24, KVG_EXCHANGE_NONE);
    kvg_put_le32(b + 26, 0);
    n = 30;
    for (int i = 0; i < 2; i++) {
        size_t l = strlen(strs[i]);
        kvg_put_le16(b + n, (uint16_t)l);
        memcpy(b + n + 2, strs[i], l);
        n += 2 + l;
    }
    const uint16_t wi[3] = {0, 0, 1};
    const uint32_t c[3] = {2, 5, 9};
    kvg_put_le16(b + n, 3);
    n += 2;
    for (int i = 0; i < 3; i++, n += 6) {
        kvg_put_le16(b + n, wi[i]);
        kvg_put_le32(b + n + 2, c[i]);
    }
    struct kvg_pool p;
    pool_of(&p);
    struct kvg_exchange_head h;
    const char *why;
    CHECK_INT(kvg_exchange_decode(b, n, n, &h, NULL, NULL, &why), 0);
    struct kvg_exchange_peers *t;
    CHECK_INT(kvg_exchange_peers_new(300, &t), 0);
    CHECK_INT(kvg_exchange_peers_apply(t, &p, &h, b, n, 1000), 3);
    CHECK_INT(peer_count(&p, URL_A), 5);
    CHECK_INT(peer_count(&p, URL_B), 0);
    kvg_exchange_peers_free(t);
    kvg_pool_destroy(&p);
}

/* prefix_hash's guard on the peers' counts: the prompt's ring worker is
 * left once the peers' requests there pass its share, which neither this
 * router's own count nor an engine sample a step late would show. */
TEST(prefix_hashs_guard_reads_the_peers_counts)
{
    kvg_rng_seed(&rng, 5);
    struct pair p;
    pair_open(&p, 300);
    uint32_t toks[64];
    for (int i = 0; i < 64; i++) toks[i] = 900 + (uint32_t)i;
    struct kvg_route_ctx ctx = {
        .tokens = toks, .ntokens = 64, .rng = &rng, .now_ms = 1000, .load_max_age_ms = 500};
    struct kvg_worker *w[2] = {p.b.w[0], p.b.w[1]};
    int ring = p.b.policy->ops->select(p.b.policy, w, 2, &ctx, NULL);
    CHECK(ring == 0 || ring == 1);
    /* A holds 4 there: 4 > (4 + 1) / 2 x 1.25 */
    if (!strcmp(w[ring]->url, URL_A))
        set_inflight(&p.a, 4, 0);
    else
        set_inflight(&p.a, 0, 4);
    CHECK_INT(deliver(p.x, 1, p.t, &p.b, 1000), 2);
    CHECK_INT(p.b.policy->ops->select(p.b.policy, w, 2, &ctx, NULL), 1 - ring);
    /* A's requests end: the ring worker again */
    set_inflight(&p.a, 0, 0);
    CHECK_INT(deliver(p.x, 1, p.t, &p.b, 1050), 2);
    CHECK_INT(p.b.policy->ops->select(p.b.policy, w, 2, &ctx, NULL), ring);
    pair_close(&p);
}

/* The sums are moved by each sender's change (exchange_peers.c): through a
 * run of random changes, senders going silent and coming back, and a
 * worker leaving the receiver's pool and coming back, every worker's count
 * is the sum of the live senders' last counts of its URL, as a count made
 * whole from what each sent says. */
#define RW 7 /* the senders' workers; the receiver has the first RW - 1 */
#define RS 5
static const char *rurl(int i)
{
    static char u[RW][40];
    snprintf(u[i], sizeof u[i], "http://127.0.2.%d:8000", i + 1);
    return u[i];
}

TEST(the_sums_are_every_live_senders_last_counts)
{
    kvg_rng_seed(&rng, 11);
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    struct kvg_pool from[RS], to;
    struct kvg_exchange *x[RS];
    struct kvg_policy *pol;
    for (int s = 0; s < RS; s++) {
        CHECK_INT(kvg_policy_new("prefix_hash", &o, &pol), 0);
        CHECK_INT(kvg_pool_init(&from[s], pol, NULL), 0);
        for (int i = 0; i < RW; i++) CHECK_INT(kvg_pool_add(&from[s], rurl(i)), 0);
        CHECK_INT(kvg_exchange_new(0, &x[s]), 0);
        kvg_exchange_set_loads(x[s], &from[s]);
    }
    CHECK_INT(kvg_policy_new("prefix_hash", &o, &pol), 0);
    CHECK_INT(kvg_pool_init(&to, pol, NULL), 0);
    for (int i = 0; i < RW - 1; i++) CHECK_INT(kvg_pool_add(&to, rurl(i)), 0);
    struct kvg_exchange_peers *t;
    CHECK_INT(kvg_exchange_peers_new(300, &t), 0);
    uint32_t said[RS][RW] = {{0}};
    uint64_t heard[RS] = {0}, now = 1000;
    int live[RS] = {0}, has3 = 1, bad = 0;
    for (int step = 0; step < 400 && !bad; step++) {
        now += kvg_rng_below(&rng, 60);
        uint64_t op = kvg_rng_below(&rng, 10);
        if (op < 7) {
            int s = (int)kvg_rng_below(&rng, RS);
            for (int i = 0; i < RW; i++) {
                said[s][i] = (uint32_t)kvg_rng_below(&rng, 4) * (kvg_rng_below(&rng, 3) > 0);
                atomic_store(&from[s].w[i]->in_flight, said[s][i]);
            }
            CHECK_INT(deliver(x[s], 100 + (uint64_t)s, t, &to, now), RW);
            heard[s] = now;
            live[s] = 1;
        } else if (op < 9) {
            now += 150 * kvg_rng_below(&rng, 3); /* some senders go silent */
            for (int s = 0; s < RS; s++)
                if (live[s] && now - heard[s] > 300) live[s] = 0;
            kvg_exchange_peers_expire(t, &to, now);
        } else {
            /* worker 3 leaves, or comes back (counted again at the next write) */
            if (has3)
                CHECK_INT(kvg_pool_remove(&to, rurl(3)), 0);
            else
                CHECK_INT(kvg_pool_add(&to, rurl(3)), 0);
            has3 = !has3;
            kvg_exchange_peers_expire(t, &to, now);
            for (int s = 0; s < RS; s++)
                if (live[s] && now - heard[s] > 300) live[s] = 0;
        }
        for (int i = 0; i < RW - 1; i++) {
            if (i == 3 && !has3) continue;
            uint32_t want = 0;
            for (int s = 0; s < RS; s++) want += live[s] ? said[s][i] : 0;
            if (peer_count(&to, rurl(i)) != want) {
                fprintf(stderr, "  step %d worker %d: %u, the live senders said %u\n", step, i,
                        peer_count(&to, rurl(i)), want);
                bad = 1;
            }
        }
    }
    CHECK_INT(bad, 0);
    kvg_exchange_peers_free(t);
    for (int s = 0; s < RS; s++) {
        kvg_exchange_free(x[s]);
        kvg_pool_destroy(&from[s]);
    }
    kvg_pool_destroy(&to);
}
