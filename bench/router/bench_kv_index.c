/* Benchmark of the precise KV index (src/kv/index.h), the numbers issue 5
 * asks for: ingest rate of block events on one core, lookup latency for a
 * 6,000-token prompt (375 blocks of 16) across 64 workers, bytes per
 * (block, worker) entry, and lookups under concurrent ingest (lock
 * contention). Prints a Markdown table; bench/router/run.sh writes it to
 * bench/results/router-index.md.
 *
 * Batches are encoded with msgpack-c exactly as vLLM sends them and decoded
 * outside the timed region for the ingest figure (which therefore covers
 * re-hashing the tokens, locking and inserting); the decode cost is reported
 * on its own line. Not a test: no pass/fail, numbers only. */
#include <msgpack.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/stats.h"
#include "base/util.h"
#include "kv/events.h"
#include "kv/hash.h"
#include "kv/index.h"

#define BS 16
#define PROMPT_BLOCKS 375
#define EV_BLOCKS 32 /* blocks per BlockStored: one scheduler step of prefill */

static uint32_t g_workers = 64, g_capacity = 16384, g_lookups = 20000;
static uint64_t g_ingest_events = 4000000, g_max_entries = 0; /* 0: the index's default */
static double g_contention_s = 2.0;

/* ---- a synthetic engine fleet producing vLLM batches ---- */

struct engine {
    uint64_t next_eh; /* engine block hashes: a counter per engine */
    uint64_t *fifo;   /* cached engine hashes, oldest first (ring) */
    uint32_t head, n;
    uint64_t chain_eh; /* last block of the chain being extended, 0 = none */
    uint32_t chain_len;
    uint32_t tok; /* token counter: every block is new content */
};

static void str(msgpack_packer *p, const char *s)
{
    msgpack_pack_str(p, strlen(s));
    msgpack_pack_str_body(p, s, strlen(s));
}

/* One step of engine e: a BlockStored of EV_BLOCKS blocks extending its
 * current prompt chain (a new prompt every PROMPT_BLOCKS blocks), plus a
 * BlockRemoved of its oldest blocks once over capacity, like an LRU-full
 * engine. Returns the number of block events packed. */
static uint32_t engine_step(struct engine *e, msgpack_sbuffer *sb)
{
    msgpack_packer p;
    uint32_t nrem = e->n + EV_BLOCKS > g_capacity ? e->n + EV_BLOCKS - g_capacity : 0;
    msgpack_sbuffer_clear(sb);
    msgpack_packer_init(&p, sb, msgpack_sbuffer_write);
    msgpack_pack_array(&p, 3);
    msgpack_pack_double(&p, 1.0);
    msgpack_pack_array(&p, nrem ? 2 : 1);
    msgpack_pack_array(&p, 7);
    str(&p, "BlockStored");
    msgpack_pack_array(&p, EV_BLOCKS);
    uint64_t first = e->next_eh;
    for (uint32_t i = 0; i < EV_BLOCKS; i++) msgpack_pack_uint64(&p, e->next_eh++);
    if (e->chain_eh)
        msgpack_pack_uint64(&p, e->chain_eh);
    else
        msgpack_pack_nil(&p);
    msgpack_pack_array(&p, EV_BLOCKS * BS);
    for (uint32_t i = 0; i < EV_BLOCKS * BS; i++) msgpack_pack_uint32(&p, e->tok++);
    msgpack_pack_uint32(&p, BS);
    msgpack_pack_nil(&p);
    str(&p, "GPU");
    if (nrem) {
        msgpack_pack_array(&p, 3);
        str(&p, "BlockRemoved");
        msgpack_pack_array(&p, nrem);
        for (uint32_t i = 0; i < nrem; i++) {
            msgpack_pack_uint64(&p, e->fifo[e->head]);
            e->head = (e->head + 1) % g_capacity;
            e->n--;
        }
        str(&p, "GPU");
    }
    msgpack_pack_uint32(&p, 0);
    for (uint32_t i = 0; i < EV_BLOCKS; i++) {
        e->fifo[(e->head + e->n) % g_capacity] = first + i;
        e->n++;
    }
    e->chain_len += EV_BLOCKS;
    e->chain_eh = e->chain_len >= PROMPT_BLOCKS ? 0 : first + EV_BLOCKS - 1;
    if (!e->chain_eh) e->chain_len = 0;
    return EV_BLOCKS + nrem;
}

static struct engine *fleet_new(void)
{
    struct engine *f = calloc(g_workers, sizeof *f);
    for (uint32_t w = 0; w < g_workers; w++) {
        f[w].fifo = malloc(g_capacity * sizeof *f[w].fifo);
        f[w].next_eh = ((uint64_t)w << 40) + 1;
        f[w].tok = w * 100000000u;
    }
    return f;
}

static void fleet_free(struct engine *f)
{
    for (uint32_t w = 0; w < g_workers; w++) free(f[w].fifo);
    free(f);
}

static struct kvg_kv_index *index_new(uint64_t max_entries)
{
    struct kvg_kv_index_opts o = {
        .block_size = BS, .max_workers = g_workers, .max_entries = max_entries};
    struct kvg_kv_index *idx;
    if (kvg_kv_index_new(&o, &idx)) abort();
    for (uint32_t w = 0; w < g_workers; w++) kvg_kv_index_add_worker(idx, w);
    return idx;
}

/* ---- 1. ingest ---- */

struct ingest_result {
    double events_per_s, events_per_cpu_s, decode_mb_per_s, decode_events_per_s;
    uint64_t events;
    struct kvg_kv_index_stats st;
};

static struct ingest_result ingest(struct kvg_kv_index *idx, struct engine *f, uint64_t target)
{
    struct ingest_result r = {0};
    struct kvg_kv_batch b;
    msgpack_sbuffer sb;
    uint64_t apply_ns = 0, apply_cpu = 0, decode_ns = 0, bytes = 0, events = 0;
    kvg_kv_batch_init(&b, NULL);
    msgpack_sbuffer_init(&sb);
    for (uint32_t w = 0; events < target; w = (w + 1) % g_workers) {
        uint32_t n = engine_step(&f[w], &sb);
        uint64_t t0 = kvg_now_ns();
        if (kvg_kv_decode_batch(&b, sb.data, sb.size) < 0) abort();
        uint64_t c1 = kvg_thread_cpu_ns(), t1 = kvg_now_ns();
        if (kvg_kv_index_apply(idx, w, &b, NULL)) abort();
        uint64_t t2 = kvg_now_ns();
        apply_cpu += kvg_thread_cpu_ns() - c1;
        decode_ns += t1 - t0;
        apply_ns += t2 - t1;
        bytes += sb.size;
        events += n;
    }
    r.events = events;
    r.events_per_s = (double)events / ((double)apply_ns / 1e9);
    r.events_per_cpu_s = (double)events / ((double)apply_cpu / 1e9);
    r.decode_mb_per_s = (double)bytes / 1e6 / ((double)decode_ns / 1e9);
    r.decode_events_per_s = (double)events / ((double)decode_ns / 1e9);
    kvg_kv_index_stats(idx, &r.st);
    msgpack_sbuffer_destroy(&sb);
    kvg_kv_batch_free(&b);
    return r;
}

/* ---- 2. lookups ---- */

#define NPROMPTS 32
#define SHARED 100 /* blocks of a system prompt common to every prompt */

static uint32_t g_tok[NPROMPTS][PROMPT_BLOCKS * BS];
static uint64_t g_seq[NPROMPTS][PROMPT_BLOCKS];

static void prompts_init(void)
{
    for (int p = 0; p < NPROMPTS; p++) {
        for (int i = 0; i < PROMPT_BLOCKS * BS; i++)
            g_tok[p][i] =
                i < SHARED * BS ? 7u + (uint32_t)i : 3000000000u + (uint32_t)(p * 10000 + i);
        kvg_kv_hash_tokens(g_tok[p], PROMPT_BLOCKS * BS, BS, g_seq[p], PROMPT_BLOCKS);
    }
}

/* Stores prompt p's first `depth` blocks on worker w (one event per 32). */
static void hold(struct kvg_kv_index *idx, uint32_t w, int p, int depth)
{
    msgpack_sbuffer sb;
    struct kvg_kv_batch b;
    msgpack_sbuffer_init(&sb);
    kvg_kv_batch_init(&b, NULL);
    for (int from = 0; from < depth; from += EV_BLOCKS) {
        int to = from + EV_BLOCKS < depth ? from + EV_BLOCKS : depth;
        msgpack_packer pk;
        msgpack_sbuffer_clear(&sb);
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        msgpack_pack_array(&pk, 2);
        msgpack_pack_double(&pk, 1.0);
        msgpack_pack_array(&pk, 1);
        msgpack_pack_array(&pk, 5);
        str(&pk, "BlockStored");
        msgpack_pack_array(&pk, (size_t)(to - from));
        for (int i = from; i < to; i++) msgpack_pack_uint64(&pk, g_seq[p][i] ^ 0xabcdef);
        if (from)
            msgpack_pack_uint64(&pk, g_seq[p][from - 1] ^ 0xabcdef);
        else
            msgpack_pack_nil(&pk);
        msgpack_pack_array(&pk, (size_t)(to - from) * BS);
        for (int i = from * BS; i < to * BS; i++) msgpack_pack_uint32(&pk, g_tok[p][i]);
        msgpack_pack_uint32(&pk, BS);
        if (kvg_kv_decode_batch(&b, sb.data, sb.size) < 0 || kvg_kv_index_apply(idx, w, &b, NULL))
            abort();
    }
    kvg_kv_batch_free(&b);
    msgpack_sbuffer_destroy(&sb);
}

/* Stores (on = 1) or removes one block on worker 0's host tier ("CPU"),
 * outside every prompt: while it is there, lookups take the tier-aware walk
 * over every tier (kvg_kv_tab_match_levels) with the same results. */
static void host_block(struct kvg_kv_index *idx, int on)
{
    static const uint32_t tok[BS] = {1, 2, 3};
    msgpack_sbuffer sb;
    struct kvg_kv_batch b;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    kvg_kv_batch_init(&b, NULL);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_array(&pk, on ? 7 : 3);
    str(&pk, on ? "BlockStored" : "BlockRemoved");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_uint64(&pk, 0x5eed);
    if (on) {
        msgpack_pack_nil(&pk);
        msgpack_pack_array(&pk, BS);
        for (int i = 0; i < BS; i++) msgpack_pack_uint32(&pk, tok[i]);
        msgpack_pack_uint32(&pk, BS);
        msgpack_pack_nil(&pk);
    }
    str(&pk, "CPU");
    if (kvg_kv_decode_batch(&b, sb.data, sb.size) < 0 || kvg_kv_index_apply(idx, 0, &b, NULL))
        abort();
    kvg_kv_batch_free(&b);
    msgpack_sbuffer_destroy(&sb);
}

struct lat {
    double p50, p99, max, mean;
};

/* Streams through a buffer bigger than the last-level cache so that the next
 * lookup finds none of the index in cache (untimed). */
static unsigned char *g_flush;
#define FLUSH_BYTES (64u << 20)

static void flush_caches(void)
{
    if (!g_flush) g_flush = calloc(1, FLUSH_BYTES);
    for (size_t i = 0; i < FLUSH_BYTES; i += 64) g_flush[i]++;
}

/* from_tokens: 0 sequence hashes (kvg_kv_index_match), 1 token ids, 2
 * sequence hashes through kvg_kv_index_match_tiers (the router's call). */
static struct lat lookups(struct kvg_kv_index *idx, uint32_t n, int from_tokens, uint64_t *checksum,
                          int cold)
{
    double *ns = malloc(n * sizeof *ns); /* exact: durations far below 2^53 ns */
    uint32_t *out = malloc(g_workers * sizeof *out);
    struct kvg_kv_tier_match *tm = malloc(g_workers * sizeof *tm);
    struct kvg_rng rng;
    struct lat l = {0};
    double sum = 0;
    kvg_rng_seed(&rng, 7);
    for (uint32_t i = 0; i < n; i++) {
        int p = (int)kvg_rng_below(&rng, NPROMPTS);
        if (cold) flush_caches();
        uint64_t t0 = kvg_now_ns();
        int m = from_tokens == 2
                    ? kvg_kv_index_match_tiers(idx, g_seq[p], PROMPT_BLOCKS, tm, g_workers)
                : from_tokens ? kvg_kv_index_match_tokens(idx, g_tok[p], PROMPT_BLOCKS * BS,
                                                          KVG_KV_HASH_SEED, out, g_workers)
                              : kvg_kv_index_match(idx, g_seq[p], PROMPT_BLOCKS, out, g_workers);
        ns[i] = (double)(kvg_now_ns() - t0);
        if (from_tokens == 2) out[i % g_workers] = tm[i % g_workers].gpu;
        *checksum += (uint64_t)m + out[i % g_workers];
        sum += ns[i];
    }
    kvg_stats_sort(ns, n);
    l.p50 = kvg_stats_pct_sorted(ns, n, 50) / 1000.0;
    l.p99 = kvg_stats_pct_sorted(ns, n, 99) / 1000.0;
    l.max = ns[n - 1] / 1000.0;
    l.mean = sum / n / 1000.0;
    free(ns);
    free(out);
    free(tm);
    return l;
}

/* ---- 3. contention: one writer ingesting, one reader looking up ---- */

struct writer_arg {
    struct kvg_kv_index *idx;
    struct engine *f;
    double rate; /* block events/s to pace at; 0 = as fast as possible */
    _Atomic int stop;
    uint64_t events;
    double busy_s;
};

static void *writer(void *arg)
{
    struct writer_arg *a = arg;
    struct kvg_kv_batch b;
    msgpack_sbuffer sb;
    uint64_t busy = 0, start = kvg_now_ns();
    kvg_kv_batch_init(&b, NULL);
    msgpack_sbuffer_init(&sb);
    for (uint32_t w = 0; !a->stop; w = (w + 1) % g_workers) {
        while (a->rate > 0 && !a->stop &&
               (double)a->events > a->rate * (double)(kvg_now_ns() - start) / 1e9) {
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        }
        uint32_t n = engine_step(&a->f[w], &sb);
        if (kvg_kv_decode_batch(&b, sb.data, sb.size) < 0) abort();
        uint64_t t0 = kvg_now_ns();
        kvg_kv_index_apply(a->idx, w, &b, NULL);
        busy += kvg_now_ns() - t0;
        a->events += n;
    }
    a->busy_s = (double)busy / 1e9;
    kvg_kv_batch_free(&b);
    msgpack_sbuffer_destroy(&sb);
    return NULL;
}

struct conc_result {
    struct lat l;
    double wall_s, writer_rate, lookups_per_s;
    uint64_t lookups, rd_waits, wr_waits;
};

/* Worst-case lookups (every worker holds every prompt) for g_contention_s
 * seconds while a writer thread ingests at `rate`. */
static struct conc_result contention(struct kvg_kv_index *idx, struct engine *f, double rate)
{
    struct conc_result r = {0};
    struct writer_arg wa = {.idx = idx, .f = f, .rate = rate};
    struct kvg_kv_index_stats before, after;
    size_t cap = 1u << 22, n = 0;
    double *ns = malloc(cap * sizeof *ns);
    uint64_t sum = 0, sink = 0;
    uint32_t *out = malloc(g_workers * sizeof *out);
    struct kvg_rng rng;
    kvg_rng_seed(&rng, 11);
    kvg_kv_index_stats(idx, &before);
    pthread_t th;
    pthread_create(&th, NULL, writer, &wa);
    uint64_t t0 = kvg_now_ns();
    while (n < cap && (double)(kvg_now_ns() - t0) / 1e9 < g_contention_s) {
        int p = (int)kvg_rng_below(&rng, NPROMPTS);
        uint64_t a = kvg_now_ns();
        sink += (uint64_t)kvg_kv_index_match(idx, g_seq[p], PROMPT_BLOCKS, out, g_workers);
        uint64_t d = kvg_now_ns() - a;
        ns[n++] = (double)d;
        sum += d;
    }
    wa.stop = 1;
    pthread_join(th, NULL);
    r.wall_s = (double)(kvg_now_ns() - t0) / 1e9;
    kvg_kv_index_stats(idx, &after);
    kvg_stats_sort(ns, n);
    r.l.p50 = kvg_stats_pct_sorted(ns, n, 50) / 1000.0;
    r.l.p99 = kvg_stats_pct_sorted(ns, n, 99) / 1000.0;
    r.l.max = ns[n - 1] / 1000.0;
    r.l.mean = (double)sum / (double)n / 1000.0;
    r.lookups = n;
    r.lookups_per_s = (double)n / r.wall_s;
    r.writer_rate = (double)wa.events / r.wall_s;
    r.rd_waits = after.rd_contended - before.rd_contended;
    r.wr_waits = after.wr_contended - before.wr_contended;
    if (sink == 42) fprintf(stderr, "!");
    free(ns);
    free(out);
    return r;
}

static void usage(void)
{
    fprintf(stderr, "bench_kv_index [--workers N] [--capacity BLOCKS_PER_WORKER] [--events N]\n"
                    "               [--lookups N] [--contention-seconds S] [--max-entries N]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) usage();
        if (!strcmp(argv[i], "--workers"))
            g_workers = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--capacity"))
            g_capacity = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--events"))
            g_ingest_events = (uint64_t)atoll(argv[++i]);
        else if (!strcmp(argv[i], "--max-entries"))
            g_max_entries = (uint64_t)atoll(argv[++i]);
        else if (!strcmp(argv[i], "--lookups"))
            g_lookups = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--contention-seconds"))
            g_contention_s = atof(argv[++i]);
        else
            usage();
    }
    if (!g_workers || g_workers > 4096 || g_capacity < EV_BLOCKS || !g_lookups) usage();
    uint64_t checksum = 0;

    /* 1. Ingest into an index whose workers fill to capacity and then evict
     * as LRU-full engines do (BlockRemoved): the steady state. */
    struct engine *fleet = fleet_new();
    struct kvg_kv_index *idx = index_new(g_max_entries);
    struct ingest_result ing = ingest(idx, fleet, g_ingest_events);

    /* 2. Lookups. Background: the ingest index (every worker full of unique
     * blocks) plus 32 prompts of 375 blocks sharing a 100-block system prompt.
     * Mixed: worker w holds prompt p to a depth of 0, 100, 200 or 375
     * blocks. Worst case: every worker holds every prompt whole, so the walk
     * goes 375 blocks deep with all 64 candidates. */
    prompts_init();
    struct kvg_rng rng;
    kvg_rng_seed(&rng, 3);
    static const int depths[4] = {0, SHARED, 200, PROMPT_BLOCKS};
    for (uint32_t w = 0; w < g_workers; w++)
        for (int p = 0; p < NPROMPTS; p++) hold(idx, w, p, depths[kvg_rng_below(&rng, 4)]);
    struct kvg_kv_index_stats mixed_st;
    kvg_kv_index_stats(idx, &mixed_st);
    struct lat mixed = lookups(idx, g_lookups, 0, &checksum, 0);
    struct lat mixed_tok = lookups(idx, g_lookups, 1, &checksum, 0);
    for (uint32_t w = 0; w < g_workers; w++)
        for (int p = 0; p < NPROMPTS; p++) hold(idx, w, p, PROMPT_BLOCKS);
    struct lat full = lookups(idx, g_lookups, 0, &checksum, 0);
    struct lat full_tok = lookups(idx, g_lookups, 1, &checksum, 0);
    uint32_t ncold = g_lookups / 20 ? g_lookups / 20 : 1;
    struct lat cold = lookups(idx, ncold, 0, &checksum, 1);
    struct lat gpu_tiers = lookups(idx, g_lookups, 2, &checksum, 0);
    host_block(idx, 1);
    struct lat host_tiers = lookups(idx, g_lookups, 2, &checksum, 0);
    host_block(idx, 0);

    /* 3. The same worst-case lookups while another thread ingests, paced
     * like a busy pool and then as fast as it can. */
    static const double rates[3] = {250e3, 1e6, 0};
    struct conc_result conc[3];
    for (int i = 0; i < 3; i++) conc[i] = contention(idx, fleet, rates[i]);

    /* 4. Worst-case memory: every block on exactly one worker. */
    struct kvg_kv_index_stats uniq = ing.st;

    printf("| measure | value |\n|---|---|\n");
    printf("| ingest, block events/s on one core (decoded vLLM batches: re-hash + lock + "
           "insert/remove): per second of thread CPU time / of wall time | %.2f / %.2f M/s |\n",
           ing.events_per_cpu_s / 1e6, ing.events_per_s / 1e6);
    printf("| ingest workload | %u workers, BlockStored of %d blocks x %d tokens, "
           "BlockRemoved past %u blocks/worker; %.1f M block events |\n",
           g_workers, EV_BLOCKS, BS, g_capacity, (double)ing.events / 1e6);
    printf("| msgpack decode alone | %.0f MB/s (%.2f M block events/s) |\n", ing.decode_mb_per_s,
           ing.decode_events_per_s / 1e6);
    printf("| lookup 375 blocks x %u workers, mixed depths: p50 / p99 / max | %.2f / %.2f / "
           "%.2f us |\n",
           g_workers, mixed.p50, mixed.p99, mixed.max);
    printf("| same, from 6,000 token ids (hashing included): p50 / p99 | %.2f / %.2f us |\n",
           mixed_tok.p50, mixed_tok.p99);
    printf("| lookup worst case (all %u workers hold all 375 blocks): p50 / p99 / max | %.2f / "
           "%.2f / %.2f us |\n",
           g_workers, full.p50, full.p99, full.max);
    printf("| same, from token ids: p50 / p99 | %.2f / %.2f us |\n", full_tok.p50, full_tok.p99);
    printf("| worst case with cold caches (64 MB streamed before each of %u lookups): p50 / "
           "p99 / max | %.2f / %.2f / %.2f us |\n",
           ncold, cold.p50, cold.p99, cold.max);
    printf("| worst case through kvg_kv_index_match_tiers (the router's call), GPU tier only / "
           "a host tier in use (the walk over every tier): p50 / p99 | %.2f / %.2f us; %.2f / "
           "%.2f us |\n",
           gpu_tiers.p50, gpu_tiers.p99, host_tiers.p50, host_tiers.p99);
    for (int i = 0; i < 3; i++) {
        char what[64];
        if (rates[i] > 0)
            snprintf(what, sizeof what, "%.2f M block events/s", rates[i] / 1e6);
        else
            snprintf(what, sizeof what, "as fast as it goes");
        printf("| worst-case lookups while 1 writer thread ingests %s: p50 / p99 / max | %.2f / "
               "%.2f / %.2f us |\n",
               what, conc[i].l.p50, conc[i].l.p99, conc[i].l.max);
        printf("| ... writer achieved; lookups; lock waits (lookups / writer) | %.2f M/s; %.0f/s; "
               "%llu of %llu / %llu |\n",
               conc[i].writer_rate / 1e6, conc[i].lookups_per_s,
               (unsigned long long)conc[i].rd_waits, (unsigned long long)conc[i].lookups,
               (unsigned long long)conc[i].wr_waits);
    }
    printf("| bytes per (block, worker) entry, every block on one worker (worst case) | %.1f B "
           "(%llu entries, %llu blocks, %.1f MB) |\n",
           (double)uniq.bytes / (double)uniq.entries, (unsigned long long)uniq.entries,
           (unsigned long long)uniq.nodes, (double)uniq.bytes / 1e6);
    printf("| bytes per entry after adding the shared prompts | %.1f B (%llu entries, %llu "
           "blocks, %.1f MB) |\n",
           (double)mixed_st.bytes / (double)mixed_st.entries, (unsigned long long)mixed_st.entries,
           (unsigned long long)mixed_st.nodes, (double)mixed_st.bytes / 1e6);
    fprintf(stderr, "checksum %llu\n", (unsigned long long)checksum);
    kvg_kv_index_free(idx);
    fleet_free(fleet);
    free(g_flush);
    return 0;
}
