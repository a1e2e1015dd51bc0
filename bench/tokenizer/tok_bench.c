/* tok_bench: throughput and load time of kvgate's tokenizer, for
 * bench/tokenizer/run.sh (which runs the reference tokenizers beside it).
 *
 *   tok_bench TOKENIZER FILE [--chunk N] [--reps R] [--threads T] [--no-cache]
 *             [--warm] [--prefix-cache BYTES [--shared S] [--turns T]]
 *       encodes FILE in chunks of N bytes (default 4096, cut at UTF-8
 *       boundaries), R passes (default 5); T threads each do every pass on
 *       the same tokenizer. Prints "bytes tokens seconds cpu_seconds": the fastest pass
 *       (all threads together when T > 1), then the CPU seconds of the
 *       pass using the least (summed over threads: unlike wall time it does
 *       not grow when other processes take the CPU, so it shows contention
 *       between the threads). Each pass starts with an empty
 *       word cache (a pass never profits from having seen the file before)
 *       unless --warm. With --prefix-cache, each chunk is a one-turn chat
 *       prompt ("<|im_start|>user\n" CHUNK "<|im_end|>\n<|im_start|>assistant\n",
 *       the rendered form the gateway tokenizes) encoded through a tokenizer
 *       prefix cache of BYTES (0: the same text without one), emptied before
 *       every pass: chunks are unique, so this is the cache's cost on misses.
 *       --shared S (with --prefix-cache) puts the file's first S bytes in
 *       front of every prompt as a system message (the chunks come from the
 *       rest): the shared-prompt case the cache is for. --turns T makes the
 *       chunks conversations of T turns: turn t is turns 1..t-1 (each chunk
 *       a user message answered "ok") and chunk t as the new user message,
 *       as a chat client resends its history. Bytes count every prompt's.
 *   tok_bench TOKENIZER --load R
 *       loads R times; prints "min_ms median_ms".
 *
 * Best-of-R is reported because the machines are shared: the fastest pass is
 * the one least disturbed by other work. */
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/stats.h"
#include "base/util.h"
#include "tokenizer/tok_impl.h"
#include "tokenizer/tokenizer.h"

struct job {
    const struct kvg_tok *tok;
    struct kvg_tok_pcache *pc; /* with chat */
    int chat;                  /* wrap each chunk as a chat prompt */
    const char *data;
    size_t len, chunk, tokens;
    size_t shared; /* bytes of data in front of every prompt (chat) */
    int turns;     /* chat: turns per conversation */
    size_t bytes;  /* prompt bytes encoded */
    double cpu;    /* this thread's CPU seconds */
    int rc;
};

/* Appends n bytes to the growing prompt p (*len used, *cap allocated). */
static int put(char **p, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n > *cap) {
        size_t c = (*len + n) * 2;
        char *q = realloc(*p, c);
        if (!q) return -ENOMEM;
        *p = q;
        *cap = c;
    }
    memcpy(*p + *len, s, n);
    *len += n;
    return 0;
}

#define PUT(lit) put(&t, &len, &cap, lit, sizeof lit - 1)

/* The chat prompt of turn `turn` (0-based) of the conversation whose chunks
 * start at chunk_at[0..turn]: the history, then chunk turn as the user's. */
static int chat_prompt(const struct job *j, const size_t *chunk_at, const size_t *chunk_n, int turn,
                       char **out, size_t *out_len)
{
    char *t = *out;
    size_t len = 0, cap = *out_len;
    int rc = 0;
    if (j->shared)
        rc = PUT("<|im_start|>system\n") || put(&t, &len, &cap, j->data, j->shared) ||
             PUT("<|im_end|>\n");
    for (int i = 0; i <= turn && !rc; i++) {
        rc = PUT("<|im_start|>user\n") || put(&t, &len, &cap, j->data + chunk_at[i], chunk_n[i]) ||
             PUT("<|im_end|>\n<|im_start|>assistant\n");
        if (!rc && i < turn) rc = PUT("ok<|im_end|>\n");
    }
    *out = t;
    *out_len = cap;
    return rc ? -ENOMEM : (int)len;
}

static void *encode_all(void *arg)
{
    struct job *j = arg;
    double c0 = (double)kvg_thread_cpu_ns() / 1e9;
    j->tokens = j->bytes = 0;
    size_t chunk_at[64], chunk_n[64], cap = 0;
    char *t = NULL;
    int turn = 0;
    for (size_t at = j->chat ? j->shared : 0; at < j->len;) {
        size_t n = j->len - at < j->chunk ? j->len - at : j->chunk;
        while (at + n < j->len && ((uint8_t)j->data[at + n] & 0xC0) == 0x80) n--;
        uint32_t *ids;
        size_t k;
        if (j->chat) {
            chunk_at[turn] = at;
            chunk_n[turn] = n;
            int len = chat_prompt(j, chunk_at, chunk_n, turn, &t, &cap);
            if (len < 0) {
                j->rc = len;
                break;
            }
            j->rc = kvg_tok_encode_cached(j->tok, j->pc, t, (size_t)len, 0, &ids, &k, NULL, 0);
            j->bytes += (size_t)len;
            turn = turn + 1 < j->turns ? turn + 1 : 0;
        } else {
            j->rc = kvg_tok_encode(j->tok, j->data + at, n, 0, &ids, &k);
            j->bytes += n;
        }
        if (j->rc) break;
        j->tokens += k;
        free(ids);
        at += n;
    }
    free(t);
    j->cpu = (double)kvg_thread_cpu_ns() / 1e9 - c0;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: tok_bench TOKENIZER FILE [--chunk N] [--reps R] [--threads T] "
                        "[--no-cache] [--warm] [--prefix-cache BYTES [--shared S] [--turns T]] "
                        "| TOKENIZER --load R\n");
        return 2;
    }
    char err[512];
    struct kvg_tok *tok;
    if (!strcmp(argv[2], "--load")) {
        int reps = argc > 3 ? atoi(argv[3]) : 5;
        if (reps < 1 || reps > 1000) reps = 5;
        double *ms = calloc((size_t)reps, sizeof *ms);
        for (int r = 0; r < reps; r++) {
            uint64_t t0 = kvg_now_ns();
            int rc = kvg_tok_load(argv[1], NULL, &tok, err, sizeof err);
            ms[r] = (double)(kvg_now_ns() - t0) / 1e6;
            if (rc) {
                fprintf(stderr, "load: %s\n", err);
                return 1;
            }
            kvg_tok_free(tok);
        }
        kvg_stats_sort(ms, (size_t)reps);
        printf("%.1f %.1f\n", ms[0], kvg_stats_pct_sorted(ms, (size_t)reps, 50));
        free(ms);
        return 0;
    }
    size_t chunk = 4096;
    int reps = 5, threads = 1, cache = 1, warm = 0, chat = 0;
    size_t pc_bytes = 0, shared = 0;
    int turns = 1;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--chunk") && i + 1 < argc)
            chunk = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-cache"))
            cache = 0;
        else if (!strcmp(argv[i], "--warm"))
            warm = 1;
        else if (!strcmp(argv[i], "--prefix-cache") && i + 1 < argc)
            chat = 1, pc_bytes = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--shared") && i + 1 < argc)
            shared = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--turns") && i + 1 < argc)
            turns = atoi(argv[++i]);
    }
    if (turns < 1 || turns > 64) turns = 1;
    if (chunk == 0) chunk = 4096;
    if (reps < 1) reps = 1;
    if (threads < 1 || threads > 64) threads = 1;
    int rc = kvg_tok_load(argv[1], NULL, &tok, err, sizeof err);
    if (rc) {
        fprintf(stderr, "load %s: %s\n", argv[1], err);
        return 1;
    }
    FILE *f = fopen(argv[2], "rb");
    if (!f) {
        perror(argv[2]);
        return 1;
    }
    struct kvg_buf b;
    kvg_buf_init(&b, 1u << 30);
    char tmp[65536];
    size_t got;
    while ((got = fread(tmp, 1, sizeof tmp, f)) > 0)
        if (kvg_buf_append(&b, tmp, got)) return 1;
    fclose(f);
    if (shared > b.len) shared = b.len;
    while (shared && shared < b.len && ((uint8_t)b.data[shared] & 0xC0) == 0x80) shared--;
    struct job *jobs = calloc((size_t)threads, sizeof *jobs);
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    double best = 1e30, best_cpu = 1e30;
    size_t tokens = 0, bytes = 0;
    for (int r = 0; r < reps; r++) {
        if ((r == 0 || !warm) && kvg__tok_cache_alloc(tok, cache ? KVG_TOK_CACHE_ENTRIES : 0))
            return 1;
        struct kvg_tok_pcache *pc = NULL;
        if (chat && pc_bytes && kvg_tok_pcache_new(tok, pc_bytes, &pc)) return 1;
        uint64_t t0 = kvg_now_ns();
        for (int t = 0; t < threads; t++) {
            jobs[t] = (struct job){.tok = tok,
                                   .pc = pc,
                                   .chat = chat,
                                   .data = b.data,
                                   .len = b.len,
                                   .chunk = chunk,
                                   .shared = shared,
                                   .turns = turns};
            pthread_create(&tids[t], NULL, encode_all, &jobs[t]);
        }
        tokens = bytes = 0;
        double cpu = 0;
        for (int t = 0; t < threads; t++) {
            pthread_join(tids[t], NULL);
            if (jobs[t].rc) {
                fprintf(stderr, "encode: %s\n", kvg_strerror(jobs[t].rc));
                return 1;
            }
            tokens += jobs[t].tokens;
            bytes += jobs[t].bytes;
            cpu += jobs[t].cpu;
        }
        if (cpu < best_cpu) best_cpu = cpu;
        double s = (double)(kvg_now_ns() - t0) / 1e9;
        kvg_tok_pcache_free(pc);
        if (s < best) best = s;
    }
    printf("%zu %zu %.6f %.6f\n", bytes, tokens, best, best_cpu);
    free(jobs);
    free(tids);
    kvg_buf_free(&b);
    kvg_tok_free(tok);
    return 0;
}
