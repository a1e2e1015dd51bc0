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
                                const char *error_code, double duration_s, double ttfb_s)
{
    int c = status >= 100 && status < 600 ? status / 100 - 1 : 5;
    kvg_metrics_inc(m->requests[r][c]);
    kvg_metrics_observe(m->duration[r], duration_s);
    if (ttfb_s >= 0) kvg_metrics_observe(m->ttfb[r], ttfb_s);
    if (!m->responses_f) return;
    if (status == 200 && (!error_code || !error_code[0]) && m->responses_ok[r]) {
        kvg_metrics_inc(m->responses_ok[r]);
        return;
    }
    /* Not a plain 200: the series by name (the family's lock), a status
     * of three digits and an error code kvgate wrote: bounded. */
    char st[8];
    snprintf(st, sizeof st, "%d", status >= 100 && status < 600 ? status : 0);
    const char *v[3] = {kvg_proxy_route_label(r), st, error_code ? error_code : ""};
    struct kvg_metrics_series *s;
    if (kvg_metrics_series(m->responses_f, v, 3, &s)) return;
    kvg_metrics_inc(s);
    kvg_metrics_series_release(s);
}

/* ,"name":"value" or ,"name":null (v NULL or empty). */
static void log_str(struct kvg_buf *b, const char *name, const char *v, size_t n)
{
    kvg_buf_printf(b, ",\"%s\":", name);
    if (v && n)
        kvg_buf_append_json_str(b, v, n);
    else
        kvg_buf_append_str(b, "null");
}

/* ,"name":n or ,"name":null (n < 0: unknown). */
static void log_int(struct kvg_buf *b, const char *name, int64_t n)
{
    if (n >= 0)
        kvg_buf_printf(b, ",\"%s\":%lld", name, (long long)n);
    else
        kvg_buf_printf(b, ",\"%s\":null", name);
}

/* One JSON line per request, every field always present (null when it
 * does not apply; session and served_as only when there is one), so a log
 * pipeline reads one schema (docs/observability.md lists the fields). */
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
    kvg_buf_printf(&b, ",\"method\":\"%s\",\"stream\":%s", pr->method,
                   pr->ri.stream ? "true" : "false");
    /* The name asked (an alias, a split) and the model that served it. */
    log_str(&b, "model", pr->asked_len ? pr->asked : pr->ri.model,
            pr->asked_len ? pr->asked_len : pr->ri.model_len);
    int served = pr->cmodel >= 0 || !pr->pl->px->catalog;
    log_str(&b, "served_model", pr->ri.model, served ? pr->ri.model_len : 0);
    if (pr->fallen) { /* served by a fallback: the model it was for, and why */
        log_str(&b, "fallback_from", pr->fb_from, strlen(pr->fb_from));
        kvg_buf_printf(&b, ",\"fallback_reason\":\"%s\",\"fallbacks\":%d", pr->fb_reason,
                       pr->fallen);
    }
    if (pr->ri.session_len) log_str(&b, "session", pr->ri.session, pr->ri.session_len);
    if (pr->served_as[0]) kvg_buf_printf(&b, ",\"served_as\":\"%s\"", pr->served_as);
    kvg_buf_append_str(&b, ",\"worker\":"); /* "": none, or kvgate answered itself */
    kvg_buf_append_json_str(&b, pr->worker_url, strlen(pr->worker_url));
    log_str(&b, "prefill_worker", pr->pdr.prefill_url, strlen(pr->pdr.prefill_url));
    const struct kvg_keys_entry *key = pr->gate.key; /* its name, never the secret */
    log_str(&b, "key", key ? key->name : NULL, key ? strlen(key->name) : 0);
    log_str(&b, "tenant", key ? key->tenant : NULL, key ? strlen(key->tenant) : 0);
    log_str(&b, "routing_mode", pr->routing_mode, pr->routing_mode ? strlen(pr->routing_mode) : 0);
    kvg_buf_printf(&b, ",\"status\":%d", status);
    log_str(&b, "error_code", pr->error_code, strlen(pr->error_code));
    kvg_buf_printf(&b, ",\"attempts\":%u,\"retries\":%u", pr->attempts,
                   pr->attempts ? pr->attempts - 1 : 0);
    struct kvg_usage u;
    kvg_gate_usage_final(&pr->gate, &u);
    log_int(&b, "prompt_tokens", u.found ? u.prompt_tokens : -1);
    log_int(&b, "cached_tokens", u.found && u.cached_found ? u.cached_tokens : -1);
    log_int(&b, "completion_tokens", u.found ? u.completion_tokens : -1);
    kvg_buf_printf(&b, ",\"bytes\":%llu,\"latency_ms\":%.3f,\"ttfb_ms\":%.3f",
                   (unsigned long long)pr->bytes_up, lat, ttfb);
    if (pr->tok_first_ns)
        kvg_buf_printf(&b, ",\"ttft_ms\":%.3f}", (double)(pr->tok_first_ns - pr->t0_ns) / 1e6);
    else
        kvg_buf_append_str(&b, ",\"ttft_ms\":null}");
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

void kvg_proxy_refused(const struct kvg_proxy *px, const struct kvg_http_req *req,
                       const struct kvg_http_refusal *r, const char *why)
{
    unsigned allow;
    const struct kvg_api_endpoint *ep =
        kvg_api_find(req->path.p, req->path.len, req->method_name, &allow, NULL, NULL);
    double lat = (double)(kvg_now_ns() - req->start_ns) / 1e9;
    const char *code = r->code ? r->code : r->type ? r->type : "";
    if (ep) kvg__proxy_metrics_request(px->m, (int)ep->kind, r->status, code, lat, -1);
    if (!px->cfg->access_log) return;
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    kvg_buf_printf(&b, "{\"ts\":%.3f,\"path\":", kvg_wall_s());
    size_t n = KVG_MIN(req->path.len, 200);
    kvg_buf_append_json_str(&b, req->path.p, n);
    kvg_buf_printf(&b,
                   ",\"method\":\"%s\",\"peer\":\"%s\",\"status\":%d,\"refused\":\"%s\","
                   "\"error_code\":",
                   req->method_name, req->peer, r->status, why);
    kvg_buf_append_json_str(&b, code, strlen(code));
    kvg_buf_printf(&b, ",\"latency_ms\":%.3f}", lat * 1e3);
    kvg_log_raw(b.data, b.len);
    kvg_buf_free(&b);
}
