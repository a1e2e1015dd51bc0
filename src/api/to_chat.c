/* kvg_api_to_chat: a Responses or Messages request as the chat completions
 * request the engine makes of it (to_chat_responses.c, to_chat_messages.c;
 * docs/api-translation.md has the engine's rules these follow), and its
 * placeholder form for the gateway's own rendering (kvg_api_to_chat_refs). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/api_int.h"
#include "base/err.h"
#include "base/json.h"

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

/* Strings shorter than this are written as they are: escaping them costs
 * less than the placeholder's own bytes and bookkeeping. A variable, not a
 * constant, so that the unit tests can make every string a placeholder. */
size_t kvg__api_ref_min_len = 48;
/* A placeholder's first byte. A request's own string that starts with it
 * becomes a placeholder whatever its length, and text kvgate composes
 * (kvg__api_text) that starts with it makes the call decline, so that
 * every string of the written bytes that starts with it is a placeholder. */
#define REF_MARK 0x01
_Static_assert(REF_MARK == 1, "kvg__api_ref writes the placeholder's byte as \\u0001");

/* The kvg_api_to_chat_refs call running on this thread, if any. The
 * converters take a plain buffer; this keeps their writers unchanged.
 * plain > 0: inside kvg__api_json_plain (JSON that becomes a string's
 * content, such as a tool call's arguments, holds no placeholder). */
static _Thread_local struct {
    struct kvg_api_refs *refs;
    int plain;
} refs_on;

int kvg__api_ref(struct kvg_buf *out, const cJSON *n, const char *s, size_t len)
{
    if (!refs_on.refs || refs_on.plain) return 0;
    if (len < kvg__api_ref_min_len && (!len || (unsigned char)s[0] != REF_MARK)) return 0;
    struct kvg_api_refs *r = refs_on.refs;
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 64;
        const cJSON **v = realloc(r->v, cap * sizeof *v);
        if (!v) return -ENOMEM;
        r->v = v, r->cap = cap;
    }
    /* "\u0001r<n>": written piece by piece (snprintf was a tenth of a long
     * conversation's cost). */
    int rc;
    if ((rc = kvg_buf_append_str(out, "\"\\u0001r")) || (rc = kvg_buf_append_u64(out, r->n)) ||
        (rc = kvg_buf_append(out, "\"", 1)))
        return rc;
    r->v[r->n++] = n;
    return 1;
}

int kvg__api_text(struct kvg_buf *out, const char *s, size_t len)
{
    if (refs_on.refs && !refs_on.plain && len && (unsigned char)s[0] == REF_MARK) return -EAGAIN;
    return kvg_buf_append_json_str(out, s, len);
}

int kvg__api_json_plain(struct kvg_buf *out, const cJSON *n)
{
    refs_on.plain++;
    int rc = kvg__api_json(out, n);
    refs_on.plain--;
    return rc;
}

int kvg_api_to_chat_refs(enum kvg_api_kind kind, const cJSON *body, struct kvg_buf *out,
                         struct kvg_api_refs *refs, struct kvg_api_err *err)
{
    size_t was = refs->n;
    refs_on.refs = refs;
    refs_on.plain = 0;
    int rc = kvg_api_to_chat(kind, body, out, err);
    refs_on.refs = NULL;
    if (rc) refs->n = was;
    return rc;
}

/* The index a placeholder string names, or -1 when s is not one. */
static long ref_index(const char *s, size_t len)
{
    if (len < 3 || (unsigned char)s[0] != REF_MARK || s[1] != 'r') return -1;
    long v = 0;
    for (size_t i = 2; i < len; i++) {
        if (s[i] < '0' || s[i] > '9' || v > 100000000) return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* Depth-first with the tree's own links (parents found by climbing back
 * through a stack of the nodes entered), so that a deep tool schema costs
 * no recursion. */
int kvg_api_refs_resolve(cJSON *tree, const struct kvg_api_refs *refs)
{
    cJSON *stack[KVG__API_MAX_DEPTH + 2];
    size_t depth = 0;
    for (cJSON *n = tree; n;) {
        if (cJSON_IsString(n)) {
            size_t len = 0;
            const char *s = kvg_json_str(n, &len);
            if (s && len && (unsigned char)s[0] == REF_MARK) {
                long i = ref_index(s, len);
                if (i < 0 || (size_t)i >= refs->n) return KVG_EPARSE;
                const cJSON *src = refs->v[i];
                n->valuestring = src->valuestring;
                n->valueint = src->valueint;
                n->type = (n->type & ~KVG_JSON_STRING_LEN) | (src->type & KVG_JSON_STRING_LEN);
            }
        }
        if (n->child) {
            if (depth == sizeof stack / sizeof *stack) return KVG_EPARSE;
            stack[depth++] = n;
            n = n->child;
            continue;
        }
        while (n && !n->next) n = depth ? stack[--depth] : NULL;
        if (n) n = depth ? n->next : NULL; /* the root's siblings are not its tree */
    }
    return 0;
}

void kvg_api_refs_free(struct kvg_api_refs *refs)
{
    free(refs->v);
    refs->v = NULL;
    refs->n = refs->cap = 0;
}
