/* Periodic /metrics scrapes of every worker; see scrape.h. */
#include "router/scrape.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/err.h"
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

/* "waiting, running, kv_usage": the load signals a sample has. */
static void signal_names(unsigned k, char *out, size_t cap)
{
    static const struct {
        unsigned bit;
        const char *name;
    } sig[] = {{KVG_METRICS_HAS_WAITING, "waiting"},
               {KVG_METRICS_HAS_RUNNING, "running"},
               {KVG_METRICS_HAS_KV_USAGE, "kv_usage"}};
    size_t n = 0;
    out[0] = 0;
    for (size_t i = 0; i < sizeof sig / sizeof *sig && n < cap; i++)
        if (k & sig[i].bit) {
            int w = snprintf(out + n, cap - n, "%s%s", n ? ", " : "", sig[i].name);
            if (w > 0) n += (size_t)w;
        }
}

#define LOAD_SIGNALS (KVG_METRICS_HAS_WAITING | KVG_METRICS_HAS_RUNNING | KVG_METRICS_HAS_KV_USAGE)

/* Records the scrape's outcome on w and logs it once per change of state
 * (or, for good samples, of the set of signals): a worker whose metrics
 * fail is judged by kvgate's own counts, and the operator should know. */
static void set_state(struct kvg_worker *w, int state, unsigned known_bits, const char *why)
{
    pthread_mutex_lock(&w->mu);
    int old = w->scrape_state;
    unsigned old_known = w->scrape_known;
    w->scrape_state = state;
    if (state == KVG_SCRAPE_OK) w->scrape_known = known_bits;
    snprintf(w->scrape_error, sizeof w->scrape_error, "%s", why ? why : "");
    pthread_mutex_unlock(&w->mu);
    if (state != KVG_SCRAPE_OK && state != KVG_SCRAPE_NO_SIGNALS)
        atomic_fetch_add(&w->scrape_errors, 1);
    if (old == state && (state != KVG_SCRAPE_OK || old_known == known_bits)) return;
    char sig[64];
    switch (state) {
    case KVG_SCRAPE_OK:
        signal_names(known_bits, sig, sizeof sig);
        if ((known_bits & LOAD_SIGNALS) == LOAD_SIGNALS)
            KVG_INFO("worker %s: /metrics %s: %s", w->url,
                     old > KVG_SCRAPE_OK ? "recovered" : "read", sig);
        else
            KVG_INFO("worker %s: /metrics %s with only %s: the others are unknown and never "
                     "count as busy",
                     w->url, old > KVG_SCRAPE_OK ? "recovered" : "read", sig);
        break;
    case KVG_SCRAPE_NO_SIGNALS:
        KVG_WARN("worker %s: /metrics has none of the load metrics kvgate knows (vLLM, SGLang, "
                 "llama.cpp): it is judged by kvgate's own in-flight count",
                 w->url);
        break;
    default:
        KVG_WARN("worker %s: /metrics scrape failed (%s: %s): its load becomes unknown after "
                 "the staleness limit, and it is judged by kvgate's own in-flight count",
                 w->url, kvg_worker_scrape_state_name(state), why ? why : "");
        break;
    }
}

static void on_done(void *ud, int err)
{
    struct scrape *sc = ud;
    struct kvg_scraper *s = sc->s;
    struct kvg_worker *w = sc->w;
    atomic_fetch_add(&s->scrapes, 1);
    struct kvg_metrics_load l;
    char why[96];
    int prc = 0;
    if (err || sc->status < 0 || sc->status != 200 ||
        (prc = kvg_metrics_load_parse(sc->body.data, sc->body.len, &l))) {
        atomic_fetch_add(&s->failures, 1);
        int state = KVG_SCRAPE_BAD_BODY;
        if (err == KVG_ETIMEOUT) {
            state = KVG_SCRAPE_UNREACHABLE;
            snprintf(why, sizeof why, "%s: no whole answer within the %u ms deadline",
                     kvg_strerror(err), s->timeout_ms);
        } else if (err) {
            state = KVG_SCRAPE_UNREACHABLE;
            snprintf(why, sizeof why, "%s", kvg_strerror(err));
        } else if (sc->status < 0) {
            snprintf(why, sizeof why, "body over %zu bytes", sc->body.limit);
        } else if (sc->status != 200) {
            state = KVG_SCRAPE_HTTP_ERROR;
            snprintf(why, sizeof why, "HTTP %d", sc->status);
        } else {
            snprintf(why, sizeof why, "not Prometheus text: %s", kvg_strerror(prc));
        }
        set_state(w, state, 0, why);
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
        w->load.inflight_at = atomic_load_explicit(&w->in_flight, memory_order_relaxed);
        w->load.peer_at = atomic_load_explicit(&w->peer_picks, memory_order_relaxed);
        if (l.known & KVG_METRICS_HAS_LORA) {
            snprintf(w->lora_active, sizeof w->lora_active, "%s", l.lora_active);
            w->lora_max = (int)l.lora_max;
            w->lora_at_ms = w->load.at_ms;
        }
        pthread_mutex_unlock(&w->mu);
        unsigned k = l.known & LOAD_SIGNALS;
        set_state(w, k ? KVG_SCRAPE_OK : KVG_SCRAPE_NO_SIGNALS, k, NULL);
        if (s->on_sample) s->on_sample(s->on_sample_ud, w);
        if (s->block_size && l.block_size && l.block_size != s->block_size) {
            atomic_fetch_add(&s->block_size_mismatches, 1);
            if (old_bs != l.block_size)
                KVG_WARN("worker %s reports KV block size %llu but the router uses %u: "
                         "prefix matches against its cache will be wrong; set --block-size %llu",
                         w->url, (unsigned long long)l.block_size, s->block_size,
                         (unsigned long long)l.block_size);
        }
    }
    w->scrape_busy = 0;
    w->scrape_stuck_logged = 0;
    kvg_worker_unref(w);
    kvg_buf_free(&sc->body);
    free(sc);
}

/* A scrape in flight past its deadline (or with none, timeout_ms 0) is
 * stuck: said once, as no other scrape of that worker starts until it ends. */
static void note_stuck(struct kvg_scraper *s, struct kvg_worker *w)
{
    uint64_t age = uv_now(s->timer.loop) - w->scrape_started_ms;
    if (w->scrape_stuck_logged || (s->timeout_ms && age <= s->timeout_ms)) return;
    w->scrape_stuck_logged = 1;
    KVG_WARN("worker %s: /metrics scrape still in flight after %llu ms: no new scrape starts "
             "until it ends",
             w->url, (unsigned long long)age);
}

static void tick(uv_timer_t *t)
{
    struct kvg_scraper *s = t->data;
    struct kvg_worker *ws[KVG_POOL_MAX_WORKERS];
    size_t n = kvg_pool_snapshot(s->pool, ws, KVG_POOL_MAX_WORKERS);
    static const struct kvg_http_call_cbs cbs = {on_head, on_body, on_done};
    /* The whole scrape has the deadline too: an engine trickling /metrics
     * forever must not hold a connection per tick. */
    struct kvg_http_call_opts o = {.connect_timeout_ms = s->timeout_ms,
                                   .first_byte_timeout_ms = s->timeout_ms,
                                   .idle_timeout_ms = s->timeout_ms,
                                   .total_timeout_ms = s->timeout_ms};
    for (size_t i = 0; i < n; i++) {
        if (ws[i]->scrape_busy) { /* one scrape per worker: the last one still runs */
            note_stuck(s, ws[i]);
            kvg_worker_unref(ws[i]);
            continue;
        }
        struct scrape *sc = calloc(1, sizeof *sc);
        if (!sc) {
            kvg_worker_unref(ws[i]);
            continue;
        }
        sc->s = s;
        sc->w = ws[i]; /* the snapshot's reference moves to the scrape */
        kvg_buf_init(&sc->body, 4u << 20);
        char bearer[300];
        struct kvg_http_header auth;
        size_t nauth = (size_t)kvg_worker_auth_header(ws[i], bearer, sizeof bearer, &auth);
        ws[i]->scrape_busy = 1; /* before the start: on_done may run inside it */
        ws[i]->scrape_started_ms = uv_now(t->loop);
        int rc = kvg_http_call_start(s->client, &ws[i]->target, "GET", KVG_STR("/metrics"), &auth,
                                     nauth, NULL, 0, &o, &cbs, sc, NULL);
        if (rc) {
            ws[i]->scrape_busy = 0;
            atomic_fetch_add(&s->failures, 1);
            set_state(ws[i], KVG_SCRAPE_UNREACHABLE, 0, kvg_strerror(rc));
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
