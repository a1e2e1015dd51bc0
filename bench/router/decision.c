/* A whole routing decision for a 6,000-token chat request, as kvgate serve
 * makes it: parse the body, render the chat template, tokenize (Qwen3's
 * tokenizer), hash the blocks, look them up in the precise index of 64
 * workers (each holding part of the prompt's prefix), score with kv_aware,
 * charge and release. Prints p50/p99/max over many decisions.
 *   decision TOKENIZER_JSON TOKENIZER_CONFIG [ITERATIONS]
 * Target (issue 5): under 1 ms at p99. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/stats.h"
#include "base/util.h"
#include "kv/index.h"
#include "proxy/route_input.h"
#include "router/pool.h"
#include "jinja/chat.h"
#include "tokenizer/tokenizer.h"

#define NW 64

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: decision TOKENIZER_JSON TOKENIZER_CONFIG [ITERATIONS]\n");
        return 2;
    }
    int iters = argc > 3 ? atoi(argv[3]) : 2000;
    kvg_log_set_level(KVG_LOG_WARN);
    struct kvg_tok *tok;
    struct kvg_jinja_chat *chat;
    char err[512];
    uint64_t t0 = kvg_now_ns();
    if (kvg_tok_load(argv[1], argv[2], &tok, err, sizeof err) ||
        kvg_jinja_chat_new(kvg_tok_chat_template(tok), kvg_tok_bos_token(tok),
                           kvg_tok_eos_token(tok), &chat, err, sizeof err)) {
        fprintf(stderr, "decision: %s\n", err);
        return 1;
    }
    double load_ms = (double)(kvg_now_ns() - t0) / 1e6;
    const struct kvg_rinput_tokenizer rt = {tok, chat, 16, NULL};
    /* A chat request of ~6,000 tokens: a long system prompt and a question. */
    struct kvg_buf text, body;
    kvg_buf_init(&text, 0);
    kvg_buf_init(&body, 0);
    struct kvg_rng rng;
    kvg_rng_seed(&rng, 1);
    static const char *words[] = {"router",  "cache",  "engine", "prefix", "token", "batch",
                                  "latency", "worker", "queue",  "stream", "model", "block"};
    for (int i = 0; i < 5200; i++)
        kvg_buf_printf(&text, "%s%s", i ? " " : "", words[kvg_rng_below(&rng, 12)]);
    kvg_buf_append_str(&body, "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":");
    kvg_buf_append_json_str(&body, text.data, text.len);
    kvg_buf_append_str(&body, "},{\"role\":\"user\",\"content\":\"What does the router do?\"}]}");
    /* 64 workers; the index says worker w holds the first w*5 blocks. */
    struct kvg_kv_index_opts io = {.block_size = 16, .max_workers = NW};
    struct kvg_kv_index *idx;
    kvg_kv_index_new(&io, &idx);
    struct kvg_policy_opts po;
    kvg_policy_opts_default(&po);
    po.kv = idx;
    struct kvg_policy *pol;
    kvg_policy_new("kv_aware", &po, &pol);
    struct kvg_pool pool;
    kvg_pool_init(&pool, pol, NULL);
    for (int w = 0; w < NW; w++) {
        char url[64];
        snprintf(url, sizeof url, "http://127.0.0.1:%d", 20000 + w);
        kvg_pool_add(&pool, url);
        kvg_kv_index_add_worker(idx, (uint32_t)w);
    }
    struct kvg_rinput ri;
    kvg_rinput_parse(&ri, body.data, body.len, KVG_API_CHAT, err, sizeof err);
    kvg_rinput_tokenize(&ri, &rt, 0);
    printf("prompt: %zu tokens, %zu blocks of 16; tokenizer load %.1f ms\n", ri.nids, ri.nhashes,
           load_ms);
    /* Fill the index through its event path: a BlockStored per worker. */
    for (int w = 0; w < NW; w++) {
        size_t nb = KVG_MIN((size_t)w * 5, ri.nhashes);
        if (!nb) continue;
        struct kvg_buf mp;
        kvg_buf_init(&mp, 0);
        /* msgpack: [0.0, [["BlockStored", [h..], nil, [t..], 16]], 0] */
        unsigned char hdr[] = {0x93, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, 0x91, 0x95, 0xab};
        kvg_buf_append(&mp, hdr, sizeof hdr);
        kvg_buf_append_str(&mp, "BlockStored");
        unsigned char a16[3] = {0xdc, (unsigned char)(nb >> 8), (unsigned char)nb};
        kvg_buf_append(&mp, a16, 3);
        for (size_t i = 0; i < nb; i++) {
            unsigned char h[9] = {
                0xcf, 0, 0, 0, 0, 0, 0, (unsigned char)(w + 1), (unsigned char)(i + 1)};
            h[6] = (unsigned char)(i >> 8);
            kvg_buf_append(&mp, h, 9);
        }
        kvg_buf_append(&mp, "\xc0", 1);
        uint32_t nt = (uint32_t)(nb * 16);
        unsigned char a32[5] = {0xdd, (unsigned char)(nt >> 24), (unsigned char)(nt >> 16),
                                (unsigned char)(nt >> 8), (unsigned char)nt};
        kvg_buf_append(&mp, a32, 5);
        for (uint32_t t = 0; t < nt; t++) {
            uint32_t v = ri.ids[t];
            unsigned char c[5] = {0xce, (unsigned char)(v >> 24), (unsigned char)(v >> 16),
                                  (unsigned char)(v >> 8), (unsigned char)v};
            kvg_buf_append(&mp, c, 5);
        }
        kvg_buf_append(&mp, "\x10\x00", 2);
        struct kvg_kv_batch b;
        kvg_kv_batch_init(&b, NULL);
        if (kvg_kv_decode_batch(&b, mp.data, mp.len) < 0) fprintf(stderr, "decode: %s\n", b.err);
        kvg_kv_index_apply(idx, (uint32_t)w, &b, NULL);
        kvg_kv_batch_free(&b);
        kvg_buf_free(&mp);
    }
    kvg_rinput_free(&ri);
    double *lat = malloc((size_t)iters * sizeof *lat);
    int chosen = -1;
    for (int i = 0; i < iters; i++) {
        uint64_t a = kvg_now_ns();
        kvg_rinput_parse(&ri, body.data, body.len, KVG_API_CHAT, err, sizeof err);
        kvg_rinput_tokenize(&ri, &rt, 0);
        struct kvg_route_ctx ctx = {.rng = &rng, .now_ms = kvg_now_ms(), .load_max_age_ms = 5000};
        kvg_rinput_ctx(&ri, &ctx);
        struct kvg_pick pick;
        int known;
        if (kvg_pool_pick(&pool, &ctx, NULL, 0, &pick, &known, NULL) == 0) {
            chosen = pick.w->slot;
            kvg_pool_release(&pool, &pick, KVG_OUT_OK, &ctx);
        }
        kvg_rinput_free(&ri);
        lat[i] = (double)(kvg_now_ns() - a) / 1e3;
    }
    kvg_stats_sort(lat, (size_t)iters);
    printf("decisions: %d; chosen worker %d (holds the longest prefix: %d)\n", iters, chosen,
           NW - 1);
    printf("latency us: p50 %.1f  p99 %.1f  max %.1f\n",
           kvg_stats_pct_sorted(lat, (size_t)iters, 50),
           kvg_stats_pct_sorted(lat, (size_t)iters, 99), lat[iters - 1]);
    free(lat);
    kvg_pool_destroy(&pool);
    kvg_kv_index_free(idx);
    kvg_jinja_chat_free(chat);
    kvg_tok_free(tok);
    kvg_buf_free(&text);
    kvg_buf_free(&body);
    return 0;
}
