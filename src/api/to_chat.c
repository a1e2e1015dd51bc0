/* kvg_api_to_chat: a Responses or Messages request as the chat completions
 * request the engine makes of it (to_chat_responses.c, to_chat_messages.c;
 * docs/api-translation.md has the engine's rules these follow). */
#include <stdio.h>

#include "api/api.h"
#include "api/api_int.h"
#include "base/err.h"

int kvg_api_to_chat(enum kvg_api_kind kind, const cJSON *body, struct kvg_buf *out,
                    struct kvg_api_err *err)
{
    size_t mark = out->len; /* a failure leaves out as it was */
    int rc;
    if (err) err->msg[0] = err->param[0] = 0;
    if (!cJSON_IsObject(body)) return kvg__api_fail(err, NULL, "the body must be a JSON object");
    switch (kind) {
    case KVG_API_RESPONSES:
        rc = kvg__api_responses_to_chat(body, out, err);
        break;
    case KVG_API_MESSAGES:
        rc = kvg__api_messages_to_chat(body, 0, out, err);
        break;
    case KVG_API_COUNT_TOKENS:
        rc = kvg__api_messages_to_chat(body, 1, out, err);
        break;
    default:
        return kvg__api_fail(err, NULL, "no chat form for the %s endpoint",
                             kvg_api_kind_name(kind));
    }
    if (rc) {
        out->len = mark;
        if (rc == KVG_EPARSE && err && !err->msg[0])
            snprintf(err->msg, sizeof(err->msg), "the request is nested too deep");
    }
    return rc;
}
