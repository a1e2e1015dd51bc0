/* kvgate sim's OpenAI endpoints: parse and validate a request as vLLM does,
 * turn it into prompt token ids (chat template + tokenizer), hand it to the
 * engine model, and write each step's tokens to the client as they come:
 * SSE chunks for streams, one JSON document otherwise. Fault injection
 * (failures, hangs, cut streams, cold starts) happens here too. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "base/util.h"
#include "simsrv/simsrv.h"

#define LIVE_BUCKETS 4096

/* ---------------------------------------------------------- live requests */

static struct sim_req **bucket(struct kvg_simsrv_server *s, uint64_t id)
{
    return &s->live[id % LIVE_BUCKETS];
}

static int live_init(struct kvg_simsrv_server *s)
{
    if (s->live) return 0;
    s->live = calloc(LIVE_BUCKETS, sizeof *s->live);
    return s->live ? 0 : -ENOMEM;
}

static struct sim_req *live_get(struct kvg_simsrv_server *s, uint64_t id)
{
    struct sim_req *r = *bucket(s, id);
    while (r && r->id != id) r = r->next;
    return r;
}

static void live_del(struct kvg_simsrv_server *s, struct sim_req *r)
{
    struct sim_req **p = bucket(s, r->id);
    while (*p && *p != r) p = &(*p)->next;
    if (*p) *p = r->next;
    s->nlive--;
}

static void sr_free(struct sim_req *r)
{
    if (r->out && r->out->release) r->out->release(r);
    kvg_buf_free(&r->text);
    free(r->pending_ids);
    free(r);
}

/* ------------------------------------------------------------------ errors */

/* vLLM's error body: {"error": {"message", "type", "param", "code": int}}. */
void kvg_simsrv_error(struct kvg_http_req *req, int status, const char *type, const char *msg)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    kvg_buf_append_str(&b, "{\"error\":{\"message\":");
    kvg_buf_append_json_str(&b, msg, strlen(msg));
    kvg_buf_append_str(&b, ",\"type\":");
    kvg_buf_append_json_str(&b, type, strlen(type));
    kvg_buf_printf(&b, ",\"param\":null,\"code\":%d}}", status);
    kvg_http_res_send(req, status, "application/json", NULL, 0, b.data, b.len);
    kvg_buf_free(&b);
}

/* --------------------------------------------------------------- responses */

static void usage_json(struct kvg_buf *b, const struct sim_req *r, int details)
{
    kvg_buf_printf(b, "{\"prompt_tokens\":%u,\"total_tokens\":%u,\"completion_tokens\":%u",
                   r->prompt_len, r->prompt_len + r->ntok, r->ntok);
    if (details) kvg_buf_printf(b, ",\"prompt_tokens_details\":{\"cached_tokens\":%u}", r->cached);
    kvg_buf_append_str(b, "}");
}

static const char *finish_name(enum kvg_sim_finish f)
{
    return f == KVG_SIM_FINISH_STOP ? "stop" : f == KVG_SIM_FINISH_ABORT ? "abort" : "length";
}

static void chunk_begin(struct kvg_buf *b, const struct sim_req *r)
{
    const struct kvg_simsrv_server *s = r->s;
    kvg_buf_printf(b, "data: {\"id\":\"%s\",\"object\":\"%s\",\"created\":%lld,\"model\":", r->rid,
                   r->chat ? "chat.completion.chunk" : "text_completion",
                   (long long)s->started_wall);
    kvg_buf_append_json_str(b, s->o.model, strlen(s->o.model));
    kvg_buf_append_str(b, ",\"choices\":[");
}

/* One SSE event for a token (text may be empty: the role chunk). */
static void write_chunk(struct sim_req *r, const char *text, size_t len, int role,
                        enum kvg_sim_finish fin)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    chunk_begin(&b, r);
    if (r->chat) {
        kvg_buf_append_str(&b, "{\"index\":0,\"delta\":{");
        if (role) kvg_buf_append_str(&b, "\"role\":\"assistant\",");
        kvg_buf_append_str(&b, "\"content\":");
        kvg_buf_append_json_str(&b, text, len);
        kvg_buf_append_str(&b, "},\"logprobs\":null,\"finish_reason\":");
    } else {
        kvg_buf_append_str(&b, "{\"index\":0,\"text\":");
        kvg_buf_append_json_str(&b, text, len);
        kvg_buf_append_str(&b, ",\"logprobs\":null,\"finish_reason\":");
    }
    if (fin)
        kvg_buf_printf(&b, "\"%s\"", finish_name(fin));
    else
        kvg_buf_append_str(&b, "null");
    kvg_buf_append_str(&b, "}]");
    /* llama.cpp's server puts usage on the final chunk whatever was asked. */
    if (fin && r->s->o.flavor == KVG_SIMSRV_FLAVOR_LLAMACPP) {
        kvg_buf_append_str(&b, ",\"usage\":");
        usage_json(&b, r, 0);
    }
    kvg_buf_append_str(&b, "}\n\n");
    kvg_http_res_write(r->req, b.data, b.len);
    kvg_buf_free(&b);
}

static void finish_stream(struct sim_req *r)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    if (r->include_usage && r->s->o.flavor != KVG_SIMSRV_FLAVOR_LLAMACPP) {
        chunk_begin(&b, r);
        kvg_buf_append_str(&b, "],\"usage\":");
        usage_json(&b, r, 1);
        kvg_buf_append_str(&b, "}\n\n");
    }
    kvg_buf_append_str(&b, "data: [DONE]\n\n");
    kvg_http_res_write(r->req, b.data, b.len);
    kvg_buf_free(&b);
    kvg_http_res_end(r->req);
}

static void finish_json(struct sim_req *r, enum kvg_sim_finish fin)
{
    const struct kvg_simsrv_server *s = r->s;
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    kvg_buf_printf(&b, "{\"id\":\"%s\",\"object\":\"%s\",\"created\":%lld,\"model\":", r->rid,
                   r->chat ? "chat.completion" : "text_completion", (long long)s->started_wall);
    kvg_buf_append_json_str(&b, s->o.model, strlen(s->o.model));
    if (r->chat) {
        kvg_buf_append_str(&b, ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
                               "\"content\":");
        kvg_buf_append_json_str(&b, r->text.data ? r->text.data : "", r->text.len);
        kvg_buf_append_str(&b, "},");
    } else {
        kvg_buf_append_str(&b, ",\"choices\":[{\"index\":0,\"text\":");
        kvg_buf_append_json_str(&b, r->text.data ? r->text.data : "", r->text.len);
        kvg_buf_append_str(&b, ",");
    }
    kvg_buf_printf(&b,
                   "\"logprobs\":null,\"finish_reason\":\"%s\",\"stop_reason\":null}],"
                   "\"usage\":",
                   finish_name(fin));
    usage_json(&b, r, s->o.flavor != KVG_SIMSRV_FLAVOR_LLAMACPP);
    if (r->pd.do_remote_decode || r->pd.bootstrap_prefill)
        kvg_simsrv_pd_prefill_done(r, fin == KVG_SIM_FINISH_LENGTH, &b);
    kvg_buf_append_str(&b, "}");
    kvg_http_res_send(r->req, 200, "application/json", NULL, 0, b.data, b.len);
    kvg_buf_free(&b);
}

/* ----------------------------------------------------------------- stepping */

static void step_now(struct kvg_simsrv_rank *rk);

static void deliver(struct kvg_simsrv_rank *rk, const struct kvg_sim_step *st, double now)
{
    struct kvg_simsrv_server *s = rk->s;
    for (size_t i = 0; i < st->n_updates; i++) {
        const struct kvg_sim_update *u = &st->updates[i];
        struct sim_req *r = live_get(s, u->id);
        if (!r) continue; /* aborted since the step began */
        if (u->flags & KVG_SIM_UP_SCHEDULED) r->cached = u->cached_tokens;
        if (u->flags & KVG_SIM_UP_TOKEN) {
            if (u->flags & KVG_SIM_UP_FIRST)
                kvg_simsrv_observe_ttft(rk, now - r->arrival);
            else
                kvg_simsrv_observe_itl(rk, now - r->last_token_t);
            r->last_token_t = now;
            r->ntok = u->num_output;
            char *t = NULL;
            size_t tl = 0;
            if (kvg_tok_decode(s->tok, &u->token, 1, 1, &t, &tl)) tl = 0;
            enum kvg_sim_finish fin = (u->flags & KVG_SIM_UP_FINISHED) ? u->finish : 0;
            if (r->out) {
                r->out->token(r, u->token, t ? t : "", tl, (u->flags & KVG_SIM_UP_FIRST) != 0, fin);
            } else if (r->stream) {
                if (u->flags & KVG_SIM_UP_FIRST && r->chat) write_chunk(r, "", 0, 1, 0);
                write_chunk(r, t ? t : "", tl, 0, fin);
            } else if (t) {
                kvg_buf_append(&r->text, t, tl);
            }
            free(t);
            if (r->stream && r->req && s->o.disconnect_after >= 0 && !fin &&
                (int64_t)u->num_output >= s->o.disconnect_after) {
                /* Fault: the engine "dies" mid-stream for this client. */
                kvg_sim_abort(rk->engine, r->id);
                live_del(s, r);
                kvg_http_res_abort(r->req);
                sr_free(r);
                continue;
            }
        }
        if (u->flags & KVG_SIM_UP_FINISHED) {
            kvg_simsrv_observe_e2e(rk, now - r->arrival, u->finish == KVG_SIM_FINISH_LENGTH);
            live_del(s, r);
            /* A prefill leg whose answer writes no kv_transfer_params (a
             * stream, or another endpoint's writer: SGLang's /generate)
             * keeps its blocks here. */
            if ((r->stream || r->out) && (r->pd.do_remote_decode || r->pd.bootstrap_prefill))
                kvg_simsrv_pd_prefill_done(r, u->finish == KVG_SIM_FINISH_LENGTH, NULL);
            if (r->out)
                r->out->done(r, u->finish);
            else if (r->stream)
                finish_stream(r);
            else
                finish_json(r, u->finish);
            sr_free(r);
        }
    }
}

static void publish_events(struct kvg_simsrv_rank *rk);

static void on_step_done(uv_timer_t *t)
{
    struct kvg_simsrv_rank *rk = t->data;
    rk->stepping = 0;
    deliver(rk, &rk->pending, kvg_simsrv_now(rk->s));
    publish_events(rk);
    if (!kvg_sim_idle(rk->engine)) step_now(rk);
}

/* Starts one engine iteration; its outcome becomes visible after its
 * duration (scaled by --speed) has passed. */
static void step_now(struct kvg_simsrv_rank *rk)
{
    /* A sleeping engine's scheduler is paused: its requests wait. */
    if (rk->stepping || kvg_simsrv_paused(rk->s)) return;
    if (kvg_sim_step(rk->engine, kvg_simsrv_now(rk->s), &rk->pending)) return;
    rk->stepping = 1;
    double ms = rk->pending.duration / rk->s->o.speed * 1000.0;
    /* Steps far below the timer's 1 ms resolution (the instant profile)
     * complete on the next loop iteration instead of a whole millisecond. */
    uv_timer_start(&rk->step_timer, on_step_done, ms < 0.01 ? 0 : (uint64_t)ceil(ms), 0);
}

static void publish_events(struct kvg_simsrv_rank *rk)
{
    if (rk->pub) kvg_simsrv_publish(rk);
    kvg_sim_events_clear(rk->engine);
}

void kvg__simsrv_publish_events(struct kvg_simsrv_rank *rk)
{
    publish_events(rk);
}

void kvg__simsrv_step(struct kvg_simsrv_rank *rk)
{
    if (!kvg_sim_idle(rk->engine)) step_now(rk);
}

void kvg__simsrv_abort_all(struct kvg_simsrv_server *s, const char *msg)
{
    for (size_t i = 0; s->live && i < LIVE_BUCKETS; i++)
        while (s->live[i]) {
            struct sim_req *r = s->live[i];
            kvg_sim_abort(r->rk->engine, r->id);
            live_del(s, r);
            if (!r->req) { /* nobody waits (a background response) */
                kvg_simsrv_fail(r, msg);
                continue;
            }
            r->req->on_abort = NULL;
            if (r->out) {
                kvg_simsrv_fail(r, msg);
                continue;
            }
            /* vLLM ends an aborted request's output with finish_reason
             * "abort" (its pause mode "abort"). */
            if (r->stream) {
                write_chunk(r, "", 0, 0, KVG_SIM_FINISH_ABORT);
                finish_stream(r);
            } else {
                finish_json(r, KVG_SIM_FINISH_ABORT);
            }
            sr_free(r);
        }
}

/* ---------------------------------------------------------------- requests */

static void on_abort(struct kvg_http_req *req, void *ud)
{
    struct sim_req *r = ud;
    if (r->pd.bootstrap_prefill) kvg_simsrv_pd_room_aborted(r);
    if (r->pull) {
        kvg_simsrv_pd_pull_abort(r);
    } else if (!r->hung && !r->pending_ids) {
        kvg_sim_abort(r->rk->engine, r->id);
        live_del(r->s, r);
    }
    sr_free(r);
}

struct sim_req *kvg__simsrv_req_new(struct kvg_simsrv_server *s, const struct kvg_simsrv_gen *g)
{
    struct sim_req *r = live_init(s) ? NULL : calloc(1, sizeof *r);
    if (!r) {
        free(g->ids);
        return NULL;
    }
    r->s = s;
    r->rk = g->rk;
    r->req = g->req;
    r->chat = g->chat;
    r->lora = g->lora;
    r->stream = g->stream && g->req;
    r->include_usage = g->include_usage;
    r->out = g->out;
    r->ext = g->ext;
    r->id = ++s->next_id;
    snprintf(r->rid, sizeof r->rid, "%s", g->rid ? g->rid : "");
    r->prompt_len = (uint32_t)g->nids;
    r->arrival = kvg_simsrv_now(s);
    kvg_buf_init(&r->text, 0);
    if (g->salt) snprintf(r->pending_salt, sizeof r->pending_salt, "%s", g->salt);
    r->pending = (struct kvg_sim_request){.id = r->id,
                                          .prompt_len = (uint32_t)g->nids,
                                          .max_tokens = g->max_tokens,
                                          .ignore_eos = g->ignore_eos,
                                          .has_seed = g->seed >= 0,
                                          .seed = (uint64_t)(g->seed >= 0 ? g->seed : 0),
                                          .arrival = r->arrival,
                                          .lora_name = g->lora >= 0 ? s->adapters[g->lora] : NULL,
                                          .lora_id = g->lora + 1};
    r->pending_ids = g->ids;
    if (g->req && !g->member) {
        g->req->ud = r;
        g->req->on_abort = on_abort;
    } else {
        r->hung = -1; /* no hang fault: a member's group decides, a background runs */
    }
    return r;
}

void kvg__simsrv_req_start(struct sim_req *r)
{
    struct kvg_simsrv_server *s = r->s;
    if (!r->hung && s->o.hang_rate > 0 && kvg_rng_double(&s->rng) < s->o.hang_rate) {
        r->hung = 1; /* fault: never answer; the socket stays open */
        free(r->pending_ids);
        r->pending_ids = NULL;
        memset(&r->pd, 0, sizeof r->pd);
        return;
    }
    r->hung = 0;
    /* The embeddings from an encoder first: a failure there is the
     * request's input processing failing, an error answer (JSON) before
     * any stream starts, which the router sees as the leg's failure. */
    if (kvg_simsrv_ec_wanted(r)) {
        kvg_simsrv_ec_fetch(r);
        return;
    }
    kvg_simsrv_run(r);
}

void kvg__simsrv_req_drop(struct sim_req *r)
{
    if (!r->pending_ids) { /* submitted: the engine has it */
        kvg_sim_abort(r->rk->engine, r->id);
        live_del(r->s, r);
    }
    sr_free(r);
}

void kvg_simsrv_run(struct sim_req *r)
{
    if (r->stream) {
        /* vLLM's streaming response starts before the engine runs it (a
         * decode's KV pull included): a later failure is an SSE event. */
        kvg__simsrv_sse_start(r->req);
        r->started = 1;
        if (r->out && r->out->head) r->out->head(r);
    }
    if (r->pd.do_remote_prefill || r->pd.bootstrap_decode) {
        kvg_simsrv_pd_pull(r);
        return;
    }
    kvg_simsrv_submit(r, 0);
}

void kvg_simsrv_submit(struct sim_req *r, uint32_t remote_tokens)
{
    struct kvg_simsrv_server *s = r->s;
    struct kvg_sim_request sreq = r->pending;
    sreq.prompt = r->pending_ids;
    sreq.cache_salt = r->pending_salt[0] ? r->pending_salt : NULL;
    sreq.remote_tokens = remote_tokens;
    int rc = kvg_sim_submit(r->rk->engine, &sreq);
    free(r->pending_ids);
    r->pending_ids = NULL;
    if (rc) {
        kvg_simsrv_fail(r, rc == KVG_ETOOBIG ? "the request does not fit the model's context"
                                             : kvg_strerror(rc));
        return;
    }
    struct sim_req **b = bucket(s, r->id);
    r->next = *b;
    *b = r;
    s->nlive++;
    step_now(r->rk);
}

void kvg__simsrv_fail_answer(struct sim_req *r, const char *msg)
{
    struct kvg_http_req *req = r->req;
    if (!req) return; /* no client waits */
    req->on_abort = NULL;
    if (!r->stream || !r->started) {
        kvg_simsrv_error(req, 500, "InternalServerError", msg);
        return;
    }
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    kvg_buf_append_str(&b, "data: {\"error\":{\"message\":");
    kvg_buf_append_json_str(&b, msg, strlen(msg));
    kvg_buf_append_str(&b, ",\"type\":\"InternalServerError\",\"param\":null,"
                           "\"code\":500}}\n\ndata: [DONE]\n\n");
    kvg_http_res_write(req, b.data, b.len);
    kvg_buf_free(&b);
    kvg_http_res_end(req);
}

void kvg_simsrv_fail(struct sim_req *r, const char *msg)
{
    if (r->out && r->out->fail)
        r->out->fail(r, msg);
    else
        kvg__simsrv_fail_answer(r, msg);
    sr_free(r);
}

void kvg_simsrv_lora_active(struct kvg_simsrv_server *s, char *running, size_t rcap, char *waiting,
                            size_t wcap)
{
    running[0] = waiting[0] = 0;
    if (!s->live) return;
    for (size_t i = 0; i < LIVE_BUCKETS; i++)
        for (struct sim_req *r = s->live[i]; r; r = r->next) {
            struct kvg_sim_request_info info;
            if (r->lora < 0 || kvg_sim_request_get(r->rk->engine, r->id, &info)) continue;
            if (info.state == KVG_SIM_RUNNING)
                kvg_list_add_once(running, rcap, s->adapters[r->lora]);
            else
                kvg_list_add_once(waiting, wcap, s->adapters[r->lora]);
        }
}

void kvg__simsrv_reset_prefix_cache(struct kvg_simsrv_server *s, struct kvg_http_req *req)
{
    int rc = 0;
    for (int i = 0; i < s->ndp; i++) {
        int r1 = kvg_sim_reset_prefix_cache(s->ranks[i].engine);
        if (r1 && !rc) rc = r1;
        publish_events(&s->ranks[i]);
    }
    if (rc)
        kvg_simsrv_error(req, 409, "ConflictError", "requests are running");
    else
        kvg_http_res_send(req, 200, NULL, NULL, 0, NULL, 0);
}
