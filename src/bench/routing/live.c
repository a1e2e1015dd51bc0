/* Live mode: an open-loop HTTP load client on libuv.
 *
 * Arrivals come from the workload's schedule (Poisson stages planned in
 * advance, closed-loop slots and chat turns as earlier requests end); each is
 * a streaming POST /v1/completions (or, with --api chat, /v1/chat/completions
 * with the text as one user message) to the target, its SSE chunks parsed as
 * they arrive: TTFT is the first chunk with text, each later text chunk is
 * one token (usage.completion_tokens at the end settles the count),
 * usage.prompt_tokens_details.cached_tokens is the engine's cache hit. An
 * agent workload's requests are its own bodies, paths and headers (the
 * Responses and Messages APIs), their streams read in those APIs' events
 * (sse.h); their prompt tokens are the answer's usage. With --retries N a
 * request is sent again as the openai SDK does (its client.js: shouldRetry,
 * calculateDefaultRetryTimeoutMillis): after a failure before any response
 * head (refused, reset, closed) or a 408, 409, 429 or 5xx answer (its
 * x-should-retry header obeyed), after retry-after-ms or retry-after, else
 * 0.5 s doubling to 8 s less up to 25% jitter, in engine time like every
 * other time of the run; a 200 answer that breaks midway is not retried
 * (counted apart: lost in flight). Open
 * loop: a request is sent when its time comes whatever the others are doing
 * (only --max-inflight holds it back), and its latency counts from its
 * scheduled time, so a slow server cannot slow the client down into looking
 * fast.
 *
 * Clocks: with --speed X the engines run X times faster than real time, so
 * the schedule is played X times faster and every measured time is
 * multiplied by X: reports are in engine time, comparable with offline runs.
 *
 * With --spawn-sims N every policy gets fresh processes (base/proc.h): N
 * `kvgate sim` with KV events on loopback ZMQ ports and a `kvgate serve` in
 * front of them with that policy; they are stopped (by PID) after the
 * policy's run, on any error, and on SIGINT. Their /metrics are scraped for
 * the queue and KV usage samples. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <uv.h>

#include "base/err.h"
#include "base/util.h"
#include "bench/acc.h"
#include "bench/routing/routing.h"
#include "bench/routing/live_int.h"
#include "bench/interrupt.h"
#include "bench/sse.h"
#include "net/http_client.h"
#include "metrics/load.h"

struct lreq {
    struct lrun *L;
    struct kvg_bench_req *r;
    struct kvg_http_call *call;
    struct kvg_bench_sse sse;
    struct lreq *prev, *next;
    int status, got_first, failed;
    double last_tok; /* engine time of the last text chunk */
    uint32_t chunks;
    int64_t usage_out, usage_in;
    int cached_said;    /* the answer said how much of its prompt was cached */
    struct kvg_buf out; /* answer text (chat context), capped */
    uint32_t attempt;   /* retries sent so far */
    int waiting;        /* a retry is due at retry_at (engine time) */
    double retry_at;
    double retry_after; /* the answer's retry-after-ms/retry-after, s; <0: none */
    int should_retry;   /* the answer's x-should-retry: 1 true, 0 false, -1 absent */
};

struct scraper {
    struct lrun *L;
    struct kvg_http_target t;
    struct kvg_buf body;
    int busy, status;
};

struct lrun {
    const struct kvg_bench_cfg *c;
    const struct kvg_bench_live_target *tg;
    uv_loop_t loop;
    uv_timer_t arrive, tick;
    struct kvg_http_client *cl;
    struct kvg_bench_wl *wl;
    struct kvg_bench_acc acc;
    uint64_t t0_ns;
    double speed, end, last_scrape;
    struct lreq *head;
    size_t inflight;
    int stopping, rc;
    int cached_seen;                  /* an answer said how much of its prompt was cached */
    uint64_t retried, lost_in_flight; /* measured requests' retries; broken 200 answers */
    struct kvg_rng rng;               /* the retries' jitter */
    struct scraper eng[KVG_BENCH_LIVE_MAX_ENGINES];
    int neng;
    uint64_t last_progress_ms;
};

static double now_e(const struct lrun *L)
{
    return (double)(kvg_now_ns() - L->t0_ns) / 1e9 * L->speed;
}

static void on_arrive(uv_timer_t *t);

static void lreq_free(struct lreq *q)
{
    struct lrun *L = q->L;
    if (q->prev)
        q->prev->next = q->next;
    else
        L->head = q->next;
    if (q->next) q->next->prev = q->prev;
    L->inflight--;
    kvg_bench_sse_free(&q->sse);
    kvg_buf_free(&q->out);
    free(q);
}

/* The request ended (ok: completed). Hands it back to the workload, which
 * may schedule its follow-up, so arrivals are re-armed. */
static void finish(struct lreq *q, int ok, int timeout)
{
    struct lrun *L = q->L;
    double t = now_e(L);
    if (ok) {
        if (q->usage_out > (int64_t)q->chunks)
            kvg_bench_acc_tokens(&L->acc, q->r, t, (uint32_t)(q->usage_out - q->chunks), -1);
        kvg_bench_acc_finish(&L->acc, q->r, t);
        /* A body the client does not tokenize: the engine's count, when the
         * answer also says what of it was cached (the hit ratio's terms). */
        if (!q->r->ntokens && q->usage_in > 0 && q->cached_said && !q->r->warmup)
            L->acc.prompt_tokens += (uint64_t)q->usage_in;
    } else {
        kvg_bench_acc_error(&L->acc, q->r, timeout);
        if (q->status == 200 && !q->r->warmup) L->lost_in_flight++;
    }
    /* The answer's text is the chat's next context (the workload turns it
     * into ids or appends it to an agent's conversation). */
    if (kvg_bench_wl_done_text(L->wl, q->r, t, q->out.data, ok ? q->out.len : 0, ok) && !L->rc)
        L->rc = -ENOMEM;
    lreq_free(q);
    if (!L->stopping) uv_timer_start(&L->arrive, on_arrive, 0, 0);
}

static int on_event(void *ud, const char *data, size_t len)
{
    struct lreq *q = ud;
    struct lrun *L = q->L;
    struct kvg_bench_chunk ch;
    if (kvg_bench_chunk_parse(data, len, &ch)) return KVG_EPARSE;
    if (ch.error) q->failed = 1;
    if (ch.text_len) {
        double t = now_e(L);
        if (!q->got_first) {
            q->got_first = 1;
            kvg_bench_acc_first(&L->acc, q->r, t - q->r->arrival, -1);
            kvg_bench_acc_tokens(&L->acc, q->r, t, 1, -1);
        } else {
            kvg_bench_acc_tokens(&L->acc, q->r, t, 1, t - q->last_tok);
        }
        q->last_tok = t;
        q->chunks++;
        if (kvg_bench_wl_wants_output(L->wl)) kvg_buf_append(&q->out, ch.text, ch.text_len);
    }
    if (ch.completion_tokens >= 0) q->usage_out = ch.completion_tokens;
    if (ch.prompt_tokens >= 0) q->usage_in = ch.prompt_tokens;
    if (ch.cached_tokens > 0 && !q->r->warmup) L->acc.cached_tokens += (uint64_t)ch.cached_tokens;
    if (ch.cached_tokens >= 0) L->cached_seen = q->cached_said = 1;
    kvg_bench_chunk_free(&ch);
    return 0;
}

static int hname(const struct kvg_http_header *h, const char *name)
{
    return h->name.len == strlen(name) && !strncasecmp(h->name.p, name, h->name.len);
}

/* A header's value as a number (retry-after's seconds; its HTTP-date form
 * is not read: the SDK's fallback for it is its own backoff). */
static double hnum(const struct kvg_http_header *h)
{
    char v[32];
    size_t n = h->value.len < sizeof v - 1 ? h->value.len : sizeof v - 1;
    memcpy(v, h->value.p, n);
    v[n] = 0;
    char *e;
    double x = strtod(v, &e);
    return e != v && isfinite(x) && x >= 0 ? x : -1;
}

static void on_head(void *ud, int status, const struct kvg_http_header *h, size_t n)
{
    struct lreq *q = ud;
    q->status = status;
    double after_ms = -1, after_s = -1;
    for (size_t i = 0; i < n; i++) {
        if (hname(&h[i], "retry-after-ms")) after_ms = hnum(&h[i]);
        if (hname(&h[i], "retry-after")) after_s = hnum(&h[i]);
        if (hname(&h[i], "x-should-retry"))
            q->should_retry = h[i].value.len == 4 && !strncmp(h[i].value.p, "true", 4)    ? 1
                              : h[i].value.len == 5 && !strncmp(h[i].value.p, "false", 5) ? 0
                                                                                          : -1;
    }
    q->retry_after = after_ms >= 0 ? after_ms / 1000 : after_s;
}

static void on_body(void *ud, const char *p, size_t n)
{
    struct lreq *q = ud;
    if (q->status != 200 || q->failed) return;
    if (kvg_bench_sse_feed(&q->sse, p, n, on_event, q)) q->failed = 1;
}

/* Whether the openai SDK would send this attempt again: no response head
 * (its fetch failed), or a non-200 answer it deems retryable. */
static int sdk_retries(const struct lreq *q)
{
    if (!q->status) return 1;
    if (q->status == 200) return 0;
    if (q->should_retry >= 0) return q->should_retry;
    return q->status == 408 || q->status == 409 || q->status == 429 || q->status >= 500;
}

static void on_done(void *ud, int err)
{
    struct lreq *q = ud;
    struct lrun *L = q->L;
    q->call = NULL;
    int ok = !err && q->status == 200 && q->got_first && !q->failed;
    if (!ok && !L->stopping && q->attempt < L->c->retries && sdk_retries(q)) {
        double d = q->retry_after;
        if (d < 0) {
            d = 0.5 * (double)(1u << (q->attempt < 4 ? q->attempt : 4));
            if (d > 8) d = 8;
            d *= 1 - 0.25 * kvg_rng_double(&L->rng);
        }
        q->attempt++;
        if (!q->r->warmup) L->retried++;
        q->retry_at = now_e(L) + d;
        q->waiting = 1;
        return; /* on_tick sends it again */
    }
    finish(q, ok, 0);
}

/* One attempt of q: its body built and the call started (a failure to
 * start ends it). */
static void attempt(struct lreq *q)
{
    struct lrun *L = q->L;
    struct kvg_bench_req *r = q->r;
    q->status = q->got_first = q->failed = 0;
    q->chunks = 0;
    q->usage_out = q->usage_in = -1;
    q->cached_said = 0;
    q->waiting = 0;
    q->retry_after = -1;
    q->should_retry = -1;
    kvg_bench_sse_free(&q->sse);
    kvg_bench_sse_init(&q->sse, 1u << 20);
    kvg_buf_reset(&q->out);
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    int rc = 0;
    struct kvg_http_header h[2 + KVG_ARRAY_LEN(r->hdr)] = {
        {KVG_STR("content-type"), KVG_STR("application/json")}};
    size_t nh = 1;
    if (r->body) { /* an agent's own request: its body, path and headers */
        for (size_t i = 0; i < r->nhdr; i++)
            h[nh++] =
                (struct kvg_http_header){kvg_str_c(r->hdr[i].name), kvg_str_c(r->hdr[i].value)};
    } else {
        rc = kvg_buf_printf(&b, "{\"model\":");
        rc |= kvg_buf_append_json_str(&b, L->c->model, strlen(L->c->model));
        /* The chat API wraps the text in one user message: the engine's chat
         * template then adds its own tokens around it. */
        rc |= kvg_buf_append_str(
            &b, L->c->chat_api ? ",\"messages\":[{\"role\":\"user\",\"content\":" : ",\"prompt\":");
        rc |= kvg_buf_append_json_str(&b, r->text ? r->text : "", r->text ? r->text_len : 0);
        if (L->c->chat_api) rc |= kvg_buf_append_str(&b, "}]");
        rc |= kvg_buf_printf(&b,
                             ",\"max_tokens\":%u,\"temperature\":0,\"ignore_eos\":%s,"
                             "\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
                             r->max_tokens, r->ignore_eos ? "true" : "false");
        if (r->session[0])
            h[nh++] =
                (struct kvg_http_header){KVG_STR("x-session-id"), {r->session, strlen(r->session)}};
    }
    struct kvg_http_call_opts co = {.connect_timeout_ms = 10000};
    struct kvg_http_call_cbs cbs = {on_head, on_body, on_done};
    if (!rc)
        rc = kvg_http_call_start(
            L->cl, &L->tg->target, "POST", kvg_str_c(r->path ? r->path : L->tg->path), h, nh,
            r->body ? r->body : b.data, r->body ? r->body_len : b.len, &co, &cbs, q, &q->call);
    kvg_buf_free(&b);
    if (rc) {
        q->call = NULL;
        finish(q, 0, 0);
    }
}

static int send_request(struct lrun *L, struct kvg_bench_req *r)
{
    struct lreq *q = calloc(1, sizeof *q);
    if (!q) return -ENOMEM;
    q->L = L;
    q->r = r;
    kvg_bench_sse_init(&q->sse, 1u << 20);
    kvg_buf_init(&q->out, 1u << 24);
    q->next = L->head;
    if (L->head) L->head->prev = q;
    L->head = q;
    L->inflight++;
    kvg_bench_acc_arrival(&L->acc, r);
    attempt(q);
    return 0;
}

static void on_arrive(uv_timer_t *t)
{
    struct lrun *L = t->data;
    while (!L->stopping) {
        double next = kvg_bench_wl_next(L->wl);
        if (next == INFINITY) return; /* follow-ups re-arm when requests end */
        double now = now_e(L);
        if (next > now) {
            uint64_t ms = (uint64_t)((next - now) / L->speed * 1000.0);
            uv_timer_start(&L->arrive, on_arrive, ms, 0);
            return;
        }
        if (L->inflight >= L->c->max_inflight) {
            uv_timer_start(&L->arrive, on_arrive, 1, 0);
            return;
        }
        struct kvg_bench_req *r;
        int rc = kvg_bench_wl_pop(L->wl, &r);
        if (rc == KVG_ENOTFOUND) return;
        if (rc || (rc = send_request(L, r))) {
            L->rc = rc;
            L->stopping = 1;
            return;
        }
    }
}

/* ---- Engine metrics: queue and KV usage samples. */
static void sc_head(void *ud, int status, const struct kvg_http_header *h, size_t n)
{
    ((struct scraper *)ud)->status = status;
}

static void sc_body(void *ud, const char *p, size_t n)
{
    kvg_buf_append(&((struct scraper *)ud)->body, p, n);
}

static void sc_done(void *ud, int err)
{
    struct scraper *s = ud;
    s->busy = 0;
    struct kvg_metrics_load m;
    if (!err && s->status == 200 && !kvg_metrics_load_parse(s->body.data, s->body.len, &m)) {
        double w = m.known & KVG_METRICS_HAS_WAITING ? m.waiting : -1;
        double k = m.known & KVG_METRICS_HAS_KV_USAGE ? m.kv_usage : -1;
        kvg_bench_acc_sample(&s->L->acc, now_e(s->L), w, k);
    }
    kvg_buf_reset(&s->body);
}

static void scrape(struct lrun *L)
{
    struct kvg_http_call_opts co = {.connect_timeout_ms = 2000, .first_byte_timeout_ms = 5000};
    struct kvg_http_call_cbs cbs = {sc_head, sc_body, sc_done};
    for (int i = 0; i < L->neng; i++) {
        struct scraper *s = &L->eng[i];
        if (s->busy) continue;
        s->status = 0;
        if (!kvg_http_call_start(L->cl, &s->t, "GET", KVG_STR("/metrics"), NULL, 0, NULL, 0, &co,
                                 &cbs, s, NULL))
            s->busy = 1;
    }
}

static void cancel_all(struct lrun *L, int as_timeout)
{
    while (L->head) {
        struct lreq *q = L->head;
        if (q->call) kvg_http_call_cancel(q->call);
        q->call = NULL;
        finish(q, 0, as_timeout);
    }
}

/* A progress line: rewritten in place on a terminal, a line every 10 s in
 * a log. */
static void progress(struct lrun *L, double t, int final)
{
    if (L->c->quiet) return;
    uint64_t ms = kvg_now_ms();
    int tty = isatty(2);
    if (!tty && !final && ms - L->last_progress_ms < 10000) return;
    L->last_progress_ms = ms;
    fprintf(stderr,
            "%sbench live %s: t=%.0f/%.0fs engine time, %llu sent, %zu in flight, "
            "%llu measured done, %llu errors%s",
            tty ? "\r\033[K" : "", L->tg->label, t, L->end,
            (unsigned long long)kvg_bench_wl_issued(L->wl), L->inflight,
            (unsigned long long)L->acc.completed, (unsigned long long)L->acc.errors,
            final || !tty ? "\n" : "");
    fflush(stderr);
}

static void on_tick(uv_timer_t *t)
{
    struct lrun *L = t->data;
    double now = now_e(L);
    if (kvg_bench_interrupted() && !L->stopping) {
        L->stopping = 1;
        L->rc = -EINTR;
    }
    if (!L->stopping && L->c->des.timeout_s > 0) {
        /* Requests that waited too long for their first token are given up. */
        for (struct lreq *q = L->head, *nx; q; q = nx) {
            nx = q->next;
            if (q->got_first || now - q->r->arrival < L->c->des.timeout_s) continue;
            if (q->call) kvg_http_call_cancel(q->call);
            q->call = NULL;
            finish(q, 0, 1);
        }
    }
    for (struct lreq *q = L->head, *nx; q && !L->stopping; q = nx) {
        nx = q->next; /* attempt() may end q */
        if (q->waiting && now >= q->retry_at) attempt(q);
    }
    if (L->neng && now - L->last_scrape >= 0.1 * L->speed) {
        L->last_scrape = now;
        scrape(L);
    }
    if (kvg_now_ms() - L->last_progress_ms >= 1000) progress(L, now, 0);
    /* The load is over once nothing can arrive any more; in-flight requests
     * get drain_s of engine time to end. */
    int over = now >= L->end && kvg_bench_wl_next(L->wl) == INFINITY;
    if (over && L->inflight && now > L->end + L->tg->drain_s) cancel_all(L, 0);
    if (L->stopping) cancel_all(L, 0);
    if ((over || L->stopping) && !L->inflight) {
        int busy = 0;
        for (int i = 0; i < L->neng; i++) busy |= L->eng[i].busy;
        if (!busy) {
            uv_timer_stop(&L->tick);
            uv_timer_stop(&L->arrive);
            uv_stop(&L->loop);
        }
    }
}

static void close_cb(uv_handle_t *h)
{
    (void)h;
}

int kvg__bench_live_run(const struct kvg_bench_cfg *c, const struct kvg_bench_live_target *tg,
                        struct kvg_bench_summary *out, char *err, size_t errlen)
{
    struct lrun *L = calloc(1, sizeof *L);
    if (!L) return -ENOMEM;
    L->c = c;
    L->tg = tg;
    L->speed = c->speed > 0 ? c->speed : 1;
    int rc = kvg_bench_wl_new(&c->des.wl, &L->wl, err, errlen);
    if (rc) goto out_free;
    if ((rc = kvg_bench_acc_init(&L->acc, L->wl))) goto out_wl;
    L->end = kvg_bench_wl_end(L->wl);
    if ((rc = uv_loop_init(&L->loop))) goto out_acc;
    struct kvg_http_client_opts co;
    kvg_http_client_opts_default(&co);
    co.max_idle_per_host = c->max_inflight;
    if ((rc = kvg_http_client_new(&L->loop, &co, &L->cl))) goto out_loop;
    for (int i = 0; i < tg->nengines && i < KVG_BENCH_LIVE_MAX_ENGINES; i++) {
        L->eng[L->neng].L = L;
        kvg_buf_init(&L->eng[L->neng].body, 4u << 20);
        if (!kvg_http_target_parse(tg->engines[i], &L->eng[L->neng].t)) L->neng++;
    }
    uv_timer_init(&L->loop, &L->arrive);
    uv_timer_init(&L->loop, &L->tick);
    L->arrive.data = L->tick.data = L;
    L->t0_ns = kvg_now_ns();
    kvg_rng_seed(&L->rng, c->des.seed);
    L->last_scrape = -1e9;
    uv_timer_start(&L->arrive, on_arrive, 0, 0);
    uv_timer_start(&L->tick, on_tick, 10, 10);
    uint64_t w0 = kvg_now_ns();
    uv_run(&L->loop, UV_RUN_DEFAULT);
    progress(L, now_e(L), 1);
    cancel_all(L, 0);
    kvg_http_client_close(L->cl);
    uv_close((uv_handle_t *)&L->arrive, close_cb);
    uv_close((uv_handle_t *)&L->tick, close_cb);
    uv_run(&L->loop, UV_RUN_DEFAULT);
    rc = L->rc;
    if (rc == -EINTR)
        snprintf(err, errlen, "interrupted");
    else if (rc)
        snprintf(err, errlen, "load client: %s", kvg_strerror(rc));
    kvg_bench_acc_summarize(&L->acc, L->wl, out);
    out->cached_unknown = !L->cached_seen && L->acc.completed;
    out->retried = L->retried;
    out->lost_in_flight = L->lost_in_flight;
    out->wall_s = (double)(kvg_now_ns() - w0) / 1e9;
    for (int i = 0; i < L->neng; i++) kvg_buf_free(&L->eng[i].body);
out_loop:
    uv_loop_close(&L->loop);
out_acc:
    kvg_bench_acc_free(&L->acc);
out_wl:
    kvg_bench_wl_free(L->wl);
out_free:
    free(L);
    return rc;
}
