/* What goes on the wire around a proxied request: which of the client's
 * headers an engine gets (none of its credentials, kvgate's own controls, or
 * hop-by-hop headers), the x-request-id, the per-request metrics and the
 * access-log line. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/log.h"
#include "proxy/proxy_int.h"

static const char *hop_by_hop[] = {"connection",
                                   "keep-alive",
                                   "transfer-encoding",
                                   "te",
                                   "trailer",
                                   "upgrade",
                                   "proxy-connection",
                                   "proxy-authenticate",
                                   "proxy-authorization",
                                   "host",
                                   "content-length",
                                   "expect",
                                   "x-request-id",
                                   "x-data-parallel-rank"}; /* kvgate's to set (URL@rank) */

int kvg__proxy_is_hop(struct kvg_str name)
{
    for (size_t i = 0; i < KVG_ARRAY_LEN(hop_by_hop); i++)
        if (kvg_str_eq_nocase(name, hop_by_hop[i])) return 1;
    return 0;
}

/* Is `name` one of the comma-separated tokens of a Connection header? Those
 * headers are for this hop only (RFC 9110 7.6.1). */
static int named_by(struct kvg_str connection, struct kvg_str name)
{
    const char *p = connection.p, *end = connection.p + connection.len;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == ',')) p++;
        const char *t = p;
        while (p < end && *p != ',') p++;
        const char *e = p;
        while (e > t && (e[-1] == ' ' || e[-1] == '\t')) e--;
        if ((size_t)(e - t) == name.len && name.len && !strncasecmp(t, name.p, name.len)) return 1;
    }
    return 0;
}

/* What the client sent that no engine sees: hop-by-hop headers, the headers
 * its Connection header names, its credentials (kvgate's keys are kvgate's;
 * an engine gets --upstream-api-key instead) and kvgate's own x-kvgate-*
 * controls. */
static int not_forwarded(struct kvg_str name, struct kvg_str connection)
{
    if (kvg__proxy_is_hop(name) || kvg_str_eq_nocase(name, "authorization") ||
        kvg_str_eq_nocase(name, "x-api-key"))
        return 1;
    if (name.len >= 9 && !strncasecmp(name.p, "x-kvgate-", 9)) return 1;
    return connection.len && named_by(connection, name);
}

const char *kvg_proxy_route_label(int route)
{
    for (size_t i = 0; i < kvg_api_nendpoints; i++)
        if ((int)kvg_api_endpoints[i].kind == route) return kvg_api_endpoints[i].path;
    return "none";
}

void kvg__proxy_metrics_request(const struct kvg_proxy_metrics *m, int r, int status,
                                double duration_s, double ttfb_s)
{
    int c = status >= 100 && status < 600 ? status / 100 - 1 : 5;
    kvg_metrics_inc(m->requests[r][c]);
    kvg_metrics_observe(m->duration[r], duration_s);
    if (ttfb_s >= 0) kvg_metrics_observe(m->ttfb[r], ttfb_s);
}

void kvg__proxy_observe_end(struct proxy_req *pr, int status)
{
    const struct kvg_proxy *px = pr->pl->px;
    const struct kvg_proxy_metrics *m = px->m;
    struct kvg_usage u;
    uint64_t relayed = kvg_gate_usage_final(&pr->gate, &u);
    struct kvg_proxy_obs o = {.kind = KVG_PROXY_OBS_FINISH,
                              .status = status,
                              .failed = status >= 500 || (status == 499 && !pr->first_ns),
                              .ttft_s = -1,
                              .itl_s = -1,
                              .prompt_tokens = u.found ? u.prompt_tokens : -1,
                              .completion_tokens = u.found ? u.completion_tokens : -1,
                              .cached_tokens = u.found && u.cached_found ? u.cached_tokens : -1};
    if (pr->sse && pr->first_ns) {
        o.ttft_s = (double)(pr->first_ns - pr->t0_ns) / 1e9;
        /* vLLM's mean ITL: the stream's span over its gaps; the tokens the
         * engine counted, else those relayed. */
        int64_t n = u.found ? u.completion_tokens : (int64_t)relayed;
        if (n > 1) o.itl_s = (double)(pr->last_ns - pr->first_ns) / 1e9 / (double)(n - 1);
    }
    if (u.found) {
        if (m->tokens[0]) kvg_metrics_add(m->tokens[0], (double)u.prompt_tokens);
        if (m->tokens[1] && u.cached_found) kvg_metrics_add(m->tokens[1], (double)u.cached_tokens);
        if (m->tokens[2]) kvg_metrics_add(m->tokens[2], (double)u.completion_tokens);
    }
    if (m->ttft && o.ttft_s >= 0) kvg_metrics_observe(m->ttft, o.ttft_s);
    if (m->itl && o.itl_s >= 0) kvg_metrics_observe(m->itl, o.itl_s);
    if (px->on_observe) px->on_observe(px->on_observe_ud, &o);
}

void kvg__proxy_access_log(struct proxy_req *pr, int status)
{
    if (!pr->pl->px->cfg->access_log) return;
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    uint64_t now = kvg_now_ns();
    double lat = (double)(now - pr->t0_ns) / 1e6;
    double ttfb = pr->ttfb_ns ? (double)(pr->ttfb_ns - pr->t0_ns) / 1e6 : -1;
    kvg_buf_printf(&b, "{\"ts\":%.3f,\"request_id\":", kvg_wall_s());
    kvg_buf_append_json_str(&b, pr->request_id, strlen(pr->request_id));
    kvg_buf_append_str(&b, ",\"path\":");
    kvg_buf_append_json_str(&b, pr->path, strlen(pr->path));
    kvg_buf_printf(&b, ",\"method\":\"%s\",\"stream\":%s,\"model\":", pr->method,
                   pr->ri.stream ? "true" : "false");
    if (pr->asked_len) { /* asked by an alias or a split: the name asked, the model served */
        kvg_buf_append_json_str(&b, pr->asked, pr->asked_len);
        kvg_buf_append_str(&b, ",\"served_model\":");
    }
    kvg_buf_append_json_str(&b, pr->ri.model, pr->ri.model_len);
    if (pr->ri.session_len) {
        kvg_buf_append_str(&b, ",\"session\":");
        kvg_buf_append_json_str(&b, pr->ri.session, pr->ri.session_len);
    }
    if (pr->served_as[0]) kvg_buf_printf(&b, ",\"served_as\":\"%s\"", pr->served_as);
    kvg_buf_append_str(&b, ",\"worker\":");
    kvg_buf_append_json_str(&b, pr->worker_url, strlen(pr->worker_url));
    kvg_buf_printf(&b,
                   ",\"status\":%d,\"attempts\":%u,\"bytes\":%llu,\"latency_ms\":%.3f,"
                   "\"ttfb_ms\":%.3f}",
                   status, pr->attempts, (unsigned long long)pr->bytes_up, lat, ttfb);
    kvg_log_raw(b.data, b.len);
    kvg_buf_free(&b);
}

/* The client's headers an engine gets, and kvgate's x-request-id (on the
 * loop: it reads the client's request). */
size_t kvg__proxy_forward_headers(struct proxy_req *pr, struct kvg_http_header *fwd, size_t cap)
{
    struct kvg_http_req *req = pr->req;
    size_t k = 0;
    struct kvg_str connection = kvg_http_req_header(req, "connection");
    int traced = pr->tr.tp[0] != 0; /* kvgate's traceparent replaces the client's */
    for (size_t i = 0; i < req->nheaders && k + 1 + (size_t)traced < cap; i++)
        if (!not_forwarded(req->headers[i].name, connection) &&
            !(traced && kvg_str_eq_nocase(req->headers[i].name, "traceparent")))
            fwd[k++] = req->headers[i];
    fwd[k++] =
        (struct kvg_http_header){KVG_STR("x-request-id"), {pr->request_id, strlen(pr->request_id)}};
    if (traced)
        fwd[k++] =
            (struct kvg_http_header){KVG_STR("traceparent"), {pr->tr.tp, KVG_TRACE_PARENT_LEN}};
    return k;
}

/* x-request-id: the client's (one of the usual headers) or a new one with the
 * prefix OpenAI-compatible servers use for the endpoint. */
void kvg__proxy_request_id(struct proxy_req *pr, struct kvg_http_req *req)
{
    static const char *names[] = {"x-request-id", "x-correlation-id", "x-trace-id", "request-id"};
    for (size_t i = 0; i < KVG_ARRAY_LEN(names); i++) {
        struct kvg_str v = kvg_http_req_header(req, names[i]);
        if (v.p && v.len && v.len < sizeof pr->request_id) {
            memcpy(pr->request_id, v.p, v.len);
            pr->request_id[v.len] = 0;
            return;
        }
    }
    static const char al[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const char *prefix = pr->route == KVG_API_CHAT          ? "chatcmpl-"
                         : pr->route == KVG_API_COMPLETIONS ? "cmpl-"
                         : pr->route == KVG_API_RESPONSES   ? "resp-"
                         : pr->route == KVG_API_MESSAGES    ? "msg-"
                                                            : "req-";
    size_t n = (size_t)snprintf(pr->request_id, sizeof pr->request_id, "%s", prefix);
    for (int i = 0; i < 24; i++) pr->request_id[n++] = al[kvg_rng_below(pr->pl->rng, 62)];
    pr->request_id[n] = 0;
}

void kvg_proxy_refused(const struct kvg_proxy *px, const struct kvg_http_req *req, int status,
                       const char *why)
{
    unsigned allow;
    const struct kvg_api_endpoint *ep =
        kvg_api_find(req->path.p, req->path.len, req->method_name, &allow, NULL, NULL);
    double lat = (double)(kvg_now_ns() - req->start_ns) / 1e9;
    if (ep) kvg__proxy_metrics_request(px->m, (int)ep->kind, status, lat, -1);
    if (!px->cfg->access_log) return;
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    kvg_buf_printf(&b, "{\"ts\":%.3f,\"path\":", kvg_wall_s());
    size_t n = KVG_MIN(req->path.len, 200);
    kvg_buf_append_json_str(&b, req->path.p, n);
    kvg_buf_printf(&b,
                   ",\"method\":\"%s\",\"peer\":\"%s\",\"status\":%d,\"refused\":\"%s\","
                   "\"latency_ms\":%.3f}",
                   req->method_name, req->peer, status, why, lat * 1e3);
    kvg_log_raw(b.data, b.len);
    kvg_buf_free(&b);
}
