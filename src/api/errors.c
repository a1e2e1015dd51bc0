/* Error bodies in the shape the client's API reads: OpenAI's
 * {"error":{...}} or Anthropic's {"type":"error","error":{...}}, with the
 * type each API names for the status (OpenAI's SDK and Anthropic's SDK both
 * read the status first and the type second). */
#include <string.h>

#include "api/api.h"
#include "api/api_int.h"

static const char *openai_type(int status)
{
    switch (status) {
    case 401:
        return "authentication_error";
    case 403:
        return "permission_error";
    case 404:
        return "not_found_error";
    case 409:
        return "conflict_error";
    case 429:
        return "rate_limit_error";
    default:
        return status >= 500 ? "server_error" : "invalid_request_error";
    }
}

/* Anthropic's documented error types, by status. */
static const char *anthropic_type(int status)
{
    switch (status) {
    case 401:
        return "authentication_error";
    case 402:
        return "billing_error";
    case 403:
        return "permission_error";
    case 404:
        return "not_found_error";
    case 413:
        return "request_too_large";
    case 429:
        return "rate_limit_error";
    case 504:
        return "timeout_error";
    case 503:
    case 529:
        return "overloaded_error";
    default:
        return status >= 500 ? "api_error" : "invalid_request_error";
    }
}

static int opt_str(struct kvg_buf *out, const char *s)
{
    return s ? kvg_buf_append_json_str(out, s, strlen(s)) : kvg_buf_append_str(out, "null");
}

int kvg_api_error_body(enum kvg_api_shape shape, int status, const char *type, const char *code,
                       const char *msg, const char *param, struct kvg_buf *out)
{
    int rc;
    if (!msg) msg = "";
    if (shape == KVG_API_SHAPE_ANTHROPIC) {
        if (!type) type = anthropic_type(status);
        if ((rc = kvg_buf_append_str(out, "{\"type\":\"error\",\"error\":{\"type\":")) ||
            (rc = opt_str(out, type)) || (rc = kvg_buf_append_str(out, ",\"message\":")) ||
            (rc = opt_str(out, msg)))
            return rc;
        return kvg_buf_append_str(out, "}}");
    }
    if (!type) type = openai_type(status);
    if ((rc = kvg_buf_append_str(out, "{\"error\":{\"message\":")) || (rc = opt_str(out, msg)) ||
        (rc = kvg_buf_append_str(out, ",\"type\":")) || (rc = opt_str(out, type)) ||
        (rc = kvg_buf_append_str(out, ",\"param\":")) || (rc = opt_str(out, param)) ||
        (rc = kvg_buf_append_str(out, ",\"code\":")) || (rc = opt_str(out, code)))
        return rc;
    return kvg_buf_append_str(out, "}}");
}

int kvg_api_error_status(enum kvg_api_shape shape, int status)
{
    return shape == KVG_API_SHAPE_ANTHROPIC && status == 503 ? 529 : status;
}
