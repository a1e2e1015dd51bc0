/* Responses and Messages for engines that do not serve them (older vLLM and
 * SGLang builds, llama.cpp): the request goes as the chat completions
 * request the engine would have made of it (made when it is to be sent:
 * kvg_rinput_chat_bytes, from the bytes that would have gone), and the answer comes back translated
 * by api/ (the whole answer, or the stream event by event), as LiteLLM does.
 *
 * Which engines: those --translate-apis names for every worker, and any
 * worker that answered such a request 404 with a "no such path" body
 * (FastAPI's {"detail":"Not Found"}, llama.cpp's "File Not Found"): the
 * request is sent again at once, translated, and so is every later one to
 * that worker (struct kvg_worker's apis_missing). A model-not-found 404 is
 * the engine's answer and is relayed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/json_edit.h"
#include "base/log.h"
#include "proxy/proxy_int.h"

static unsigned api_bit(const struct proxy_req *pr)
{
    return pr->route == KVG_API_RESPONSES || pr->route == KVG_API_MESSAGES ? 1u << pr->route : 0;
}

int kvg__proxy_xlate_wanted(const struct proxy_req *pr, const struct kvg_worker *w)
{
    unsigned bit = api_bit(pr);
    if (!bit || !pr->ri.converted) return 0;
    return ((pr->pl->px->translate_apis | atomic_load(&w->apis_missing)) & bit) != 0;
}

int kvg__proxy_xlate_probe(const struct proxy_req *pr, int status)
{
    return status == 404 && !pr->xlate && api_bit(pr) && pr->ri.converted;
}

int kvg__proxy_xlate_missing(struct proxy_req *pr, struct kvg_worker *w)
{
    const struct kvg_buf *b = &pr->body;
    int missing = b->data && (memmem(b->data, b->len, "\"detail\":\"Not Found\"", 20) ||
                              memmem(b->data, b->len, "File Not Found", 14));
    if (!missing) return 0;
    unsigned was = atomic_fetch_or(&w->apis_missing, api_bit(pr));
    if (!(was & api_bit(pr)))
        KVG_INFO("worker %s does not serve %s (404, no such path): its requests go to it as chat "
                 "completions, answers translated",
                 w->url, pr->path);
    return 1;
}

/* The id a translated answer carries: kvgate's own, as the engine would
 * have made one (resp_ / msg_ and 24 random characters). */
static void make_id(struct proxy_req *pr, char *out, size_t cap)
{
    static const char al[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    size_t n = (size_t)snprintf(out, cap, "%s", pr->route == KVG_API_RESPONSES ? "resp_" : "msg_");
    for (int i = 0; i < 24 && n + 1 < cap; i++) out[n++] = al[kvg_rng_below(pr->pl->rng, 36)];
    out[n] = 0;
}

int kvg__proxy_xlate_begin(struct proxy_req *pr)
{
    struct kvg_api_xctx x = {.kind = (enum kvg_api_kind)pr->route,
                             .created = (int64_t)kvg_wall_s()};
    snprintf(x.model, sizeof x.model, "%.*s", (int)pr->ri.model_len, pr->ri.model);
    make_id(pr, x.id, sizeof x.id);
    pr->xctx = x;
    pr->stored_learn = 0; /* the engine stores nothing of a chat request */
    const struct kvg_buf *fb = kvg__proxy_forward_body(pr);
    int brc = kvg_rinput_chat_bytes(&pr->ri, fb->data, fb->len);
    if (brc) return brc;
    pr->xctx.namespaces = &pr->ri.namespaces; /* pr->ri outlives the answer */
    uint32_t cap = kvg_gate_output_cap(&pr->gate);
    if (cap && !pr->xcapped) { /* the limit the quota reserved goes in the chat request too */
        char v[16];
        snprintf(v, sizeof v, "%u", cap);
        const struct kvg_json_edit e = KVG_JSON_SET("max_tokens", v);
        struct kvg_buf b;
        kvg_buf_init(&b, 0);
        int rc = kvg_json_edit(pr->ri.chat_body.data, pr->ri.chat_body.len, &e, 1, &b);
        if (rc < 0) {
            kvg_buf_free(&b);
            return rc;
        }
        kvg_buf_free(&pr->ri.chat_body);
        pr->ri.chat_body = b;
        pr->xcapped = 1;
    }
    snprintf(pr->served_as, sizeof pr->served_as, "translated_to_chat");
    if (!pr->ri.stream) return 0;
    if (!pr->xl && !(pr->xl = calloc(1, sizeof *pr->xl))) return -ENOMEM;
    kvg_api_sse_xlate_free(pr->xl);
    kvg_api_sse_xlate_init(pr->xl, &pr->xctx);
    return 0;
}

int kvg__proxy_xlate_feed(struct proxy_req *pr, const char *p, size_t n, struct kvg_buf *out)
{
    return kvg_api_sse_xlate_feed(pr->xl, p, n, out);
}

int kvg__proxy_xlate_end(struct proxy_req *pr, int cut, struct kvg_buf *out)
{
    return kvg_api_sse_xlate_end(pr->xl, cut, out);
}

/* The engine's chat answer (in pr->body) as the client's API answer, in
 * out; an error answer keeps its status and says its message in the API's
 * error shape. */
int kvg__proxy_xlate_answer(struct proxy_req *pr, int status, struct kvg_buf *out)
{
    if (status >= 200 && status < 300)
        return kvg_api_answer_from_chat(&pr->xctx, pr->body.data ? pr->body.data : "", pr->body.len,
                                        out);
    char msg[400] = "the engine refused the request";
    const char *m =
        pr->body.data ? memmem(pr->body.data, pr->body.len, "\"message\":\"", 11) : NULL;
    if (m) {
        m += 11;
        const char *e = memchr(m, '"', pr->body.len - (size_t)(m - pr->body.data));
        if (e) snprintf(msg, sizeof msg, "%.*s", (int)KVG_MIN((size_t)(e - m), 390), m);
    }
    return kvg_api_error_body(pr->ep->shape, status, NULL, NULL, msg, NULL, out);
}

void kvg__proxy_xlate_free(struct proxy_req *pr)
{
    if (!pr->xl) return;
    kvg_api_sse_xlate_free(pr->xl);
    free(pr->xl);
    pr->xl = NULL;
}
