/* A request's answers of kvgate's own (an error in its endpoint's shape,
 * a gateway refusal) and its passage through the gateway: quota and
 * admission, a shed request's model fallback, then the first attempt
 * (proxy.c). */
#include <string.h>

#include "api/api.h"
#include "proxy/proxy_int.h"

/* Answers with an OpenAI-style error and ends the request. */
void kvg__proxy_error(struct proxy_req *pr, int status, const char *type, const char *code,
                      const char *msg, const char *param, const struct kvg_http_header *extra,
                      size_t nextra)
{
    struct kvg_http_header h[16];
    size_t n = 0;
    int has_retry = 0;
    for (size_t i = 0; i < nextra && n < 12; i++) {
        h[n++] = extra[i];
        has_retry |= kvg_str_eq_nocase(extra[i].name, "retry-after");
    }
    h[n++] =
        (struct kvg_http_header){KVG_STR("x-request-id"), {pr->request_id, strlen(pr->request_id)}};
    if (status == 503 && !has_retry)
        h[n++] = (struct kvg_http_header){KVG_STR("retry-after"), KVG_STR("1")};
    if (pr->worker_url[0])
        h[n++] = (struct kvg_http_header){KVG_STR("x-kvgate-worker"),
                                          {pr->worker_url, strlen(pr->worker_url)}};
    struct kvg_http_req *req = pr->req;
    pr->req = NULL;
    kvg__proxy_obs_error(pr, code, type);
    enum kvg_api_shape shape = pr->ep ? pr->ep->shape : KVG_API_SHAPE_OPENAI;
    if (shape == KVG_API_SHAPE_OPENAI) {
        kvg_http_res_error_param(req, status, type, code, msg, param, h, n);
    } else {
        /* Anthropic's clients read their own error types and 529. */
        status = kvg_api_error_status(shape, status);
        struct kvg_buf b;
        kvg_buf_init(&b, 0);
        if (kvg_api_error_body(shape, status, NULL, code, msg, param, &b)) {
            kvg_http_res_close_after(req);
            kvg_http_res_send(req, 500, "text/plain", NULL, 0, "out of memory", 13);
        } else {
            kvg_http_res_send(req, status, "application/json", h, n, b.data, b.len);
        }
        kvg_buf_free(&b);
    }
    kvg__proxy_finish(pr, status);
}

void kvg__proxy_client_error(struct proxy_req *pr, int status, const char *code, const char *msg)
{
    kvg__proxy_error(pr, status, NULL, code, msg, NULL, NULL, 0);
}

void kvg__proxy_answer_deny(struct proxy_req *pr, const struct kvg_gate_deny *d)
{
    kvg__proxy_error(pr, d->r.status, d->r.type, d->r.code, d->r.message, d->r.param, d->r.headers,
                     d->r.nheaders);
}

static void fall_back_later(uv_timer_t *t)
{
    struct proxy_req *pr = t->data;
    if (!kvg__proxy_fall_back(pr, "gateway_shed"))
        kvg__proxy_client_error(pr, 503, "overloaded", "the pool is saturated: retry later");
}

static void on_admit(void *ud, const struct kvg_gate_deny *d)
{
    struct proxy_req *pr = ud;
    if (!pr->req) return; /* cannot happen: an abort cancels what the gate holds */
    TR_MARK(pr, admit1);
    if (d && d->shed && kvg__proxy_model_can_fall(pr)) {
        /* Shed: its model's fallback instead, from the next turn of the
         * loop (this may run inside kvg_gate_admit, and the fallback ends
         * this admission and starts its own). */
        uv_timer_start(&pr->retry_timer, fall_back_later, 0, 0);
        return;
    }
    if (d)
        kvg__proxy_answer_deny(pr, d);
    else
        kvg__proxy_attempt(pr);
}

/* Endpoints whose answer is computed from the input alone: a quota
 * reserves no output tokens for them (the context's remainder would be
 * reserved otherwise, and refuse a small embedding under a tight limit). */
static int generates_nothing(int route)
{
    switch (route) {
    case KVG_API_EMBEDDINGS:
    case KVG_API_POOLING:
    case KVG_API_CLASSIFY:
    case KVG_API_SCORE:
    case KVG_API_RERANK:
    case KVG_API_TOKENIZE:
    case KVG_API_DETOKENIZE:
        return 1;
    default:
        return 0;
    }
}

/* The member of an endpoint's body that limits its output, where the gate
 * may set one (--quota-output-cap); NULL where it may not (Messages
 * requires max_tokens; generate's is nested in sampling_params). */
static const char *budget_member(int route)
{
    return route == KVG_API_CHAT || route == KVG_API_COMPLETIONS ? "max_tokens"
           : route == KVG_API_RESPONSES                          ? "max_output_tokens"
                                                                 : NULL;
}

/* The gateway's quota and admission, then the first attempt. */
void kvg__proxy_admit(struct proxy_req *pr)
{
    const struct kvg_buf *body = kvg__proxy_req_body(pr);
    struct kvg_gate_request rq = {.body = body->data,
                                  .body_len = body->len,
                                  .json = pr->ri.json,
                                  .stream = pr->ri.stream,
                                  .max_tokens = pr->ri.max_tokens,
                                  .prompt_tokens = pr->ri.ids ? (int64_t)pr->ri.nids : -1,
                                  .usage_unasked =
                                      pr->route != KVG_API_CHAT && pr->route != KVG_API_COMPLETIONS,
                                  .no_output = generates_nothing(pr->route),
                                  .no_tokens = pr->route == KVG_API_RESPONSE_ID,
                                  .budget_member = budget_member(pr->route)};
    if (pr->pm && pr->pm->count) { /* its served model's own limits */
        const struct kvg_catalog_model *m = &pr->cat->models[pr->cmodel];
        rq.limit = (struct kvg_gate_mlimit){pr->pm->count, m->max_inflight, m->max_queue, m->name};
    }
    TR_MARK(pr, admit0);
    kvg_gate_admit(&pr->gate, &rq, on_admit, pr);
}
