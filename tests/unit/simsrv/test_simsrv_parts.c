/* The simulated engine's pure pieces: the stored responses' bounds
 * (src/simsrv/resp_store.c), the sim's embeddings and scores
 * (api_pooling.c), audio durations (audio.c), Python's float printing and
 * the --disable-endpoints names (gen.c, route.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "simsrv/simsrv.h"
#include "support/test.h"

static int put(struct kvg_simsrv_store *st, const char *id, const char *out)
{
    return kvg__simsrv_store_put(st, id, "{}", 2, "[]", 2, out, strlen(out));
}

TEST(store_keeps_replaces_and_deletes)
{
    struct kvg_simsrv_store *st;
    struct kvg_simsrv_stored s;
    CHECK_INT(kvg__simsrv_store_new(10, &st), 0);
    CHECK_INT(put(st, "resp_a", "one"), 0);
    CHECK_INT(kvg__simsrv_store_get(st, "resp_a", 6, &s), 0);
    CHECK(s.olen == 3 && !memcmp(s.output, "one", 3));
    CHECK_INT(put(st, "resp_a", "two!"), 0); /* the same id replaces */
    CHECK_INT(kvg__simsrv_store_get(st, "resp_a", 6, &s), 0);
    CHECK(s.olen == 4 && !memcmp(s.output, "two!", 4));
    CHECK_INT(kvg__simsrv_store_get(st, "resp_", 5, &s), KVG_ENOTFOUND); /* a prefix is no id */
    CHECK_INT(kvg__simsrv_store_del(st, "resp_a", 6), 0);
    CHECK_INT(kvg__simsrv_store_get(st, "resp_a", 6, &s), KVG_ENOTFOUND);
    CHECK_INT(kvg__simsrv_store_del(st, "resp_a", 6), KVG_ENOTFOUND);
    kvg__simsrv_store_free(st);
    /* no store (the flag off): nothing is found */
    CHECK_INT(kvg__simsrv_store_get(NULL, "x", 1, &s), KVG_ENOTFOUND);
    CHECK_INT(kvg__simsrv_store_del(NULL, "x", 1), KVG_ENOTFOUND);
}

TEST(store_evicts_the_oldest)
{
    struct kvg_simsrv_store *st;
    struct kvg_simsrv_stored s;
    char id[32];
    CHECK_INT(kvg__simsrv_store_new(3, &st), 0);
    for (int i = 0; i < 10; i++) {
        snprintf(id, sizeof id, "r%d", i);
        CHECK_INT(put(st, id, "x"), 0);
    }
    for (int i = 0; i < 10; i++) {
        snprintf(id, sizeof id, "r%d", i);
        CHECK_INT(kvg__simsrv_store_get(st, id, strlen(id), &s), i >= 7 ? 0 : KVG_ENOTFOUND);
    }
    /* deleting from the middle keeps the age order whole */
    CHECK_INT(kvg__simsrv_store_del(st, "r8", 2), 0);
    CHECK_INT(put(st, "r10", "x"), 0);
    CHECK_INT(put(st, "r11", "x"), 0);
    CHECK_INT(kvg__simsrv_store_get(st, "r7", 2, &s), KVG_ENOTFOUND);
    CHECK_INT(kvg__simsrv_store_get(st, "r9", 2, &s), 0);
    CHECK_INT(kvg__simsrv_store_get(st, "r11", 3, &s), 0);
    kvg__simsrv_store_free(st);
}

TEST(store_bytes_bounded)
{
    struct kvg_simsrv_store *st;
    CHECK_INT(kvg__simsrv_store_new(100, &st), 0);
    size_t big = (130u << 20); /* two are past the 256 MB bound */
    char *p = malloc(big);
    CHECK(p != NULL);
    memset(p, 'a', big);
    CHECK_INT(kvg__simsrv_store_put(st, "a", "{}", 2, "[]", 2, p, big), 0);
    /* a second one past the 256 MB bound evicts the first */
    CHECK_INT(kvg__simsrv_store_put(st, "b", "{}", 2, "[]", 2, p, big), 0);
    struct kvg_simsrv_stored s;
    CHECK_INT(kvg__simsrv_store_get(st, "a", 1, &s), KVG_ENOTFOUND);
    CHECK_INT(kvg__simsrv_store_get(st, "b", 1, &s), 0);
    free(p);
    kvg__simsrv_store_free(st);
}

TEST(embeddings_deterministic_unit_and_similar)
{
    uint32_t a[] = {10, 20, 30}, b[] = {10, 20, 31}, c[] = {500, 600, 700};
    float ea[16], ea2[16], eb[16], ec[16];
    kvg__simsrv_embed(a, 3, 16, ea);
    kvg__simsrv_embed(a, 3, 16, ea2);
    kvg__simsrv_embed(b, 3, 16, eb);
    kvg__simsrv_embed(c, 3, 16, ec);
    CHECK(!memcmp(ea, ea2, sizeof ea));
    double norm = 0;
    for (int i = 0; i < 16; i++) norm += (double)ea[i] * ea[i];
    CHECK_NEAR(norm, 1.0, 1e-6);
    CHECK_NEAR(kvg__simsrv_similarity(ea, ea, 16), 1.0, 1e-6);
    /* sharing two of three tokens is closer than sharing none */
    CHECK(kvg__simsrv_similarity(ea, eb, 16) > kvg__simsrv_similarity(ea, ec, 16));
    double s = kvg__simsrv_similarity(ea, ec, 16);
    CHECK(s >= 0 && s <= 1);
}

static void le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8), p[2] = (unsigned char)(v >> 16),
    p[3] = (unsigned char)(v >> 24);
}

TEST(audio_duration)
{
    /* a 16 kHz 16-bit mono WAV of 3 s: its header says so */
    size_t data = 3 * 32000;
    unsigned char *w = calloc(1, 44 + data);
    memcpy(w, "RIFF", 4);
    le32(w + 4, (uint32_t)(36 + data));
    memcpy(w + 8, "WAVEfmt ", 8);
    le32(w + 16, 16);
    w[20] = 1, w[22] = 1;
    le32(w + 24, 16000);
    le32(w + 28, 32000);
    w[32] = 2, w[34] = 16;
    memcpy(w + 36, "data", 4);
    le32(w + 40, (uint32_t)data);
    CHECK_NEAR(kvg__simsrv_audio_seconds(w, 44 + data), 3.0, 1e-9);
    /* a lying data length is cut at the file's end */
    le32(w + 40, 0xffffffffu);
    CHECK_NEAR(kvg__simsrv_audio_seconds(w, 44 + data), 3.0, 1e-9);
    /* a cut header, or no header: the size at 32000 bytes a second */
    CHECK_NEAR(kvg__simsrv_audio_seconds(w, 30), 30 / 32000.0, 1e-12);
    CHECK_NEAR(kvg__simsrv_audio_seconds((const unsigned char *)"abc", 3), 3 / 32000.0, 1e-12);
    free(w);
}

TEST(python_floats)
{
    struct kvg_buf b;
    double v[] = {1.0, 0.7, 1e-05, 0.1 + 0.2, 123456789.0, -2.5, 0.0};
    const char *want[] = {"1.0",         "0.7",  "1e-05", "0.30000000000000004",
                          "123456789.0", "-2.5", "0.0"};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        kvg_buf_init(&b, 0);
        kvg__simsrv_pyfloat(&b, v[i]);
        CHECK_STR(kvg_buf_cstr(&b), want[i]);
        kvg_buf_free(&b);
    }
}

TEST(api_names)
{
    for (int i = 0; i < KVG_SIMSRV_API_N; i++) {
        const char *n = kvg_simsrv_api_name(i);
        CHECK_INT(kvg_simsrv_api_parse(n, strlen(n)), i);
    }
    CHECK_INT(kvg_simsrv_api_parse("responsesx", 9), KVG_SIMSRV_API_RESPONSES);
    CHECK_INT(kvg_simsrv_api_parse("respons", 7), -1);
    CHECK_INT(kvg_simsrv_api_parse("", 0), -1);
}
