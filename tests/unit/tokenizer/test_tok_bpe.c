/* The BPE model: merge order (lowest rank, leftmost first) against a brute
 * force reference, both merge strategies (small arrays, heap) agreeing, both
 * merges file formats, ignore_merges, byte fallback and the unknown token,
 * load-time errors, and the shared word cache under concurrent encodes. */
#include <pthread.h>
#include <stdlib.h>

#include "test_tok_util.h"

static const char *SIMPLE_VOCAB = "{\"a\":0,\"b\":1,\"c\":2,\"ab\":3,\"bc\":4,\"abc\":5}";

TEST(merge_order_and_formats)
{
    /* (b,c) ranks before (a,b): "abc" -> a bc; with only (a,b): ab c. */
    struct kvg_tok *t1, *t2, *t3;
    char *j1 = tt_json(SIMPLE_VOCAB, "[\"b c\",\"a b\"]", NULL, NULL, NULL, NULL, NULL, NULL);
    char *j2 =
        tt_json(SIMPLE_VOCAB, "[[\"b\",\"c\"],[\"a\",\"b\"]]", NULL, NULL, NULL, NULL, NULL, NULL);
    char *j3 = tt_json(SIMPLE_VOCAB, "[\"a b\"]", NULL, NULL, NULL, NULL, NULL, NULL);
    CHECK_INT(tt_load_json(j1, &t1), 0);
    CHECK_INT(tt_load_json(j2, &t2), 0);
    CHECK_INT(tt_load_json(j3, &t3), 0);
    CHECK_STR(tt_encs(t1, "abc"), "0 4");
    CHECK_STR(tt_encs(t2, "abc"), "0 4");
    CHECK_STR(tt_encs(t3, "abc"), "3 2");
    /* Leftmost first on equal ranks: "aaa"-like with (a,b) over "abab". */
    CHECK_STR(tt_encs(t3, "abab"), "3 3");
    CHECK_STR(tt_encs(t1, ""), "");
    kvg_tok_free(t1);
    kvg_tok_free(t2);
    kvg_tok_free(t3);
    free(j1);
    free(j2);
    free(j3);
}

TEST(duplicate_merge_later_wins_and_version_line)
{
    struct kvg_tok *t;
    /* HF builds a HashMap: the later duplicate's rank wins (checked with HF). */
    char *j =
        tt_json(SIMPLE_VOCAB, "[\"a b\",\"b c\",\"a b\"]", NULL, NULL, NULL, NULL, NULL, NULL);
    CHECK_INT(tt_load_json(j, &t), 0);
    CHECK_STR(tt_encs(t, "abc"), "0 4");
    kvg_tok_free(t);
    free(j);
    j = tt_json(SIMPLE_VOCAB, "[\"#version: 0.2\",\"a b\",\"b c\"]", NULL, NULL, NULL, NULL, NULL,
                NULL);
    CHECK_INT(tt_load_json(j, &t), 0);
    CHECK_STR(tt_encs(t, "abc"), "3 2");
    kvg_tok_free(t);
    free(j);
}

/* An id past KVG_TOK_MAX_ID is refused before anything is sized by it (a
 * hostile "id": 2147483647 once reserved per-id arrays of 2^31 entries). */
TEST(vocab_id_bound)
{
    struct kvg_tok *t = NULL;
    char *j = tt_json("{\"a\":0,\"b\":2147483647}", "[]", NULL, NULL, NULL, NULL, NULL, NULL);
    CHECK_INT(tt_load_json(j, &t), KVG_EPARSE);
    CHECK(strstr(tt_err, "bad id") != NULL);
    free(j);
    j = tt_json("{\"a\":0,\"b\":16777216}", "[]", NULL, NULL, NULL, NULL, NULL, NULL);
    CHECK_INT(tt_load_json(j, &t), KVG_EPARSE);
    free(j);
    j = tt_json("{\"a\":0,\"b\":70000}", "[]", NULL, NULL, NULL, NULL, NULL, NULL);
    CHECK_INT(tt_load_json(j, &t), 0); /* sparse but plausible ids load */
    kvg_tok_free(t);
    free(j);
}

TEST(merge_errors)
{
    struct kvg_tok *t = NULL;
    char *j = tt_json(SIMPLE_VOCAB, "[\"a z\"]", NULL, NULL, NULL, NULL, NULL, NULL);
    CHECK_INT(tt_load_json(j, &t), KVG_EPARSE);
    CHECK(strstr(tt_err, "\"z\"") != NULL);
    free(j);
    j = tt_json(SIMPLE_VOCAB, "[\"a b c\"]", NULL, NULL, NULL, NULL, NULL, NULL);
    CHECK_INT(tt_load_json(j, &t), KVG_EPARSE);
    free(j);
    j = tt_json(SIMPLE_VOCAB, "[\"a b\",[\"b\",\"c\"]]", NULL, NULL, NULL, NULL, NULL, NULL);
    CHECK_INT(tt_load_json(j, &t), KVG_EPARSE);
    CHECK(strstr(tt_err, "mixes") != NULL);
    free(j);
    j = tt_json("{\"a\":0,\"b\":1}", "[\"a b\"]", NULL, NULL, NULL, NULL, NULL, NULL);
    CHECK_INT(tt_load_json(j, &t), KVG_EPARSE); /* "ab" missing */
    free(j);
    CHECK(t == NULL);
}

TEST(ignore_merges)
{
    struct kvg_tok *t;
    char *j =
        tt_json(SIMPLE_VOCAB, "[\"a b\"]", "\"ignore_merges\":true,", NULL, NULL, NULL, NULL, NULL);
    CHECK_INT(tt_load_json(j, &t), 0);
    CHECK_STR(tt_encs(t, "abc"), "5"); /* whole word in the vocabulary */
    CHECK_STR(tt_encs(t, "abab"), "3 3");
    kvg_tok_free(t);
    free(j);
}

/* Char-level (SentencePiece-style) model: byte fallback, unk, fuse_unk. */
TEST(byte_fallback_and_unk)
{
    const char *vocab = "{\"<unk>\":0,\"<0xC3>\":1,\"<0xA9>\":2,\"a\":3,\"b\":4,\"ab\":5}";
    struct kvg_tok *t;
    char *j = tt_json(vocab, "[\"a b\"]", "\"byte_fallback\":true,\"unk_token\":\"<unk>\",", NULL,
                      NULL, NULL, NULL, NULL);
    CHECK_INT(tt_load_json(j, &t), 0);
    CHECK_STR(tt_encs(t, "ab\xC3\xA9"), "5 1 2"); /* é -> <0xC3> <0xA9> */
    CHECK_STR(tt_encs(t, "azzb"), "3 0 0 4");     /* no fallback bytes for z: unk each */
    kvg_tok_free(t);
    free(j);
    j = tt_json(vocab, "[\"a b\"]", "\"fuse_unk\":true,\"unk_token\":\"<unk>\",", NULL, NULL, NULL,
                NULL, NULL);
    CHECK_INT(tt_load_json(j, &t), 0);
    CHECK_STR(tt_encs(t, "azzb"), "3 0 4"); /* fused */
    CHECK_STR(tt_encs(t, "ab\xC3\xA9z"), "5 0");
    kvg_tok_free(t);
    free(j);
    /* No unk token: unknown characters are dropped (as HF does). */
    j = tt_json(vocab, "[\"a b\"]", NULL, NULL, NULL, NULL, NULL, NULL);
    CHECK_INT(tt_load_json(j, &t), 0);
    CHECK_STR(tt_encs(t, "azb"), "5"); /* and the survivors still merge */
    kvg_tok_free(t);
    free(j);
    /* An unk token that is not in the vocabulary fails when needed. */
    j = tt_json(vocab, "[\"a b\"]", "\"unk_token\":\"<nope>\",", NULL, NULL, NULL, NULL, NULL);
    CHECK_INT(tt_load_json(j, &t), 0);
    CHECK_STR(tt_encs(t, "ab"), "5");
    CHECK_STR(tt_encs(t, "az"), "ERR -20003");
    kvg_tok_free(t);
    free(j);
}

/* ---- random merge tables: both strategies against a brute force ---- */

struct rmodel {
    char *json;
    uint32_t (*pairs)[3]; /* left, right, merged; index = rank */
    size_t n;
};

static uint64_t rs = 88172645463325252ull;
static uint32_t rnd(uint32_t n)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs % n);
}

/* Byte-level vocabulary over the alphabet "abcd", with random merges of
 * existing tokens (each merged token new). */
static void random_model(struct rmodel *m, size_t merges)
{
    char **tok = calloc(256 + merges, sizeof *tok);
    const char **extra = calloc(merges, sizeof *extra);
    m->pairs = calloc(merges, sizeof *m->pairs);
    size_t ntok = 0;
    uint32_t ids[4] = {'a', 'b', 'c', 'd'};
    struct kvg_buf mj;
    kvg_buf_init(&mj, 0);
    kvg_buf_append(&mj, "[", 1);
    for (size_t k = 0; k < merges; k++) {
        for (int tries = 0; tries < 100; tries++) {
            uint32_t a = rnd(4 + (uint32_t)ntok), b = rnd(4 + (uint32_t)ntok);
            uint32_t ia = a < 4 ? ids[a] : 256 + a - 4, ib = b < 4 ? ids[b] : 256 + b - 4;
            char sa[64], sb[64], sab[128];
            snprintf(sa, sizeof sa, "%s", a < 4 ? (char[]){(char)ids[a], 0} : tok[a - 4]);
            snprintf(sb, sizeof sb, "%s", b < 4 ? (char[]){(char)ids[b], 0} : tok[b - 4]);
            if (strlen(sa) + strlen(sb) > 12) continue;
            snprintf(sab, sizeof sab, "%s%s", sa, sb);
            int dup = sab[1] == 0;
            for (size_t i = 0; i < ntok && !dup; i++) dup = !strcmp(tok[i], sab);
            if (dup) continue;
            tok[ntok] = strdup(sab);
            extra[ntok] = tok[ntok];
            m->pairs[m->n][0] = ia;
            m->pairs[m->n][1] = ib;
            m->pairs[m->n][2] = 256 + (uint32_t)ntok;
            kvg_buf_printf(&mj, "%s[\"%s\",\"%s\"]", m->n ? "," : "", sa, sb);
            m->n++;
            ntok++;
            break;
        }
    }
    kvg_buf_append(&mj, "]", 1);
    char *vocab = tt_bl_vocab(extra, ntok);
    m->json = tt_json(vocab, kvg_buf_cstr(&mj), NULL, NULL, NULL, NULL, NULL, NULL);
    free(vocab);
    kvg_buf_free(&mj);
    for (size_t i = 0; i < ntok; i++) free(tok[i]);
    free(tok);
    free(extra);
}

/* The definition: merge the lowest-ranked adjacent pair, leftmost first. */
static size_t brute(const struct rmodel *m, uint32_t *s, size_t n)
{
    for (;;) {
        size_t best_i = 0, best_r = SIZE_MAX;
        for (size_t i = 0; i + 1 < n; i++)
            for (size_t r = 0; r < m->n && r < best_r; r++)
                if (m->pairs[r][0] == s[i] && m->pairs[r][1] == s[i + 1]) {
                    best_r = r;
                    best_i = i;
                }
        if (best_r == SIZE_MAX) return n;
        s[best_i] = m->pairs[best_r][2];
        memmove(&s[best_i + 1], &s[best_i + 2], (n - best_i - 2) * sizeof *s);
        n--;
    }
}

TEST(merge_strategies_match_definition)
{
    struct rmodel m = {0};
    random_model(&m, 300);
    struct kvg_tok *t;
    CHECK_INT(tt_load_json(m.json, &t), 0);
    struct kvg_tok_scratch s;
    CHECK_INT(kvg__tok_scratch_init(&s, 4096), 0);
    struct kvg_tok_ids out = {0};
    s.out = &out;
    for (int iter = 0; iter < 400; iter++) {
        size_t n = 1 + rnd(iter < 300 ? 40 : 300);
        uint32_t a[300], b[300], c[300];
        for (size_t i = 0; i < n; i++) a[i] = b[i] = c[i] = "abcd"[rnd(4)];
        /* Sizes the work arrays, as kvg__tok_bpe_word does before merging. */
        out.n = 0;
        char w[300];
        for (size_t i = 0; i < n; i++) w[i] = (char)a[i];
        CHECK_INT(kvg__tok_bpe_word(t, &s, w, n), 0);
        size_t na = kvg__tok_bpe_merge(t, &s, a, n, 0);
        size_t nb = kvg__tok_bpe_merge(t, &s, b, n, 1);
        size_t nc = brute(&m, c, n);
        CHECK_INT(na, nc);
        CHECK_INT(nb, nc);
        CHECK(!memcmp(a, c, nc * sizeof *c));
        CHECK(!memcmp(b, c, nc * sizeof *c));
        CHECK_INT(out.n, nc); /* the encode path agrees too */
        CHECK(!memcmp(out.v, c, nc * sizeof *c));
    }
    free(out.v);
    kvg__tok_scratch_free(&s);
    kvg_tok_free(t);
    free(m.json);
    free(m.pairs);
}

/* ---- the shared word cache under concurrent use ---- */

struct worker {
    const struct kvg_tok *tok;
    const char *text;
    const char *want;
    int bad;
};

static void *hammer(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < 40; i++) {
        uint32_t *ids;
        size_t n;
        if (kvg_tok_encode(w->tok, w->text, strlen(w->text), 0, &ids, &n)) {
            w->bad++;
            continue;
        }
        char buf[8192];
        size_t k = 0;
        buf[0] = 0;
        for (size_t j = 0; j < n && k + 16 < sizeof buf; j++)
            k += (size_t)snprintf(buf + k, sizeof buf - k, j ? " %u" : "%u", ids[j]);
        if (strcmp(buf, w->want)) w->bad++;
        free(ids);
    }
    return NULL;
}

TEST(cache_concurrent_readers_and_writers)
{
    struct rmodel m = {0};
    random_model(&m, 200);
    struct kvg_tok *t;
    CHECK_INT(tt_load_json(m.json, &t), 0);
    /* A tiny cache so that threads keep evicting each other's entries. */
    CHECK_INT(kvg__tok_cache_alloc(t, 4), 0);
    char text[4096];
    size_t n = 0;
    while (n < 3000) {
        size_t len = 1 + rnd(20);
        for (size_t i = 0; i < len; i++) text[n++] = "abcd"[rnd(4)];
        text[n++] = ' ';
    }
    text[n] = 0;
    /* The reference: no cache at all. */
    struct kvg_tok *plain;
    CHECK_INT(tt_load_json(m.json, &plain), 0);
    CHECK_INT(kvg__tok_cache_alloc(plain, 0), 0);
    char want[8192];
    snprintf(want, sizeof want, "%s", tt_encs(plain, text));
    struct worker w[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){.tok = t, .text = text, .want = want};
        pthread_create(&th[i], NULL, hammer, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK_INT(w[i].bad, 0);
    }
    kvg_tok_free(t);
    kvg_tok_free(plain);
    free(m.json);
    free(m.pairs);
}
