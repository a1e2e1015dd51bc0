/* kvgate sim in a disaggregated deployment: the vLLM NixlConnector two-hop
 * protocol (the router's side is pd/pd.c).
 *
 * Prefill leg: a request with kv_transfer_params {do_remote_decode: true}
 * runs as usual (the router caps it at max_tokens 1); when it finishes
 * length-capped its blocks stay held in the engine and its answer carries
 * kv_transfer_params {do_remote_prefill: true, remote_engine_id,
 * remote_block_ids, remote_host, remote_port, remote_request_id, tp_size}.
 * The blocks are freed when a decode has read them, or after
 * --kv-hold-timeout-secs (vLLM's VLLM_NIXL_ABORT_REQUEST_TIMEOUT, 480 s).
 *
 * Decode leg: a request carrying those params pulls the blocks over a real
 * side channel (POST /v1/nixl/read on the prefill's --side-channel-port; the
 * real engine does a ZMQ handshake then NIXL reads, this stands for both).
 * The prefill answers after the transfer time, KV bytes / link bandwidth,
 * the link chosen by the two sims' --labels (same node, rack, zone, or
 * across zones). Then the decode computes only the last prompt token and
 * decodes. A pull that fails (blocks expired, prefill restarted: another
 * engine id, prefill gone mid-transfer) ends the request as vLLM's default
 * kv_load_failure_policy "fail" does (vLLM PR #34896): a 500, or an SSE
 * error event once the stream has started; "recompute" prefills locally.
 *
 * Under data parallelism (--dp-size N) every rank is its own engine, as in
 * vLLM: its own engine id ("{base}_dp{rank}") and its own side channel on
 * the side-channel port + rank (VLLM_NIXL_SIDE_CHANNEL_PORT + dp_rank); a
 * read on rank r's channel finds only the blocks rank r holds, so a decode
 * given another rank's params fails as a wrong NIXL peer would.
 *
 * SGLang's bootstrap protocol: the router sends the same
 * body, with bootstrap_host, bootstrap_port and bootstrap_room, to both
 * legs at once. The prefill (--bootstrap-port) computes the prompt and
 * holds its KV for the room; the decode asks the prefill's bootstrap port
 * for the room (POST /v1/bootstrap/read) and waits, bounded by
 * --bootstrap-timeout-secs, until the prefill has it, then the transfer
 * runs as above. A prefill that ends without the KV (its client gone)
 * fails the waiting decode at once, as does a prefill that dies. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "net/http_client.h"
#include "simsrv/simsrv.h"

struct held {
    struct kvg_simsrv_pd *pd;
    struct kvg_simsrv_rank *rk; /* the data-parallel rank whose engine holds the blocks */
    char rid[64];               /* the prefill's request id (remote_request_id), or "room:<r>" */
    int parked;                 /* a decode asked for a room whose prefill has not finished */
    char labels[128];           /* a parked read's labels */
    uint64_t engine_id;         /* the engine's id of the finished request */
    uint32_t tokens;            /* prompt tokens whose KV is held */
    uv_timer_t timer;           /* hold timeout, then the transfer */
    struct kvg_http_req *xfer;  /* the decode reading it, NULL before */
    char link[16];
    double secs;
    uint64_t bytes;
    struct held *next;
};

/* One rank's side channel: what its requests reach. */
struct side_ep {
    struct kvg_simsrv_pd *pd;
    int rank;
    char engine_id[64]; /* the base id, "_dp<rank>" appended under --dp-size */
    struct kvg_http_server *srv;
};

struct kvg_simsrv_pd {
    struct kvg_simsrv_server *s;
    char engine_id[40];
    struct side_ep side[KVG_SIMSRV_MAX_DP];
    struct kvg_http_server *boot;
    struct kvg_http_client *cl;
    struct held *held;
    uint32_t next_block;
};

/* ------------------------------------------------------------ held blocks */

static void held_closed(uv_handle_t *h)
{
    free(h->data);
}

/* Frees the held blocks and the entry. */
static void held_drop(struct held *h)
{
    struct kvg_simsrv_pd *pd = h->pd;
    for (struct held **p = &pd->held; *p; p = &(*p)->next)
        if (*p == h) {
            *p = h->next;
            break;
        }
    if (h->rk) kvg_sim_release(h->rk->engine, h->engine_id); /* a parked read holds none */
    uv_timer_stop(&h->timer);
    uv_close((uv_handle_t *)&h->timer, held_closed);
}

static void on_hold_expired(uv_timer_t *t)
{
    struct held *h = t->data;
    KVG_WARN("sim pd: releasing the KV blocks of %s: no decode read them within %.0f s", h->rid,
             h->pd->s->o.kv_hold_timeout_s);
    held_drop(h);
}

static struct held *held_find(struct kvg_simsrv_pd *pd, const char *rid)
{
    for (struct held *h = pd->held; h; h = h->next)
        if (!strcmp(h->rid, rid)) return h;
    return NULL;
}

static void on_xfer_done(uv_timer_t *t);
static void on_xfer_abort(struct kvg_http_req *req, void *ud);
static void boot_read(struct kvg_simsrv_pd *pd, struct kvg_http_req *req);

/* Serves req (a decode's read) from h after the transfer time over the link
 * named by the decode's labels. */
static void start_transfer(struct held *h, struct kvg_http_req *req, const char *labels)
{
    struct kvg_simsrv_server *s = h->pd->s;
    int l = kvg_sim_link_of(s->o.labels, labels);
    snprintf(h->link, sizeof h->link, "%s", kvg_sim_link_name(l));
    h->bytes = (uint64_t)h->tokens * s->kv_bytes_per_token;
    h->secs = (double)h->bytes / kvg_sim_link_bw(l) + s->o.kv_transfer_extra_s;
    h->xfer = req;
    req->ud = h;
    req->on_abort = on_xfer_abort;
    uv_timer_stop(&h->timer);
    uv_timer_start(&h->timer, on_xfer_done, (uint64_t)ceil(h->secs / s->o.speed * 1000.0), 0);
}

void kvg_simsrv_pd_prefill_done(struct sim_req *r, int length_capped, struct kvg_buf *b)
{
    struct kvg_simsrv_server *s = r->s;
    struct kvg_simsrv_pd *pd = s->pd;
    /* vLLM returns params only for a length-capped prefill; anything else
     * is not tracked and its blocks go at once. */
    struct held *h = length_capped && pd ? calloc(1, sizeof *h) : NULL;
    if (!h) {
        kvg_sim_release(r->rk->engine, r->id);
        return;
    }
    h->pd = pd;
    h->rk = r->rk;
    if (r->pd.bootstrap_prefill)
        snprintf(h->rid, sizeof h->rid, "room:%s", r->pd.room);
    else
        snprintf(h->rid, sizeof h->rid, "%s", r->rid);
    h->engine_id = r->id;
    h->tokens = r->prompt_len;
    struct held *waiting = held_find(pd, h->rid);
    uv_timer_init(s->loop, &h->timer);
    h->timer.data = h;
    uv_timer_start(&h->timer, on_hold_expired,
                   (uint64_t)ceil(s->o.kv_hold_timeout_s / s->o.speed * 1000.0), 0);
    h->next = pd->held;
    pd->held = h;
    if (waiting && waiting->parked) { /* the decode is already asking: serve it now */
        struct kvg_http_req *req = waiting->xfer;
        char labels[128];
        snprintf(labels, sizeof labels, "%s", waiting->labels);
        waiting->xfer = NULL;
        held_drop(waiting);
        start_transfer(h, req, labels);
    }
    if (r->pd.bootstrap_prefill || !b) return; /* SGLang's answer (or a stream) has no params */
    struct kvg_sim_metrics m;
    kvg_sim_get_metrics(r->rk->engine, &m);
    uint32_t nblocks = (r->prompt_len + m.block_size - 1) / m.block_size;
    kvg_buf_append_str(b, ",\"kv_transfer_params\":{\"do_remote_prefill\":true,"
                          "\"do_remote_decode\":false,\"remote_block_ids\":[");
    for (uint32_t i = 0; i < nblocks; i++)
        kvg_buf_printf(b, "%s%u", i ? "," : "", (pd->next_block + i) % m.num_blocks);
    pd->next_block += nblocks;
    const struct side_ep *ep = &pd->side[r->rk->rank];
    kvg_buf_printf(b, "],\"remote_engine_id\":\"%s\",\"remote_request_id\":\"%s\",", ep->engine_id,
                   r->rid);
    kvg_buf_append_str(b, "\"remote_host\":");
    kvg_buf_append_json_str(b, s->o.host, strlen(s->o.host));
    kvg_buf_printf(b, ",\"remote_port\":%d,\"tp_size\":1}",
                   ep->srv ? kvg_http_server_port(ep->srv) : 0);
}

/* ------------------------------------------------- side channel (prefill) */

static void side_error(struct kvg_http_req *req, int status, const char *msg)
{
    kvg__simsrv_send_wrapped(req, status, "{\"error\":", msg, "}");
}

static void on_xfer_done(uv_timer_t *t)
{
    struct held *h = t->data;
    struct kvg_http_req *req = h->xfer;
    req->on_abort = NULL;
    char body[256];
    int n = snprintf(body, sizeof body,
                     "{\"tokens\":%u,\"bytes\":%llu,\"seconds\":%.6f,\"link\":\"%s\"}", h->tokens,
                     (unsigned long long)h->bytes, h->secs, h->link);
    kvg_http_res_send(req, 200, "application/json", NULL, 0, body, (size_t)n);
    held_drop(h); /* read: vLLM frees a prefill's blocks on the decode's notification */
}

/* The decode went away mid-read: it would notify the prefill to free. */
static void on_xfer_abort(struct kvg_http_req *req, void *ud)
{
    (void)req;
    held_drop(ud);
}

static void side_handle(struct kvg_http_req *req, void *ud)
{
    struct side_ep *ep = ud;
    struct kvg_simsrv_pd *pd = ep->pd;
    if (kvg_str_eq(req->path, "/health")) {
        kvg_http_res_send(req, 200, NULL, NULL, 0, NULL, 0);
        return;
    }
    if (kvg_str_eq(req->path, "/v1/bootstrap/read") && !strcmp(req->method_name, "POST")) {
        boot_read(pd, req);
        return;
    }
    if (kvg_str_eq(req->path, "/v1/ec/read") && !strcmp(req->method_name, "POST")) {
        kvg_simsrv_ec_read(pd->s, req); /* an encoder's embeddings (simsrv/encode.c) */
        return;
    }
    if (!kvg_str_eq(req->path, "/v1/nixl/read") || strcmp(req->method_name, "POST")) {
        side_error(req, 404, "not found");
        return;
    }
    cJSON *j = cJSON_ParseWithLength(req->body.data ? req->body.data : "", req->body.len);
    const cJSON *eid = cJSON_GetObjectItemCaseSensitive(j, "remote_engine_id");
    const cJSON *rid = cJSON_GetObjectItemCaseSensitive(j, "remote_request_id");
    const cJSON *lab = cJSON_GetObjectItemCaseSensitive(j, "labels");
    char msg[256];
    if (!cJSON_IsString(eid) || !cJSON_IsString(rid)) {
        side_error(req, 400, "remote_engine_id and remote_request_id are required");
    } else if (strcmp(eid->valuestring, ep->engine_id)) {
        /* A restarted prefill (or another rank's channel): vLLM's
         * handshake finds another engine id. */
        snprintf(msg, sizeof msg, "remote engine id mismatch: asked %.64s, this engine is %s",
                 eid->valuestring, ep->engine_id);
        side_error(req, 409, msg);
    } else {
        struct held *h = held_find(pd, rid->valuestring);
        if (!h || h->xfer || !h->rk || h->rk->rank != ep->rank) {
            snprintf(msg, sizeof msg, "no KV blocks held for request %.64s (expired or freed)",
                     rid->valuestring);
            side_error(req, 404, msg);
        } else {
            start_transfer(h, req, cJSON_IsString(lab) ? lab->valuestring : "");
        }
    }
    cJSON_Delete(j);
}

/* A parked read whose room never got its KV. */
static void on_park_expired(uv_timer_t *t)
{
    struct held *h = t->data;
    struct kvg_http_req *req = h->xfer;
    h->xfer = NULL;
    req->on_abort = NULL;
    char msg[128];
    snprintf(msg, sizeof msg, "bootstrap room %.40s: no KV within %.3g s", h->rid + 5, h->secs);
    side_error(req, 408, msg);
    held_drop(h);
}

static void boot_read(struct kvg_simsrv_pd *pd, struct kvg_http_req *req)
{
    struct kvg_simsrv_server *s = pd->s;
    cJSON *j = cJSON_ParseWithLength(req->body.data ? req->body.data : "", req->body.len);
    const cJSON *room = cJSON_GetObjectItemCaseSensitive(j, "room");
    const cJSON *lab = cJSON_GetObjectItemCaseSensitive(j, "labels");
    const cJSON *to = cJSON_GetObjectItemCaseSensitive(j, "timeout_s");
    const char *labels = cJSON_IsString(lab) ? lab->valuestring : "";
    double wait_s =
        cJSON_IsNumber(to) && to->valuedouble >= 0 ? to->valuedouble : s->o.bootstrap_timeout_s;
    char key[64];
    if (!cJSON_IsString(room)) {
        side_error(req, 400, "room is required");
        cJSON_Delete(j);
        return;
    }
    snprintf(key, sizeof key, "room:%.40s", room->valuestring);
    struct held *h = held_find(pd, key);
    if (h && !h->parked && !h->xfer) {
        start_transfer(h, req, labels);
    } else if (h) {
        side_error(req, 409, "bootstrap room already being read");
    } else if ((h = calloc(1, sizeof *h))) { /* the prefill is still running: wait */
        h->pd = pd;
        h->parked = 1;
        snprintf(h->rid, sizeof h->rid, "%s", key);
        snprintf(h->labels, sizeof h->labels, "%s", labels);
        h->xfer = req;
        req->ud = h;
        req->on_abort = on_xfer_abort;
        uv_timer_init(s->loop, &h->timer);
        h->timer.data = h;
        h->secs = wait_s;
        uv_timer_start(&h->timer, on_park_expired, (uint64_t)ceil(wait_s / s->o.speed * 1000.0), 0);
        h->next = pd->held;
        pd->held = h;
    } else {
        side_error(req, 500, "out of memory");
    }
    cJSON_Delete(j);
}

void kvg_simsrv_pd_room_aborted(struct sim_req *r)
{
    struct kvg_simsrv_pd *pd = r->s->pd;
    char key[64];
    snprintf(key, sizeof key, "room:%s", r->pd.room);
    struct held *h = pd ? held_find(pd, key) : NULL;
    if (!h || !h->parked) return;
    struct kvg_http_req *req = h->xfer;
    h->xfer = NULL;
    req->on_abort = NULL;
    side_error(req, 410, "the prefill for this bootstrap room was aborted");
    held_drop(h);
}

/* ------------------------------------------------------------ pull (decode) */

static void pull_head(void *ud, int status, const struct kvg_http_header *h, size_t n)
{
    (void)h;
    (void)n;
    ((struct sim_req *)ud)->pull_status = status;
}

static void pull_body(void *ud, const char *p, size_t n)
{
    struct sim_req *r = ud;
    size_t k = KVG_MIN(n, sizeof r->pull_body - 1 - r->pull_len);
    memcpy(r->pull_body + r->pull_len, p, k);
    r->pull_len += k;
    r->pull_body[r->pull_len] = 0;
}

static void pull_failed(struct sim_req *r, const char *why)
{
    char msg[640];
    snprintf(msg, sizeof msg, "KV transfer from %s:%d failed for request %s: %s", r->pd.remote_host,
             r->pd.remote_port, r->pd.remote_request_id, why);
    KVG_WARN("sim pd: %s", msg);
    if (r->s->o.kv_load_fail)
        kvg_simsrv_fail(r, msg);
    else
        kvg_simsrv_submit(r, 0); /* "recompute": prefill here instead */
}

static void pull_done(void *ud, int err)
{
    struct sim_req *r = ud;
    r->pull = NULL;
    if (err) {
        pull_failed(r, kvg_strerror(err));
        return;
    }
    if (r->pull_status != 200) {
        cJSON *j = cJSON_Parse(r->pull_body);
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
        char why[400];
        snprintf(why, sizeof why, "%s",
                 cJSON_IsString(e) ? e->valuestring : "the prefill refused the read");
        cJSON_Delete(j);
        pull_failed(r, why);
        return;
    }
    cJSON *j = cJSON_Parse(r->pull_body);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "tokens");
    uint32_t tokens = cJSON_IsNumber(t) && t->valuedouble > 0 ? (uint32_t)t->valuedouble : 0;
    cJSON_Delete(j);
    kvg_simsrv_submit(r, KVG_MIN(tokens, r->pending.prompt_len));
}

void kvg_simsrv_pd_pull(struct sim_req *r)
{
    struct kvg_simsrv_server *s = r->s;
    struct kvg_simsrv_pd *pd = s->pd;
    int boot = r->pd.bootstrap_decode;
    char url[128];
    snprintf(url, sizeof url, "http://%s:%d", boot ? r->pd.bootstrap_host : r->pd.remote_host,
             boot ? r->pd.bootstrap_port : r->pd.remote_port);
    struct kvg_http_target t;
    if (!pd || kvg_http_target_parse(url, &t)) {
        pull_failed(r, "cannot resolve the prefill's side channel");
        return;
    }
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    struct kvg_http_header h[1] = {{KVG_STR("content-type"), KVG_STR("application/json")}};
    static const struct kvg_http_call_cbs cbs = {pull_head, pull_body, pull_done};
    if (boot) {
        /* The decode's own bound: the prefill parks the read that long. */
        kvg_buf_printf(&b, "{\"room\":\"%s\",\"timeout_s\":%.3f,\"labels\":", r->pd.room,
                       s->o.bootstrap_timeout_s);
        kvg_buf_append_json_str(&b, s->o.labels, strlen(s->o.labels));
        kvg_buf_append_str(&b, "}");
        /* Bounded by the prefill's answer or the bootstrap timeout, plus the transfer. */
        struct kvg_http_call_opts bo = {
            .connect_timeout_ms = 5000,
            .first_byte_timeout_ms =
                (uint32_t)((s->o.bootstrap_timeout_s + 60) / s->o.speed * 1000)};
        int rc = kvg_http_call_start(pd->cl, &t, "POST", KVG_STR("/v1/bootstrap/read"), h, 1,
                                     b.data, b.len, &bo, &cbs, r, &r->pull);
        kvg_buf_free(&b);
        if (rc) {
            r->pull = NULL;
            pull_failed(r, kvg_strerror(rc));
        }
        return;
    }
    kvg_buf_append_str(&b, "{\"remote_engine_id\":");
    kvg_buf_append_json_str(&b, r->pd.remote_engine_id, strlen(r->pd.remote_engine_id));
    kvg_buf_append_str(&b, ",\"remote_request_id\":");
    kvg_buf_append_json_str(&b, r->pd.remote_request_id, strlen(r->pd.remote_request_id));
    kvg_buf_printf(&b, ",\"engine_id\":\"%s\",\"tp_size\":1,\"labels\":", pd->engine_id);
    kvg_buf_append_json_str(&b, s->o.labels, strlen(s->o.labels));
    kvg_buf_append_str(&b, "}");
    struct kvg_http_call_opts o = {.connect_timeout_ms = 5000};
    int rc = kvg_http_call_start(pd->cl, &t, "POST", KVG_STR("/v1/nixl/read"), h, 1, b.data, b.len,
                                 &o, &cbs, r, &r->pull);
    kvg_buf_free(&b);
    if (rc) {
        r->pull = NULL;
        pull_failed(r, kvg_strerror(rc));
    }
}

void kvg_simsrv_pd_pull_abort(struct sim_req *r)
{
    if (r->pull) kvg_http_call_cancel(r->pull);
    r->pull = NULL;
}

/* ---------------------------------------------------------------- params */

static void copy_str(const cJSON *o, const char *key, char *out, size_t cap)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    out[0] = 0;
    if (cJSON_IsString(v)) snprintf(out, cap, "%s", v->valuestring);
}

int kvg_simsrv_pd_parse(struct kvg_simsrv_server *s, const cJSON *j,
                        struct kvg_simsrv_pd_params *out, char *msg, size_t msglen)
{
    memset(out, 0, sizeof *out);
    const cJSON *room = cJSON_GetObjectItemCaseSensitive(j, "bootstrap_room");
    if (room && !cJSON_IsNull(room) && s->o.role != KVG_SIMSRV_ROLE_BOTH) {
        const cJSON *host = cJSON_GetObjectItemCaseSensitive(j, "bootstrap_host");
        const cJSON *port = cJSON_GetObjectItemCaseSensitive(j, "bootstrap_port");
        if (!cJSON_IsNumber(room) || !cJSON_IsString(host) || !cJSON_IsNumber(port)) {
            snprintf(msg, msglen,
                     "bootstrap_room needs a number, bootstrap_host a string and bootstrap_port "
                     "a port");
            return -1;
        }
        /* A host, not a URL nor a URL@rank worker's name: the decode dials it
         * (SGLang with --dp-aware was seen to send such a name, which no
         * decode can dial). */
        if (!host->valuestring[0] || strpbrk(host->valuestring, "@/[] ") ||
            strlen(host->valuestring) >= sizeof out->bootstrap_host) {
            snprintf(msg, msglen, "bootstrap_host '%.200s' is not a host name or address",
                     host->valuestring);
            return -1;
        }
        snprintf(out->room, sizeof out->room, "%.0f", room->valuedouble);
        snprintf(out->bootstrap_host, sizeof out->bootstrap_host, "%s", host->valuestring);
        out->bootstrap_port = (int)port->valuedouble;
        out->bootstrap_prefill = s->o.role == KVG_SIMSRV_ROLE_PREFILL;
        out->bootstrap_decode = s->o.role == KVG_SIMSRV_ROLE_DECODE;
        return 0;
    }
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "kv_transfer_params");
    if (!p || cJSON_IsNull(p)) return 0;
    if (!cJSON_IsObject(p)) {
        snprintf(msg, msglen, "'kv_transfer_params' must be an object");
        return -1;
    }
    out->do_remote_decode = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "do_remote_decode"));
    out->do_remote_prefill = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "do_remote_prefill"));
    if (out->do_remote_decode && s->o.role == KVG_SIMSRV_ROLE_DECODE) {
        snprintf(msg, msglen,
                 "this engine is a KV consumer: it cannot prefill for a remote decode");
        return -1;
    }
    if (!out->do_remote_prefill) return 0;
    copy_str(p, "remote_engine_id", out->remote_engine_id, sizeof out->remote_engine_id);
    copy_str(p, "remote_request_id", out->remote_request_id, sizeof out->remote_request_id);
    copy_str(p, "remote_host", out->remote_host, sizeof out->remote_host);
    const cJSON *port = cJSON_GetObjectItemCaseSensitive(p, "remote_port");
    const cJSON *tp = cJSON_GetObjectItemCaseSensitive(p, "tp_size");
    const cJSON *blocks = cJSON_GetObjectItemCaseSensitive(p, "remote_block_ids");
    out->remote_port = cJSON_IsNumber(port) ? (int)port->valuedouble : 0;
    out->tp_size = cJSON_IsNumber(tp) ? (int)tp->valuedouble : 1;
    out->n_remote_blocks = cJSON_IsArray(blocks) ? (uint32_t)cJSON_GetArraySize(blocks) : 0;
    if (!out->remote_engine_id[0] || !out->remote_request_id[0] || !out->remote_host[0] ||
        out->remote_port <= 0 || out->remote_port > 65535) {
        snprintf(msg, msglen,
                 "kv_transfer_params with do_remote_prefill need remote_engine_id, "
                 "remote_request_id, remote_host and remote_port");
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- life */

const char *kvg_simsrv_pd_engine_id(const struct kvg_simsrv_server *s)
{
    return s->pd ? s->pd->engine_id : "";
}

int kvg_simsrv_pd_side_port(const struct kvg_simsrv_server *s)
{
    return s->pd && s->pd->side[0].srv ? kvg_http_server_port(s->pd->side[0].srv) : 0;
}

unsigned kvg_simsrv_pd_held(const struct kvg_simsrv_server *s, int rank)
{
    unsigned n = 0;
    for (const struct held *h = s->pd ? s->pd->held : NULL; h; h = h->next)
        n += h->rk && h->rk->rank == rank;
    return n;
}

/* Closes what kvg_simsrv_pd_start opened before failing, and frees pd. */
static void pd_abandon(struct kvg_simsrv_pd *pd)
{
    for (int r = 0; r < KVG_SIMSRV_MAX_DP; r++)
        if (pd->side[r].srv) kvg_http_server_close(pd->side[r].srv);
    kvg_http_client_close(pd->cl);
    free(pd);
}

int kvg_simsrv_pd_start(struct kvg_simsrv_server *s, char *err, size_t errlen)
{
    struct kvg_simsrv_pd *pd = calloc(1, sizeof *pd);
    if (!pd) return -ENOMEM;
    pd->s = s;
    /* A new id at every start: a decode sent to a restarted prefill sees it. */
    snprintf(pd->engine_id, sizeof pd->engine_id, "%016llx-%08llx",
             (unsigned long long)kvg_rng_next(&s->rng),
             (unsigned long long)(kvg_now_ns() & 0xffffffffu));
    int rc = kvg_http_client_new(s->loop, NULL, &pd->cl);
    if (rc) {
        snprintf(err, errlen, "side-channel client: %s", kvg_strerror(rc));
        free(pd);
        return rc;
    }
    int port = s->o.side_channel_port;
    for (int r = 0; r < s->ndp; r++) {
        struct side_ep *ep = &pd->side[r];
        ep->pd = pd;
        ep->rank = r;
        if (s->ndp > 1)
            snprintf(ep->engine_id, sizeof ep->engine_id, "%s_dp%d", pd->engine_id, r);
        else
            snprintf(ep->engine_id, sizeof ep->engine_id, "%s", pd->engine_id);
        if (port <= 0) continue;
        struct kvg_http_limits lim = {
            0}; /* kvg_http_limits_default leaves send_buffer_bytes unset */
        kvg_http_limits_default(&lim);
        rc = kvg_http_server_start(s->loop, s->o.host, port + r, KVG_HTTP_BIND_EXCLUSIVE, &lim,
                                   side_handle, ep, &ep->srv);
        if (rc) {
            snprintf(err, errlen, "cannot listen on the side channel of rank %d %s:%d: %s", r,
                     s->o.host, port + r, kvg_strerror(rc));
            ep->srv = NULL;
            pd_abandon(pd);
            return rc;
        }
    }
    if (s->o.bootstrap_port > 0) {
        struct kvg_http_limits lim = {
            0}; /* kvg_http_limits_default leaves send_buffer_bytes unset */
        kvg_http_limits_default(&lim);
        rc = kvg_http_server_start(s->loop, s->o.host, s->o.bootstrap_port, KVG_HTTP_BIND_EXCLUSIVE,
                                   &lim, side_handle, &pd->side[0], &pd->boot);
        if (rc) {
            snprintf(err, errlen, "cannot listen on the bootstrap port %s:%d: %s", s->o.host,
                     s->o.bootstrap_port, kvg_strerror(rc));
            pd_abandon(pd);
            return rc;
        }
    }
    s->pd = pd;
    return 0;
}

void kvg_simsrv_pd_stop(struct kvg_simsrv_server *s)
{
    struct kvg_simsrv_pd *pd = s->pd;
    if (!pd) return;
    /* The listeners first: their reads in flight drop their entries (their
     * on_abort runs now), then what is left. */
    for (int r = 0; r < KVG_SIMSRV_MAX_DP; r++)
        if (pd->side[r].srv) kvg_http_server_close(pd->side[r].srv);
    if (pd->boot) kvg_http_server_close(pd->boot);
    while (pd->held) held_drop(pd->held);
    kvg_http_client_close(pd->cl);
    free(pd);
    s->pd = NULL;
}
