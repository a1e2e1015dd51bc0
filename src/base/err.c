/* kvg_strerror: one name for every error code in the process. */
#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

const char *kvg_strerror(int err)
{
    switch (err) {
    case KVG_EPARSE:
        return "malformed input";
    case KVG_ETOOBIG:
        return "input over limit";
    case KVG_ENOTFOUND:
        return "not found";
    case KVG_EUNSUPP:
        return "unsupported";
    case KVG_ENOWORKER:
        return "no healthy worker";
    case KVG_EUPSTREAM:
        return "upstream error";
    case KVG_ETIMEOUT:
        return "timed out";
    case KVG_ECONFIG:
        return "invalid configuration";
    case KVG_EUTF8:
        return "invalid UTF-8";
    case KVG_ETEMPLATE:
        return "chat template error";
    case KVG_ECLOSED:
        return "closed";
    default:
        break;
    }
    if (err < 0 && err > KVG_E_BASE) return uv_strerror(err);
    return "unknown error";
}

int kvg_err_set(char *err, size_t errlen, int code, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}
