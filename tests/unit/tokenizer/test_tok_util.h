/* Helpers shared by the tokenizer unit tests: build a small tokenizer.json
 * in a temporary file, load it, and encode / decode to strings that CHECK_STR
 * can compare. Everything here is static: each test program includes it. */
#ifndef KVG_TEST_TOK_UTIL_H
#define KVG_TEST_TOK_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/util.h"
#include "support/test.h"
#include "test_block_hash.h"
#include "tokenizer/tok_impl.h"
#include "tokenizer/tokenizer.h"

static char tt_err[512];

/* Writes json to a temporary file and loads it; returns the code. The
 * tokenizer (if any) goes to *out; caller frees it. */
static inline int tt_load_json(const char *json, struct kvg_tok **out)
{
    char path[] = "/tmp/kvg-tok-test.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    size_t n = strlen(json);
    if (write(fd, json, n) != (ssize_t)n) {
        close(fd);
        unlink(path);
        return -1;
    }
    close(fd);
    tt_err[0] = 0;
    int rc = kvg_tok_load(path, NULL, out, tt_err, sizeof tt_err);
    unlink(path);
    return rc;
}

/* A tokenizer.json with the given model vocab / merges JSON and components
 * (each a JSON value; NULL means null). */
static inline char *tt_json(const char *vocab, const char *merges, const char *model_extra,
                            const char *added, const char *normalizer, const char *pre,
                            const char *post, const char *decoder)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    kvg_buf_printf(&b,
                   "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,"
                   "\"added_tokens\":%s,\"normalizer\":%s,\"pre_tokenizer\":%s,"
                   "\"post_processor\":%s,\"decoder\":%s,"
                   "\"model\":{\"type\":\"BPE\",%s\"vocab\":%s,\"merges\":%s}}",
                   added ? added : "[]", normalizer ? normalizer : "null", pre ? pre : "null",
                   post ? post : "null", decoder ? decoder : "null", model_extra ? model_extra : "",
                   vocab, merges);
    return kvg_buf_cstr(&b);
}

/* Byte-level vocabulary: the 256 byte chars (ids 0..255 in byte order)
 * followed by extra tokens (ids 256...), as a JSON object. */
static inline char *tt_bl_vocab(const char *const *extra, size_t n)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    kvg_buf_append(&b, "{", 1);
    for (int i = 0; i < 256; i++) {
        char c[4];
        size_t l = kvg_utf8_put(kvg__tok_bl_char((uint8_t)i), c);
        kvg_buf_append_json_str(&b, c, l);
        kvg_buf_printf(&b, ":%d,", i);
    }
    for (size_t i = 0; i < n; i++) {
        kvg_buf_append_json_str(&b, extra[i], strlen(extra[i]));
        kvg_buf_printf(&b, ":%zu,", 256 + i);
    }
    b.len--; /* the last comma */
    kvg_buf_append(&b, "}", 1);
    return kvg_buf_cstr(&b);
}

/* Encodes and renders the ids as "1 2 3", or "ERR <code>". Static buffer. */
static inline const char *tt_enc(const struct kvg_tok *tok, const char *text, size_t len,
                                 int special)
{
    static char out[8192];
    uint32_t *ids;
    size_t n;
    int rc = kvg_tok_encode(tok, text, len, special, &ids, &n);
    if (rc) {
        snprintf(out, sizeof out, "ERR %d", rc);
        return out;
    }
    size_t w = 0;
    out[0] = 0;
    for (size_t i = 0; i < n && w + 16 < sizeof out; i++)
        w += (size_t)snprintf(out + w, sizeof out - w, i ? " %u" : "%u", ids[i]);
    free(ids);
    return out;
}

static inline const char *tt_encs(const struct kvg_tok *tok, const char *text)
{
    return tt_enc(tok, text, strlen(text), 0);
}

/* Decodes ids given as a string "1 2 3". Static buffer. */
static inline const char *tt_dec(const struct kvg_tok *tok, const char *ids_text, int skip)
{
    static char out[8192];
    uint32_t ids[512];
    size_t n = 0;
    for (const char *p = ids_text; *p && n < 512;) {
        char *end;
        ids[n++] = (uint32_t)strtoul(p, &end, 10);
        if (end == p) break;
        p = end;
    }
    char *text;
    size_t len;
    int rc = kvg_tok_decode(tok, ids, n, skip, &text, &len);
    if (rc) {
        snprintf(out, sizeof out, "ERR %d", rc);
        return out;
    }
    snprintf(out, sizeof out, "%s", text);
    free(text);
    return out;
}

/* Encodes `rounds` texts through one prefix cache of max_bytes and checks
 * each against kvg_tok_encode, and its block hashes (block size 1, 3 or 16
 * and one of three tags, by round) against tt_block_hash on the uncached
 * ids. The texts are random runs of the fragments,
 * each sharing a random start with an earlier one (truncated anywhere, so
 * cuts land inside tokens, before lstrip spaces, etc.). Returns the number
 * of mismatches; *reused and *blocks_reused (nullable) the ids and the
 * block hashes the cache supplied. */
static inline int tt_check_prefix_cache_keys(const struct kvg_tok *t, const char *const *frag,
                                             size_t nfrag, int rounds, size_t max_bytes,
                                             unsigned seed, uint64_t *reused,
                                             uint64_t *blocks_reused, uint64_t key_mask)
{
    struct kvg_tok_pcache *c;
    if (kvg_tok_pcache_new(t, max_bytes, &c)) return -1;
    kvg__tok_pcache_test_key_mask(c, key_mask);
    struct kvg_buf prev[8], b;
    for (int i = 0; i < 8; i++) kvg_buf_init(&prev[i], 0);
    kvg_buf_init(&b, 0);
    int bad = 0;
    uint64_t used = 0, bused = 0;
    srand(seed);
    for (int r = 0; r < rounds; r++) {
        struct kvg_buf *base = &prev[rand() % 8];
        b.len = 0;
        if (base->len && rand() % 4)
            kvg_buf_append(&b, base->data, (size_t)rand() % (base->len + 1));
        for (int k = rand() % 12; k >= 0; k--) kvg_buf_append_str(&b, frag[(size_t)rand() % nfrag]);
        /* Truncation may split a UTF-8 sequence: both paths must refuse alike. */
        uint32_t *a = NULL, *x = NULL;
        size_t na = 0, nx = 0, got = 0;
        int ra = kvg_tok_encode(t, b.data ? b.data : "", b.len, r & 1, &a, &na);
        static const uint32_t sizes[] = {1, 3, 16};
        uint64_t tag[2] = {(uint64_t)(r / 3 % 3), 7};
        struct kvg_tok_blocks bl = {
            .block_size = sizes[r % 3], .tag = {tag[0], tag[1]}, .hash = tt_block_hash, .ud = tag};
        int rx =
            kvg_tok_encode_blocks(t, c, b.data ? b.data : "", b.len, r & 1, &x, &nx, &got, 0, &bl);
        if (ra != rx || na != nx || (na && memcmp(a, x, na * sizeof *a))) bad++;
        if (!rx) {
            size_t nb = na / bl.block_size;
            uint64_t *want = malloc((nb ? nb : 1) * sizeof *want);
            tt_block_hash(tag, a, bl.block_size, 0, nb, want);
            if (bl.nhashes != nb || bl.reused > nb ||
                (nb && memcmp(want, bl.hashes, nb * sizeof *want)))
                bad++;
            bused += bl.reused;
            free(want);
        }
        free(bl.hashes);
        used += got;
        free(a);
        free(x);
        struct kvg_buf *dst = &prev[rand() % 8];
        dst->len = 0;
        kvg_buf_append(dst, b.data ? b.data : "", b.len);
    }
    struct kvg_tok_pcache_stats st;
    kvg_tok_pcache_stats(c, &st);
    if (st.bytes > max_bytes) bad++;
    for (int i = 0; i < 8; i++) kvg_buf_free(&prev[i]);
    kvg_buf_free(&b);
    kvg_tok_pcache_free(c);
    if (reused) *reused = used;
    if (blocks_reused) *blocks_reused = bused;
    return bad;
}

/* The same with all key bits. */
static inline int tt_check_prefix_cache(const struct kvg_tok *t, const char *const *frag,
                                        size_t nfrag, int rounds, size_t max_bytes, unsigned seed,
                                        uint64_t *reused, uint64_t *blocks_reused)
{
    return tt_check_prefix_cache_keys(t, frag, nfrag, rounds, max_bytes, seed, reused,
                                      blocks_reused, ~0ull);
}

#endif
