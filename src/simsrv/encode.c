/* kvgate sim in the encode stage of EPD disaggregation (the router's side is
 * pd/encode.c).
 *
 * Media: an image part of a chat message (type image_url, input_image,
 * image_embeds or image_pil) is one item; its mm_hash is FNV-1a 64 of its
 * URL (or of the part's JSON when it has none), printed as 16 hex digits:
 * the same image gives the same hash on every engine, as vLLM's content
 * hash does. Engines that prefill render an image as the placeholder text
 * "<image:HASH>" (its tokens stand for the image's).
 *
 * Encode role (--role encode): a completion with media is encoded, one item
 * after the other on the engine's one encoder queue, each taking the
 * profile's t_encode_image (tiny 5 ms, the Qwen3 profiles 31 ms, instant
 * 0; engine time, so --speed scales it): deterministic, and later requests
 * queue behind earlier ones. The embeddings stay in the encoder's cache for
 * --kv-hold-timeout-secs. A text-only completion is refused (400): an
 * encoder-only engine has nothing to do with it.
 *
 * vLLM's EPD (the router drives the stage): the encoder answers the
 * completion (one token, finish length) with
 *   ec_transfer_params {remote_engine_id, remote_host, remote_port,
 *                       remote_request_id, mm_hashes: [...], tp_size}
 * remote_port being its --side-channel-port (as vLLM's NIXL side channel).
 * The reference does not spell out vLLM's field list for the EC connector;
 * this shape follows the NIXL kv_transfer_params the same connectors use.
 * A prefill given those params reads the embeddings of its own request's
 * items (by their mm_hash) from that encoder over the side channel (POST
 * /v1/ec/read), a real loopback call, before it runs; an encoder that does
 * not hold them (expired, restarted: another engine id) fails the request
 * the way vLLM fails a load: a 500.
 *
 * SGLang's EPD: a prefill started with --encoder-urls URL[,URL] calls an
 * encoder itself (round robin, POST /encode {request_id, mm_hashes}) for a
 * request with media, and runs once it answers; the router routes the pair
 * as without EPD. In SGLang the encoder pushes the embeddings to the
 * prefill; the call's answer stands for that push.
 *
 * Text-only requests never touch an encoder. GET /debug/ec on every engine
 * says what it did (requests encoded, items, params received, reads). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/hash.h"
#include "base/log.h"
#include "net/http_client.h"
#include "simsrv/simsrv.h"

#define EC_CACHE_CAP 4096
#define EC_MAX_ENCODERS 8

struct ec_entry {
    uint64_t hash;
    double expires; /* engine time */
};

/* An encode in the queue: an HTTP request waiting for its items. */
struct ec_job {
    struct kvg_simsrv_ec *ec;
    struct kvg_http_req *req;
    uv_timer_t timer;
    int sglang; /* POST /encode: the answer is SGLang's */
    int chat;
    struct kvg_simsrv_ec_req items;
    uint32_t prompt_tokens;
    double secs;
    char rid[48];
};

struct kvg_simsrv_ec {
    struct kvg_simsrv_server *s;
    struct ec_entry cache[EC_CACHE_CAP]; /* a ring: the oldest entries go first */
    size_t ncache, next;
    double busy_until; /* engine time the encoder queue is free */
    struct kvg_http_client *cl;
    char encoders[EC_MAX_ENCODERS][256];
    int nencoders, rr;
    /* GET /debug/ec */
    uint64_t encode_requests, encode_items, params_received, reads_ok, reads_failed;
    uint64_t encoder_calls, encoder_calls_failed, fetches_ok, fetches_failed;
    uint32_t encoding; /* jobs queued or running */
};

/* ------------------------------------------------------------ media */

static int is_media(const cJSON *p)
{
    static const char *types[] = {"image_url", "input_image", "image_embeds", "image_pil"};
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(p, "type");
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (cJSON_IsString(t) && !strcmp(t->valuestring, types[i])) return 1;
        if (!t && cJSON_GetObjectItemCaseSensitive(p, types[i])) return 1;
    }
    return 0;
}

/* The item's hash: of its URL string (image_url.url, image_url, ...), else
 * of the part as printed. */
static uint64_t media_hash(const cJSON *p)
{
    static const char *keys[] = {"image_url", "input_image", "image_embeds", "image_pil"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, keys[i]);
        if (cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "url");
        if (cJSON_IsString(v))
            return kvg_hash_fnv1a64_str(KVG_HASH_FNV1A64_SEED_SHORT, v->valuestring);
    }
    char *s = cJSON_PrintUnformatted(p);
    uint64_t h = s ? kvg_hash_fnv1a64_str(KVG_HASH_FNV1A64_SEED_SHORT, s) : 0;
    free(s);
    return h;
}

/* Calls fn on every media part of the messages; the count. */
static uint32_t each_media(const cJSON *j, void (*fn)(cJSON *part, void *ud), void *ud)
{
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(j, "messages");
    uint32_t n = 0;
    const cJSON *m;
    cJSON *p;
    cJSON_ArrayForEach(m, msgs)
    {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
        if (!cJSON_IsArray(c)) continue;
        cJSON_ArrayForEach(p, c) if (cJSON_IsObject(p) && is_media(p))
        {
            if (fn) fn(p, ud);
            n++;
        }
    }
    return n;
}

static void collect(cJSON *part, void *ud)
{
    struct kvg_simsrv_ec_req *e = ud;
    if (e->n < KVG_SIMSRV_MAX_MEDIA) e->hash[e->n] = media_hash(part);
    e->n++;
}

static void to_text(cJSON *part, void *ud)
{
    (void)ud;
    char t[40];
    snprintf(t, sizeof t, "<image:%016llx>", (unsigned long long)media_hash(part));
    while (part->child) cJSON_Delete(cJSON_DetachItemViaPointer(part, part->child));
    cJSON_AddStringToObject(part, "type", "text");
    cJSON_AddStringToObject(part, "text", t);
}

char *kvg_simsrv_ec_text_body(const cJSON *j)
{
    if (!each_media(j, NULL, NULL)) return NULL;
    cJSON *d = cJSON_Duplicate(j, 1);
    if (!d) return NULL;
    each_media(d, to_text, NULL);
    char *s = cJSON_PrintUnformatted(d);
    cJSON_Delete(d);
    return s;
}

int kvg_simsrv_ec_parse(struct kvg_simsrv_server *s, const cJSON *j, struct kvg_simsrv_ec_req *out,
                        char *msg, size_t msglen)
{
    memset(out, 0, sizeof *out);
    each_media(j, collect, out);
    if (out->n > KVG_SIMSRV_MAX_MEDIA) {
        snprintf(msg, msglen, "at most %d images per request", KVG_SIMSRV_MAX_MEDIA);
        return -1;
    }
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "ec_transfer_params");
    if (!p || cJSON_IsNull(p)) return 0;
    if (s->ec) s->ec->params_received++;
    if (!cJSON_IsObject(p)) {
        snprintf(msg, msglen, "'ec_transfer_params' must be an object");
        return -1;
    }
    if (s->o.role == KVG_SIMSRV_ROLE_DECODE) return 0; /* a decode has no use for embeddings */
    const cJSON *eid = cJSON_GetObjectItemCaseSensitive(p, "remote_engine_id");
    const cJSON *host = cJSON_GetObjectItemCaseSensitive(p, "remote_host");
    const cJSON *port = cJSON_GetObjectItemCaseSensitive(p, "remote_port");
    if (!cJSON_IsString(eid) || !cJSON_IsString(host) || !cJSON_IsNumber(port) ||
        port->valuedouble < 1 || port->valuedouble > 65535) {
        snprintf(msg, msglen,
                 "ec_transfer_params need remote_engine_id, remote_host and remote_port");
        return -1;
    }
    out->has_params = 1;
    snprintf(out->remote_engine_id, sizeof out->remote_engine_id, "%s", eid->valuestring);
    snprintf(out->remote_host, sizeof out->remote_host, "%s", host->valuestring);
    out->remote_port = (int)port->valuedouble;
    return 0;
}

/* ------------------------------------------------------------ the encoder cache */

static void cache_put(struct kvg_simsrv_ec *ec, uint64_t hash, double expires)
{
    for (size_t i = 0; i < ec->ncache; i++)
        if (ec->cache[i].hash == hash) {
            ec->cache[i].expires = expires;
            return;
        }
    ec->cache[ec->next] = (struct ec_entry){hash, expires};
    ec->next = (ec->next + 1) % EC_CACHE_CAP;
    if (ec->ncache < EC_CACHE_CAP) ec->ncache++;
}

static int cache_has(const struct kvg_simsrv_ec *ec, uint64_t hash, double now)
{
    for (size_t i = 0; i < ec->ncache; i++)
        if (ec->cache[i].hash == hash) return ec->cache[i].expires > now;
    return 0;
}

/* ------------------------------------------------------------ encoding */

static void job_closed(uv_handle_t *h)
{
    free(h->data);
}

static void job_answer(struct ec_job *jb)
{
    struct kvg_simsrv_ec *ec = jb->ec;
    struct kvg_simsrv_server *s = ec->s;
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    if (jb->sglang) {
        kvg_buf_append_str(&b, "{\"mm_hashes\":[");
    } else {
        kvg_buf_printf(&b, "{\"id\":\"%s\",\"object\":\"%s\",\"created\":%lld,\"model\":", jb->rid,
                       jb->chat ? "chat.completion" : "text_completion",
                       (long long)s->started_wall);
        kvg_buf_append_json_str(&b, s->o.model, strlen(s->o.model));
        kvg_buf_append_str(&b, jb->chat ? ",\"choices\":[{\"index\":0,\"message\":{\"role\":"
                                          "\"assistant\",\"content\":\"\"},"
                                          "\"finish_reason\":\"length\"}]"
                                        : ",\"choices\":[{\"index\":0,\"text\":\"\","
                                          "\"finish_reason\":\"length\"}]");
        kvg_buf_printf(&b,
                       ",\"usage\":{\"prompt_tokens\":%u,\"completion_tokens\":0,"
                       "\"total_tokens\":%u},\"ec_transfer_params\":{\"remote_engine_id\":",
                       jb->prompt_tokens, jb->prompt_tokens);
        const char *eid = kvg_simsrv_pd_engine_id(s);
        kvg_buf_append_json_str(&b, eid, strlen(eid));
        kvg_buf_append_str(&b, ",\"remote_host\":");
        kvg_buf_append_json_str(&b, s->o.host, strlen(s->o.host));
        kvg_buf_printf(&b,
                       ",\"remote_port\":%d,\"remote_request_id\":\"%s\",\"tp_size\":1,"
                       "\"mm_hashes\":[",
                       kvg_simsrv_pd_side_port(s), jb->rid);
    }
    for (uint32_t i = 0; i < jb->items.n; i++)
        kvg_buf_printf(&b, "%s\"%016llx\"", i ? "," : "", (unsigned long long)jb->items.hash[i]);
    if (jb->sglang)
        kvg_buf_printf(&b, "],\"seconds\":%.6f}", jb->secs);
    else
        kvg_buf_append_str(&b, "]}}");
    kvg_http_res_send(jb->req, 200, "application/json", NULL, 0, b.data, b.len);
    kvg_buf_free(&b);
}

static void on_encoded(uv_timer_t *t)
{
    struct ec_job *jb = t->data;
    struct kvg_simsrv_ec *ec = jb->ec;
    double now = kvg_simsrv_now(ec->s);
    for (uint32_t i = 0; i < jb->items.n; i++)
        cache_put(ec, jb->items.hash[i], now + ec->s->o.kv_hold_timeout_s);
    jb->req->on_abort = NULL;
    ec->encoding--;
    job_answer(jb);
    uv_close((uv_handle_t *)&jb->timer, job_closed);
}

/* The client (router or prefill) left: vLLM drops the request. */
static void on_job_abort(struct kvg_http_req *req, void *ud)
{
    (void)req;
    struct ec_job *jb = ud;
    jb->ec->encoding--;
    uv_timer_stop(&jb->timer);
    uv_close((uv_handle_t *)&jb->timer, job_closed);
}

/* Queues jb behind the encoder's earlier work. */
static void job_start(struct ec_job *jb)
{
    struct kvg_simsrv_ec *ec = jb->ec;
    struct kvg_simsrv_server *s = ec->s;
    double now = kvg_simsrv_now(s);
    double start = ec->busy_until > now ? ec->busy_until : now;
    jb->secs = jb->items.n * s->t_encode_image;
    ec->busy_until = start + jb->secs;
    ec->encode_requests++;
    ec->encode_items += jb->items.n;
    ec->encoding++;
    uv_timer_init(s->loop, &jb->timer);
    jb->timer.data = jb;
    jb->req->ud = jb;
    jb->req->on_abort = on_job_abort;
    uv_timer_start(&jb->timer, on_encoded,
                   (uint64_t)ceil((ec->busy_until - now) / s->o.speed * 1e3), 0);
}

void kvg_simsrv_ec_encode(struct kvg_simsrv_server *s, struct kvg_http_req *req, const cJSON *j,
                          int chat)
{
    struct ec_job *jb = calloc(1, sizeof *jb);
    char msg[128] = "";
    if (!jb || !s->ec) {
        free(jb);
        kvg_simsrv_error(req, 500, "InternalServerError", "out of memory");
        return;
    }
    if (kvg_simsrv_ec_parse(s, j, &jb->items, msg, sizeof msg) || !jb->items.n) {
        free(jb);
        kvg_simsrv_error(req, 400, "BadRequestError",
                         msg[0] ? msg
                                : "this engine only encodes (--role encode): the request has no "
                                  "image to encode");
        return;
    }
    jb->ec = s->ec;
    jb->req = req;
    jb->chat = chat;
    jb->prompt_tokens = jb->items.n;
    snprintf(jb->rid, sizeof jb->rid, "%s-%016llx", chat ? "chatcmpl" : "cmpl",
             (unsigned long long)kvg_rng_next(&s->rng));
    job_start(jb);
}

void kvg_simsrv_ec_encode_call(struct kvg_simsrv_server *s, struct kvg_http_req *req)
{
    cJSON *j = cJSON_ParseWithLength(req->body.data ? req->body.data : "", req->body.len);
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(j, "mm_hashes");
    struct ec_job *jb = s->ec && s->o.role == KVG_SIMSRV_ROLE_ENCODE ? calloc(1, sizeof *jb) : NULL;
    const cJSON *it;
    int ok = jb && cJSON_IsArray(h) && cJSON_GetArraySize(h) > 0 &&
             cJSON_GetArraySize(h) <= KVG_SIMSRV_MAX_MEDIA;
    const cJSON *list = ok ? h : NULL;
    cJSON_ArrayForEach(it, list)
    {
        char *end = NULL;
        if (!cJSON_IsString(it)) {
            ok = 0;
            break;
        }
        jb->items.hash[jb->items.n++] = strtoull(it->valuestring, &end, 16);
        if (!end || *end || end == it->valuestring) ok = 0;
    }
    cJSON_Delete(j);
    if (!ok) {
        free(jb);
        kvg_simsrv_error(req, s->o.role == KVG_SIMSRV_ROLE_ENCODE ? 400 : 404,
                         s->o.role == KVG_SIMSRV_ROLE_ENCODE ? "BadRequestError" : "NotFoundError",
                         s->o.role == KVG_SIMSRV_ROLE_ENCODE
                             ? "/encode needs mm_hashes: 1 to 16 hex strings"
                             : "not an encoder (--role encode)");
        return;
    }
    jb->ec = s->ec;
    jb->req = req;
    jb->sglang = 1;
    job_start(jb);
}

void kvg_simsrv_ec_read(struct kvg_simsrv_server *s, struct kvg_http_req *req)
{
    struct kvg_simsrv_ec *ec = s->ec;
    cJSON *j = cJSON_ParseWithLength(req->body.data ? req->body.data : "", req->body.len);
    const cJSON *eid = cJSON_GetObjectItemCaseSensitive(j, "remote_engine_id");
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(j, "mm_hashes");
    const char *me = kvg_simsrv_pd_engine_id(s);
    char msg[200] = "";
    int status = 200;
    double now = kvg_simsrv_now(s);
    const cJSON *it;
    size_t n = 0;
    if (!ec || s->o.role != KVG_SIMSRV_ROLE_ENCODE) {
        status = 404, snprintf(msg, sizeof msg, "not an encoder");
    } else if (!cJSON_IsString(eid) || !cJSON_IsArray(h)) {
        status = 400, snprintf(msg, sizeof msg, "remote_engine_id and mm_hashes are required");
    } else if (strcmp(eid->valuestring, me)) {
        status = 409,
        snprintf(msg, sizeof msg, "remote engine id mismatch: asked %.64s, this encoder is %s",
                 eid->valuestring, me);
    } else {
        cJSON_ArrayForEach(it, h)
        {
            uint64_t v = cJSON_IsString(it) ? strtoull(it->valuestring, NULL, 16) : 0;
            if (!cJSON_IsString(it) || !cache_has(ec, v, now)) {
                status = 404;
                snprintf(msg, sizeof msg,
                         "no encoder cache entry for mm_hash %.20s (expired or never encoded)",
                         cJSON_IsString(it) ? it->valuestring : "?");
                break;
            }
            n++;
        }
    }
    cJSON_Delete(j);
    if (ec) status == 200 ? ec->reads_ok++ : ec->reads_failed++;
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    if (status == 200) {
        kvg_buf_printf(&b, "{\"items\":%zu}", n);
    } else {
        kvg_buf_append_str(&b, "{\"error\":");
        kvg_buf_append_json_str(&b, msg, strlen(msg));
        kvg_buf_append_str(&b, "}");
    }
    kvg_http_res_send(req, status, "application/json", NULL, 0, b.data, b.len);
    kvg_buf_free(&b);
}

/* ------------------------------------------------------------ fetch (prefill) */

int kvg_simsrv_ec_wanted(const struct sim_req *r)
{
    const struct kvg_simsrv_ec *ec = r->s->ec;
    if (!r->ec.n || !ec || r->s->o.role == KVG_SIMSRV_ROLE_DECODE) return 0;
    return r->ec.has_params || ec->nencoders > 0;
}

static void fetch_head(void *ud, int status, const struct kvg_http_header *h, size_t n)
{
    (void)h;
    (void)n;
    ((struct sim_req *)ud)->pull_status = status;
}

static void fetch_body(void *ud, const char *p, size_t n)
{
    struct sim_req *r = ud;
    size_t k = KVG_MIN(n, sizeof r->pull_body - 1 - r->pull_len);
    memcpy(r->pull_body + r->pull_len, p, k);
    r->pull_len += k;
    r->pull_body[r->pull_len] = 0;
}

static void fetch_failed(struct sim_req *r, const char *why)
{
    struct kvg_simsrv_ec *ec = r->s->ec;
    char msg[640];
    snprintf(msg, sizeof msg, "encoder cache transfer for request %s failed: %s", r->rid, why);
    KVG_WARN("sim ec: %s", msg);
    ec->fetches_failed++;
    if (r->ec.has_params)
        ec->reads_failed++;
    else
        ec->encoder_calls_failed++;
    if (r->pd.bootstrap_prefill) kvg_simsrv_pd_room_aborted(r); /* its decode waits no longer */
    kvg_simsrv_fail(r, msg);
}

static void fetch_done(void *ud, int err)
{
    struct sim_req *r = ud;
    r->pull = NULL;
    if (err) {
        fetch_failed(r, kvg_strerror(err));
        return;
    }
    if (r->pull_status != 200) {
        cJSON *j = cJSON_Parse(r->pull_body);
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
        if (cJSON_IsObject(e)) e = cJSON_GetObjectItemCaseSensitive(e, "message");
        char why[400];
        snprintf(why, sizeof why, "%s",
                 cJSON_IsString(e) ? e->valuestring : "the encoder refused the read");
        cJSON_Delete(j);
        fetch_failed(r, why);
        return;
    }
    r->s->ec->fetches_ok++;
    if (r->ec.has_params)
        r->s->ec->reads_ok++;
    else
        r->s->ec->encoder_calls++;
    kvg_simsrv_run(r);
}

void kvg_simsrv_ec_fetch(struct sim_req *r)
{
    struct kvg_simsrv_server *s = r->s;
    struct kvg_simsrv_ec *ec = s->ec;
    char url[300];
    const char *path;
    if (r->ec.has_params) {
        snprintf(url, sizeof url, "http://%s:%d", r->ec.remote_host, r->ec.remote_port);
        path = "/v1/ec/read";
    } else {
        snprintf(url, sizeof url, "%s", ec->encoders[ec->rr++ % ec->nencoders]);
        path = "/encode";
    }
    struct kvg_http_target t;
    if (kvg_http_target_parse(url, &t)) {
        fetch_failed(r, "cannot resolve the encoder's address");
        return;
    }
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    kvg_buf_append_str(&b, "{\"request_id\":");
    kvg_buf_append_json_str(&b, r->rid, strlen(r->rid));
    if (r->ec.has_params) {
        kvg_buf_append_str(&b, ",\"remote_engine_id\":");
        kvg_buf_append_json_str(&b, r->ec.remote_engine_id, strlen(r->ec.remote_engine_id));
    }
    kvg_buf_append_str(&b, ",\"mm_hashes\":[");
    for (uint32_t i = 0; i < r->ec.n; i++)
        kvg_buf_printf(&b, "%s\"%016llx\"", i ? "," : "", (unsigned long long)r->ec.hash[i]);
    kvg_buf_append_str(&b, "]}");
    struct kvg_http_header h[1] = {{KVG_STR("content-type"), KVG_STR("application/json")}};
    static const struct kvg_http_call_cbs cbs = {fetch_head, fetch_body, fetch_done};
    struct kvg_http_call_opts o = {.connect_timeout_ms = 5000, .first_byte_timeout_ms = 300000};
    r->pull_status = 0;
    r->pull_len = 0;
    struct kvg_str p = {path, strlen(path)};
    int rc = kvg_http_call_start(ec->cl, &t, "POST", p, h, 1, b.data, b.len, &o, &cbs, r, &r->pull);
    kvg_buf_free(&b);
    if (rc) {
        r->pull = NULL;
        fetch_failed(r, kvg_strerror(rc));
    }
}

/* ------------------------------------------------------------ life */

void kvg_simsrv_ec_debug(struct kvg_simsrv_server *s, struct kvg_http_req *req)
{
    static const char *roles[] = {"both", "prefill", "decode", "encode"};
    const struct kvg_simsrv_ec *ec = s->ec;
    if (!ec) {
        kvg_simsrv_error(req, 503, "ServiceUnavailableError", "starting");
        return;
    }
    char body[700];
    int n =
        snprintf(body, sizeof body,
                 "{\"role\":\"%s\",\"encode_requests\":%llu,\"encode_items\":%llu,"
                 "\"cached_items\":%zu,\"ec_params_received\":%llu,\"ec_reads_ok\":%llu,"
                 "\"ec_reads_failed\":%llu,\"encoder_calls\":%llu,"
                 "\"encoder_calls_failed\":%llu,\"fetches_ok\":%llu,\"fetches_failed\":%llu,"
                 "\"encoders\":%d,\"encoding\":%u}",
                 roles[s->o.role], (unsigned long long)ec->encode_requests,
                 (unsigned long long)ec->encode_items, ec->ncache,
                 (unsigned long long)ec->params_received, (unsigned long long)ec->reads_ok,
                 (unsigned long long)ec->reads_failed, (unsigned long long)ec->encoder_calls,
                 (unsigned long long)ec->encoder_calls_failed, (unsigned long long)ec->fetches_ok,
                 (unsigned long long)ec->fetches_failed, ec->nencoders, ec->encoding);
    kvg_http_res_send(req, 200, "application/json", NULL, 0, body, (size_t)n);
}

int kvg_simsrv_ec_start(struct kvg_simsrv_server *s, char *err, size_t errlen)
{
    struct kvg_simsrv_ec *ec = calloc(1, sizeof *ec);
    if (!ec) return -ENOMEM;
    ec->s = s;
    for (const char *p = s->o.encoder_urls; *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        struct kvg_http_target t;
        char u[256];
        if (n >= sizeof u || ec->nencoders == EC_MAX_ENCODERS) {
            snprintf(err, errlen, "--encoder-urls: at most %d URLs under 256 bytes",
                     EC_MAX_ENCODERS);
            free(ec);
            return KVG_ECONFIG;
        }
        memcpy(u, p, n);
        u[n] = 0;
        if (n && kvg_http_target_parse(u, &t)) {
            snprintf(err, errlen, "--encoder-urls: '%s' is not an http:// URL", u);
            free(ec);
            return KVG_ECONFIG;
        }
        if (n) snprintf(ec->encoders[ec->nencoders++], sizeof ec->encoders[0], "%s", u);
        p += n + (e != NULL);
    }
    int rc = kvg_http_client_new(s->loop, NULL, &ec->cl);
    if (rc) {
        snprintf(err, errlen, "encoder client: %s", kvg_strerror(rc));
        free(ec);
        return rc;
    }
    s->ec = ec;
    return 0;
}

void kvg_simsrv_ec_stop(struct kvg_simsrv_server *s)
{
    if (!s->ec) return;
    kvg_http_client_close(s->ec->cl);
    free(s->ec);
    s->ec = NULL;
}
