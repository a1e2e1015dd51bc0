/* The one place that maps HTTP statuses to reason phrases and to OpenAI-style
 * error bodies. */
#include <stdio.h>
#include <string.h>

#include "net/http.h"

const char *kvg_http_reason(int status)
{
    switch (status) {
    case 100:
        return "Continue";
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 202:
        return "Accepted";
    case 204:
        return "No Content";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 411:
        return "Length Required";
    case 413:
        return "Payload Too Large";
    case 415:
        return "Unsupported Media Type";
    case 417:
        return "Expectation Failed";
    case 422:
        return "Unprocessable Entity";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 499:
        return "Client Closed Request";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    default:
        return status < 400 ? "OK" : status < 500 ? "Bad Request" : "Server Error";
    }
}

const char *kvg_http_error_type(int status)
{
    switch (status) {
    case 401:
        return "authentication_error";
    case 403:
        return "permission_error";
    case 404:
        return "not_found_error";
    case 429:
        return "rate_limit_exceeded";
    case 503:
        return "service_unavailable";
    default:
        return status < 500 ? "invalid_request_error" : "server_error";
    }
}

int kvg_http_error_json(struct kvg_buf *b, int status, const char *type, const char *code,
                        const char *message)
{
    return kvg_http_error_json_param(b, status, type, code, message, NULL);
}

int kvg_http_error_json_param(struct kvg_buf *b, int status, const char *type, const char *code,
                              const char *message, const char *param)
{
    char num[16];
    if (!type) type = kvg_http_error_type(status);
    if (!code) {
        snprintf(num, sizeof num, "%d", status);
        code = num;
    }
    if (!message) message = kvg_http_reason(status);
    int rc = kvg_buf_append_str(b, "{\"error\":{\"message\":");
    if (!rc) rc = kvg_buf_append_json_str(b, message, strlen(message));
    if (!rc) rc = kvg_buf_append_str(b, ",\"type\":");
    if (!rc) rc = kvg_buf_append_json_str(b, type, strlen(type));
    if (!rc) rc = kvg_buf_append_str(b, ",\"param\":");
    if (!rc)
        rc = param ? kvg_buf_append_json_str(b, param, strlen(param))
                   : kvg_buf_append_str(b, "null");
    if (!rc) rc = kvg_buf_append_str(b, ",\"code\":");
    if (!rc) rc = kvg_buf_append_json_str(b, code, strlen(code));
    if (!rc) rc = kvg_buf_append_str(b, "}}");
    return rc;
}
