/* libFuzzer: a batch of routing history from a peer replica
 * (router/exchange.h) read by kvg_exchange_decode: any bytes, a verdict,
 * never a crash or a read past the batch; an accepted batch's every record
 * (version 1, or 2 with its text) is within the documented bounds, and one
 * re-encoded from its records decodes to as many; its load section (version
 * 3) goes into a table of peers' counts over a pool of two workers, whose
 * sums stay within the bounds. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "router/exchange.h"
#include "router/pool.h"

struct check {
    struct kvg_exchange *x;
    int n;
};

static int each(void *ud, const struct kvg_exchange_rec *r)
{
    struct check *c = ud;
    if (!r->worker.len || r->worker.len > KVG_EXCHANGE_MAX_STR) abort();
    if (r->model.len > KVG_EXCHANGE_MAX_STR) abort();
    if (!r->block_size || r->block_size > KVG_EXCHANGE_MAX_BLOCK_SIZE) abort();
    if ((!r->nblocks && !r->text.len) || r->nblocks > KVG_EXCHANGE_MAX_BLOCKS) abort();
    if (r->ntokens / r->block_size != r->nblocks) abort();
    if (r->text.len > KVG_EXCHANGE_MAX_TEXT || (r->nblocks && !r->hashes)) abort();
    char url[KVG_EXCHANGE_MAX_STR + 1];
    memcpy(url, r->worker.p, r->worker.len);
    url[r->worker.len] = 0;
    if (kvg_exchange_publish(c->x, url, r->model, r->block_size, r->ntokens, r->hashes, r->nblocks,
                             r->text) == 1)
        c->n++;
    return 0;
}

/* A pool whose workers a batch may name (made once: the process's). */
static struct kvg_pool *pool_once(void)
{
    static struct kvg_pool pool;
    static int made;
    if (made) return made > 0 ? &pool : NULL;
    made = -1;
    struct kvg_policy_opts o;
    kvg_policy_opts_default(&o);
    struct kvg_policy *p;
    if (kvg_policy_new("prefix_hash", &o, &p) || kvg_pool_init(&pool, p, NULL)) return NULL;
    if (kvg_pool_add(&pool, "http://127.0.0.1:9401") || kvg_pool_add(&pool, "http://a:1"))
        return NULL;
    made = 1;
    return &pool;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of exactly size bytes: ASan sees any read past the batch. */
    uint8_t *v = malloc(size ? size : 1);
    if (!v) return 0;
    memcpy(v, data, size);
    struct check c = {0};
    if (kvg_exchange_new(1 << 20, &c.x)) {
        free(v);
        return 0;
    }
    struct kvg_exchange_head h;
    const char *why;
    int rc = kvg_exchange_decode(v, size, 1 << 20, &h, each, &c, &why);
    if (rc >= 0) {
        if ((uint32_t)rc != h.nrec || c.n != rc) abort();
        struct kvg_buf b;
        kvg_buf_init(&b, 0);
        int n = kvg_exchange_flush(c.x, h.sender, h.seq, NULL, &b);
        if (n != c.n) abort();
        if (n > 0 && kvg_exchange_decode(b.data, b.len, 1 << 20, NULL, NULL, NULL, &why) != n)
            abort();
        kvg_buf_free(&b);
        struct kvg_pool *pool = pool_once();
        struct kvg_exchange_peers *t;
        if (pool && !kvg_exchange_peers_new(1000, &t)) {
            if (kvg_exchange_peers_apply(t, pool, &h, v, size, 1) < 0) abort();
            for (size_t i = 0; i < pool->n; i++)
                if (atomic_load(&pool->w[i]->peer_in_flight) > KVG_EXCHANGE_MAX_INFLIGHT)
                    abort(); /* one sender */
            if (kvg_exchange_peers_expire(t, pool, 5000) != 0) abort();
            kvg_exchange_peers_free(t);
        }
    } else if (!why || !why[0]) {
        abort();
    }
    kvg_exchange_free(c.x);
    free(v);
    return 0;
}
