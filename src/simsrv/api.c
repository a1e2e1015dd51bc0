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

static void bad_request(struct kvg_http_req *req, const char *msg)
{
    kvg_simsrv_error(req, 400, "BadRequestError", msg);
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
    return f == KVG_SIM_FINISH_STOP ? "stop" : "length";
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
            if (r->stream) {
                if (u->flags & KVG_SIM_UP_FIRST && r->chat) write_chunk(r, "", 0, 1, 0);
                write_chunk(r, t ? t : "", tl, 0, fin);
            } else if (t) {
                kvg_buf_append(&r->text, t, tl);
            }
            free(t);
            if (r->stream && s->o.disconnect_after >= 0 && !fin &&
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
            if (r->stream && (r->pd.do_remote_decode || r->pd.bootstrap_prefill))
                kvg_simsrv_pd_prefill_done(r, u->finish == KVG_SIM_FINISH_LENGTH, NULL);
            if (r->stream)
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
    if (rk->stepping) return;
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

/* Prompt token ids for the request (chat: template, then tokenizer). On
 * error writes a message and returns non-zero. */
static int prompt_ids(struct kvg_simsrv_server *s, cJSON *j, int chat, const char *raw,
                      size_t rawlen, uint32_t **ids, size_t *n, char *msg, size_t msglen)
{
    if (chat) {
        struct kvg_buf text;
        kvg_buf_init(&text, 0);
        struct kvg_jinja_chat_info info = {0};
        int rc = kvg_jinja_chat_render(s->tmpl, raw, rawlen, NULL, &text, &info, msg, msglen);
        if (!rc)
            rc = kvg_tok_encode(s->tok, text.data ? text.data : "", text.len,
                                info.add_special_tokens, ids, n);
        kvg_buf_free(&text);
        if (rc && !msg[0])
            snprintf(msg, msglen, "cannot tokenize the messages: %s", kvg_strerror(rc));
        return rc;
    }
    cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "prompt");
    if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1) p = cJSON_GetArrayItem(p, 0);
    if (cJSON_IsArray(p)) { /* token ids */
        size_t k = (size_t)cJSON_GetArraySize(p), i = 0;
        *ids = malloc((k ? k : 1) * sizeof **ids);
        if (!*ids) return -ENOMEM;
        cJSON *it;
        cJSON_ArrayForEach(it, p)
        {
            if (!cJSON_IsNumber(it) || it->valuedouble < 0 ||
                it->valuedouble >= (double)kvg_tok_vocab_size(s->tok)) {
                free(*ids);
                snprintf(msg, msglen, "'prompt' must be a string or a list of token ids");
                return KVG_EPARSE;
            }
            (*ids)[i++] = (uint32_t)it->valuedouble;
        }
        *n = i;
        return 0;
    }
    if (!cJSON_IsString(p)) {
        snprintf(msg, msglen, "'prompt' must be a string or a list of token ids");
        return KVG_EPARSE;
    }
    int rc = kvg_tok_encode(s->tok, p->valuestring, strlen(p->valuestring), 1, ids, n);
    if (rc) snprintf(msg, msglen, "cannot tokenize the prompt: %s", kvg_strerror(rc));
    return rc;
}

static int get_uint(cJSON *j, const char *key, int64_t dflt, int64_t *out, char *msg, size_t msglen)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!v || cJSON_IsNull(v)) {
        *out = dflt;
        return 0;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 ||
        v->valuedouble > 1e9) {
        snprintf(msg, msglen, "'%s' must be a non-negative integer", key);
        return -1;
    }
    *out = (int64_t)v->valuedouble;
    return 0;
}

/* The rank a request runs on: the one the request names, else the least
 * loaded (waiting + running), as vLLM's DP client balances. vLLM's API
 * server takes it from the X-data-parallel-rank header (what an external DP
 * router sets); SGLang's from data_parallel_rank in the body (what its
 * router's --dp-aware injects), the header still honoured when the body
 * names none. NULL and a message for a rank this server does not have. */
static struct kvg_simsrv_rank *pick_rank(struct kvg_simsrv_server *s, struct kvg_http_req *req,
                                         const cJSON *j, char *msg, size_t msglen)
{
    const cJSON *br = cJSON_GetObjectItemCaseSensitive(j, "data_parallel_rank");
    if (s->o.flavor == KVG_SIMSRV_FLAVOR_SGLANG && br && !cJSON_IsNull(br)) {
        if (!cJSON_IsNumber(br) || br->valuedouble != floor(br->valuedouble) ||
            br->valuedouble < 0 || br->valuedouble >= s->ndp) {
            snprintf(msg, msglen, "data_parallel_rank must be a rank of this server (0..%d)",
                     s->ndp - 1);
            return NULL;
        }
        return &s->ranks[(int)br->valuedouble];
    }
    struct kvg_str h = kvg_http_req_header(req, "x-data-parallel-rank");
    if (h.len) {
        char v[24];
        uint64_t r;
        if (h.len >= sizeof v) h.len = sizeof v - 1;
        memcpy(v, h.p, h.len);
        v[h.len] = 0;
        if (kvg_parse_u64(v, &r) || r >= (uint64_t)s->ndp) {
            snprintf(msg, msglen, "X-data-parallel-rank %s is not a rank of this server (0..%d)", v,
                     s->ndp - 1);
            return NULL;
        }
        return &s->ranks[r];
    }
    struct kvg_simsrv_rank *best = &s->ranks[0];
    uint64_t best_load = UINT64_MAX;
    for (int i = 0; i < s->ndp; i++) {
        struct kvg_sim_metrics m;
        kvg_sim_get_metrics(s->ranks[i].engine, &m);
        uint64_t load = (uint64_t)m.num_waiting + m.num_running;
        if (load < best_load) {
            best_load = load;
            best = &s->ranks[i];
        }
    }
    return best;
}

static void completion(struct kvg_simsrv_server *s, struct kvg_http_req *req, int chat)
{
    char msg[512] = "";
    cJSON *j = cJSON_ParseWithLength(req->body.data ? req->body.data : "", req->body.len);
    struct kvg_simsrv_rank *rk = pick_rank(s, req, j, msg, sizeof msg);
    if (!rk) {
        cJSON_Delete(j);
        bad_request(req, msg);
        return;
    }
    if (s->o.fail_rate > 0 && kvg_rng_double(&s->rng) < s->o.fail_rate) {
        cJSON_Delete(j);
        kvg_simsrv_error(req, 500, "InternalServerError", "injected failure (--fail-rate)");
        return;
    }
    if (!j || !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        bad_request(req, "the request body is not valid JSON");
        return;
    }
    cJSON *model = cJSON_GetObjectItemCaseSensitive(j, "model");
    int lora = -1; /* vLLM runs a request on the adapter its `model` names */
    for (int i = 0; cJSON_IsString(model) && i < s->nadapters; i++)
        if (!strcmp(model->valuestring, s->adapters[i])) lora = i;
    if (model && !cJSON_IsNull(model) && lora < 0 &&
        (!cJSON_IsString(model) || strcmp(model->valuestring, s->o.model))) {
        snprintf(msg, sizeof msg, "The model `%s` does not exist.",
                 cJSON_IsString(model) ? model->valuestring : "?");
        cJSON_Delete(j);
        kvg_simsrv_error(req, 404, "NotFoundError", msg);
        return;
    }
    if (chat && !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "messages"))) {
        cJSON_Delete(j);
        bad_request(req, "'messages' must be a list");
        return;
    }
    if (s->o.flavor == KVG_SIMSRV_FLAVOR_LLAMACPP &&
        kvg__simsrv_llamacpp_refuses(j, chat, msg, sizeof msg)) {
        cJSON_Delete(j);
        kvg__simsrv_llamacpp_error(req, 500, msg);
        return;
    }
    if (s->o.role == KVG_SIMSRV_ROLE_ENCODE) { /* an encoder-only engine (simsrv/encode.c) */
        kvg_simsrv_ec_encode(s, req, j, chat);
        cJSON_Delete(j);
        return;
    }
    int64_t max_tokens, n_choices, seed;
    cJSON *mt = cJSON_GetObjectItemCaseSensitive(j, "max_completion_tokens");
    const char *mt_key = mt && !cJSON_IsNull(mt) ? "max_completion_tokens" : "max_tokens";
    if (get_uint(j, mt_key, -1, &max_tokens, msg, sizeof msg) ||
        get_uint(j, "n", 1, &n_choices, msg, sizeof msg) ||
        get_uint(j, "seed", -1, &seed, msg, sizeof msg)) {
        cJSON_Delete(j);
        bad_request(req, msg);
        return;
    }
    cJSON *salt = cJSON_GetObjectItemCaseSensitive(j, "cache_salt");
    if (salt && !cJSON_IsNull(salt) && (!cJSON_IsString(salt) || !salt->valuestring[0])) {
        cJSON_Delete(j);
        bad_request(req, "'cache_salt' must be a non-empty string");
        return;
    }
    char salt_s[256] = "";
    if (cJSON_IsString(salt)) snprintf(salt_s, sizeof salt_s, "%s", salt->valuestring);
    struct kvg_simsrv_pd_params pdp;
    struct kvg_simsrv_ec_req ecp;
    if (kvg_simsrv_pd_parse(s, j, &pdp, msg, sizeof msg) ||
        kvg_simsrv_ec_parse(s, j, &ecp, msg, sizeof msg)) {
        cJSON_Delete(j);
        bad_request(req, msg);
        return;
    }
    if (n_choices != 1) {
        cJSON_Delete(j);
        bad_request(req, "only n=1 is supported by the simulated engine");
        return;
    }
    uint32_t *ids = NULL;
    size_t nids = 0;
    char *tb = chat ? kvg_simsrv_ec_text_body(j) : NULL; /* images as placeholder texts */
    int rc = prompt_ids(s, j, chat, tb ? tb : req->body.data, tb ? strlen(tb) : req->body.len, &ids,
                        &nids, msg, sizeof msg);
    free(tb);
    if (rc) {
        cJSON_Delete(j);
        bad_request(req, msg[0] ? msg : "invalid request");
        return;
    }
    if (nids == 0) {
        free(ids);
        cJSON_Delete(j);
        bad_request(req, "the prompt is empty");
        return;
    }
    if (max_tokens < 0) max_tokens = (int64_t)s->max_model_len - (int64_t)nids;
    if (pdp.bootstrap_prefill) max_tokens = 1; /* SGLang's prefill computes the first token only */
    if (max_tokens == 0 || (int64_t)nids + max_tokens > (int64_t)s->max_model_len) {
        snprintf(msg, sizeof msg,
                 "This model's maximum context length is %u tokens. However, you requested "
                 "%lld tokens (%zu in the messages, %lld in the completion). Please reduce the "
                 "length of the messages or completion.",
                 s->max_model_len, (long long)nids + (long long)KVG_MAX(max_tokens, 0), nids,
                 (long long)KVG_MAX(max_tokens, 0));
        if (max_tokens == 0) snprintf(msg, sizeof msg, "max_tokens must be at least 1, got 0.");
        free(ids);
        cJSON_Delete(j);
        bad_request(req, msg);
        return;
    }
    struct sim_req *r = calloc(1, sizeof *r);
    if (!r) {
        free(ids);
        cJSON_Delete(j);
        kvg_simsrv_error(req, 500, "InternalServerError", "out of memory");
        return;
    }
    r->s = s;
    r->rk = rk;
    r->req = req;
    r->chat = chat;
    r->lora = lora;
    r->stream = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "stream"));
    cJSON *so = cJSON_GetObjectItemCaseSensitive(j, "stream_options");
    r->include_usage = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(so, "include_usage"));
    int ignore_eos = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "ignore_eos"));
    cJSON_Delete(j);
    r->id = ++s->next_id;
    snprintf(r->rid, sizeof r->rid, "%s-%016llx", chat ? "chatcmpl" : "cmpl",
             (unsigned long long)(kvg_rng_next(&s->rng)));
    r->prompt_len = (uint32_t)nids;
    r->arrival = kvg_simsrv_now(s);
    kvg_buf_init(&r->text, 0);
    req->ud = r;
    req->on_abort = on_abort;
    if (s->o.hang_rate > 0 && kvg_rng_double(&s->rng) < s->o.hang_rate) {
        r->hung = 1; /* fault: never answer; the socket stays open */
        free(ids);
        return;
    }
    r->pd = pdp;
    r->ec = ecp;
    snprintf(r->pending_salt, sizeof r->pending_salt, "%s", salt_s);
    r->pending =
        (struct kvg_sim_request){.id = r->id,
                                 .prompt_len = (uint32_t)nids,
                                 .max_tokens = (uint32_t)max_tokens,
                                 .ignore_eos = ignore_eos,
                                 .has_seed = seed >= 0,
                                 .seed = (uint64_t)(seed >= 0 ? seed : 0),
                                 .arrival = r->arrival,
                                 .lora_name = lora >= 0 ? s->adapters[lora] : NULL,
                                 .lora_id = lora + 1,
                                 .hold_blocks = pdp.do_remote_decode || pdp.bootstrap_prefill};
    r->pending_ids = ids;
    /* The embeddings from an encoder first: a failure there is the
     * request's input processing failing, an error answer (JSON) before
     * any stream starts, which the router sees as the leg's failure. */
    if (kvg_simsrv_ec_wanted(r)) {
        kvg_simsrv_ec_fetch(r);
        return;
    }
    kvg_simsrv_run(r);
}

void kvg_simsrv_run(struct sim_req *r)
{
    if (r->stream) {
        /* vLLM's streaming response starts before the engine runs it (a
         * decode's KV pull included): a later failure is an SSE event. */
        struct kvg_http_header h = {KVG_STR("cache-control"), KVG_STR("no-cache")};
        struct kvg_http_header hs[2] = {{KVG_STR("content-type"), KVG_STR("text/event-stream")}, h};
        kvg_http_res_start(r->req, 200, hs, 2, -1);
        r->started = 1;
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

void kvg_simsrv_fail(struct sim_req *r, const char *msg)
{
    struct kvg_http_req *req = r->req;
    req->on_abort = NULL;
    if (!r->stream || !r->started) {
        kvg_simsrv_error(req, 500, "InternalServerError", msg);
    } else {
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
    sr_free(r);
}

static void models(struct kvg_simsrv_server *s, struct kvg_http_req *req)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    kvg_buf_append_str(&b, "{\"object\":\"list\",\"data\":[{\"id\":");
    kvg_buf_append_json_str(&b, s->o.model, strlen(s->o.model));
    kvg_buf_printf(&b, ",\"object\":\"model\",\"created\":%lld,\"owned_by\":\"%s\",\"root\":",
                   (long long)s->started_wall,
                   s->o.flavor == KVG_SIMSRV_FLAVOR_VLLM     ? "vllm"
                   : s->o.flavor == KVG_SIMSRV_FLAVOR_SGLANG ? "sglang"
                                                             : "llamacpp");
    kvg_buf_append_json_str(&b, s->o.model, strlen(s->o.model));
    kvg_buf_printf(&b, ",\"parent\":null,\"max_model_len\":%u}", s->max_model_len);
    /* vLLM's model card of each adapter: its path as root, the base model
     * as parent, no context length of its own. */
    for (int i = 0; i < s->nadapters; i++) {
        kvg_buf_printf(&b, ",{\"id\":");
        kvg_buf_append_json_str(&b, s->adapters[i], strlen(s->adapters[i]));
        kvg_buf_printf(&b,
                       ",\"object\":\"model\",\"created\":%lld,\"owned_by\":\"vllm\","
                       "\"root\":\"/adapters/",
                       (long long)s->started_wall);
        kvg_buf_append(&b, s->adapters[i], strlen(s->adapters[i])); /* plain: checked at start */
        kvg_buf_printf(&b, "\",\"parent\":");
        kvg_buf_append_json_str(&b, s->o.model, strlen(s->o.model));
        kvg_buf_printf(&b, ",\"max_model_len\":null}");
    }
    kvg_buf_printf(&b, "]}");
    kvg_http_res_send(req, 200, "application/json", NULL, 0, b.data, b.len);
    kvg_buf_free(&b);
}

/* GET /debug/ranks (the sim's own, for tests: no engine has it): each
 * data-parallel rank's requests finished (length, stop or aborted), running
 * and waiting, and the prefills whose KV it holds for a decode. */
static void debug_ranks(struct kvg_simsrv_server *s, struct kvg_http_req *req)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    kvg_buf_append_str(&b, "{\"ranks\":[");
    for (int i = 0; i < s->ndp; i++) {
        struct kvg_sim_metrics m;
        kvg_sim_get_metrics(s->ranks[i].engine, &m);
        kvg_buf_printf(&b,
                       "%s{\"rank\":%d,\"finished\":%llu,\"running\":%u,\"waiting\":%u,"
                       "\"held\":%u}",
                       i ? "," : "", i,
                       (unsigned long long)(m.finished_length + m.finished_stop + m.aborted),
                       m.num_running, m.num_waiting, kvg_simsrv_pd_held(s, i));
    }
    kvg_buf_append_str(&b, "]}");
    kvg_http_res_send(req, 200, "application/json", NULL, 0, b.data, b.len);
    kvg_buf_free(&b);
}

void kvg_simsrv_handle(struct kvg_http_req *req, void *ud)
{
    struct kvg_simsrv_server *s = ud;
    if (live_init(s)) {
        kvg_simsrv_error(req, 500, "InternalServerError", "out of memory");
        return;
    }
    int post = !strcmp(req->method_name, "POST");
    int cold = kvg_now_s() - s->t0 < s->o.cold_start_s;
    if (kvg_str_eq(req->path, "/health")) {
        if (cold)
            kvg_simsrv_error(req, 503, "ServiceUnavailableError", "Loading model");
        else
            kvg_http_res_send(req, 200, NULL, NULL, 0, NULL, 0);
        return;
    }
    if (kvg_str_eq(req->path, "/metrics")) {
        kvg_simsrv_metrics_render(s, req);
        return;
    }
    if (kvg_str_eq(req->path, "/v1/models")) {
        models(s, req);
        return;
    }
    if (kvg_str_eq(req->path, "/debug/ranks")) {
        debug_ranks(s, req);
        return;
    }
    if (kvg_str_eq(req->path, "/debug/ec")) {
        kvg_simsrv_ec_debug(s, req);
        return;
    }
    if (kvg_str_eq(req->path, "/encode") && post && !cold) {
        kvg_simsrv_ec_encode_call(s, req); /* SGLang's encoder endpoint */
        return;
    }
    int chat = kvg_str_eq(req->path, "/v1/chat/completions");
    if (chat || kvg_str_eq(req->path, "/v1/completions")) {
        if (!post) {
            kvg_simsrv_error(req, 405, "MethodNotAllowed", "Method Not Allowed");
            return;
        }
        if (cold) {
            kvg_simsrv_error(req, 503, "ServiceUnavailableError", "Loading model");
            return;
        }
        completion(s, req, chat);
        return;
    }
    if (kvg_str_eq(req->path, "/reset_prefix_cache") && post) {
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
        return;
    }
    kvg_simsrv_error(req, 404, "NotFoundError", "Not Found");
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
