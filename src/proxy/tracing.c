/* A request's spans (trace/trace.h), when the proxy has a tracer: its
 * context from the client's traceparent (or a new sampled-by-ratio trace),
 * the traceparent each upstream leg carries (that leg's span id, so an
 * engine's own trace joins kvgate's), and, when sampled, the spans
 * themselves: the server span with the first token as an event, and
 * children for parse, tokenize, auth, quota and admission, each route
 * decision and each upstream leg (prefill and decode in PD).
 *
 * The proxy marks times (TR_MARK in proxy_int.h); spans are built here
 * when a leg or the request ends. Attribute names are the OpenTelemetry
 * GenAI and HTTP semantic conventions' where they have one, kvgate.* for
 * the rest. Nothing of the prompt or the answer goes in: names, counts,
 * workers and statuses only. */
#include <stdio.h>
#include <string.h>

#include "proxy/proxy_int.h"
#include "router/mode.h"

/* gen_ai.operation.name of an endpoint (the conventions' values where
 * one fits, the endpoint's own name otherwise). */
static const char *operation(const struct proxy_req *pr)
{
    switch (pr->route) {
    case KVG_API_CHAT:
    case KVG_API_RESPONSES:
    case KVG_API_MESSAGES:
        return "chat";
    case KVG_API_COMPLETIONS:
    case KVG_API_GENERATE:
        return "text_completion";
    case KVG_API_EMBEDDINGS:
    case KVG_API_POOLING:
        return "embeddings";
    default:
        return pr->ep ? pr->ep->name : "none";
    }
}

void kvg__proxy_trace_begin(struct proxy_req *pr)
{
    struct kvg_trace *t = pr->pl->px->tracer;
    if (!t) return;
    kvg_trace_ctx_start(&pr->tr.ctx, kvg_http_req_header(pr->req, "traceparent"),
                        kvg_trace_sample(t), pr->pl->rng);
    pr->tr.on = pr->tr.ctx.sampled;
    /* Until a leg has its own id, the engines' parent is the server span. */
    kvg_trace_format_parent(pr->tr.ctx.trace_id, pr->tr.ctx.span_id, pr->tr.on, pr->tr.tp);
}

static void child(struct proxy_req *pr, struct kvg_trace_span *s, const char *name, int kind,
                  const uint8_t *id, uint64_t t0, uint64_t t1)
{
    uint8_t fresh[8];
    if (!id) {
        kvg_trace_new_id(pr->pl->rng, fresh, 8);
        id = fresh;
    }
    kvg_trace_span_init(s, pr->tr.ctx.trace_id, pr->tr.ctx.span_id, id, name, kind, t0, t1);
}

/* A phase marked by the proxy, as a child span (none when unmarked). */
static void phase(struct proxy_req *pr, struct kvg_trace_span *s, const char *name, uint64_t t0,
                  uint64_t t1)
{
    if (!t0 || !t1) return;
    child(pr, s, name, KVG_TRACE_INTERNAL, NULL, t0, t1);
    kvg_trace_submit(pr->pl->px->tracer, s);
}

static void str(struct kvg_trace_span *s, const char *key, const char *v)
{
    if (v && v[0]) kvg_trace_attr_str(s, key, v, strlen(v));
}

/* server.address and server.port of a worker URL
 * (http://host:port[/..], [v6]:port, and URL@rank's "@rank" after it). */
static void server_of(struct kvg_trace_span *s, const char *url)
{
    const char *h = strstr(url, "://");
    h = h ? h + 3 : url;
    size_t n = strcspn(h, "/@"), hl;
    const char *port = NULL;
    if (h[0] == '[') {
        const char *close = memchr(h, ']', n);
        if (!close) return;
        kvg_trace_attr_str(s, "server.address", h + 1, (size_t)(close - h - 1));
        if (close + 1 < h + n && close[1] == ':') port = close + 2;
    } else {
        const char *colon = memchr(h, ':', n);
        hl = colon ? (size_t)(colon - h) : n;
        kvg_trace_attr_str(s, "server.address", h, hl);
        if (colon) port = colon + 1;
    }
    if (port) {
        int v = 0;
        for (const char *p = port; p < h + n && *p >= '0' && *p <= '9' && v < 65536; p++)
            v = v * 10 + (*p - '0');
        kvg_trace_attr_int(s, "server.port", v);
    }
}

/* Leg i's span ends now (status: its answer's, 0 none). */
static void leg_end(struct proxy_req *pr, int i, const char *url, int status)
{
    struct proxy_leg *l = &pr->tr.legs[i];
    if (!l->name) return;
    struct kvg_trace_span s;
    child(pr, &s, NULL, KVG_TRACE_CLIENT, l->id, l->t0, kvg_now_ns());
    /* GenAI's client span name: "{operation} {model}". */
    snprintf(s.name_buf, sizeof s.name_buf, "%s %.*s", operation(pr), (int)pr->ri.model_len,
             pr->ri.model);
    str(&s, "gen_ai.operation.name", operation(pr));
    if (pr->ri.model_len)
        kvg_trace_attr_str(&s, "gen_ai.request.model", pr->ri.model, pr->ri.model_len);
    str(&s, "kvgate.leg", l->name);
    server_of(&s, url);
    str(&s, "kvgate.worker", url);
    kvg_trace_attr_int(&s, "kvgate.attempt", pr->attempts);
    if (status) kvg_trace_attr_int(&s, "http.response.status_code", status);
    if (!status || status >= 500) s.status = KVG_TRACE_ERROR;
    kvg_trace_submit(pr->pl->px->tracer, &s);
    l->name = NULL;
}

/* A new leg: its id and the traceparent kvg__proxy_forward_headers sends
 * on it. Unsampled, the traceparent stays the server span's (flag 0):
 * nothing of the leg is recorded, and the engine records nothing either. */
static void leg_start(struct proxy_req *pr, int i, const char *name)
{
    struct proxy_trace *tr = &pr->tr;
    if (!tr->on) return;
    struct proxy_leg *l = &tr->legs[i];
    kvg_trace_new_id(pr->pl->rng, l->id, 8);
    l->t0 = kvg_now_ns();
    l->name = name;
    kvg_trace_format_parent(tr->ctx.trace_id, l->id, 1, tr->tp);
}

void kvg__proxy_trace_leg(struct proxy_req *pr)
{
    struct proxy_trace *tr = &pr->tr;
    if (!tr->on) return;
    /* The decision that sent it: the route span. */
    struct kvg_trace_span s;
    uint64_t now = kvg_now_ns();
    child(pr, &s, "route", KVG_TRACE_INTERNAL, NULL, tr->route0 ? tr->route0 : now, now);
    struct kvg_worker *w = pr->pick.w;
    str(&s, "kvgate.worker", w->url);
    if (pr->pick.policy) str(&s, "kvgate.policy", pr->pick.policy->ops->name);
    kvg_trace_attr_int(&s, "kvgate.route.matched_blocks", pr->pick.matched_blocks);
    kvg_trace_attr_int(&s, "kvgate.route.prompt_blocks", (int64_t)pr->ri.nhashes);
    kvg_trace_attr_int(&s, "kvgate.route.work_tokens", (int64_t)pr->pick.work_tokens);
    int mode = kvg_route_mode_get(w, NULL, 0);
    if (mode >= 0) str(&s, "kvgate.routing.mode", kvg_route_mode_name(mode));
    struct kvg_pd *pd = kvg__proxy_pd(pr);
    if (pd) str(&s, "kvgate.pd.decision", kvg_pd_decision_name(pr->pdr.decision));
    str(&s, "kvgate.served_as", pr->served_as);
    kvg_trace_attr_int(&s, "kvgate.attempt", pr->attempts);
    kvg_trace_submit(pr->pl->px->tracer, &s);
    int split = pd && pr->pdr.decision == KVG_PD_PREFILL_DECODE && !pr->served_as[0];
    leg_end(pr, 0, pr->worker_url, 0); /* none open: a retry ended it */
    leg_start(pr, 0, split ? "decode" : "upstream");
}

void kvg__proxy_trace_attempt(struct proxy_req *pr)
{
    if (!pr->tr.on) return;
    leg_end(pr, 0, pr->worker_url, pr->up_status);
    pr->tr.route0 = kvg_now_ns();
}

void kvg__proxy_trace_prefill(struct proxy_req *pr)
{
    leg_start(pr, 1, "prefill");
}

void kvg__proxy_trace_prefill_end(struct proxy_req *pr, int status)
{
    if (status < 0)
        pr->tr.legs[1].name = NULL; /* never sent: no span */
    else if (pr->tr.on)
        leg_end(pr, 1, pr->pdr.prefill_url, status);
}

void kvg__proxy_trace_end(struct proxy_req *pr, int status)
{
    struct proxy_trace *tr = &pr->tr;
    if (!tr->on) return;
    struct kvg_trace *t = pr->pl->px->tracer;
    leg_end(pr, 1, pr->pdr.prefill_url, 0); /* the client left during the prefill */
    leg_end(pr, 0, pr->worker_url, pr->up_status ? pr->up_status : status);
    uint64_t now = kvg_now_ns();
    struct kvg_trace_span s;
    phase(pr, &s, "parse", tr->parse0, tr->parse1);
    phase(pr, &s, "tokenize", tr->tok0, tr->tok1);
    phase(pr, &s, "auth", tr->auth0, tr->auth1);
    if (tr->admit0) phase(pr, &s, "quota_admission", tr->admit0, tr->admit1 ? tr->admit1 : now);

    kvg_trace_span_init(&s, tr->ctx.trace_id, tr->ctx.parent_id, tr->ctx.span_id, NULL,
                        KVG_TRACE_SERVER, pr->t0_ns, now);
    snprintf(s.name_buf, sizeof s.name_buf, "%s %s", pr->method, pr->path); /* HTTP's */
    str(&s, "http.request.method", pr->method);
    str(&s, "http.route", pr->path);
    kvg_trace_attr_int(&s, "http.response.status_code", status);
    str(&s, "gen_ai.operation.name", operation(pr));
    if (pr->asked_len)
        kvg_trace_attr_str(&s, "gen_ai.request.model", pr->asked, pr->asked_len);
    else if (pr->ri.model_len)
        kvg_trace_attr_str(&s, "gen_ai.request.model", pr->ri.model, pr->ri.model_len);
    if (pr->ri.model_len && pr->up_status)
        kvg_trace_attr_str(&s, "gen_ai.response.model", pr->ri.model, pr->ri.model_len);
    if (pr->ri.max_tokens > 0)
        kvg_trace_attr_int(&s, "gen_ai.request.max_tokens", pr->ri.max_tokens);
    struct kvg_usage u;
    kvg_gate_usage_final(&pr->gate, &u);
    if (u.found) {
        kvg_trace_attr_int(&s, "gen_ai.usage.input_tokens", u.prompt_tokens);
        kvg_trace_attr_int(&s, "gen_ai.usage.output_tokens", u.completion_tokens);
        if (u.cached_found) kvg_trace_attr_int(&s, "kvgate.usage.cached_tokens", u.cached_tokens);
    }
    kvg_trace_attr_bool(&s, "kvgate.stream", pr->ri.stream);
    str(&s, "kvgate.request_id", pr->request_id);
    str(&s, "kvgate.worker", pr->worker_url);
    kvg_trace_attr_int(&s, "kvgate.attempts", pr->attempts);
    if (pr->gate.key) {
        str(&s, "kvgate.key", pr->gate.key->name);
        str(&s, "kvgate.tenant", pr->gate.key->tenant);
    }
    /* A stream's first token-carrying event (proxy/obs.c's token clock, as
     * the TTFT histogram: a Responses stream's response.created is none);
     * a whole answer's first byte, which comes with its last token. */
    uint64_t first = pr->tok_first_ns ? pr->tok_first_ns : pr->first_ns;
    if (first) {
        s.event = "first_token";
        s.event_ns = kvg_trace_unix_ns(first);
        kvg_trace_attr_double(&s, "kvgate.ttft_s", (double)(first - pr->t0_ns) / 1e9);
    }
    if (status >= 500) {
        char e[16];
        snprintf(e, sizeof e, "%d", status);
        str(&s, "error.type", e);
        s.status = KVG_TRACE_ERROR;
    }
    kvg_trace_submit(t, &s);
    tr->on = 0;
}
