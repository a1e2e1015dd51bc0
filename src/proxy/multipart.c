/* An upload's route input (proxy_int.h): the model named by its form field,
 * read where it lies in the body (api/api.h's parser: views, no copy), and
 * where that is, so that a request asked by an alias or a split reaches the
 * engine with the served name in that field (models.c); the file itself is
 * forwarded untouched. */
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "proxy/proxy_int.h"

int kvg__proxy_multipart_input(struct proxy_req *pr, const struct kvg_buf *body)
{
    struct kvg_rinput *ri = &pr->ri;
    memset(ri, 0, sizeof *ri);
    kvg_buf_init(&ri->text, 0);
    kvg_buf_init(&ri->chat_body, 0);
    ri->kind = pr->ep->kind;
    ri->prompt_key = "prompt";
    struct kvg_str ct = pr->offloop ? kvg__proxy_snap_header(&pr->hdrs, "content-type")
                                    : kvg_http_req_header(pr->req, "content-type");
    struct kvg_api_part parts[KVG_API_MAX_PARTS];
    size_t n = 0;
    if (kvg_api_multipart_parse(ct.p, ct.len, body->data, body->len, parts, KVG_API_MAX_PARTS, &n,
                                pr->parse_msg, sizeof pr->parse_msg))
        return KVG_EPARSE;
    for (size_t i = 0; i < n; i++) {
        const struct kvg_api_part *p = &parts[i];
        if (p->filename) continue;
        if (p->name_len == 5 && !memcmp(p->name, "model", 5)) {
            if (p->len >= sizeof ri->model || memchr(p->data, 0, p->len)) {
                snprintf(pr->parse_msg, sizeof pr->parse_msg, "'model' is longer than 255 bytes");
                return KVG_EPARSE;
            }
            pr->mp_model_off = (size_t)(p->data - body->data);
            pr->mp_model_len = p->len;
            memcpy(ri->model, p->data, p->len);
            ri->model[p->len] = 0;
            ri->model_len = p->len;
        } else if (p->name_len == 6 && !memcmp(p->name, "stream", 6)) {
            /* vLLM's streamed transcript */
            ri->stream = p->len == 4 && !memcmp(p->data, "true", 4);
        }
    }
    return 0;
}
