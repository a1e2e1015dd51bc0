/* kvgate sim's POST /score (/v1/score) and /rerank (/v1/rerank, /v2/rerank)
 * in vLLM's shapes, and llama.cpp's /rerank: each (query, document) pair is
 * one prompt-only engine request of both texts' tokens, as a cross-encoder
 * reads them (pool_group.c); its score is the similarity of the two texts'
 * sim embeddings (api_pooling.c), so a document repeating the query ranks
 * first. Rerank results are sorted by relevance_score, then cut to top_n. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/util.h"
#include "simsrv/simsrv.h"

struct score {
    int rerank, flavor;
    char id[64], model[256];
    int64_t created;
    size_t n, top_n;
    size_t *len;   /* prompt tokens per pair */
    double *score; /* per pair */
    cJSON *docs;   /* the documents (rerank echoes them) */
    cJSON *body;   /* owns docs */
};

static void score_free(void *ud)
{
    struct score *sc = ud;
    free(sc->len);
    free(sc->score);
    cJSON_Delete(sc->body);
    free(sc);
}

/* Rerank results, best first (index order among equals, as a stable sort). */
static size_t *ranked(const struct score *sc)
{
    size_t *o = malloc((sc->n ? sc->n : 1) * sizeof *o);
    if (!o) return NULL;
    for (size_t i = 0; i < sc->n; i++) o[i] = i;
    for (size_t i = 1; i < sc->n; i++) { /* insertion sort: stable, n is bounded */
        size_t k = o[i], j = i;
        while (j > 0 && sc->score[o[j - 1]] < sc->score[k]) {
            o[j] = o[j - 1];
            j--;
        }
        o[j] = k;
    }
    return o;
}

static void rerank_answer(struct kvg_buf *b, const struct score *sc, size_t tokens)
{
    size_t *o = ranked(sc), top = sc->top_n && sc->top_n < sc->n ? sc->top_n : sc->n;
    int llama = sc->flavor == KVG_SIMSRV_FLAVOR_LLAMACPP;
    if (llama)
        kvg_buf_append_str(b, "{\"model\":");
    else
        kvg_buf_printf(b, "{\"id\":\"%s\",\"model\":", sc->id);
    kvg_buf_append_json_str(b, sc->model, strlen(sc->model));
    if (!llama)
        kvg_buf_printf(b, ",\"usage\":{\"prompt_tokens\":%zu,\"total_tokens\":%zu}", tokens,
                       tokens);
    kvg_buf_append_str(b, llama ? ",\"object\":\"list\",\"results\":[" : ",\"results\":[");
    for (size_t k = 0; o && k < top; k++) {
        size_t i = o[k];
        kvg_buf_printf(b, "%s{\"index\":%zu,", k ? "," : "", i);
        if (!llama) {
            const cJSON *d = cJSON_GetArrayItem(sc->docs, (int)i);
            kvg_buf_append_str(b, "\"document\":{\"text\":");
            kvg_buf_append_json_str(b, d->valuestring, strlen(d->valuestring));
            kvg_buf_append_str(b, ",\"multi_modal\":null},");
        }
        kvg_buf_append_str(b, "\"relevance_score\":");
        kvg__simsrv_pyfloat(b, sc->score[i]);
        kvg_buf_append_str(b, "}");
    }
    kvg_buf_append_str(b, "]");
    if (llama)
        kvg_buf_printf(b, ",\"usage\":{\"prompt_tokens\":%zu,\"total_tokens\":%zu}", tokens,
                       tokens);
    kvg_buf_append_str(b, "}");
    free(o);
}

static void score_answer(struct kvg_http_req *req, void *ud, const uint32_t *cached, size_t n)
{
    (void)cached;
    struct score *sc = ud;
    size_t tokens = 0;
    for (size_t i = 0; i < n; i++) tokens += sc->len[i];
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    if (sc->rerank) {
        rerank_answer(&b, sc, tokens);
    } else {
        kvg_buf_printf(&b, "{\"id\":\"%s\",\"object\":\"list\",\"created\":%lld,\"model\":", sc->id,
                       (long long)sc->created);
        kvg_buf_append_json_str(&b, sc->model, strlen(sc->model));
        kvg_buf_append_str(&b, ",\"data\":[");
        for (size_t i = 0; i < n; i++) {
            kvg_buf_printf(&b, "%s{\"index\":%zu,\"object\":\"score\",\"score\":", i ? "," : "", i);
            kvg__simsrv_pyfloat(&b, sc->score[i]);
            kvg_buf_append_str(&b, "}");
        }
        kvg_buf_printf(&b,
                       "],\"usage\":{\"prompt_tokens\":%zu,\"total_tokens\":%zu,"
                       "\"completion_tokens\":0,\"prompt_tokens_details\":null}}",
                       tokens, tokens);
    }
    kvg_http_res_send(req, 200,
                      sc->flavor == KVG_SIMSRV_FLAVOR_LLAMACPP ? "application/json; charset=utf-8"
                                                               : "application/json",
                      NULL, 0, b.data, b.len);
    kvg_buf_free(&b);
}

/* A side of the pairs: a string is a list of one; every item a string. */
static int side(struct kvg_simsrv_server *s, const cJSON *v, struct kvg_simsrv_inputs *in,
                char *msg, size_t msglen)
{
    if (cJSON_IsObject(v)) {
        snprintf(msg, msglen, "MultiModalParam is not supported for %s", s->o.model);
        return KVG_EPARSE;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, v) if (!cJSON_IsString(it))
    {
        snprintf(msg, msglen, "every text to score must be a string");
        return KVG_EPARSE;
    }
    if (!cJSON_IsString(v) && !cJSON_IsArray(v)) {
        snprintf(msg, msglen, "the texts to score must be a string or a list of strings");
        return KVG_EPARSE;
    }
    return kvg__simsrv_inputs_read(s, v, 1, in, msg, msglen);
}

/* The two sides of a score or rerank request, by the names vLLM accepts. */
static void sides(const cJSON *j, int rerank, const cJSON **a, const cJSON **b)
{
    static const char *const names[][2] = {
        {"data_1", "data_2"}, {"queries", "documents"}, {"queries", "items"}, {"text_1", "text_2"}};
    *a = *b = NULL;
    if (rerank) {
        *a = cJSON_GetObjectItemCaseSensitive(j, "query");
        *b = cJSON_GetObjectItemCaseSensitive(j, "documents");
        return;
    }
    for (size_t i = 0; i < 4 && !(*a && *b); i++) {
        *a = cJSON_GetObjectItemCaseSensitive(j, names[i][0]);
        *b = cJSON_GetObjectItemCaseSensitive(j, names[i][1]);
    }
}

/* Pairs the sides (1:1, 1:N or N:N, as vLLM's _validate_score_input_lens)
 * into one prompt each; sc's scores and lengths filled. */
static int pairs(struct kvg_simsrv_server *s, const struct kvg_simsrv_inputs *q,
                 const struct kvg_simsrv_inputs *d, struct score *sc, uint32_t **ids, char *msg,
                 size_t msglen)
{
    if (q->n > 1 && q->n != d->n) {
        snprintf(msg, msglen, "Input lengths must be either 1:1, 1:N or N:N");
        return KVG_EPARSE;
    }
    float *eq = malloc(s->o.embedding_dim * sizeof *eq),
          *ed = malloc(s->o.embedding_dim * sizeof *ed);
    int rc = eq && ed ? 0 : -ENOMEM;
    for (size_t i = 0; !rc && i < d->n; i++) {
        size_t k = q->n > 1 ? i : 0, n = q->len[k] + d->len[i];
        if (n > s->max_model_len) {
            snprintf(msg, msglen,
                     "This model's maximum context length is %u tokens. However, you requested "
                     "%zu tokens in the input for score. Please reduce the length of the input.",
                     s->max_model_len, n);
            rc = KVG_ETOOBIG;
        } else if (!(ids[i] = malloc(n * sizeof **ids))) {
            rc = -ENOMEM;
        } else {
            memcpy(ids[i], q->ids[k], q->len[k] * sizeof **ids);
            memcpy(ids[i] + q->len[k], d->ids[i], d->len[i] * sizeof **ids);
            sc->len[i] = n;
            kvg__simsrv_embed(q->ids[k], q->len[k], s->o.embedding_dim, eq);
            kvg__simsrv_embed(d->ids[i], d->len[i], s->o.embedding_dim, ed);
            sc->score[i] = kvg__simsrv_similarity(eq, ed, s->o.embedding_dim);
        }
    }
    if (rc == -ENOMEM) snprintf(msg, msglen, "out of memory");
    free(eq);
    free(ed);
    return rc;
}

/* Reads the request into sc and the pair prompts; -1 with the answer sent. */
static int read_score(struct kvg_simsrv_server *s, struct kvg_http_req *req, cJSON *j,
                      struct score *sc, uint32_t ***ids)
{
    char msg[512] = "";
    struct kvg_simsrv_inputs q = {.operation = "score"}, d = {.operation = "score"};
    const cJSON *a, *b, *top = cJSON_GetObjectItemCaseSensitive(j, "top_n");
    sides(j, sc->rerank, &a, &b);
    int rc = KVG_EPARSE;
    if (!a || !b)
        snprintf(msg, sizeof msg,
                 sc->rerank ? "'query' and 'documents' are required"
                            : "the texts to score are missing");
    else if (sc->rerank && !cJSON_IsString(a))
        snprintf(msg, sizeof msg, "'query' must be a string");
    else if (sc->rerank && !cJSON_IsArray(b))
        snprintf(msg, sizeof msg, "'documents' must be a list of strings");
    else if (top && !cJSON_IsNull(top) && (!cJSON_IsNumber(top) || top->valuedouble > 1e9))
        snprintf(msg, sizeof msg, "'top_n' must be an integer");
    else if (!(rc = side(s, a, &q, msg, sizeof msg)) && !(rc = side(s, b, &d, msg, sizeof msg)))
        rc = d.n > s->o.max_batch ? KVG_ETOOBIG : 0;
    if (rc == KVG_ETOOBIG && !msg[0])
        snprintf(msg, sizeof msg, "The batch has %zu pairs; this engine takes at most %u", d.n,
                 s->o.max_batch);
    if (!rc) {
        sc->n = d.n;
        sc->top_n = cJSON_IsNumber(top) && top->valuedouble > 0 ? (size_t)top->valuedouble : 0;
        sc->docs = (cJSON *)b;
        if (!(sc->len = calloc(d.n, sizeof *sc->len)) ||
            !(sc->score = calloc(d.n, sizeof *sc->score)) || !(*ids = calloc(d.n, sizeof **ids)))
            rc = -ENOMEM, snprintf(msg, sizeof msg, "out of memory");
        else
            rc = pairs(s, &q, &d, sc, *ids, msg, sizeof msg);
    }
    kvg__simsrv_inputs_free(&q);
    kvg__simsrv_inputs_free(&d);
    if (!rc) return 0;
    kvg__simsrv_pool_error(s, req, rc == -ENOMEM ? 500 : 400, msg);
    return -1;
}

void kvg__simsrv_score(struct kvg_simsrv_server *s, struct kvg_http_req *req, int rerank)
{
    char msg[512] = "";
    cJSON *j = cJSON_ParseWithLength(req->body.data ? req->body.data : "", req->body.len);
    struct score *sc = calloc(1, sizeof *sc);
    uint32_t **ids = NULL;
    struct kvg_simsrv_rank *rk = kvg__simsrv_pick_rank(s, req, j, msg, sizeof msg);
    if (!sc) {
        cJSON_Delete(j);
        kvg__simsrv_pool_error(s, req, 500, "out of memory");
        return;
    }
    sc->body = j;
    sc->rerank = rerank;
    sc->flavor = s->o.flavor;
    if (!rk || !cJSON_IsObject(j)) {
        kvg__simsrv_pool_error(s, req, 400, rk ? "the request body is not a JSON object" : msg);
        goto out;
    }
    if (kvg__simsrv_inject_fail(s, req)) goto out;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(j, "model");
    int lora = s->o.flavor == KVG_SIMSRV_FLAVOR_LLAMACPP
                   ? -1
                   : kvg__simsrv_model(s, model, msg, sizeof msg);
    if (lora == -2) {
        kvg__simsrv_pool_error(s, req, 404, msg);
        goto out;
    }
    if (read_score(s, req, j, sc, &ids)) goto out;
    char hex[33];
    kvg__simsrv_hex_id(s, hex);
    snprintf(sc->id, sizeof sc->id, "%s-%s", rerank ? "rerank" : "score", hex);
    snprintf(sc->model, sizeof sc->model, "%s",
             s->o.flavor == KVG_SIMSRV_FLAVOR_LLAMACPP && cJSON_IsString(model)
                 ? model->valuestring
                 : kvg__simsrv_model_name(s, lora));
    sc->created = (int64_t)kvg_wall_s();
    kvg__simsrv_group_run(s, req, rk, lora, ids, sc->len, sc->n, score_answer, sc, score_free);
    free(ids); /* the array: its prompts are the group's */
    return;
out:
    if (ids)
        for (size_t i = 0; i < sc->n; i++) free(ids[i]);
    free(ids);
    score_free(sc);
}
