/* kvg_strerror: one name for every error code in the process. */
#include "base/err.h"

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
