/* Reading request trees and writing JSON for the translations of src/api/.
 * The trees come from base/json.h's readers, whose strings may hold a NUL
 * (kvg_json_str gives their length), so nothing here prints with cJSON:
 * cJSON_Print would cut such a string at its first NUL. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "base/err.h"
#include "base/json.h"

/* cJSON_GetObjectItemCaseSensitive's walk, here: the converters read a few
 * members of every message and block, and the calls into libcjson were a
 * tenth of a long conversation's conversion. */
const cJSON *kvg__api_get(const cJSON *obj, const char *key)
{
    if (!obj || (obj->type & 0xFF) != cJSON_Object) return NULL;
    for (const cJSON *n = obj->child; n; n = n->next)
        if (n->string && !strcmp(n->string, key)) return (n->type & 0xFF) == cJSON_NULL ? NULL : n;
    return NULL;
}

int kvg__api_is_int(const cJSON *n)
{
    if (!cJSON_IsNumber(n)) return 0;
    double v = n->valuedouble;
    return isfinite(v) && v == floor(v);
}

int kvg__api_fail(struct kvg_api_err *err, const char *param, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
        snprintf(err->param, sizeof(err->param), "%s", param ? param : "");
    }
    return KVG_EPARSE;
}

/* Appends the n bytes of s at *o, cut at cap - 1 (out's room for its NUL). */
static void path_put(char *out, size_t cap, size_t *o, const char *s, size_t n)
{
    if (*o + n >= cap) n = cap - 1 - *o;
    memcpy(out + *o, s, n);
    *o += n;
}

/* Written by hand, not with snprintf: every message of a long conversation
 * names its path before its content is read (snprintf was 8% of a 30k-token
 * Messages request's conversion). */
const char *kvg__api_path(char *out, size_t cap, const char *base, size_t i, const char *leaf)
{
    if (!cap) return out;
    char num[24];
    size_t nd = 0, o = 0;
    do num[sizeof num - 1 - nd++] = (char)('0' + i % 10);
    while ((i /= 10) && nd < sizeof num);
    path_put(out, cap, &o, base, strlen(base));
    path_put(out, cap, &o, "[", 1);
    path_put(out, cap, &o, num + sizeof num - nd, nd);
    path_put(out, cap, &o, "]", 1);
    if (leaf) {
        path_put(out, cap, &o, ".", 1);
        path_put(out, cap, &o, leaf, strlen(leaf));
    }
    out[o] = 0;
    return out;
}

int kvg__api_num(struct kvg_buf *out, double v)
{
    char tmp[40];
    if (!isfinite(v)) return kvg_buf_append_str(out, "null"); /* JSON has no Inf or NaN */
    if (v == floor(v) && fabs(v) < 1e15) {
        snprintf(tmp, sizeof(tmp), "%lld", (long long)v);
        return kvg_buf_append_str(out, tmp);
    }
    /* The shortest of %.15g..%.17g that reads back as v: 0.1 stays "0.1". */
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
        if (strtod(tmp, NULL) == v) break;
    }
    return kvg_buf_append_str(out, tmp);
}

int kvg__api_str(struct kvg_buf *out, const cJSON *n)
{
    size_t len = 0;
    const char *s = kvg_json_str(n, &len);
    int rc = s ? kvg__api_ref(out, n, s, len) : 0;
    if (rc) return rc < 0 ? rc : 0;
    return kvg_buf_append_json_str(out, s ? s : "", s ? len : 0);
}

int kvg__api_key(struct kvg_buf *out, char sep, const char *key)
{
    int rc;
    if (sep && (rc = kvg_buf_append(out, &sep, 1))) return rc;
    if ((rc = kvg_buf_append_json_str(out, key, strlen(key)))) return rc;
    return kvg_buf_append(out, ":", 1);
}

static int json_at(struct kvg_buf *out, const cJSON *n, int depth)
{
    int rc;
    if (depth > KVG__API_MAX_DEPTH) return KVG_EPARSE;
    switch (n->type & 0xff) {
    case cJSON_False:
        return kvg_buf_append_str(out, "false");
    case cJSON_True:
        return kvg_buf_append_str(out, "true");
    case cJSON_NULL:
        return kvg_buf_append_str(out, "null");
    case cJSON_Number:
        return kvg__api_num(out, n->valuedouble);
    case cJSON_String:
        return kvg__api_str(out, n);
    case cJSON_Array:
    case cJSON_Object: {
        int obj = cJSON_IsObject(n);
        if ((rc = kvg_buf_append(out, obj ? "{" : "[", 1))) return rc;
        for (const cJSON *c = n->child; c; c = c->next) {
            if (c != n->child && (rc = kvg_buf_append(out, ",", 1))) return rc;
            if (obj && (rc = kvg__api_key(out, 0, c->string ? c->string : ""))) return rc;
            if ((rc = json_at(out, c, depth + 1))) return rc;
        }
        return kvg_buf_append(out, obj ? "}" : "]", 1);
    }
    default:
        return KVG_EPARSE;
    }
}

int kvg__api_json(struct kvg_buf *out, const cJSON *n)
{
    return n ? json_at(out, n, 0) : kvg_buf_append_str(out, "null");
}
