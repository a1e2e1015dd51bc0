/* The replicas' exchange of routing history (router/exchange.h): records
 * survive the batch encoding whole, the outbox and the batch stay within
 * their byte cap (the oldest dropped, counted), the decoder refuses any
 * malformed batch whole before anything is applied, and a record applied on
 * another replica makes its policy send the prompt where the first replica
 * did. */
#include "support/test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "kv/hash.h"
#include "router/exchange.h"
#include "router/pool.h"

#define BS 16
#define NT 64 /* 4 full blocks */
#define URL_A "http://127.0.0.1:9401"
#define URL_B "http://127.0.0.1:9402"

static struct kvg_rng rng;

struct seen {
    int n;
    char worker[8][64], model[8][64];
    uint32_t bs[8], nt[8];
    size_t nb[8];
    uint64_t first[8], last[8];
    int stop_at; /* 1-based: each returns 7 on that record; 0 never */
};

static int collect(void *ud, const struct kvg_exchange_rec *r)
{
    struct seen *s = ud;
    if (s->n < 8) {
        snprintf(s->worker[s->n], 64, "%.*s", (int)r->worker.len, r->worker.p);
        snprintf(s->model[s->n], 64, "%.*s", (int)r->model.len, r->model.p ? r->model.p : "");
        s->bs[s->n] = r->block_size;
        s->nt[s->n] = r->ntokens;
        s->nb[s->n] = r->nblocks;
        s->first[s->n] = r->hashes[0];
        s->last[s->n] = r->hashes[r->nblocks - 1];
    }
    s->n++;
    return s->stop_at && s->n == s->stop_at ? 7 : 0;
}

static void hashes(uint64_t *h, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) h[i] = seed * 0x9e3779b97f4a7c15ull + i * 0x12345;
}

/* A batch of three records: two workers, one with a model. */
static void make_batch(struct kvg_buf *out)
{
    struct kvg_exchange *x;
    CHECK_INT(kvg_exchange_new(0, &x), 0);
    uint64_t h[10];
    hashes(h, 10, 1);
    CHECK_INT(kvg_exchange_publish(x, URL_A, KVG_STR_NULL, BS, 4 * BS + 3, h, 4), 1);
    CHECK_INT(kvg_exchange_publish(x, URL_B, KVG_STR("llama-lora"), 32, 10 * 32, h, 10), 1);
    CHECK_INT(kvg_exchange_publish(x, URL_A, KVG_STR_NULL, BS, 2 * BS, h + 5, 2), 1);
    CHECK_INT(kvg_exchange_flush(x, 42, 7, "http://127.0.0.1:9000", out), 3);
    kvg_exchange_free(x);
}

TEST(records_survive_the_batch_whole)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    make_batch(&b);
    struct kvg_exchange_head h;
    struct seen s = {0};
    const char *why;
    CHECK_INT(kvg_exchange_decode(b.data, b.len, b.len, &h, collect, &s, &why), 3);
    CHECK_INT(h.version, 1);
    CHECK_INT(h.sender, 42);
    CHECK_INT(h.seq, 7);
    CHECK_INT(h.nrec, 3);
    CHECK(h.from.len == strlen("http://127.0.0.1:9000") && !memcmp(h.from.p, "http://", 7));
    uint64_t e[10];
    hashes(e, 10, 1);
    CHECK_INT(s.n, 3);
    CHECK_STR(s.worker[0], URL_A);
    CHECK_STR(s.model[0], "");
    CHECK_INT(s.bs[0], BS);
    CHECK_INT(s.nt[0], 4 * BS + 3); /* a partial last block is kept in the count */
    CHECK_INT(s.nb[0], 4);
    CHECK(s.first[0] == e[0] && s.last[0] == e[3]);
    CHECK_STR(s.worker[1], URL_B);
    CHECK_STR(s.model[1], "llama-lora");
    CHECK_INT(s.bs[1], 32);
    CHECK_INT(s.nb[1], 10);
    CHECK(s.last[1] == e[9]);
    CHECK(s.first[2] == e[5] && s.nb[2] == 2);
    /* Strings are sent once: the two workers, the model and the sender. */
    CHECK(b.len < 4 * 8 + 10 * 8 + 2 * 8 + 3 * 16 + 4 * 24 + 28 + 60);
    /* A walk stops at the first non-zero return, which it returns. */
    struct seen st = {.stop_at = 2};
    CHECK_INT(kvg_exchange_decode(b.data, b.len, b.len, NULL, collect, &st, &why), 7);
    CHECK_INT(st.n, 2);
    kvg_buf_free(&b);
}

TEST(an_empty_outbox_flushes_a_heartbeat)
{
    struct kvg_exchange *x;
    CHECK_INT(kvg_exchange_new(0, &x), 0);
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    CHECK_INT(kvg_exchange_flush(x, 1, 1, NULL, &b), 0);
    struct kvg_exchange_head hd;
    const char *why = "";
    CHECK_INT(kvg_exchange_decode(b.data, b.len, b.len, &hd, NULL, NULL, &why), 0);
    CHECK_INT(hd.nrec, 0);
    CHECK_INT(hd.sender, 1);
    kvg_buf_reset(&b);
    /* with the sender's name, as serve sends it */
    CHECK_INT(kvg_exchange_flush(x, 2, 2, "http://127.0.0.1:9", &b), 0);
    int rc = kvg_exchange_decode(b.data, b.len, b.len, &hd, NULL, NULL, &why);
    if (rc) printf("# %s\n", why);
    CHECK_INT(rc, 0);
    CHECK(hd.from.len == 18);
    kvg_buf_reset(&b);
    uint64_t h[2] = {1, 2};
    /* nothing to share: no blocks, no block size, a worker not a URL */
    CHECK_INT(kvg_exchange_publish(x, URL_A, KVG_STR_NULL, BS, BS, h, 0), 0);
    CHECK_INT(kvg_exchange_publish(x, URL_A, KVG_STR_NULL, 0, BS, h, 1), 0);
    CHECK_INT(kvg_exchange_publish(x, "http://a b", KVG_STR_NULL, BS, BS, h, 1), 0);
    CHECK_INT(kvg_exchange_flush(x, 1, 1, NULL, &b), 0);
    CHECK_INT(kvg_exchange_new(100, &x) == -EINVAL, 1); /* under 4 KiB: refused */
    kvg_exchange_free(x);
    kvg_buf_free(&b);
}

TEST(the_outbox_keeps_within_its_cap_dropping_the_oldest)
{
    struct kvg_exchange *x;
    CHECK_INT(kvg_exchange_new(4096, &x), 0);
    uint64_t h[100];
    for (int i = 0; i < 20; i++) {
        hashes(h, 100, (uint64_t)i);
        CHECK_INT(kvg_exchange_publish(x, URL_A, KVG_STR_NULL, BS, 100 * BS, h, 100), 1);
    }
    struct kvg_exchange_stats st;
    kvg_exchange_stats(x, &st);
    CHECK_INT(st.published, 20);
    CHECK(st.queued_bytes <= 4096);
    CHECK_INT(st.dropped + st.queued, 20);
    CHECK(st.dropped >= 15);
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    int n = kvg_exchange_flush(x, 1, 1, NULL, &b);
    CHECK_INT(n, (long long)st.queued);
    CHECK(b.len <= 4096);
    /* the newest survive: the last record is the last published */
    struct seen s = {0};
    const char *why;
    CHECK_INT(kvg_exchange_decode(b.data, b.len, 4096, NULL, collect, &s, &why), n);
    uint64_t e[100];
    hashes(e, 100, 19);
    CHECK(s.n == n && s.first[n - 1 < 8 ? n - 1 : 7] != 0);
    if (n <= 8) CHECK(s.first[n - 1] == e[0]);
    /* a record bigger than a whole batch is not queued */
    uint64_t *big = calloc(KVG_EXCHANGE_MAX_BLOCKS, sizeof *big);
    CHECK(big != NULL);
    CHECK_INT(kvg_exchange_publish(x, URL_A, KVG_STR_NULL, BS, 1000 * BS, big, 1000), 0);
    kvg_exchange_free(x);
    /* a prompt past the block cap: its leading blocks, the count cut to them */
    CHECK_INT(kvg_exchange_new(0, &x), 0);
    CHECK_INT(kvg_exchange_publish(x, URL_A, KVG_STR_NULL, BS, 200000, big, 12500), 1);
    kvg_buf_reset(&b);
    CHECK_INT(kvg_exchange_flush(x, 1, 1, NULL, &b), 1);
    struct seen s2 = {0};
    CHECK_INT(kvg_exchange_decode(b.data, b.len, b.len, NULL, collect, &s2, &why), 1);
    CHECK_INT(s2.nb[0], KVG_EXCHANGE_MAX_BLOCKS);
    CHECK_INT(s2.nt[0], KVG_EXCHANGE_MAX_BLOCKS * BS);
    free(big);
    kvg_exchange_free(x);
    kvg_buf_free(&b);
}

static int never(void *ud, const struct kvg_exchange_rec *r)
{
    (void)r;
    ++*(int *)ud;
    return 0;
}

TEST(a_malformed_batch_is_refused_whole)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    make_batch(&b);
    const char *why;
    int calls = 0;
    /* every truncation */
    for (size_t len = 0; len < b.len; len++) {
        int rc = kvg_exchange_decode(b.data, len, b.len, NULL, never, &calls, &why);
        CHECK_INT(rc, KVG_EPARSE);
        CHECK(why && why[0]);
    }
    CHECK_INT(calls, 0);
    /* over the cap */
    CHECK_INT(kvg_exchange_decode(b.data, b.len, b.len - 1, NULL, never, &calls, &why),
              KVG_ETOOBIG);
    /* trailing bytes */
    char *c = malloc(b.len + 1);
    CHECK(c != NULL);
    memcpy(c, b.data, b.len);
    c[b.len] = 0;
    CHECK_INT(kvg_exchange_decode(c, b.len + 1, b.len + 1, NULL, never, &calls, &why), KVG_EPARSE);
    CHECK_STR(why, "trailing bytes");
    /* one changed byte at a time: the head, the string table, the records'
     * fields; each refused or (hash bytes) still a valid batch */
    int refused = 0;
    for (size_t i = 0; i < b.len; i++) {
        memcpy(c, b.data, b.len);
        c[i] = (char)(c[i] ^ 0x80);
        int rc = kvg_exchange_decode(c, b.len, b.len, NULL, never, &calls, &why);
        CHECK(rc == KVG_EPARSE || rc == 3);
        refused += rc == KVG_EPARSE;
    }
    CHECK(refused > 40);
    CHECK(calls <= 3 * (int)b.len);
    /* a version this build does not know */
    memcpy(c, b.data, b.len);
    c[4] = 2;
    CHECK_INT(kvg_exchange_decode(c, b.len, b.len, NULL, never, &calls, &why), KVG_EPARSE);
    CHECK_STR(why, "unknown version");
    free(c);
    kvg_buf_free(&b);
}

/* Two replicas of prefix_affinity without engine events: what A routed,
 * once its batch is applied on B, B routes to the same worker (a hit on
 * what it never routed itself). */
static void pool_of(struct kvg_pool *pool)
{
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    o.block_size = BS;
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new("prefix_affinity", &o, &p), 0);
    CHECK_INT(kvg_pool_init(pool, p, NULL), 0);
    CHECK_INT(kvg_pool_add(pool, URL_A), 0);
    CHECK_INT(kvg_pool_add(pool, URL_B), 0);
}

struct applier {
    struct kvg_pool *pool;
    int applied, unknown;
};

static int apply_each(void *ud, const struct kvg_exchange_rec *r)
{
    struct applier *a = ud;
    int rc = kvg_exchange_apply(a->pool, NULL, r, 2000, 1);
    if (rc == KVG_ENOTFOUND)
        a->unknown++;
    else if (!rc)
        a->applied++;
    return rc == KVG_ENOTFOUND ? 0 : rc;
}

static const char *dry_pick(struct kvg_pool *pool, struct kvg_route_ctx *ctx, double *matched)
{
    struct kvg_route_score scores[2];
    struct kvg_worker *cands[2];
    struct kvg_route_explain ex = {.scores = scores, .cands = cands};
    struct kvg_pick pk = {0};
    int known;
    ctx->dry_run = 1;
    int rc = kvg_pool_pick(pool, ctx, NULL, 0, &pk, &known, &ex);
    ctx->dry_run = 0;
    CHECK_INT(rc, 0);
    static char url[512];
    snprintf(url, sizeof url, "%s", pk.w->url);
    kvg_worker_unref(pk.w);
    *matched = 0;
    for (size_t i = 0; i < ex.n; i++) {
        if (!strcmp(cands[i]->url, url)) *matched = scores[i].matched_blocks;
        kvg_worker_unref(cands[i]);
    }
    return url;
}

TEST(a_peer_routes_where_the_first_replica_did)
{
    kvg_rng_seed(&rng, 5);
    struct kvg_pool a, b;
    pool_of(&a);
    pool_of(&b);
    struct kvg_exchange *x;
    CHECK_INT(kvg_exchange_new(0, &x), 0);
    a.on_pick = kvg_exchange_on_pick;
    a.on_pick_ud = x;
    uint32_t toks[NT];
    uint64_t h[NT / BS];
    for (int i = 0; i < NT; i++) toks[i] = 500 + (uint32_t)i;
    CHECK_INT(kvg_kv_hash_tokens(toks, NT, BS, h, NT / BS), NT / BS);
    struct kvg_route_ctx ctx = {.tokens = toks,
                                .ntokens = NT,
                                .block_hashes = h,
                                .nblocks = NT / BS,
                                .block_size = BS,
                                .rng = &rng,
                                .now_ms = 1000,
                                .load_max_age_ms = 5000};
    /* A routes it (a real pick: published); a dry run publishes nothing */
    double m;
    dry_pick(&a, &ctx, &m);
    struct kvg_exchange_stats st;
    kvg_exchange_stats(x, &st);
    CHECK_INT(st.published, 0);
    struct kvg_pick pk = {0};
    int known;
    CHECK_INT(kvg_pool_pick(&a, &ctx, NULL, 0, &pk, &known, NULL), 0);
    char where[512];
    snprintf(where, sizeof where, "%s", pk.w->url);
    kvg_pool_release(&a, &pk, KVG_OUT_OK, &ctx);
    kvg_exchange_stats(x, &st);
    CHECK_INT(st.published, 1);
    /* B has not heard: no match anywhere */
    ctx.now_ms = 2000;
    dry_pick(&b, &ctx, &m);
    CHECK_NEAR(m, 0, 1e-9);
    /* A's batch, also naming a worker B does not have */
    CHECK_INT(kvg_exchange_publish(x, "http://127.0.0.1:9499", KVG_STR_NULL, BS, NT, h, NT / BS),
              1);
    struct kvg_buf batch;
    kvg_buf_init(&batch, 0);
    CHECK_INT(kvg_exchange_flush(x, 1, 1, NULL, &batch), 2);
    struct applier ap = {&b, 0, 0};
    const char *why;
    CHECK_INT(kvg_exchange_decode(batch.data, batch.len, batch.len, NULL, apply_each, &ap, &why),
              2);
    CHECK_INT(ap.applied, 1);
    CHECK_INT(ap.unknown, 1);
    /* now B sends it where A did, as a hit of all its blocks */
    for (int i = 0; i < 5; i++) {
        CHECK_STR(dry_pick(&b, &ctx, &m), where);
        CHECK_NEAR(m, NT / BS, 1e-9);
    }
    kvg_buf_free(&batch);
    kvg_pool_destroy(&a);
    kvg_pool_destroy(&b);
    kvg_exchange_free(x);
}
