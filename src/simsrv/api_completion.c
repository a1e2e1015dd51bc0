/* kvgate sim's /v1/chat/completions and /v1/completions: the request parsed
 * and checked as vLLM does (model, lengths, cache_salt, the PD and EPD
 * transfer fields), its prompt turned into token ids, and handed to the
 * engine (api.c writes the answer as the steps come). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "simsrv/simsrv.h"

static void bad_request(struct kvg_http_req *req, const char *msg)
{
    kvg_simsrv_error(req, 400, "BadRequestError", msg);
}

/* What is read from the body before the prompt; -1 and msg on a bad one. */
struct cparams {
    int64_t max_tokens, n, seed;
    char salt[256];
    struct kvg_simsrv_pd_params pd;
    struct kvg_simsrv_ec_req ec;
};

static int read_params(struct kvg_simsrv_server *s, const cJSON *j, struct cparams *p, char *msg,
                       size_t msglen)
{
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(j, "max_completion_tokens");
    const char *mt_key = mt && !cJSON_IsNull(mt) ? "max_completion_tokens" : "max_tokens";
    if (kvg__simsrv_get_uint(j, mt_key, -1, &p->max_tokens, msg, msglen) ||
        kvg__simsrv_get_uint(j, "n", 1, &p->n, msg, msglen) ||
        kvg__simsrv_get_uint(j, "seed", -1, &p->seed, msg, msglen))
        return -1;
    const cJSON *salt = cJSON_GetObjectItemCaseSensitive(j, "cache_salt");
    if (salt && !cJSON_IsNull(salt) && (!cJSON_IsString(salt) || !salt->valuestring[0])) {
        snprintf(msg, msglen, "'cache_salt' must be a non-empty string");
        return -1;
    }
    p->salt[0] = 0;
    if (cJSON_IsString(salt)) snprintf(p->salt, sizeof p->salt, "%s", salt->valuestring);
    if (kvg_simsrv_pd_parse(s, j, &p->pd, msg, msglen) ||
        kvg_simsrv_ec_parse(s, j, &p->ec, msg, msglen))
        return -1;
    if (p->n != 1) {
        snprintf(msg, msglen, "only n=1 is supported by the simulated engine");
        return -1;
    }
    return 0;
}

/* The prompt's token ids; -1 and msg when it has none or cannot be read. */
static int read_prompt(struct kvg_simsrv_server *s, struct kvg_http_req *req, const cJSON *j,
                       int chat, uint32_t **ids, size_t *nids, char *msg, size_t msglen)
{
    int rc;
    if (chat) {
        char *tb = kvg_simsrv_ec_text_body(j); /* images as placeholder texts */
        rc = kvg__simsrv_chat_ids(s, tb ? tb : req->body.data, tb ? strlen(tb) : req->body.len, ids,
                                  nids, msg, msglen);
        free(tb);
    } else {
        rc = kvg__simsrv_prompt_ids(s, cJSON_GetObjectItemCaseSensitive(j, "prompt"), 1, ids, nids,
                                    msg, msglen);
    }
    if (rc) {
        if (!msg[0]) snprintf(msg, msglen, "invalid request");
        return -1;
    }
    if (*nids == 0) {
        free(*ids);
        snprintf(msg, msglen, "the prompt is empty");
        return -1;
    }
    return 0;
}

/* Checks that answer before the prompt is read: the rank, the fault, the
 * body, the model, the flavor's own refusals. The lora index, or -2 when
 * answered; *rkp set. */
static int early_checks(struct kvg_simsrv_server *s, struct kvg_http_req *req, const cJSON *j,
                        int chat, struct kvg_simsrv_rank **rkp)
{
    char msg[512] = "";
    if (!(*rkp = kvg__simsrv_pick_rank(s, req, j, msg, sizeof msg))) {
        bad_request(req, msg);
        return -2;
    }
    if (kvg__simsrv_inject_fail(s, req)) return -2;
    if (!j || !cJSON_IsObject(j)) {
        bad_request(req, "the request body is not valid JSON");
        return -2;
    }
    int lora = kvg__simsrv_model(s, cJSON_GetObjectItemCaseSensitive(j, "model"), msg, sizeof msg);
    if (lora == -2) {
        kvg_simsrv_error(req, 404, "NotFoundError", msg);
        return -2;
    }
    if (chat && !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "messages"))) {
        bad_request(req, "'messages' must be a list");
        return -2;
    }
    if (s->o.flavor == KVG_SIMSRV_FLAVOR_LLAMACPP &&
        kvg__simsrv_llamacpp_refuses(j, chat, msg, sizeof msg)) {
        kvg__simsrv_llamacpp_error(req, 500, msg);
        return -2;
    }
    return lora;
}

void kvg__simsrv_completion(struct kvg_simsrv_server *s, struct kvg_http_req *req, int chat)
{
    char msg[512] = "";
    cJSON *j = cJSON_ParseWithLength(req->body.data ? req->body.data : "", req->body.len);
    struct kvg_simsrv_rank *rk = NULL;
    int lora = early_checks(s, req, j, chat, &rk);
    if (lora == -2) goto out;
    if (s->o.role == KVG_SIMSRV_ROLE_ENCODE) { /* an encoder-only engine (simsrv/encode.c) */
        kvg_simsrv_ec_encode(s, req, j, chat);
        goto out;
    }
    struct cparams p;
    uint32_t *ids = NULL;
    size_t nids = 0;
    if (read_params(s, j, &p, msg, sizeof msg) ||
        read_prompt(s, req, j, chat, &ids, &nids, msg, sizeof msg)) {
        bad_request(req, msg);
        goto out;
    }
    if (p.pd.bootstrap_prefill) p.max_tokens = 1; /* SGLang's prefill computes the first token */
    if (kvg__simsrv_fit(s, nids, &p.max_tokens, msg, sizeof msg)) {
        free(ids);
        bad_request(req, msg);
        goto out;
    }
    char rid[64];
    snprintf(rid, sizeof rid, "%s-%016llx", chat ? "chatcmpl" : "cmpl",
             (unsigned long long)kvg_rng_next(&s->rng));
    const cJSON *so = cJSON_GetObjectItemCaseSensitive(j, "stream_options");
    struct kvg_simsrv_gen g = {
        .req = req,
        .rk = rk,
        .lora = lora,
        .chat = chat,
        .stream = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "stream")),
        .include_usage = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(so, "include_usage")),
        .ids = ids,
        .nids = nids,
        .max_tokens = (uint32_t)p.max_tokens,
        .ignore_eos = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "ignore_eos")),
        .seed = p.seed,
        .salt = p.salt[0] ? p.salt : NULL,
        .rid = rid,
    };
    struct sim_req *r = kvg__simsrv_req_new(s, &g);
    if (!r) {
        kvg_simsrv_error(req, 500, "InternalServerError", "out of memory");
        goto out;
    }
    r->pd = p.pd;
    r->ec = p.ec;
    r->pending.hold_blocks = p.pd.do_remote_decode || p.pd.bootstrap_prefill;
    kvg__simsrv_req_start(r);
out:
    cJSON_Delete(j);
}
