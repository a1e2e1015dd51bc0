/* The replicas' exchange of routing history (router/exchange.h): records
 * survive the batch encoding whole, the outbox and the batch stay within
 * their byte cap (the oldest dropped, counted), the decoder refuses any
 * malformed batch whole before anything is applied, and a record applied on
 * another replica makes its policy send the prompt (manual: the routing key)
 * where the first replica did. */
#include "support/test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/bytes.h"
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
    CHECK_INT(kvg_exchange_publish(x, URL_A, KVG_STR_NULL, BS, 4 * BS + 3, h, 4, KVG_STR_NULL), 1);
    CHECK_INT(
        kvg_exchange_publish(x, URL_B, KVG_STR("llama-lora"), 32, 10 * 32, h, 10, KVG_STR_NULL), 1);
    CHECK_INT(kvg_exchange_publish(x, URL_A, KVG_STR_NULL, BS, 2 * BS, h + 5, 2, KVG_STR_NULL), 1);
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
    CHECK_INT(kvg_exchange_publish(x, URL_A, KVG_STR_NULL, BS, BS, h, 0, KVG_STR_NULL), 0);
    CHECK_INT(kvg_exchange_publish(x, URL_A, KVG_STR_NULL, 0, BS, h, 1, KVG_STR_NULL), 0);
    CHECK_INT(kvg_exchange_publish(x, "http://a b", KVG_STR_NULL, BS, BS, h, 1, KVG_STR_NULL), 0);
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
        CHECK_INT(kvg_exchange_publish(x, URL_A, KVG_STR_NULL, BS, 100 * BS, h, 100, KVG_STR_NULL),
                  1);
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
    CHECK_INT(kvg_exchange_publish(x, URL_A, KVG_STR_NULL, BS, 1000 * BS, big, 1000, KVG_STR_NULL),
              0);
    kvg_exchange_free(x);
    /* a prompt past the block cap: its leading blocks, the count cut to them */
    CHECK_INT(kvg_exchange_new(0, &x), 0);
    CHECK_INT(kvg_exchange_publish(x, URL_A, KVG_STR_NULL, BS, 200000, big, 12500, KVG_STR_NULL),
              1);
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
    c[4] = KVG_EXCHANGE_VERSION + 1;
    CHECK_INT(kvg_exchange_decode(c, b.len, b.len, NULL, never, &calls, &why), KVG_EPARSE);
    CHECK_STR(why, "unknown version");
    free(c);
    kvg_buf_free(&b);
}

/* Two replicas of prefix_affinity without engine events: what A routed,
 * once its batch is applied on B, B routes to the same worker (a hit on
 * what it never routed itself). */
static void pool_of(struct kvg_pool *pool, const char *policy)
{
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    o.block_size = BS;
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new(policy, &o, &p), 0);
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
    pool_of(&a, "prefix_affinity");
    pool_of(&b, "prefix_affinity");
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
    CHECK_INT(kvg_exchange_publish(x, "http://127.0.0.1:9499", KVG_STR_NULL, BS, NT, h, NT / BS,
                                   KVG_STR_NULL),
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

/* ---- Version 2: records with the routing text (cache_aware's history). */

#define TEXT_A "You are a helpful assistant. Answer in French. Question one: why?"

/* A batch of three: text alone (a router that does not tokenize), text and
 * blocks, blocks alone. */
static void make_text_batch(struct kvg_buf *out)
{
    struct kvg_exchange *x;
    CHECK_INT(kvg_exchange_new(0, &x), 0);
    uint64_t h[4];
    hashes(h, 4, 3);
    CHECK_INT(kvg_exchange_publish(x, URL_A, KVG_STR_NULL, BS, 0, NULL, 0, KVG_STR(TEXT_A)), 1);
    CHECK_INT(kvg_exchange_publish(x, URL_B, KVG_STR("m"), BS, 2 * BS, h, 2, KVG_STR("ab\0c")), 1);
    CHECK_INT(kvg_exchange_publish(x, URL_A, KVG_STR_NULL, BS, 4 * BS, h, 4, KVG_STR_NULL), 1);
    CHECK_INT(kvg_exchange_flush(x, 9, 1, NULL, out), 3);
    kvg_exchange_free(x);
}

struct texts {
    int n;
    size_t nb[4];
    char text[4][128];
    size_t tlen[4];
};

static int collect_text(void *ud, const struct kvg_exchange_rec *r)
{
    struct texts *t = ud;
    if (t->n < 4) {
        t->nb[t->n] = r->nblocks;
        t->tlen[t->n] = r->text.len;
        memcpy(t->text[t->n], r->text.p ? r->text.p : "", KVG_MIN(r->text.len, 127));
        if (r->nblocks) CHECK(r->hashes != NULL);
    }
    t->n++;
    return 0;
}

TEST(text_records_survive_a_version_2_batch)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    make_text_batch(&b);
    struct kvg_exchange_head h;
    struct texts t = {0};
    const char *why;
    CHECK_INT(kvg_exchange_decode(b.data, b.len, b.len, &h, collect_text, &t, &why), 3);
    CHECK_INT(h.version, 2);
    CHECK_INT(t.nb[0], 0);
    CHECK_INT(t.tlen[0], strlen(TEXT_A));
    CHECK_STR(t.text[0], TEXT_A);
    CHECK_INT(t.nb[1], 2);
    CHECK_INT(t.tlen[1], 4); /* any bytes, a NUL included */
    CHECK(!memcmp(t.text[1], "ab\0c", 4));
    CHECK_INT(t.nb[2], 4);
    CHECK_INT(t.tlen[2], 0);
    /* without text a batch is version 1, what replicas before 2 read */
    struct kvg_buf b1;
    kvg_buf_init(&b1, 0);
    make_batch(&b1);
    CHECK_INT(kvg_exchange_decode(b1.data, b1.len, b1.len, &h, NULL, NULL, &why), 3);
    CHECK_INT(h.version, 1);
    kvg_buf_free(&b1);
    kvg_buf_free(&b);
}

TEST(a_text_is_cut_to_its_cap_and_half_a_batch)
{
    size_t big = KVG_EXCHANGE_MAX_TEXT * 2;
    char *text = malloc(big);
    CHECK(text != NULL);
    memset(text, 'x', big);
    struct kvg_exchange *x;
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    const size_t caps[] = {0, 4096, 4 * KVG_EXCHANGE_MAX_TEXT};
    for (size_t c = 0; c < 3; c++) {
        CHECK_INT(kvg_exchange_new(caps[c], &x), 0);
        size_t cap = caps[c] ? caps[c] : KVG_EXCHANGE_DEFAULT_BYTES;
        CHECK_INT(kvg_exchange_publish(x, URL_A, KVG_STR_NULL, BS, 0, NULL, 0,
                                       (struct kvg_str){text, big}),
                  1);
        kvg_buf_reset(&b);
        CHECK_INT(kvg_exchange_flush(x, 1, 1, NULL, &b), 1);
        struct texts t = {0};
        const char *why;
        CHECK_INT(kvg_exchange_decode(b.data, b.len, cap, NULL, collect_text, &t, &why), 1);
        CHECK(t.tlen[0] > 0 && t.tlen[0] <= KVG_EXCHANGE_MAX_TEXT);
        CHECK(b.len <= cap / 2);
        if (c == 2) CHECK_INT(t.tlen[0], KVG_EXCHANGE_MAX_TEXT);
        kvg_exchange_free(x);
    }
    free(text);
    kvg_buf_free(&b);
}

/* Writes a version 2 batch of one record by hand: its text_len, nblocks and
 * nrec as given, tail bytes of text after the head. */
static size_t hand_batch(uint8_t *p, uint32_t nrec, uint32_t nb, uint32_t tl, size_t tail)
{
    memset(p, 0, 64 + tail);
    memcpy(p, "KVGX", 4);
    p[4] = 2;
    p[6] = 1; /* one string */
    p[24] = 0xff, p[25] = 0xff;
    kvg_put_le32(p + 26, nrec);
    p[30] = 3, p[32] = 'a', p[33] = 'b', p[34] = 'c';
    uint8_t *r = p + 35;
    r[4] = BS; /* worker 0, no model */
    r[2] = r[3] = 0xff;
    kvg_put_le32(r + 12, nb);
    kvg_put_le32(r + 16, tl);
    return 35 + 20 + tail;
}

TEST(a_hostile_text_batch_is_refused_whole)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    make_text_batch(&b);
    const char *why;
    int calls = 0;
    for (size_t len = 0; len < b.len; len++) {
        /* exactly len bytes: under ASan a read past them fails */
        uint8_t *t = malloc(len ? len : 1);
        CHECK(t != NULL);
        memcpy(t, b.data, len);
        CHECK_INT(kvg_exchange_decode(t, len, b.len, NULL, never, &calls, &why), KVG_EPARSE);
        CHECK(why && why[0]);
        free(t);
    }
    CHECK_INT(calls, 0);
    uint8_t *c = malloc(b.len);
    CHECK(c != NULL);
    for (size_t i = 0; i < b.len; i++) {
        memcpy(c, b.data, b.len);
        c[i] ^= 0x80;
        int rc = kvg_exchange_decode(c, b.len, b.len, NULL, never, &calls, &why);
        CHECK(rc == KVG_EPARSE || rc == 3);
    }
    /* version 1 has no text: the same bytes read as version 1 are refused */
    memcpy(c, b.data, b.len);
    c[4] = 1;
    CHECK_INT(kvg_exchange_decode(c, b.len, b.len, NULL, never, &calls, &why), KVG_EPARSE);
    free(c);
    /* by hand: a good one first, then each field hostile */
    calls = 0;
    uint8_t h[256];
    size_t n = hand_batch(h, 1, 0, 5, 5);
    memcpy(h + n - 5, "hello", 5);
    CHECK_INT(kvg_exchange_decode(h, n, sizeof h, NULL, never, &calls, &why), 1);
    n = hand_batch(h, 1, 0, 0, 1); /* neither blocks nor text (a byte after) */
    CHECK_INT(kvg_exchange_decode(h, n, sizeof h, NULL, never, &calls, &why), KVG_EPARSE);
    CHECK_STR(why, "bad block count");
    n = hand_batch(h, 1, 0, 0xffffffffu, 5); /* a huge text_len */
    CHECK_INT(kvg_exchange_decode(h, n, sizeof h, NULL, never, &calls, &why), KVG_EPARSE);
    CHECK_STR(why, "text too long");
    n = hand_batch(h, 1, 0, 100, 5); /* more text declared than sent */
    CHECK_INT(kvg_exchange_decode(h, n, sizeof h, NULL, never, &calls, &why), KVG_EPARSE);
    CHECK_STR(why, "truncated text");
    n = hand_batch(h, 0x7fffffffu, 0, 5, 5); /* a huge record count */
    CHECK_INT(kvg_exchange_decode(h, n, sizeof h, NULL, never, &calls, &why), KVG_EPARSE);
    CHECK_STR(why, "more records than bytes");
    CHECK_INT(calls, 1);
    kvg_buf_free(&b);
}

/* Two replicas of cache_aware, which does not tokenize: A's pick is sent
 * as its text alone, and B, having applied it, sends the prompt where A
 * did as a cache hit. A prefix_affinity pick's record has no text. */
static const char *note_pick(struct kvg_pool *pool, struct kvg_route_ctx *ctx, char *note)
{
    struct kvg_route_score scores[2];
    struct kvg_route_explain ex = {.scores = scores};
    struct kvg_pick pk = {0};
    int known;
    ctx->dry_run = 1;
    CHECK_INT(kvg_pool_pick(pool, ctx, NULL, 0, &pk, &known, &ex), 0);
    ctx->dry_run = 0;
    static char url[512];
    snprintf(url, sizeof url, "%s", pk.w->url);
    snprintf(note, 128, "%s", ex.note);
    kvg_worker_unref(pk.w);
    return url;
}

TEST(a_cache_aware_peer_routes_where_the_first_replica_did)
{
    kvg_rng_seed(&rng, 11);
    struct kvg_pool a, b;
    pool_of(&a, "cache_aware");
    pool_of(&b, "cache_aware");
    struct kvg_exchange *x;
    CHECK_INT(kvg_exchange_new(0, &x), 0);
    a.on_pick = kvg_exchange_on_pick;
    a.on_pick_ud = x;
    struct kvg_route_ctx ctx = {.text = TEXT_A,
                                .text_len = strlen(TEXT_A),
                                .rng = &rng,
                                .now_ms = 1000,
                                .load_max_age_ms = 5000};
    struct kvg_pick pk = {0};
    int known;
    CHECK_INT(kvg_pool_pick(&a, &ctx, NULL, 0, &pk, &known, NULL), 0);
    char where[512], note[128];
    snprintf(where, sizeof where, "%s", pk.w->url);
    kvg_pool_release(&a, &pk, KVG_OUT_OK, &ctx);
    note_pick(&b, &ctx, note);
    CHECK_STR(note, "cache miss: least loaded");
    struct kvg_buf batch;
    kvg_buf_init(&batch, 0);
    CHECK_INT(kvg_exchange_flush(x, 1, 1, NULL, &batch), 1);
    struct kvg_exchange_head h;
    struct applier ap = {&b, 0, 0};
    const char *why;
    CHECK_INT(kvg_exchange_decode(batch.data, batch.len, batch.len, &h, apply_each, &ap, &why), 1);
    CHECK_INT(h.version, 2);
    CHECK_INT(ap.applied, 1);
    for (int i = 0; i < 5; i++) {
        CHECK_STR(note_pick(&b, &ctx, note), where);
        CHECK_STR(note, "cache hit");
    }
    /* prefix_affinity's picks carry no text: version 1, as before */
    struct kvg_pool c;
    pool_of(&c, "prefix_affinity");
    c.on_pick = kvg_exchange_on_pick;
    c.on_pick_ud = x;
    uint32_t toks[NT];
    uint64_t hs[NT / BS];
    for (int i = 0; i < NT; i++) toks[i] = 900 + (uint32_t)i;
    CHECK_INT(kvg_kv_hash_tokens(toks, NT, BS, hs, NT / BS), NT / BS);
    ctx.tokens = toks;
    ctx.ntokens = NT;
    ctx.block_hashes = hs;
    ctx.nblocks = NT / BS;
    ctx.block_size = BS;
    CHECK_INT(kvg_pool_pick(&c, &ctx, NULL, 0, &pk, &known, NULL), 0);
    kvg_pool_release(&c, &pk, KVG_OUT_OK, &ctx);
    kvg_buf_reset(&batch);
    CHECK_INT(kvg_exchange_flush(x, 1, 2, NULL, &batch), 1);
    struct texts t = {0};
    CHECK_INT(kvg_exchange_decode(batch.data, batch.len, batch.len, &h, collect_text, &t, &why), 1);
    CHECK_INT(h.version, 1);
    CHECK_INT(t.tlen[0], 0);
    /* a record of text alone changes nothing where the policy keeps blocks */
    CHECK_INT(kvg_exchange_publish(x, URL_A, KVG_STR_NULL, BS, 0, NULL, 0, KVG_STR(TEXT_A)), 1);
    kvg_buf_reset(&batch);
    CHECK_INT(kvg_exchange_flush(x, 1, 3, NULL, &batch), 1);
    struct applier ac = {&c, 0, 0};
    CHECK_INT(kvg_exchange_decode(batch.data, batch.len, batch.len, NULL, apply_each, &ac, &why),
              1);
    kvg_buf_free(&batch);
    kvg_pool_destroy(&a);
    kvg_pool_destroy(&b);
    kvg_pool_destroy(&c);
    kvg_exchange_free(x);
}

/* Two replicas of manual in min_load mode, each seeing its own loads: a
 * key A assigned goes, once A's batch is applied on B, where A sent it
 * (B's own least loaded worker is the other one), and two replicas that
 * assigned a key alike within one period settle on one worker once each
 * hears the other. */
static struct kvg_str key_header(const void *h, const char *name)
{
    const char *v = h;
    return !strcasecmp(name, "x-session-id") ? (struct kvg_str){v, strlen(v)} : KVG_STR_NULL;
}

static void manual_pool(struct kvg_pool *pool, struct kvg_exchange *x, const char *busy)
{
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    o.assignment_min_load = 1;
    struct kvg_policy *p;
    CHECK_INT(kvg_policy_new("manual", &o, &p), 0);
    CHECK_INT(kvg_pool_init(pool, p, NULL), 0);
    CHECK_INT(kvg_pool_add(pool, URL_A), 0);
    CHECK_INT(kvg_pool_add(pool, URL_B), 0);
    for (size_t i = 0; i < pool->n; i++)
        if (!strcmp(pool->w[i]->url, busy)) atomic_store(&pool->w[i]->in_flight, 9);
    pool->on_pick = kvg_exchange_on_pick;
    pool->on_pick_ud = x;
}

static void manual_pick(struct kvg_pool *pool, struct kvg_route_ctx *ctx, char *where)
{
    struct kvg_pick pk = {0};
    int known;
    CHECK_INT(kvg_pool_pick(pool, ctx, NULL, 0, &pk, &known, NULL), 0);
    snprintf(where, 512, "%s", pk.w->url);
    kvg_pool_release(pool, &pk, KVG_OUT_OK, ctx);
}

static void deliver(struct kvg_exchange *from, struct kvg_pool *to, int want)
{
    struct kvg_buf batch;
    kvg_buf_init(&batch, 0);
    CHECK_INT(kvg_exchange_flush(from, 1, 1, NULL, &batch), want);
    struct applier ap = {to, 0, 0};
    const char *why;
    CHECK_INT(kvg_exchange_decode(batch.data, batch.len, batch.len, NULL, apply_each, &ap, &why),
              want);
    CHECK_INT(ap.applied, want);
    kvg_buf_free(&batch);
}

TEST(a_manual_peer_keeps_a_key_where_the_first_replica_put_it)
{
    kvg_rng_seed(&rng, 13);
    struct kvg_exchange *xa, *xb;
    CHECK_INT(kvg_exchange_new(0, &xa), 0);
    CHECK_INT(kvg_exchange_new(0, &xb), 0);
    struct kvg_pool a, b;
    manual_pool(&a, xa, URL_A); /* A's least loaded: B's URL, and the reverse */
    manual_pool(&b, xb, URL_B);
    struct kvg_route_ctx ctx = {
        .header = key_header, .hctx = "s-1", .rng = &rng, .now_ms = 1000, .load_max_age_ms = 5000};
    char wa[512], wb[512];
    manual_pick(&a, &ctx, wa);
    CHECK_STR(wa, URL_B);
    deliver(xa, &b, 1); /* the record carries the key alone (no blocks) */
    for (int i = 0; i < 3; i++) {
        manual_pick(&b, &ctx, wb);
        CHECK_STR(wb, URL_B);
    }
    /* Each assigns s-2 before hearing the other: both settle on one. */
    ctx.hctx = "s-2";
    manual_pick(&a, &ctx, wa);
    manual_pick(&b, &ctx, wb);
    CHECK(strcmp(wa, wb) != 0);
    deliver(xa, &b, 1);
    deliver(xb, &a, 4); /* B's 3 picks of s-1 and its s-2 */
    manual_pick(&a, &ctx, wa);
    manual_pick(&b, &ctx, wb);
    CHECK_STR(wa, wb);
    kvg_pool_destroy(&a);
    kvg_pool_destroy(&b);
    kvg_exchange_free(xa);
    kvg_exchange_free(xb);
}
