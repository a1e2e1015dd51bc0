/* Routing text extraction; see route_text.h. */
#include "router/route_text.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "base/json.h"

/* A string node's text, a NUL inside included (base/json.h). */
static int add(struct kvg_buf *out, const cJSON *str)
{
    size_t n = 0;
    const char *s = kvg_json_str(str, &n);
    if (!s || !n) return 0;
    int rc = 0;
    if (out->len) rc = kvg_buf_append(out, " ", 1);
    return rc ? rc : kvg_buf_append(out, s, n);
}

static int add_content(struct kvg_buf *out, const cJSON *c)
{
    if (cJSON_IsString(c)) return add(out, c);
    if (!cJSON_IsArray(c)) return 0;
    const cJSON *part;
    cJSON_ArrayForEach(part, c)
    {
        int rc = 0;
        if (cJSON_IsString(part)) {
            rc = add(out, part);
        } else {
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, "text");
            if (cJSON_IsString(t)) rc = add(out, t);
        }
        if (rc) return rc;
    }
    return 0;
}

int kvg_route_text(const cJSON *req, int chat, struct kvg_buf *out)
{
    int rc = 0;
    if (!chat) {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(req, "prompt");
        if (cJSON_IsString(p)) return add(out, p);
        const cJSON *it;
        if (cJSON_IsArray(p)) cJSON_ArrayForEach(it, p)
            {
                if (cJSON_IsString(it) && (rc = add(out, it))) return rc;
            }
        return 0;
    }
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(req, "messages"), *m;
    cJSON_ArrayForEach(m, msgs)
    {
        if ((rc = add_content(out, cJSON_GetObjectItemCaseSensitive(m, "content")))) return rc;
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(m, "reasoning_content");
        if (cJSON_IsString(r) && (rc = add(out, r))) return rc;
    }
    return 0;
}
