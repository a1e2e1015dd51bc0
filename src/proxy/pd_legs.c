/* A request's PD legs in the proxy: the decision and the prefill leg
 * through pd/pd.h, and what the request does when the prefill ends: on to
 * the decode leg (vLLM's two hops), or, when it failed, the decode ended
 * (SGLang's runs concurrently) and the client answered; and which
 * endpoints the PD mode splits at all. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "base/util.h"
#include "proxy/proxy_int.h"

static void on_prefilled(void *ud, const struct kvg_pd_result *res)
{
    struct proxy_req *pr = ud;
    if (!pr->req) return; /* cannot happen: a client gone cancels the leg */
    kvg__proxy_trace_prefill_end(pr, res->ok ? 200 : res->status);
    if (res->ok) {
        pr->prefill_end_ns = kvg_now_ns();
        /* Input accounting from the leg that computed it. */
        kvg_gate_usage_prefill(&pr->gate, pr->pdr.prompt_tokens, pr->pdr.prefill_cached);
        if (!pr->pdr.concurrent)
            kvg__proxy_attempt(pr); /* the decode leg (SGLang's runs already) */
        return;
    }
    if (pr->pdr.concurrent) {
        /* SGLang: the decode would wait for a bootstrap that never comes. */
        uv_timer_stop(&pr->retry_timer);
        if (pr->call) {
            kvg_http_call_cancel(pr->call);
            pr->call = NULL;
        }
        kvg__proxy_release_worker(pr, KVG_OUT_CLIENT_GONE);
        if (pr->relayed) {
            kvg__proxy_sse_error_end(pr, res->message);
            kvg__proxy_finish(pr, 502);
            return;
        }
    }
    snprintf(pr->worker_url, sizeof pr->worker_url, "%s", pr->pdr.prefill_url);
    if (res->body && res->body_len) { /* the engine's 4xx says what is wrong */
        struct kvg_http_header h[2] = {
            {KVG_STR("x-kvgate-worker"), {pr->worker_url, strlen(pr->worker_url)}},
            {KVG_STR("x-request-id"), {pr->request_id, strlen(pr->request_id)}}};
        struct kvg_http_req *req = pr->req;
        pr->req = NULL;
        kvg__proxy_obs_engine_error(pr, res->status, res->body, res->body_len);
        kvg_http_res_send(req, res->status, "application/json", h, 2, res->body, res->body_len);
        kvg__proxy_finish(pr, res->status);
        return;
    }
    kvg__proxy_client_error(pr, res->status, res->code, res->message);
}

int kvg__proxy_pd_start(struct proxy_req *pr, struct kvg_route_ctx *ctx)
{
    struct kvg_proxy *px = pr->pl->px;
    struct kvg_http_header fwd[MAX_FWD_HEADERS + 1];
    const struct kvg_buf *body = kvg__proxy_forward_body(pr);
    kvg__proxy_trace_prefill(pr); /* its traceparent, in the headers below */
    struct kvg_pd_input in = {
        .body = body->data,
        .body_len = body->len,
        /* Untokenized: ~4 bytes a token, an overestimate that errs on prefilling. */
        .prompt_tokens = pr->ri.ids ? pr->ri.nids : kvg__proxy_req_body(pr)->len / 4,
        .path = pr->path,
        .headers = fwd,
        .nheaders = kvg__proxy_forward_headers(pr, fwd, MAX_FWD_HEADERS + 1),
        .connect_timeout_ms = px->cfg->connect_timeout_ms};
    char label[KVG_CATALOG_NAME_MAX];
    in.model = kvg__proxy_model_label(pr, label, sizeof label);
    int rc = kvg_pd_begin(kvg__proxy_pd(pr), &pr->pdr, pr->pl->client, ctx, &in, on_prefilled, pr);
    if (rc || pr->pdr.state == KVG_PD_DECODE) kvg__proxy_trace_prefill_end(pr, -1); /* none sent */
    /* Its legs for the autoscaler (kvg__proxy_observe_end): served whole by a
     * decode worker, or refused for want of decode room, it had no prefill
     * leg: what it misses is the decode pool's. */
    pr->pd_split = !rc || rc == -EBUSY;
    if (rc == -EBUSY || (!rc && pr->pdr.state == KVG_PD_DECODE)) pr->prefill_end_ns = pr->t0_ns;
    /* No prefill worker: its model's fallback, when it has one (nothing was sent). */
    if (rc == KVG_ENOWORKER && kvg__proxy_fall_back(pr, "no_healthy_worker")) return 1;
    if (rc == KVG_ENOWORKER) {
        kvg_metrics_inc(px->m->no_worker);
        kvg__proxy_client_error(pr, 503, "no_prefill_worker",
                                "no healthy prefill worker is available");
        return 1;
    }
    if (rc == -EBUSY) { /* early rejection: no prefill is wasted on it */
        /* By priority, as GIE sheds (pd/pd.h): a sheddable request is dropped
         * with 429, the others get 503; both with Retry-After. */
        static const struct kvg_http_header ra = {KVG_STR("retry-after"), KVG_STR("1")};
        int shed = kvg_adm_class(pr->gate.prio) == KVG_ADM_SHEDDABLE;
        kvg__proxy_error(pr, shed ? 429 : 503, NULL, "decode_capacity",
                         "no decode worker is predicted to have room for this request: retry later",
                         NULL, &ra, 1);
        return 1;
    }
    if (rc) {
        kvg__proxy_client_error(pr, 500, "pd_error", kvg_strerror(rc));
        return 1;
    }
    return pr->pdr.state != KVG_PD_DECODE && !pr->pdr.concurrent;
}

/* Whether the serving mode splits this request into legs: chat and
 * completions, whose transfer fields both engines' code reads. */
const char *kvg_proxy_pd_unsplit_reason(const struct kvg_pd *pd, enum kvg_api_kind k)
{
    switch (k) {
    case KVG_API_CHAT:
    case KVG_API_COMPLETIONS:
        return NULL;
    case KVG_API_GENERATE:
        /* SGLang's bootstrap fields ride on /generate too (GenerateReqInput). */
        return pd->cfg.mode == KVG_PD_SGLANG ? NULL
                                             : "vLLM serves no /generate (SGLang's is split)";
    case KVG_API_RESPONSES:
        return "the engines' Responses requests carry no transfer fields (vLLM's ResponsesRequest "
               "has no kv_transfer_params; SGLang's frontend sends /generate to its own router)";
    case KVG_API_MESSAGES:
        return "the engines' Messages requests carry no transfer fields (vLLM converts them to a "
               "chat request without kv_transfer_params)";
    default:
        return "no KV to transfer";
    }
}

int kvg__proxy_pd_splits(const struct proxy_req *pr)
{
    const char *why = kvg_proxy_pd_unsplit_reason(kvg__proxy_pd(pr), (enum kvg_api_kind)pr->route);
    if (!why) return 1;
    static _Atomic int said[KVG_API_NKINDS];
    if (pr->ep->routing == KVG_API_ROUTE_PROMPT && !atomic_exchange(&said[pr->route], 1))
        KVG_INFO("PD: %s requests are served whole by a decode worker: %s "
                 "(kvgate_pd_aggregated_total counts them)",
                 pr->path, why);
    return 0;
}
