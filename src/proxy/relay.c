/* The engine's answer to a proxied request (proxy_int.h): its head and
 * body relayed to the client as they come (a stream chunk by chunk, with
 * back-pressure; a whole answer collected and sent at once), read for its
 * usage, translated for an engine without the endpoint (translate.c), and
 * retried elsewhere when it failed before any byte reached the client. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/err.h"
#include "base/log.h"
#include "proxy/proxy_int.h"
#include "router/mode.h"

/* The bytes of a relayed error answer read for its code. */
#define ERROR_PEEK 4096

/* kvgate's own resources ran out (descriptors, memory, socket buffers):
 * no engine is to blame and another attempt would fail the same way. */
int kvg__proxy_local_error(int err)
{
    return err == -EMFILE || err == -ENFILE || err == -ENOMEM || err == -ENOBUFS;
}

/* The engine could not be reached at all (nothing was sent). */
static int connect_error(int err)
{
    return err == -ECONNREFUSED || err == -EHOSTUNREACH || err == -ENETUNREACH ||
           err == -EADDRNOTAVAIL || err == -ETIMEDOUT;
}

/* 503 + Retry-After for a local failure, logged at most once a second per
 * loop thread (a descriptor shortage fails every request at once). */
void kvg__proxy_local_failure(struct proxy_req *pr, int err)
{
    static _Thread_local uint64_t last_ms, suppressed;
    uint64_t now = kvg_now_ms();
    if (!last_ms || now - last_ms >= 1000) {
        KVG_ERROR("proxy %s: kvgate cannot open a connection to %s: %s (a local shortage, not "
                  "the engine's fault; %llu more since the last line)",
                  pr->request_id, pr->worker_url, kvg_strerror(err),
                  (unsigned long long)suppressed);
        last_ms = now;
        suppressed = 0;
    } else {
        suppressed++;
    }
    kvg__proxy_release_worker(pr, KVG_OUT_LOCAL);
    kvg__proxy_client_error(
        pr, 503, "local_resources_exhausted",
        "kvgate is out of local resources (file descriptors or memory): retry later");
}

/* No attempt left: 503 when no attempt could even connect (engines just
 * gone, not yet marked unhealthy: retry soon), else 502. */
void kvg__proxy_upstream_failed(struct proxy_req *pr, const char *msg)
{
    int unreachable = pr->connect_fails && pr->connect_fails == pr->attempts - pr->attempts0;
    if (unreachable && kvg__proxy_fall_back(pr, "no_healthy_worker")) return;
    if (unreachable)
        kvg__proxy_client_error(pr, 503, "upstream_unreachable",
                                "no engine could be reached: retry later");
    else
        kvg__proxy_client_error(pr, 502, "upstream_error", msg);
}

static void on_retry_timer(uv_timer_t *t)
{
    kvg__proxy_attempt(t->data);
}

/* Retry after backoff, if allowed; returns 0 when a retry was scheduled. */
int kvg__proxy_schedule_retry(struct proxy_req *pr)
{
    const struct kvg_proxy_config *c = pr->pl->px->cfg;
    if (!c->retries_enabled || pr->attempts - pr->attempts0 > c->retry_max) return -1;
    if (kvg__proxy_pd(pr) && !kvg_pd_decode_may_retry(kvg__proxy_pd(pr), &pr->pdr, kvg_now_ms()))
        return -1; /* the prefill's blocks are not held for another decode */
    double d =
        c->retry_initial_ms * pow(c->retry_multiplier, (double)(pr->attempts - pr->attempts0 - 1));
    if (d > c->retry_max_backoff_ms) d = c->retry_max_backoff_ms;
    d *= 1.0 + c->retry_jitter * (2.0 * kvg_rng_double(pr->pl->rng) - 1.0);
    if (d < 0) d = 0;
    kvg_metrics_inc(pr->pl->px->m->retries);
    uv_timer_start(&pr->retry_timer, on_retry_timer, (uint64_t)d, 0);
    return 0;
}

static int retryable_status(int s)
{
    return s == 429 || s == 502 || s == 503 || s == 504;
}

void kvg__proxy_on_drain(struct kvg_http_req *req, void *ud)
{
    struct proxy_req *pr = ud;
    if (pr->call) kvg_http_call_resume(pr->call);
}

static void relay_head(struct proxy_req *pr, int status, const struct kvg_http_header *h, size_t n,
                       int64_t content_length)
{
    struct kvg_http_header out[MAX_FWD_HEADERS + 10];
    struct kvg_quota_headers qh;
    size_t k = 0;
    for (size_t i = 0; i < n && k < MAX_FWD_HEADERS; i++)
        if (!kvg__proxy_is_hop(h[i].name) && !kvg_str_eq_nocase(h[i].name, "x-kvgate-worker"))
            out[k++] = h[i];
    out[k++] = (struct kvg_http_header){KVG_STR("x-kvgate-worker"),
                                        {pr->worker_url, strlen(pr->worker_url)}};
    out[k++] =
        (struct kvg_http_header){KVG_STR("x-request-id"), {pr->request_id, strlen(pr->request_id)}};
    k += kvg_gate_quota_headers(&pr->gate, out + k, 8, &qh);
    pr->relayed = 1;
    pr->ttfb_ns = kvg_now_ns();
    /* The usage filter may drop an event, a translation changes them: the
     * length is then the stream's end. */
    if ((pr->sse && kvg_gate_filters_stream(&pr->gate)) || pr->xlate) content_length = -1;
    kvg_http_res_start(pr->req, status, out, k, content_length);
}

static void up_head(void *ud, int status, const struct kvg_http_header *h, size_t n)
{
    struct proxy_req *pr = ud;
    const struct kvg_proxy_config *c = pr->pl->px->cfg;
    int shed = status == 429 || status == 503;
    int retry = c->retries_enabled && pr->attempts - pr->attempts0 <= c->retry_max;
    if (retryable_status(status) && (retry || (shed && kvg__proxy_model_can_fall(pr)))) {
        /* Nothing reached the client: try elsewhere (another worker, else
         * the model's fallback: picked in proxy.c). */
        kvg_http_call_cancel(pr->call);
        pr->call = NULL;
        kvg__proxy_release_worker(pr, status == 429 ? KVG_OUT_CLIENT_ERROR : KVG_OUT_FAIL);
        pr->shed_seen |= shed;
        if (retry && kvg__proxy_schedule_retry(pr) == 0) return;
        if (shed && kvg__proxy_fall_back(pr, "engine_shed")) return;
        if (kvg__proxy_pd(pr) && (status == 429 || status == 503))
            kvg_pd_decode_refused(kvg__proxy_pd(pr), &pr->pdr);
        kvg__proxy_client_error(pr, 502, "upstream_unavailable", "all workers failed");
        return;
    }
    pr->up_status = status;
    /* A 404 that may mean "no such path": read whole before anything
     * reaches the client (up_done tells). */
    pr->probe = kvg__proxy_xlate_probe(pr, status);
    if (pr->probe) return;
    kvg_gate_upstream_status(&pr->gate, status);
    kvg__proxy_obs_model(pr, pr->pick.w);
    int64_t clen = -1;
    for (size_t i = 0; i < n; i++) {
        if (kvg_str_eq_nocase(h[i].name, "content-type")) {
            size_t l = KVG_MIN(h[i].value.len, sizeof pr->content_type - 1);
            memcpy(pr->content_type, h[i].value.p, l);
            pr->content_type[l] = 0;
            pr->sse = l >= 17 && !strncasecmp(pr->content_type, "text/event-stream", 17);
        } else if (kvg_str_eq_nocase(h[i].name, "content-length")) {
            char tmp[24];
            size_t l = KVG_MIN(h[i].value.len, sizeof tmp - 1);
            memcpy(tmp, h[i].value.p, l);
            tmp[l] = 0;
            int64_t v;
            if (!kvg_parse_i64(tmp, &v)) clen = v;
        }
    }
    /* A translated request's error answer is read whole and said in the
     * API's shape (up_done). */
    if ((pr->ri.stream || pr->sse) && !(pr->xlate && (status < 200 || status >= 300)))
        relay_head(pr, status, h, n, clen);
}

/* A translated stream's chat bytes: through the usage filter (which reads
 * the chat usage and removes nothing: usage_unasked), then the translator,
 * to the client. */
static void relay_translated(struct proxy_req *pr, const char *p, size_t n)
{
    int rc = 0;
    if (kvg_gate_filters_stream(&pr->gate)) {
        kvg_buf_reset(&pr->body);
        rc = kvg_gate_usage_feed(&pr->gate, p, n, &pr->body);
        p = pr->body.data;
        n = pr->body.len;
    }
    kvg__proxy_obs_tokens(pr);
    kvg_buf_reset(&pr->xout);
    if (!rc && n) rc = kvg__proxy_xlate_feed(pr, p, n, &pr->xout);
    if (rc) {
        KVG_WARN("proxy %s: cannot translate the engine's stream: %s", pr->request_id,
                 kvg_strerror(rc));
        kvg_http_call_cancel(pr->call);
        pr->call = NULL;
        kvg__proxy_release_worker(pr, KVG_OUT_ANSWER_ERROR);
        kvg__proxy_sse_error_end(pr, "the engine's stream cannot be translated");
        kvg__proxy_finish(pr, 502);
        return;
    }
    if (pr->xout.len && kvg_http_res_write(pr->req, pr->xout.data, pr->xout.len) == 1)
        kvg_http_call_pause(pr->call);
}

static void up_body(void *ud, const char *p, size_t n)
{
    struct proxy_req *pr = ud;
    struct kvg_proxy *px = pr->pl->px;
    /* The clock only where it is read: every chunk of a stream (its ITL),
     * the first one of any answer. */
    if (pr->sse || !pr->bytes_up) pr->last_ns = kvg_now_ns();
    if (!pr->bytes_up) {
        kvg_pool_first_token_at(px->pool, &pr->pick, kvg_now_ms()); /* prefill is over */
        if (kvg__proxy_pd(pr)) kvg_pd_decode_first_byte(kvg__proxy_pd(pr), &pr->pdr);
        pr->first_ns = pr->last_ns;
    }
    pr->bytes_up += n;
    if (pr->stored_learn) kvg__proxy_stored_learn(pr, p, n);
    if (pr->relayed && pr->xlate && pr->sse) {
        relay_translated(pr, p, n);
        return;
    }
    if (pr->relayed) {
        int rc;
        if (pr->sse && kvg_gate_filters_stream(&pr->gate)) {
            /* A relayed stream holds no answer in pr->body: it is the scratch
             * for the filtered bytes, allocated once per request. */
            kvg_buf_reset(&pr->body);
            kvg_gate_usage_feed(&pr->gate, p, n, &pr->body);
            kvg__proxy_obs_tokens(pr);
            rc = pr->body.len ? kvg_http_res_write(pr->req, pr->body.data, pr->body.len) : 0;
        } else {
            /* A stream request's error answer (JSON, not a stream): its
             * first bytes kept for its code (the access log's). */
            if (!pr->sse && pr->up_status >= 400 && pr->body.len < ERROR_PEEK)
                kvg_buf_append(&pr->body, p, KVG_MIN(n, ERROR_PEEK - pr->body.len));
            rc = kvg_http_res_write(pr->req, p, n);
        }
        if (rc == 1) kvg_http_call_pause(pr->call);
        return;
    }
    if (kvg_buf_append(&pr->body, p, n)) {
        kvg_http_call_cancel(pr->call);
        pr->call = NULL;
        kvg__proxy_release_worker(pr, KVG_OUT_FAIL);
        kvg__proxy_client_error(pr, 502, "upstream_too_large", "the engine's answer is too large");
    }
}

void kvg__proxy_sse_error_end(struct proxy_req *pr, const char *msg)
{
    kvg__proxy_obs_error(pr, "upstream_error", NULL);
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    if (pr->xlate && pr->xl) {
        kvg__proxy_xlate_end(pr, 1, &b); /* the API's own error event */
    } else if (pr->ep && pr->ep->shape == KVG_API_SHAPE_ANTHROPIC) {
        kvg_buf_append_str(&b, "event: error\ndata: ");
        kvg_api_error_body(KVG_API_SHAPE_ANTHROPIC, 502, "api_error", NULL, msg, NULL, &b);
        kvg_buf_append_str(&b, "\n\n");
    } else if (pr->route == KVG_API_RESPONSES) {
        kvg_buf_append_str(&b,
                           "event: error\ndata: {\"type\":\"error\",\"code\":\"upstream_error\","
                           "\"message\":");
        kvg_buf_append_json_str(&b, msg, strlen(msg));
        kvg_buf_append_str(&b, ",\"param\":null}\n\n");
    } else {
        kvg_buf_append_str(&b, "data: ");
        kvg_http_error_json(&b, 502, NULL, "upstream_error", msg);
        kvg_buf_append_str(&b, "\n\ndata: [DONE]\n\n");
    }
    kvg_http_res_write(pr->req, b.data, b.len);
    kvg_buf_free(&b);
    struct kvg_http_req *req = pr->req;
    pr->req = NULL;
    kvg_http_res_close_after(req);
    kvg_http_res_end(req);
}

/* The self-check behind the routing mode (router/mode.h): the engine's
 * usage.prompt_tokens against kvgate's own count for the same request, on
 * 2xx answers of tokenized requests. A stream's usage is the one the gate
 * asks every stream for and filters (gateway/gate.c). The answer is
 * scanned, not parsed: only its usage member is. */
static void check_prompt_tokens(struct proxy_req *pr, int status)
{
    if (!pr->pick.w || !pr->ri.ids || status < 200 || status >= 300) return;
    /* A Responses turn on a stored one: the engine's prompt holds the
     * earlier turns, which kvgate never saw (it counted the new input only). */
    if (pr->route == KVG_API_RESPONSES && pr->ri.prev_id[0]) return;
    const struct kvg_usage *seen = kvg_gate_usage_seen(&pr->gate);
    struct kvg_usage u = {0};
    if (seen)
        u = *seen;
    else if (pr->sse || kvg_usage_scan_json(pr->body.data, pr->body.len, &u) != 1)
        return;
    if (u.found)
        kvg_route_mode_usage(pr->pick.w, u.prompt_tokens, u.cached_found ? u.cached_tokens : -1,
                             (int64_t)pr->ri.nids, pr->ri.block_size);
}

static void up_done(void *ud, int err)
{
    struct proxy_req *pr = ud;
    pr->call = NULL;
    if (err == 0 && pr->probe && kvg__proxy_xlate_missing(pr, pr->pick.w)) {
        /* The worker has no such endpoint: the same request again, now as
         * chat (it, or another worker, gets it translated). */
        struct kvg_worker *w = pr->pick.w;
        kvg__proxy_release_worker(pr, KVG_OUT_OK);
        for (size_t i = 0; i < pr->ntried; i++)
            if (pr->tried[i] == w) pr->tried[i] = pr->tried[--pr->ntried];
        pr->probe = 0;
        kvg__proxy_attempt(pr);
        return;
    }
    if (err == 0) {
        int status = pr->up_status;
        if (pr->probe) { /* an ordinary 404: the engine's answer */
            pr->probe = 0;
            kvg_gate_upstream_status(&pr->gate, status);
        }
        check_prompt_tokens(pr, status);
        kvg__proxy_release_worker(pr, kvg_pool_answer_outcome(status));
        struct kvg_http_req *req = pr->req;
        pr->req = NULL;
        if (pr->relayed) {
            if (pr->sse && kvg_gate_filters_stream(&pr->gate)) {
                kvg_buf_reset(&pr->body);
                kvg_gate_usage_end(&pr->gate, &pr->body);
                kvg__proxy_obs_tokens(pr); /* an unterminated last event */
                if (pr->body.len && !pr->xlate)
                    kvg_http_res_write(req, pr->body.data, pr->body.len);
            }
            if (pr->xlate && pr->xl) {
                kvg_buf_reset(&pr->xout);
                if (pr->body.len && pr->sse)
                    kvg__proxy_xlate_feed(pr, pr->body.data, pr->body.len, &pr->xout);
                kvg__proxy_xlate_end(pr, 0, &pr->xout);
                if (pr->xout.len) kvg_http_res_write(req, pr->xout.data, pr->xout.len);
            }
            if (!pr->sse) kvg__proxy_obs_engine_error(pr, status, pr->body.data, pr->body.len);
            kvg_http_res_end(req);
        } else if (pr->xlate) {
            kvg_gate_usage_json(&pr->gate, pr->body.data, pr->body.len); /* the chat usage */
            kvg__proxy_obs_engine_error(pr, status, pr->body.data, pr->body.len);
            kvg_buf_reset(&pr->xout);
            if (kvg__proxy_xlate_answer(pr, status, &pr->xout)) {
                pr->req = req;
                kvg__proxy_client_error(pr, 502, "upstream_error",
                                        "the engine's answer cannot be translated");
                return;
            }
            struct kvg_http_header h[10] = {
                {KVG_STR("x-kvgate-worker"), {pr->worker_url, strlen(pr->worker_url)}},
                {KVG_STR("x-request-id"), {pr->request_id, strlen(pr->request_id)}}};
            struct kvg_quota_headers qh;
            size_t nh = 2 + kvg_gate_quota_headers(&pr->gate, h + 2, 8, &qh);
            pr->ttfb_ns = kvg_now_ns();
            kvg_http_res_send(req, status, "application/json", h, nh, pr->xout.data, pr->xout.len);
        } else {
            struct kvg_http_header h[10] = {
                {KVG_STR("x-kvgate-worker"), {pr->worker_url, strlen(pr->worker_url)}},
                {KVG_STR("x-request-id"), {pr->request_id, strlen(pr->request_id)}}};
            struct kvg_quota_headers qh;
            size_t nh = 2 + kvg_gate_quota_headers(&pr->gate, h + 2, 8, &qh);
            /* Any status: an error answer may still say what was computed. */
            kvg_gate_usage_json(&pr->gate, pr->body.data, pr->body.len);
            kvg__proxy_obs_engine_error(pr, status, pr->body.data, pr->body.len);
            pr->ttfb_ns = kvg_now_ns();
            kvg_http_res_send(req, status, pr->content_type[0] ? pr->content_type : NULL, h, nh,
                              pr->body.data, pr->body.len);
        }
        kvg__proxy_finish(pr, status);
        return;
    }
    if (kvg__proxy_local_error(err) && pr->up_status == 0) {
        kvg__proxy_local_failure(pr, err);
        return;
    }
    kvg__proxy_release_worker(pr, KVG_OUT_FAIL);
    kvg_metrics_inc(pr->pl->px->m->upstream_errors);
    KVG_WARN("proxy %s: worker %s failed: %s", pr->request_id, pr->worker_url, kvg_strerror(err));
    if (pr->up_status == 0 && connect_error(err)) pr->connect_fails++;
    if (pr->relayed) {
        kvg__proxy_sse_error_end(pr, err == KVG_ETIMEOUT
                                         ? "the engine stopped sending (idle timeout)"
                                         : "the engine's stream broke off");
        kvg__proxy_finish(pr, 502);
        return;
    }
    if (pr->up_status == 0 && err != KVG_ETIMEOUT && kvg__proxy_schedule_retry(pr) == 0) return;
    if (err == KVG_ETIMEOUT)
        kvg__proxy_client_error(pr, 504, "upstream_timeout", "the engine timed out");
    else if (pr->up_status)
        kvg__proxy_client_error(pr, 502, "upstream_error", "the engine's answer was cut");
    else
        kvg__proxy_upstream_failed(pr, "the engine failed before answering");
}

const struct kvg_http_call_cbs kvg__proxy_up_cbs = {up_head, up_body, up_done};
