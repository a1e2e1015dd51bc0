/* Periodic /metrics scrapes of every worker; see scrape.h. */
#include "router/scrape.h"

#include <math.h>
#include <stdlib.h>

#include "base/log.h"
#include "base/util.h"
#include "metrics/load.h"

struct scrape {
    struct kvg_scraper *s;
    struct kvg_worker *w; /* reference */
    int status;
    struct kvg_buf body;
};

static void on_head(void *ud, int status, const struct kvg_http_header *h, size_t n)
{
    ((struct scrape *)ud)->status = status;
}

static void on_body(void *ud, const char *p, size_t n)
{
    struct scrape *sc = ud;
    if (kvg_buf_append(&sc->body, p, n)) sc->status = -1; /* over the cap: ignore this sample */
}

static double known(double v)
{
    return isnan(v) ? -1 : v;
}

static void on_done(void *ud, int err)
{
    struct scrape *sc = ud;
    struct kvg_scraper *s = sc->s;
    struct kvg_worker *w = sc->w;
    atomic_fetch_add(&s->scrapes, 1);
    struct kvg_metrics_load l;
    if (err || sc->status != 200 || kvg_metrics_load_parse(sc->body.data, sc->body.len, &l)) {
        atomic_fetch_add(&s->failures, 1);
    } else {
        pthread_mutex_lock(&w->mu);
        uint32_t old_bs = w->load.block_size;
        w->load.waiting = known(l.waiting);
        w->load.running = known(l.running);
        w->load.kv_usage = known(l.kv_usage);
        w->load.block_size = (uint32_t)l.block_size;
        w->load.kv_blocks = l.num_gpu_blocks;
        w->load.flavor = (int)l.flavor;
        w->load.at_ms = kvg_now_ms();
        pthread_mutex_unlock(&w->mu);
        if (s->block_size && l.block_size && l.block_size != s->block_size) {
            atomic_fetch_add(&s->block_size_mismatches, 1);
            if (old_bs != l.block_size)
                KVG_WARN("worker %s reports KV block size %llu but the router uses %u: "
                         "prefix matches against its cache will be wrong; set --block-size %llu",
                         w->url, (unsigned long long)l.block_size, s->block_size,
                         (unsigned long long)l.block_size);
        }
    }
    kvg_worker_unref(w);
    kvg_buf_free(&sc->body);
    free(sc);
}

static void tick(uv_timer_t *t)
{
    struct kvg_scraper *s = t->data;
    struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
    size_t n = kvg_pool_snapshot(s->pool, ws, KVG_POOL_MAX_WORKERS);
    static const struct kvg_http_call_cbs cbs = {on_head, on_body, on_done};
    struct kvg_http_call_opts o = {s->timeout_ms, s->timeout_ms, s->timeout_ms};
    for (size_t i = 0; i < n; i++) {
        struct scrape *sc = calloc(1, sizeof *sc);
        if (!sc) {
            kvg_worker_unref(ws[i]);
            continue;
        }
        sc->s = s;
        sc->w = ws[i]; /* the snapshot's reference moves to the scrape */
        kvg_buf_init(&sc->body, 4u << 20);
        if (kvg_http_call_start(s->client, &ws[i]->target, "GET", KVG_STR("/metrics"), NULL, 0,
                                NULL, 0, &o, &cbs, sc, NULL)) {
            atomic_fetch_add(&s->failures, 1);
            kvg_worker_unref(ws[i]);
            kvg_buf_free(&sc->body);
            free(sc);
        }
    }
}

int kvg_scraper_start(struct kvg_scraper *s, uv_loop_t *loop, struct kvg_pool *pool)
{
    s->pool = pool;
    int rc = kvg_http_client_new(loop, NULL, &s->client);
    if (rc) return rc;
    uv_timer_init(loop, &s->timer);
    s->timer.data = s;
    if (s->interval_ms) uv_timer_start(&s->timer, tick, 0, s->interval_ms);
    return 0;
}

void kvg_scraper_stop(struct kvg_scraper *s)
{
    uv_timer_stop(&s->timer);
    uv_close((uv_handle_t *)&s->timer, NULL);
    kvg_http_client_close(s->client);
}
