/* libFuzzer: an engine's chat SSE stream from outside, fed to the stream
 * translator (api.h: kvg_api_sse_xlate) for Responses and for Messages in
 * two pieces split where the first two bytes say (the third byte's low bit:
 * the stream is cut). The oracle: the same output as the stream fed whole,
 * and every output event is "event: <type>\ndata: <JSON object whose type is
 * <type>>\n\n". No crash, leak or overrun whatever the bytes. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/err.h"

static int feed(enum kvg_api_kind kind, const char *s, size_t n, size_t split, int cut,
                struct kvg_buf *out)
{
    struct kvg_api_xctx x = {.kind = kind, .created = 1};
    struct kvg_api_sse_xlate t;
    /* names that need escaping: they must come out escaped */
    snprintf(x.model, sizeof(x.model), "m\"\\");
    snprintf(x.id, sizeof(x.id), "%s", kind == KVG_API_RESPONSES ? "resp_f\"z" : "msg_f");
    kvg_api_sse_xlate_init(&t, &x);
    int rc = kvg_api_sse_xlate_feed(&t, s, split, out);
    if (!rc) rc = kvg_api_sse_xlate_feed(&t, s + split, n - split, out);
    if (!rc) rc = kvg_api_sse_xlate_end(&t, cut, out);
    kvg_api_sse_xlate_free(&t);
    return rc;
}

static void check_events(const char *s, size_t n)
{
    const char *end = s + n;
    while (s < end) {
        if (end - s < 7 || memcmp(s, "event: ", 7)) abort();
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        if (!nl || end - nl < 7 || memcmp(nl + 1, "data: ", 6)) abort();
        const char *d = nl + 7, *e = d;
        while (e + 1 < end && !(e[0] == '\n' && e[1] == '\n')) e++;
        if (e + 1 >= end) abort();
        cJSON *j = cJSON_ParseWithLength(d, (size_t)(e - d));
        cJSON *ty = cJSON_GetObjectItemCaseSensitive(j, "type");
        size_t tl = (size_t)(nl - s - 7);
        if (!cJSON_IsString(ty) || strlen(ty->valuestring) != tl ||
            memcmp(ty->valuestring, s + 7, tl))
            abort();
        cJSON_Delete(j);
        s = e + 2;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3) return 0;
    size_t n = size - 3, split = ((size_t)data[0] << 8 | data[1]) % (n + 1);
    int cut = data[2] & 1;
    const char *s = (const char *)data + 3;
    for (int k = 0; k < 2; k++) {
        enum kvg_api_kind kind = k ? KVG_API_MESSAGES : KVG_API_RESPONSES;
        struct kvg_buf a, b;
        kvg_buf_init(&a, 0);
        kvg_buf_init(&b, 0);
        int ra = feed(kind, s, n, split, cut, &a), rb = feed(kind, s, n, n, cut, &b);
        if (ra != rb || (ra && ra != KVG_ETOOBIG)) abort();
        if (!ra && (a.len != b.len || (a.len && memcmp(a.data, b.data, a.len)))) abort();
        if (!ra) check_events(a.data, a.len);
        kvg_buf_free(&a);
        kvg_buf_free(&b);
    }
    return 0;
}
