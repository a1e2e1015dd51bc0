/* libFuzzer: a request body from outside read as JSON (base/json.h's fast
 * reader: its strings may hold NUL) and turned into the chat request
 * (kvg_api_to_chat) as a Responses, a Messages and a count_tokens body.
 * Whatever the bytes: no crash, no leak, no overrun; a success is valid
 * JSON (an object), a refusal names a message and leaves out as it was;
 * and the placeholder form (kvg_api_to_chat_refs, every string a
 * placeholder) read back and resolved is the very tree of the bytes, or
 * declines as route_input.c expects (-EAGAIN, or a tree the fast reader
 * hands to cJSON). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/api_int.h"
#include "base/err.h"
#include "base/json.h"

/* The placeholder path against the bytes' tree (bytes[0, n): the chat
 * request kvg_api_to_chat wrote of t). */
static void same_by_refs(enum kvg_api_kind kind, const cJSON *t, const char *bytes, size_t n)
{
    struct kvg_json_arena a1 = {0}, a2 = {0};
    struct kvg_api_refs refs = {0};
    struct kvg_api_err err;
    struct kvg_buf b;
    kvg_buf_init(&b, 64u << 20);
    kvg__api_ref_min_len = 1;
    int rc = kvg_api_to_chat_refs(kind, t, &b, &refs, &err);
    kvg__api_ref_min_len = 48;
    if (rc == 0) {
        cJSON *want = kvg_json_parse_in(&a1, bytes, n);
        cJSON *got = kvg_json_parse_in(&a2, b.data, b.len);
        if (!want || !got) abort(); /* both are kvgate's own JSON */
        if (a2.blocks && (kvg_api_refs_resolve(got, &refs) || !kvg_json_same(want, got))) abort();
        kvg_json_free(&a2, got);
        kvg_json_free(&a1, want);
    } else if (rc != -EAGAIN && rc != KVG_ETOOBIG && rc != -ENOMEM) {
        abort();
    }
    kvg_api_refs_free(&refs);
    kvg_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const enum kvg_api_kind kinds[] = {KVG_API_RESPONSES, KVG_API_MESSAGES,
                                              KVG_API_COUNT_TOKENS};
    struct kvg_json_arena ar = {0};
    cJSON *t = kvg_json_parse_in(&ar, (const char *)data, size);
    if (!t) return 0;
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        struct kvg_buf out;
        struct kvg_api_err err;
        kvg_buf_init(&out, 64u << 20);
        kvg_buf_append(&out, "x", 1);
        int rc = kvg_api_to_chat(kinds[k], t, &out, &err);
        if (rc == 0) {
            cJSON *back = cJSON_ParseWithLength(out.data + 1, out.len - 1);
            if (!cJSON_IsObject(back)) abort();
            cJSON_Delete(back);
            same_by_refs(kinds[k], t, out.data + 1, out.len - 1);
        } else if (rc == KVG_EPARSE) {
            if (out.len != 1 || !err.msg[0] || !memchr(err.param, 0, sizeof(err.param))) abort();
        } else if (rc != KVG_ETOOBIG && rc != -ENOMEM) {
            abort();
        }
        kvg_buf_free(&out);
    }
    kvg_json_free(&ar, t);
    return 0;
}
