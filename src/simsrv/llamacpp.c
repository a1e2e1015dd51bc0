/* kvgate sim's llama.cpp flavor refusing what llama.cpp's server refuses.
 * llama.cpp's server throws while turning an OpenAI body into its own
 * parameters, and answers every such exception with HTTP 500 and its error
 * body {"error":{"code":500,"message":...,"type":"server_error"}}: a chat
 * message without `role` or `content`, a `content` neither a string, a list
 * of parts nor null, `n` other than 1. A gateway sees 500s that are the
 * request's fault, not the engine's; the sim answers so, so that tests can
 * tell the two apart (router/circuit.h). */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "simsrv/simsrv.h"

int kvg__simsrv_llamacpp_refuses(const cJSON *j, int chat, char *msg, size_t msglen)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(j, "n");
    if (cJSON_IsNumber(n) && n->valuedouble != 1) {
        snprintf(msg, msglen, "Only one completion choice is allowed");
        return 1;
    }
    if (!chat) return 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(j, "messages"))
    {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
        const cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
        if (!cJSON_IsString(role)) {
            snprintf(msg, msglen, "Missing 'role'");
            return 1;
        }
        if (!content && !calls) {
            snprintf(msg, msglen, "Missing 'content'");
            return 1;
        }
        if (content && !cJSON_IsString(content) && !cJSON_IsArray(content) &&
            !cJSON_IsNull(content)) {
            snprintf(msg, msglen, "Invalid 'content' type");
            return 1;
        }
    }
    return 0;
}

void kvg__simsrv_llamacpp_error(struct kvg_http_req *req, int status, const char *msg)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    kvg_buf_printf(&b, "{\"error\":{\"code\":%d,\"message\":", status);
    kvg_buf_append_json_str(&b, msg, strlen(msg));
    kvg_buf_printf(&b, ",\"type\":\"%s\"}}",
                   status >= 500 ? "server_error" : "invalid_request_error");
    kvg_http_res_send(req, status, "application/json", NULL, 0, b.data, b.len);
    kvg_buf_free(&b);
}
