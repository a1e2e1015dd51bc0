/* kvgate sim's endpoint table: which paths each flavor serves (vLLM's
 * OpenAI, Anthropic, pooling, tokenizer and audio routes; SGLang's native
 * /generate; llama.cpp's tokenizer, embedding and rerank routes), with which
 * methods, and what an unknown path or method gets: FastAPI's {"detail"}
 * bodies for vLLM and SGLang, llama.cpp's own 404. --disable-endpoints
 * turns APIs off (their paths then answer as unknown ones), to stand in for
 * older or other engine builds. Also /v1/models with every served name, and
 * the sim's own /debug pages. */
#include <stdio.h>
#include <string.h>

#include "base/util.h"
#include "simsrv/simsrv.h"

static const char *const api_names[KVG_SIMSRV_API_N] = {
    "chat",     "completions", "responses", "messages", "generate",   "embeddings", "pooling",
    "classify", "score",       "rerank",    "tokenize", "detokenize", "audio",
};

int kvg_simsrv_api_parse(const char *name, size_t len)
{
    for (int i = 0; i < KVG_SIMSRV_API_N; i++)
        if (strlen(api_names[i]) == len && !memcmp(api_names[i], name, len)) return i;
    return -1;
}

const char *kvg_simsrv_api_name(int api)
{
    return api >= 0 && api < KVG_SIMSRV_API_N ? api_names[api] : "?";
}

#define V (1u << KVG_SIMSRV_FLAVOR_VLLM)
#define S (1u << KVG_SIMSRV_FLAVOR_SGLANG)
#define L (1u << KVG_SIMSRV_FLAVOR_LLAMACPP)
#define M_POST 1u
#define M_PUT 2u

enum handler {
    H_CHAT,
    H_COMPLETIONS,
    H_RESPONSES,
    H_MESSAGES,
    H_COUNT_TOKENS,
    H_GENERATE,
    H_POOL,
    H_SCORE,
    H_RERANK,
    H_TOKENIZE,
    H_DETOKENIZE,
    H_TRANSCRIBE,
    H_TRANSLATE,
};

/* The POST routes. Every flavor's chat and completions; the rest where the
 * engine really serves them (docs/engines-api.md names the files read). */
static const struct route {
    const char *path;
    int api;
    unsigned flavors, methods;
    enum handler h;
} routes[] = {
    {"/v1/chat/completions", KVG_SIMSRV_API_CHAT, V | S | L, M_POST, H_CHAT},
    {"/v1/completions", KVG_SIMSRV_API_COMPLETIONS, V | S | L, M_POST, H_COMPLETIONS},
    {"/v1/responses", KVG_SIMSRV_API_RESPONSES, V, M_POST, H_RESPONSES},
    {"/v1/messages", KVG_SIMSRV_API_MESSAGES, V, M_POST, H_MESSAGES},
    {"/v1/messages/count_tokens", KVG_SIMSRV_API_MESSAGES, V, M_POST, H_COUNT_TOKENS},
    {"/generate", KVG_SIMSRV_API_GENERATE, S, M_POST | M_PUT, H_GENERATE},
    {"/v1/embeddings", KVG_SIMSRV_API_EMBEDDINGS, V | S | L, M_POST, H_POOL},
    {"/embeddings", KVG_SIMSRV_API_EMBEDDINGS, L, M_POST, H_POOL},
    {"/pooling", KVG_SIMSRV_API_POOLING, V, M_POST, H_POOL},
    {"/classify", KVG_SIMSRV_API_CLASSIFY, V, M_POST, H_POOL},
    {"/score", KVG_SIMSRV_API_SCORE, V, M_POST, H_SCORE},
    {"/v1/score", KVG_SIMSRV_API_SCORE, V, M_POST, H_SCORE},
    {"/rerank", KVG_SIMSRV_API_RERANK, V | L, M_POST, H_RERANK},
    {"/v1/rerank", KVG_SIMSRV_API_RERANK, V | L, M_POST, H_RERANK},
    {"/v2/rerank", KVG_SIMSRV_API_RERANK, V, M_POST, H_RERANK},
    {"/reranking", KVG_SIMSRV_API_RERANK, L, M_POST, H_RERANK},
    {"/v1/reranking", KVG_SIMSRV_API_RERANK, L, M_POST, H_RERANK},
    {"/tokenize", KVG_SIMSRV_API_TOKENIZE, V | L, M_POST, H_TOKENIZE},
    {"/detokenize", KVG_SIMSRV_API_DETOKENIZE, V | L, M_POST, H_DETOKENIZE},
    {"/v1/audio/transcriptions", KVG_SIMSRV_API_AUDIO, V, M_POST, H_TRANSCRIBE},
    {"/v1/audio/translations", KVG_SIMSRV_API_AUDIO, V, M_POST, H_TRANSLATE},
};

static void dispatch(struct kvg_simsrv_server *s, struct kvg_http_req *req, const struct route *rt)
{
    switch (rt->h) {
    case H_CHAT:
    case H_COMPLETIONS:
        kvg__simsrv_completion(s, req, rt->h == H_CHAT);
        break;
    case H_RESPONSES:
        kvg__simsrv_responses(s, req);
        break;
    case H_MESSAGES:
    case H_COUNT_TOKENS:
        kvg__simsrv_messages(s, req, rt->h == H_COUNT_TOKENS);
        break;
    case H_GENERATE:
        kvg__simsrv_generate(s, req);
        break;
    case H_POOL:
        kvg__simsrv_pooling(s, req, rt->api);
        break;
    case H_SCORE:
    case H_RERANK:
        kvg__simsrv_score(s, req, rt->h == H_RERANK);
        break;
    case H_TOKENIZE:
    case H_DETOKENIZE:
        kvg__simsrv_tokenize(s, req, rt->h == H_DETOKENIZE);
        break;
    case H_TRANSCRIBE:
    case H_TRANSLATE:
        kvg__simsrv_audio(s, req, rt->h == H_TRANSLATE);
        break;
    }
}

/* An unknown path as the flavor's server answers it: FastAPI's 404 (vLLM,
 * SGLang), cpp-httplib's with llama.cpp's error handler. */
static void not_found(struct kvg_simsrv_server *s, struct kvg_http_req *req)
{
    if (s->o.flavor == KVG_SIMSRV_FLAVOR_LLAMACPP) {
        struct kvg_buf b;
        kvg_buf_init(&b, 0);
        kvg_buf_append_str(&b, "{\"error\":{\"code\":404,\"message\":\"File Not Found\","
                               "\"type\":\"not_found_error\"}}");
        kvg_http_res_send(req, 404, "application/json; charset=utf-8", NULL, 0, b.data, b.len);
        kvg_buf_free(&b);
        return;
    }
    kvg__simsrv_error_detail(req, 404, "Not Found");
}

/* A known path with another method: FastAPI's 405 and its Allow header. */
void kvg__simsrv_not_allowed(struct kvg_simsrv_server *s, struct kvg_http_req *req,
                             const char *allow)
{
    if (s->o.flavor == KVG_SIMSRV_FLAVOR_LLAMACPP) {
        not_found(s, req);
        return;
    }
    static const char body[] = "{\"detail\":\"Method Not Allowed\"}";
    struct kvg_http_header h = {KVG_STR("allow"), kvg_str_c(allow)};
    kvg_http_res_send(req, 405, "application/json", &h, 1, body, sizeof body - 1);
}

static int served(const struct kvg_simsrv_server *s, int api)
{
    return !(s->o.disabled & (1u << api));
}

/* /v1/responses/{id} (GET, DELETE) and /v1/responses/{id}/cancel (POST):
 * 1 when the path is one of them (answered). */
static int response_id_route(struct kvg_simsrv_server *s, struct kvg_http_req *req, int post)
{
    static const char pre[] = "/v1/responses/";
    struct kvg_str p = req->path;
    if (s->o.flavor != KVG_SIMSRV_FLAVOR_VLLM || !served(s, KVG_SIMSRV_API_RESPONSES) ||
        p.len <= sizeof pre - 1 || memcmp(p.p, pre, sizeof pre - 1))
        return 0;
    const char *id = p.p + sizeof pre - 1;
    size_t idlen = p.len - (sizeof pre - 1);
    const char *slash = memchr(id, '/', idlen);
    int cancel = 0;
    if (slash) {
        if ((size_t)(id + idlen - slash) != 7 || memcmp(slash, "/cancel", 7)) return 0;
        cancel = 1;
        idlen = (size_t)(slash - id);
        if (!idlen) return 0;
    }
    int get = !strcmp(req->method_name, "GET") || !strcmp(req->method_name, "HEAD");
    int del = !strcmp(req->method_name, "DELETE");
    if (cancel ? !post : !(get || del)) {
        kvg__simsrv_not_allowed(s, req, cancel ? "POST" : "GET, DELETE");
        return 1;
    }
    kvg__simsrv_response_id(s, req, id, idlen, cancel ? 2 : del ? 1 : 0);
    return 1;
}

static void models(struct kvg_simsrv_server *s, struct kvg_http_req *req)
{
    const char *owner = s->o.flavor == KVG_SIMSRV_FLAVOR_VLLM     ? "vllm"
                        : s->o.flavor == KVG_SIMSRV_FLAVOR_SGLANG ? "sglang"
                                                                  : "llamacpp";
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    kvg_buf_append_str(&b, "{\"object\":\"list\",\"data\":[");
    /* vLLM lists every served name, each a card of the same model. */
    for (int i = 0; i < s->nnames; i++) {
        kvg_buf_append_str(&b, i ? ",{\"id\":" : "{\"id\":");
        kvg_buf_append_json_str(&b, s->names[i], strlen(s->names[i]));
        kvg_buf_printf(&b, ",\"object\":\"model\",\"created\":%lld,\"owned_by\":\"%s\",\"root\":",
                       (long long)s->started_wall, owner);
        kvg_buf_append_json_str(&b, s->o.model, strlen(s->o.model));
        kvg_buf_printf(&b, ",\"parent\":null,\"max_model_len\":%u}", s->max_model_len);
    }
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

/* The paths every flavor has: 1 when req was one of them (answered). */
static int fixed_route(struct kvg_simsrv_server *s, struct kvg_http_req *req, int post, int cold)
{
    if (kvg_str_eq(req->path, "/health")) {
        if (cold)
            kvg_simsrv_error(req, 503, "ServiceUnavailableError", "Loading model");
        else
            kvg_http_res_send(req, 200, NULL, NULL, 0, NULL, 0);
    } else if (kvg_str_eq(req->path, "/metrics")) {
        kvg_simsrv_metrics_render(s, req);
    } else if (kvg_str_eq(req->path, "/v1/models")) {
        models(s, req);
    } else if (kvg_str_eq(req->path, "/debug/ranks")) {
        debug_ranks(s, req);
    } else if (kvg_str_eq(req->path, "/debug/ec")) {
        kvg_simsrv_ec_debug(s, req);
    } else if (kvg_str_eq(req->path, "/encode") && post && !cold) {
        kvg_simsrv_ec_encode_call(s, req); /* SGLang's encoder endpoint */
    } else if (kvg_str_eq(req->path, "/reset_prefix_cache") && post) {
        kvg__simsrv_reset_prefix_cache(s, req);
    } else {
        return 0;
    }
    return 1;
}

void kvg_simsrv_handle(struct kvg_http_req *req, void *ud)
{
    struct kvg_simsrv_server *s = ud;
    int post = !strcmp(req->method_name, "POST");
    int put = !strcmp(req->method_name, "PUT");
    int cold = kvg_now_s() - s->t0 < s->o.cold_start_s;
    if (fixed_route(s, req, post, cold) || response_id_route(s, req, post) ||
        kvg_simsrv_sleep_route(s, req))
        return;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        const struct route *rt = &routes[i];
        if (!kvg_str_eq(req->path, rt->path) || !(rt->flavors & (1u << s->o.flavor)) ||
            !served(s, rt->api))
            continue;
        if (!((post && (rt->methods & M_POST)) || (put && (rt->methods & M_PUT)))) {
            kvg__simsrv_not_allowed(s, req, rt->methods & M_PUT ? "POST, PUT" : "POST");
            return;
        }
        if (cold) {
            kvg_simsrv_error(req, 503, "ServiceUnavailableError", "Loading model");
            return;
        }
        dispatch(s, req, rt);
        return;
    }
    not_found(s, req);
}
