/* Requests kvgate answers itself from the served model's tokenizer and chat
 * template, with no engine call: Anthropic's count_tokens, vLLM's /tokenize
 * and /detokenize. The tokens are those routing computes (route_input.c),
 * so a count here is the engine's usage.input_tokens for the same body. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "proxy/proxy_int.h"
#include "tokenizer/tokenizer.h"

int kvg__proxy_local_ok(const struct proxy_req *pr)
{
    const struct kvg_proxy *px = pr->pl->px;
    const struct kvg_rinput_tokenizer *rt = pr->pm ? &pr->pm->rt : &px->rt;
    int exact = pr->pm ? pr->pm->tokenizer_exact : px->tokenizer_exact;
    if (!exact || !rt->tok) return 0;
    return pr->route != KVG_API_COUNT_TOKENS || rt->chat;
}

static void send_doc(struct proxy_req *pr, const struct kvg_buf *b)
{
    struct kvg_http_header h[1] = {
        {KVG_STR("x-request-id"), {pr->request_id, strlen(pr->request_id)}}};
    struct kvg_http_req *req = pr->req;
    pr->req = NULL;
    pr->ttfb_ns = kvg_now_ns();
    kvg_http_res_send(req, 200, "application/json", h, 1, b->data, b->len);
    kvg__proxy_finish(pr, 200);
}

/* {"tokens": [ids]} -> {"prompt": text}, as vLLM's /detokenize. */
static void detokenize(struct proxy_req *pr, struct kvg_buf *b)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(pr->ri.json, "tokens");
    if (!cJSON_IsArray(t)) {
        kvg__proxy_error(pr, 400, NULL, "invalid_type", "'tokens' must be an array of token ids",
                         "tokens", NULL, 0);
        return;
    }
    size_t n = (size_t)cJSON_GetArraySize(t), k = 0;
    uint32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids) {
        kvg__proxy_client_error(pr, 500, "out_of_memory", "out of memory");
        return;
    }
    const struct kvg_tok *tok = pr->pm ? pr->pm->rt.tok : pr->pl->px->rt.tok;
    size_t vocab = kvg_tok_vocab_size(tok);
    const cJSON *it;
    cJSON_ArrayForEach(it, t)
    {
        if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble >= (double)vocab ||
            it->valuedouble != (double)(uint32_t)it->valuedouble) {
            free(ids);
            kvg__proxy_error(pr, 400, NULL, "invalid_value",
                             "'tokens' must hold token ids of the model's vocabulary", "tokens",
                             NULL, 0);
            return;
        }
        ids[k++] = (uint32_t)it->valuedouble;
    }
    char *text = NULL;
    size_t len = 0;
    int rc = kvg_tok_decode(tok, ids, k, 0, &text, &len);
    free(ids);
    if (rc) {
        kvg__proxy_client_error(pr, 500, "detokenize_failed", kvg_strerror(rc));
        return;
    }
    kvg_buf_append_str(b, "{\"prompt\":");
    kvg_buf_append_json_str(b, text, len);
    kvg_buf_append_str(b, "}");
    free(text);
    send_doc(pr, b);
}

void kvg__proxy_local_answer(struct proxy_req *pr)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    if (pr->route == KVG_API_DETOKENIZE) {
        detokenize(pr, &b);
        kvg_buf_free(&b);
        return;
    }
    if (!pr->ri.ids) {
        char msg[200];
        snprintf(msg, sizeof msg, "cannot tokenize the request: %s",
                 kvg_strerror(pr->ri.tokenize_error ? pr->ri.tokenize_error : KVG_EPARSE));
        kvg__proxy_client_error(pr, 400, "invalid_request", msg);
        kvg_buf_free(&b);
        return;
    }
    if (pr->route == KVG_API_COUNT_TOKENS) {
        kvg_buf_printf(&b, "{\"input_tokens\":%zu}", pr->ri.nids);
    } else { /* vLLM's /tokenize */
        uint32_t mml = kvg_pool_max_model_len(pr->pl->px->pool, pr->ri.model, pr->ri.model_len);
        kvg_buf_printf(&b, "{\"count\":%zu,\"max_model_len\":%u,\"tokens\":[", pr->ri.nids, mml);
        for (size_t i = 0; i < pr->ri.nids; i++)
            kvg_buf_printf(&b, i ? ",%u" : "%u", pr->ri.ids[i]);
        kvg_buf_append_str(&b, "],\"token_strs\":null}");
    }
    send_doc(pr, &b);
    kvg_buf_free(&b);
}
