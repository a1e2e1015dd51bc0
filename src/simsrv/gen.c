/* What every endpoint of kvgate sim shares: the rank a request runs on, the
 * model it names, its prompt as token ids (chat template and tokenizer),
 * vLLM's context check, the ids engines make up, the engines' error bodies
 * and the fault injection every POST endpoint honours. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/err.h"
#include "base/util.h"
#include "simsrv/simsrv.h"

/* ------------------------------------------------------------ the request */

/* The rank a request runs on: the one the request names, else the least
 * loaded (waiting + running), as vLLM's DP client balances. vLLM's API
 * server takes it from the X-data-parallel-rank header (what an external DP
 * router sets); SGLang's from data_parallel_rank in the body (what its
 * router's --dp-aware injects), the header still honoured when the body
 * names none. */
struct kvg_simsrv_rank *kvg__simsrv_pick_rank(struct kvg_simsrv_server *s, struct kvg_http_req *req,
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

int kvg__simsrv_model(const struct kvg_simsrv_server *s, const cJSON *model, char *msg,
                      size_t msglen)
{
    if (!model || cJSON_IsNull(model)) return -1;
    if (cJSON_IsString(model)) {
        /* vLLM runs a request on the adapter its `model` names */
        for (int i = 0; i < s->nadapters; i++)
            if (!strcmp(model->valuestring, s->adapters[i])) return i;
        for (int i = 0; i < s->nnames; i++)
            if (!strcmp(model->valuestring, s->names[i])) return -1;
    }
    snprintf(msg, msglen, "The model `%.200s` does not exist.",
             cJSON_IsString(model) ? model->valuestring : "?");
    return -2;
}

const char *kvg__simsrv_model_name(const struct kvg_simsrv_server *s, int lora)
{
    return lora >= 0 ? s->adapters[lora] : s->o.model;
}

int kvg__simsrv_chat_ids(struct kvg_simsrv_server *s, const char *body, size_t len, uint32_t **ids,
                         size_t *n, char *msg, size_t msglen)
{
    struct kvg_buf text;
    kvg_buf_init(&text, 0);
    struct kvg_jinja_chat_info info = {0};
    msg[0] = 0;
    int rc = kvg_jinja_chat_render(s->tmpl, body, len, NULL, &text, &info, msg, msglen);
    if (!rc)
        rc = kvg_tok_encode(s->tok, text.data ? text.data : "", text.len, info.add_special_tokens,
                            ids, n);
    kvg_buf_free(&text);
    if (rc && !msg[0]) snprintf(msg, msglen, "cannot tokenize the messages: %s", kvg_strerror(rc));
    return rc;
}

int kvg__simsrv_prompt_ids(struct kvg_simsrv_server *s, const cJSON *p, int add_special,
                           uint32_t **ids, size_t *n, char *msg, size_t msglen)
{
    if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1) p = cJSON_GetArrayItem(p, 0);
    if (cJSON_IsArray(p)) { /* token ids */
        size_t k = (size_t)cJSON_GetArraySize(p), i = 0;
        *ids = malloc((k ? k : 1) * sizeof **ids);
        if (!*ids) return -ENOMEM;
        const cJSON *it;
        cJSON_ArrayForEach(it, p)
        {
            if (!cJSON_IsNumber(it) || it->valuedouble < 0 ||
                it->valuedouble >= (double)kvg_tok_vocab_size(s->tok) ||
                it->valuedouble != floor(it->valuedouble)) {
                free(*ids);
                *ids = NULL;
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
    int rc = kvg_tok_encode(s->tok, p->valuestring, strlen(p->valuestring), add_special, ids, n);
    if (rc) snprintf(msg, msglen, "cannot tokenize the prompt: %s", kvg_strerror(rc));
    return rc;
}

int kvg__simsrv_get_uint(const cJSON *j, const char *key, int64_t dflt, int64_t *out, char *msg,
                         size_t msglen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
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

int kvg__simsrv_fit(const struct kvg_simsrv_server *s, size_t nids, int64_t *max_tokens, char *msg,
                    size_t msglen)
{
    int64_t mt = *max_tokens;
    if (mt < 0) mt = (int64_t)s->max_model_len - (int64_t)nids;
    if (mt == 0 && *max_tokens == 0) {
        snprintf(msg, msglen, "max_tokens must be at least 1, got 0.");
        return -1;
    }
    if (mt <= 0 || (int64_t)nids + mt > (int64_t)s->max_model_len) {
        snprintf(msg, msglen,
                 "This model's maximum context length is %u tokens. However, you requested "
                 "%lld tokens (%zu in the messages, %lld in the completion). Please reduce the "
                 "length of the messages or completion.",
                 s->max_model_len, (long long)nids + (long long)KVG_MAX(mt, 0), nids,
                 (long long)KVG_MAX(mt, 0));
        return -1;
    }
    *max_tokens = mt;
    return 0;
}

void kvg__simsrv_hex_id(struct kvg_simsrv_server *s, char out[33])
{
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)kvg_rng_next(&s->id_rng),
             (unsigned long long)kvg_rng_next(&s->id_rng));
}

void kvg__simsrv_uuid4(struct kvg_simsrv_server *s, char out[37])
{
    char h[33];
    kvg__simsrv_hex_id(s, h);
    h[12] = '4';                              /* version 4 */
    h[16] = "89ab"[kvg_hex_digit(h[16]) & 3]; /* the RFC 4122 variant */
    snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8, h + 12, h + 16, h + 20);
}

/* ------------------------------------------------------------------ errors */

void kvg__simsrv_error_param(struct kvg_http_req *req, int status, const char *type,
                             const char *msg, const char *param)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    kvg_buf_append_str(&b, "{\"error\":{\"message\":");
    kvg_buf_append_json_str(&b, msg, strlen(msg));
    kvg_buf_append_str(&b, ",\"type\":");
    kvg_buf_append_json_str(&b, type, strlen(type));
    kvg_buf_append_str(&b, ",\"param\":");
    if (param)
        kvg_buf_append_json_str(&b, param, strlen(param));
    else
        kvg_buf_append_str(&b, "null");
    kvg_buf_printf(&b, ",\"code\":%d}}", status);
    kvg_http_res_send(req, status, "application/json", NULL, 0, b.data, b.len);
    kvg_buf_free(&b);
}

void kvg__simsrv_error_anthropic(struct kvg_http_req *req, int status, const char *type,
                                 const char *msg)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    if (kvg_api_error_body(KVG_API_SHAPE_ANTHROPIC, status, type, NULL, msg, NULL, &b))
        kvg_buf_reset(&b); /* out of memory: the status alone */
    kvg_http_res_send(req, status, "application/json", NULL, 0, b.data, b.len);
    kvg_buf_free(&b);
}

void kvg__simsrv_send_wrapped(struct kvg_http_req *req, int status, const char *open,
                              const char *msg, const char *close)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    kvg_buf_append_str(&b, open);
    kvg_buf_append_json_str(&b, msg, strlen(msg));
    kvg_buf_append_str(&b, close);
    kvg_http_res_send(req, status, "application/json", NULL, 0, b.data, b.len);
    kvg_buf_free(&b);
}

void kvg__simsrv_error_detail(struct kvg_http_req *req, int status, const char *detail)
{
    kvg__simsrv_send_wrapped(req, status, "{\"detail\":", detail, "}");
}

void kvg__simsrv_error_sglang(struct kvg_http_req *req, int status, const char *msg)
{
    kvg__simsrv_send_wrapped(req, status, "{\"error\":{\"message\":", msg, "}}");
}

/* vLLM answers a body its request model refuses with pydantic's errors
 * counted ("1 validation error:\n  {...}"), type "Bad Request", the
 * parameter as body.<name>: whatever the endpoint's own error shape. */
void kvg__simsrv_error_validation(struct kvg_http_req *req, const char *param, const char *msg)
{
    char full[600], p[96];
    snprintf(full, sizeof full,
             "1 validation error:\n  {'type': 'value_error', 'loc': ('body'%s%s%s), "
             "'msg': '%s'}",
             param && param[0] ? ", '" : "", param && param[0] ? param : "",
             param && param[0] ? "'" : "", msg);
    snprintf(p, sizeof p, "body%s%s", param && param[0] ? "." : "", param ? param : "");
    kvg__simsrv_error_param(req, 400, "Bad Request", full, p);
}

int kvg__simsrv_inject_fail(struct kvg_simsrv_server *s, struct kvg_http_req *req)
{
    if (s->o.fail_rate <= 0 || kvg_rng_double(&s->rng) >= s->o.fail_rate) return 0;
    int st = (int)s->o.fail_status;
    kvg_simsrv_error(req, st,
                     st == 503   ? "ServiceUnavailableError"
                     : st == 429 ? "TooManyRequestsError"
                                 : "InternalServerError",
                     "injected failure (--fail-rate)");
    return 1;
}

void kvg__simsrv_sse_start(struct kvg_http_req *req)
{
    struct kvg_http_header hs[2] = {{KVG_STR("content-type"), KVG_STR("text/event-stream")},
                                    {KVG_STR("cache-control"), KVG_STR("no-cache")}};
    kvg_http_res_start(req, 200, hs, 2, -1);
}

void kvg__simsrv_pyfloat(struct kvg_buf *b, double v)
{
    char t[40];
    if (!isfinite(v)) v = 0; /* JSON has no such number; requests cannot carry one */
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(t, sizeof t, "%.*g", prec, v);
        if (strtod(t, NULL) == v) break;
    }
    kvg_buf_append_str(b, t);
    if (!strpbrk(t, ".en")) kvg_buf_append_str(b, ".0"); /* Python prints a float as 1.0 */
}

void kvg__simsrv_raw(struct kvg_buf *b, const cJSON *v, const char *dflt)
{
    char *p = v && !cJSON_IsNull(v) ? cJSON_PrintUnformatted(v) : NULL;
    kvg_buf_append_str(b, p ? p : dflt);
    cJSON_free(p);
}
