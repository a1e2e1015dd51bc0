/* kvgate sim's pooling endpoints: POST /v1/embeddings, /pooling and
 * /classify in vLLM's shapes (and /v1/embeddings in SGLang's and
 * llama.cpp's), inputs as vLLM takes them (a string, strings, token ids,
 * lists of token ids, or chat messages), each input one prompt-only engine
 * request (pool_group.c). The vectors are the sim's own: each token id
 * draws a fixed pseudo-random vector and an input's embedding is their
 * normalised sum, so the same tokens always give the same vector and texts
 * sharing tokens come out similar (what score and rerank use). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/util.h"
#include "simsrv/simsrv.h"

/* ---------------------------------------------------------------- vectors */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

void kvg__simsrv_embed(const uint32_t *ids, size_t n, uint32_t dim, float *out)
{
    double acc[KVG_SIMSRV_MAX_DIM] = {0}, norm = 0;
    for (size_t i = 0; i < n; i++)
        for (uint32_t d = 0; d < dim; d++) {
            uint64_t h = mix(((uint64_t)ids[i] << 16) ^ d);
            acc[d] += (double)(h >> 11) / (double)(1ull << 53) * 2.0 - 1.0;
        }
    for (uint32_t d = 0; d < dim; d++) norm += acc[d] * acc[d];
    norm = norm > 0 ? sqrt(norm) : 1;
    for (uint32_t d = 0; d < dim; d++) out[d] = (float)(acc[d] / norm);
}

double kvg__simsrv_similarity(const float *a, const float *b, uint32_t dim)
{
    double dot = 0;
    for (uint32_t d = 0; d < dim; d++) dot += (double)a[d] * b[d];
    return (KVG_MAX(-1.0, KVG_MIN(1.0, dot)) + 1) / 2; /* cosine, mapped to 0..1 */
}

/* ------------------------------------------------------------------ inputs */

void kvg__simsrv_inputs_free(struct kvg_simsrv_inputs *in)
{
    for (size_t i = 0; i < in->n; i++) free(in->ids[i]);
    free(in->ids);
    free(in->len);
    memset(in, 0, sizeof *in);
}

static int add_input(struct kvg_simsrv_inputs *in, uint32_t *ids, size_t n)
{
    if (in->n == in->cap) {
        size_t cap = in->cap ? in->cap * 2 : 8;
        uint32_t **a = realloc(in->ids, cap * sizeof *a);
        if (a) in->ids = a;
        size_t *l = a ? realloc(in->len, cap * sizeof *l) : NULL;
        if (!l) {
            free(ids);
            return -ENOMEM;
        }
        in->len = l;
        in->cap = cap;
    }
    in->ids[in->n] = ids;
    in->len[in->n++] = n;
    return 0;
}

static int is_ids(const cJSON *a)
{
    return cJSON_IsArray(a) && cJSON_GetArraySize(a) > 0 &&
           cJSON_IsNumber(cJSON_GetArrayItem(a, 0));
}

/* One input's token ids, checked against the context. */
static int read_one(struct kvg_simsrv_server *s, const cJSON *it, int add_special,
                    struct kvg_simsrv_inputs *in, char *msg, size_t msglen)
{
    uint32_t *ids = NULL;
    size_t n = 0;
    int rc = kvg__simsrv_prompt_ids(s, it, add_special, &ids, &n, msg, msglen);
    if (rc) {
        snprintf(msg, msglen, "'input' must be a string, a list of strings or token ids");
        return rc;
    }
    if (!n) {
        free(ids);
        snprintf(msg, msglen, "an input is empty");
        return KVG_EPARSE;
    }
    if ((rc = add_input(in, ids, n))) return rc;
    if (n > s->max_model_len) {
        snprintf(msg, msglen,
                 "This model's maximum context length is %u tokens. However, you requested "
                 "%zu tokens in the input for %s. Please reduce the length of the input.",
                 s->max_model_len, n, in->operation ? in->operation : "embedding generation");
        return KVG_ETOOBIG;
    }
    return 0;
}

int kvg__simsrv_inputs_read(struct kvg_simsrv_server *s, const cJSON *input, int add_special,
                            struct kvg_simsrv_inputs *in, char *msg, size_t msglen)
{
    if (!cJSON_IsString(input) && !cJSON_IsArray(input)) {
        snprintf(msg, msglen, "'input' must be a string, a list of strings or token ids");
        return KVG_EPARSE;
    }
    if (cJSON_IsString(input) || is_ids(input))
        return read_one(s, input, add_special, in, msg, msglen);
    size_t count = (size_t)cJSON_GetArraySize(input);
    if (count > s->o.max_batch) {
        snprintf(msg, msglen, "The batch has %zu inputs; this engine takes at most %u", count,
                 s->o.max_batch);
        return KVG_ETOOBIG;
    }
    if (!count) {
        snprintf(msg, msglen, "'input' is empty");
        return KVG_EPARSE;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, input)
    {
        int rc = read_one(s, it, add_special, in, msg, msglen);
        if (rc) return rc;
    }
    return 0;
}

/* The chat form (messages): rendered without the generation prompt unless
 * asked (vLLM's pooling default), one input. */
static int chat_input(struct kvg_simsrv_server *s, const cJSON *j, struct kvg_simsrv_inputs *in,
                      char *msg, size_t msglen)
{
    cJSON *c = cJSON_Duplicate(j, 1);
    if (!c) return -ENOMEM;
    if (!cJSON_GetObjectItemCaseSensitive(c, "add_generation_prompt"))
        cJSON_AddFalseToObject(c, "add_generation_prompt");
    char *text = cJSON_PrintUnformatted(c);
    cJSON_Delete(c);
    uint32_t *ids = NULL;
    size_t n = 0;
    int rc = text ? kvg__simsrv_chat_ids(s, text, strlen(text), &ids, &n, msg, msglen) : -ENOMEM;
    cJSON_free(text);
    if (rc) return rc;
    if (!n || n > s->max_model_len) {
        free(ids);
        snprintf(msg, msglen, "the messages render to %zu tokens (1..%u)", n, s->max_model_len);
        return KVG_EPARSE;
    }
    return add_input(in, ids, n);
}

/* ------------------------------------------------------------------ answer */

struct pool {
    int api, flavor, base64, lora;
    uint32_t dim;
    char id[64], model[256];
    int64_t created;
    size_t n;
    size_t *len; /* prompt tokens per input */
    float *vec;  /* n * dim */
};

static void pool_free(void *ud)
{
    struct pool *p = ud;
    free(p->len);
    free(p->vec);
    free(p);
}

static void b64(struct kvg_buf *b, const unsigned char *p, size_t n)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    kvg_buf_append_str(b, "\"");
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        char q[4] = {t[v >> 18], t[(v >> 12) & 63], i + 1 < n ? t[(v >> 6) & 63] : '=',
                     i + 2 < n ? t[v & 63] : '='};
        kvg_buf_append(b, q, 4);
    }
    kvg_buf_append_str(b, "\"");
}

static void vector(struct kvg_buf *b, const struct pool *p, size_t i)
{
    const float *v = p->vec + i * p->dim;
    if (p->base64) { /* float32, little-endian (x86's native order, as vLLM's default) */
        b64(b, (const unsigned char *)v, p->dim * sizeof *v);
        return;
    }
    kvg_buf_append_str(b, "[");
    for (uint32_t d = 0; d < p->dim; d++) {
        if (d) kvg_buf_append_str(b, ",");
        kvg__simsrv_pyfloat(b, (double)v[d]);
    }
    kvg_buf_append_str(b, "]");
}

/* Two classes, as a HuggingFace sequence classifier without label names. */
static void classify(struct kvg_buf *b, const struct pool *p, size_t i)
{
    const float *v = p->vec + i * p->dim;
    double z0 = 0, z1 = 0;
    for (uint32_t d = 0; d < p->dim; d++) *(d & 1 ? &z1 : &z0) += v[d];
    double p1 = 1 / (1 + exp(z0 - z1));
    kvg_buf_printf(b, "{\"index\":%zu,\"label\":\"LABEL_%d\",\"probs\":[", i, p1 > 0.5);
    kvg__simsrv_pyfloat(b, 1 - p1);
    kvg_buf_append_str(b, ",");
    kvg__simsrv_pyfloat(b, p1);
    kvg_buf_append_str(b, "],\"num_classes\":2}");
}

static void pool_answer(struct kvg_http_req *req, void *ud, const uint32_t *cached, size_t n)
{
    (void)cached;
    struct pool *p = ud;
    size_t tokens = 0;
    for (size_t i = 0; i < n; i++) tokens += p->len[i];
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    if (p->flavor == KVG_SIMSRV_FLAVOR_LLAMACPP) { /* nlohmann's JSON: keys sorted */
        kvg_buf_append_str(&b, "{\"data\":[");
        for (size_t i = 0; i < n; i++) {
            kvg_buf_append_str(&b, i ? ",{\"embedding\":" : "{\"embedding\":");
            vector(&b, p, i);
            kvg_buf_printf(&b, ",\"index\":%zu,\"object\":\"embedding\"}", i);
        }
        kvg_buf_append_str(&b, "],\"model\":");
        kvg_buf_append_json_str(&b, p->model, strlen(p->model));
        kvg_buf_printf(
            &b, ",\"object\":\"list\",\"usage\":{\"prompt_tokens\":%zu,\"total_tokens\":%zu}}",
            tokens, tokens);
        kvg_http_res_send(req, 200, "application/json; charset=utf-8", NULL, 0, b.data, b.len);
        kvg_buf_free(&b);
        return;
    }
    if (p->flavor == KVG_SIMSRV_FLAVOR_VLLM)
        kvg_buf_printf(&b, "{\"id\":\"%s\",\"object\":\"list\",\"created\":%lld,\"model\":", p->id,
                       (long long)p->created);
    else /* SGLang's EmbeddingResponse: data, model, object, usage */
        kvg_buf_append_str(&b, "{\"model\":");
    kvg_buf_append_json_str(&b, p->model, strlen(p->model));
    kvg_buf_append_str(&b, p->flavor == KVG_SIMSRV_FLAVOR_VLLM ? ",\"data\":["
                                                               : ",\"object\":\"list\",\"data\":[");
    for (size_t i = 0; i < n; i++) {
        if (i) kvg_buf_append_str(&b, ",");
        if (p->api == KVG_SIMSRV_API_CLASSIFY) {
            classify(&b, p, i);
        } else if (p->api == KVG_SIMSRV_API_POOLING) {
            kvg_buf_printf(&b, "{\"index\":%zu,\"object\":\"pooling\",\"data\":", i);
            vector(&b, p, i);
            kvg_buf_append_str(&b, "}");
        } else if (p->flavor == KVG_SIMSRV_FLAVOR_VLLM) {
            kvg_buf_printf(&b, "{\"index\":%zu,\"object\":\"embedding\",\"embedding\":", i);
            vector(&b, p, i);
            kvg_buf_append_str(&b, "}");
        } else {
            kvg_buf_append_str(&b, "{\"embedding\":");
            vector(&b, p, i);
            kvg_buf_printf(&b, ",\"index\":%zu,\"object\":\"embedding\"}", i);
        }
    }
    kvg_buf_printf(
        &b,
        "],\"usage\":{\"prompt_tokens\":%zu,\"total_tokens\":%zu,\"completion_tokens\":0,"
        "\"prompt_tokens_details\":null}}",
        tokens, tokens);
    kvg_http_res_send(req, 200, "application/json", NULL, 0, b.data, b.len);
    kvg_buf_free(&b);
}

/* ---------------------------------------------------------------- request */

void kvg__simsrv_pool_error(struct kvg_simsrv_server *s, struct kvg_http_req *req, int status,
                            const char *msg)
{
    if (s->o.flavor == KVG_SIMSRV_FLAVOR_LLAMACPP)
        kvg__simsrv_llamacpp_error(req, status, msg);
    else
        kvg_simsrv_error(req, status,
                         status == 404   ? "NotFoundError"
                         : status >= 500 ? "InternalServerError"
                                         : "BadRequestError",
                         msg);
}

/* The options vLLM reads besides the inputs; -1 with the answer sent. */
static int pool_options(struct kvg_simsrv_server *s, struct kvg_http_req *req, const cJSON *j,
                        struct pool *p)
{
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(j, "encoding_format");
    const cJSON *dims = cJSON_GetObjectItemCaseSensitive(j, "dimensions");
    char msg[300];
    if (fmt && !cJSON_IsNull(fmt) &&
        (!cJSON_IsString(fmt) ||
         (strcmp(fmt->valuestring, "float") && strcmp(fmt->valuestring, "base64")))) {
        snprintf(msg, sizeof msg, "encoding_format must be 'float' or 'base64'");
    } else if (dims && !cJSON_IsNull(dims) &&
               (!cJSON_IsNumber(dims) || dims->valuedouble != s->o.embedding_dim)) {
        snprintf(msg, sizeof msg,
                 "Model \"%s\" does not support matryoshka representation, changing output "
                 "dimensions will lead to poor results.",
                 s->o.model);
    } else {
        p->base64 = cJSON_IsString(fmt) && !strcmp(fmt->valuestring, "base64");
        return 0;
    }
    kvg__simsrv_pool_error(s, req, 400, msg);
    return -1;
}

void kvg__simsrv_pooling(struct kvg_simsrv_server *s, struct kvg_http_req *req, int api)
{
    char msg[512] = "";
    cJSON *j = cJSON_ParseWithLength(req->body.data ? req->body.data : "", req->body.len);
    struct kvg_simsrv_inputs in = {0};
    struct pool *p = calloc(1, sizeof *p);
    struct kvg_simsrv_rank *rk = kvg__simsrv_pick_rank(s, req, j, msg, sizeof msg);
    int lora;
    if (!p) {
        kvg__simsrv_pool_error(s, req, 500, "out of memory");
        goto out;
    }
    if (!rk || !cJSON_IsObject(j)) {
        kvg__simsrv_pool_error(s, req, 400, rk ? "the request body is not a JSON object" : msg);
        goto out;
    }
    if (kvg__simsrv_inject_fail(s, req)) goto out;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(j, "model");
    /* llama.cpp serves one model whatever the request names */
    lora = s->o.flavor == KVG_SIMSRV_FLAVOR_LLAMACPP ? -1
                                                     : kvg__simsrv_model(s, model, msg, sizeof msg);
    if (lora == -2) {
        kvg__simsrv_pool_error(s, req, 404, msg);
        goto out;
    }
    if (pool_options(s, req, j, p)) goto out;
    in.operation = api == KVG_SIMSRV_API_CLASSIFY ? "classification" : NULL;
    const cJSON *messages = cJSON_GetObjectItemCaseSensitive(j, "messages");
    const cJSON *input = cJSON_GetObjectItemCaseSensitive(j, "input");
    if (!input && s->o.flavor == KVG_SIMSRV_FLAVOR_LLAMACPP)
        input = cJSON_GetObjectItemCaseSensitive(j, "content");
    const cJSON *add = cJSON_GetObjectItemCaseSensitive(j, "add_special_tokens");
    int rc = messages && s->o.flavor == KVG_SIMSRV_FLAVOR_VLLM
                 ? chat_input(s, j, &in, msg, sizeof msg)
                 : kvg__simsrv_inputs_read(s, input, !cJSON_IsFalse(add), &in, msg, sizeof msg);
    if (rc) {
        kvg__simsrv_pool_error(s, req, rc == -ENOMEM ? 500 : 400, msg);
        goto out;
    }
    p->api = api;
    p->flavor = s->o.flavor;
    p->dim = s->o.embedding_dim;
    p->n = in.n;
    p->created = (int64_t)kvg_wall_s();
    char hex[33];
    kvg__simsrv_hex_id(s, hex);
    snprintf(p->id, sizeof p->id, "%s-%s",
             api == KVG_SIMSRV_API_CLASSIFY  ? "classify"
             : api == KVG_SIMSRV_API_POOLING ? "pool"
                                             : "embd",
             hex);
    snprintf(p->model, sizeof p->model, "%s",
             s->o.flavor == KVG_SIMSRV_FLAVOR_LLAMACPP && cJSON_IsString(model)
                 ? model->valuestring
                 : kvg__simsrv_model_name(s, lora));
    if (!(p->len = malloc(in.n * sizeof *p->len)) ||
        !(p->vec = malloc(in.n * p->dim * sizeof *p->vec))) {
        kvg__simsrv_pool_error(s, req, 500, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < in.n; i++) {
        p->len[i] = in.len[i];
        kvg__simsrv_embed(in.ids[i], in.len[i], p->dim, p->vec + i * p->dim);
    }
    kvg__simsrv_group_run(s, req, rk, lora, in.ids, in.len, in.n, pool_answer, p, pool_free);
    p = NULL;
    in.n = 0; /* the ids are the group's now */
out:
    if (p) pool_free(p);
    kvg__simsrv_inputs_free(&in);
    cJSON_Delete(j);
}
