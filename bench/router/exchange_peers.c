/* What a replica pays for its peers' in-flight counts (router/exchange.h,
 * struct kvg_exchange_peers): the cost of receiving one batch's load
 * section (kvg_exchange_peers_apply: walk it, replace the sender's counts,
 * write every worker's sum), against the baseline of the same run: the
 * cost of building that batch at its sender (kvg_exchange_flush). Each
 * case is W workers and S peers sending; at a period of P ms a replica
 * receives S x 1000 / P batches a second, so the share of a core is that
 * times the cost of one. Every worker's sum is checked against the counts
 * the bench sent before any figure is printed.
 *   exchange_peers [ITERS]     (cases: 64 x 15, 64 x 63, 1024 x 15, 1024 x 63) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/bytes.h"
#include "base/log.h"
#include "base/util.h"
#include "router/exchange.h"
#include "router/pool.h"

#define MAX_W 1024
#define MAX_S 64
#define VARIANTS 4 /* batches pre-built per sender: counts that change */

struct bcase {
    size_t w, s;
};

static int pool_of(struct kvg_pool *p, size_t w)
{
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    struct kvg_policy *pol;
    if (kvg_policy_new("prefix_hash", &o, &pol) || kvg_pool_init(p, pol, NULL)) return -1;
    for (size_t i = 0; i < w; i++) {
        char url[64];
        snprintf(url, sizeof url, "http://10.0.%zu.%zu:8000", i / 250, i % 250 + 1);
        if (kvg_pool_add(p, url)) return -1;
    }
    return 0;
}

static int run(const struct bcase *c, int iters)
{
    struct kvg_pool from, to;
    struct kvg_exchange *x;
    struct kvg_exchange_peers *t;
    if (pool_of(&from, c->w) || pool_of(&to, c->w) || kvg_exchange_new(0, &x) ||
        kvg_exchange_peers_new(60000, &t))
        return -1;
    kvg_exchange_set_loads(x, &from);
    /* counts[s][v][w]: what sender s says of worker w in its variant v */
    static uint32_t counts[MAX_S][VARIANTS][MAX_W];
    static struct kvg_buf batch[MAX_S][VARIANTS];
    static struct kvg_exchange_head head[MAX_S][VARIANTS];
    struct kvg_rng rng;
    kvg_rng_seed(&rng, 7);
    uint64_t build_ns = 0;
    size_t nbuilt = 0;
    for (size_t s = 0; s < c->s; s++)
        for (int v = 0; v < VARIANTS; v++) {
            for (size_t w = 0; w < c->w; w++) {
                counts[s][v][w] = (uint32_t)kvg_rng_below(&rng, 9);
                atomic_store(&from.w[w]->in_flight, counts[s][v][w]);
            }
            kvg_buf_init(&batch[s][v], 0);
            uint64_t t0 = kvg_now_ns();
            if (kvg_exchange_flush(x, 1000 + s, 1, NULL, &batch[s][v]) < 0) return -1;
            build_ns += kvg_now_ns() - t0;
            nbuilt++;
            const char *why;
            if (kvg_exchange_decode(batch[s][v].data, batch[s][v].len, batch[s][v].len, &head[s][v],
                                    NULL, NULL, &why) < 0)
                return -1;
        }
    /* Every sender heard once, then round robin over senders, variants
     * changing: each application replaces a sender's counts. */
    int last[MAX_S] = {0};
    uint64_t now = 1000, t0 = kvg_now_ns();
    long n = 0;
    for (int it = 0; it < iters; it++)
        for (size_t s = 0; s < c->s; s++, n++) {
            int v = (it + (int)s) % VARIANTS;
            if (kvg_exchange_peers_apply(t, &to, &head[s][v], batch[s][v].data, batch[s][v].len,
                                         now) < 0)
                return -1;
            last[s] = v;
        }
    uint64_t apply_ns = kvg_now_ns() - t0;
    /* The check: every worker's sum is what the senders last said. */
    for (size_t w = 0; w < c->w; w++) {
        uint64_t want = 0;
        for (size_t s = 0; s < c->s; s++) want += counts[s][last[s]][w];
        uint32_t got = atomic_load(&to.w[w]->peer_in_flight);
        if (got != want) {
            fprintf(stderr, "exchange_peers: worker %zu sums %u, the senders said %llu\n", w, got,
                    (unsigned long long)want);
            return -1;
        }
    }
    double per_apply = (double)apply_ns / (double)n, per_build = (double)build_ns / (double)nbuilt;
    /* a core's share at a 100 ms and a 10 ms period: S x 10 (x 100) batches a second */
    double at100 = per_apply * (double)c->s * 10 / 1e9, at10 = at100 * 10;
    printf("| %zu | %zu | %zu | %.1f | %.1f | %.2fx | %.3f%% | %.2f%% |\n", c->w, c->s,
           batch[0][0].len, per_build / 1e3, per_apply / 1e3, per_apply / per_build, at100 * 100,
           at10 * 100);
    for (size_t s = 0; s < c->s; s++)
        for (int v = 0; v < VARIANTS; v++) kvg_buf_free(&batch[s][v]);
    kvg_exchange_peers_free(t);
    kvg_exchange_free(x);
    kvg_pool_destroy(&from);
    kvg_pool_destroy(&to);
    return 0;
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 200;
    if (iters < 1) iters = 1;
    kvg_log_set_level(KVG_LOG_WARN);
    static const struct bcase cases[] = {{64, 15}, {64, 63}, {1024, 15}, {1024, 63}};
    printf("| workers | peers | batch bytes | build us (baseline) | receive us | receive / build | "
           "core at 100 ms | core at 10 ms |\n|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (run(&cases[i], iters)) {
            fprintf(stderr, "exchange_peers: case %zu x %zu failed\n", cases[i].w, cases[i].s);
            return 1;
        }
    return 0;
}
