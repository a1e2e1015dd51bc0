/* What the files of src/api/ share and nobody else sees: reading members of
 * a request tree (strings by their length: a \u0000 is data) and writing JSON
 * values back out, a client error with its parameter path. */
#ifndef KVG_API_API_INT_H
#define KVG_API_API_INT_H

#include <stdarg.h>
#include <string.h>

#include "api/api.h"
#include "base/json.h"

/* Deepest tree kvg__api_json writes: past it the input is refused (the
 * readers of base/json.h stop far earlier, at cJSON's own nesting limit). */
#define KVG__API_MAX_DEPTH 1100

/* obj's member key (exact case), NULL when obj is not an object or lacks
 * it; a JSON null counts as absent. */
const cJSON *kvg__api_get(const cJSON *obj, const char *key);
/* Whether n is a string whose bytes are exactly lit. Inline, so that a
 * literal's length is the compiler's count (it is asked of every message
 * and block). */
static inline int kvg__api_str_is(const cJSON *n, const char *lit)
{
    if (!n || (n->type & 0xFF) != cJSON_String || !n->valuestring) return 0;
    size_t len = n->type & KVG_JSON_STRING_LEN ? (size_t)n->valueint : strlen(n->valuestring);
    return len == strlen(lit) && !memcmp(n->valuestring, lit, len);
}
/* Whether n is a number with an integer value. */
int kvg__api_is_int(const cJSON *n);

/* Fills err (the message and the parameter, printf-style) and returns
 * KVG_EPARSE. param may be NULL: then it is "". */
int kvg__api_fail(struct kvg_api_err *err, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The parameter path "<base>[i]" or "<base>[i].<leaf>" (leaf may be NULL),
 * written into out (cap bytes, NUL-ended, cut to fit). */
const char *kvg__api_path(char *out, size_t cap, const char *base, size_t i, const char *leaf);

/* Appends n as JSON: strings with their every byte (kvg_json_str), numbers
 * as the shortest text that reads back to the same double, objects and
 * arrays member by member. 0, KVG_EPARSE (nested past
 * KVG__API_MAX_DEPTH, or a node of no JSON type), -ENOMEM, KVG_ETOOBIG. */
int kvg__api_json(struct kvg_buf *out, const cJSON *n);
/* The string node n as a JSON string literal ("" for a non-string); into
 * the buffer kvg_api_to_chat_refs writes, a long one as its placeholder. */
int kvg__api_str(struct kvg_buf *out, const cJSON *n);
/* The placeholder for n (s, len: its bytes) when a kvg_api_to_chat_refs
 * call runs on this thread and n is worth one: 1 (written), 0 (write n
 * itself), or a negative code. */
int kvg__api_ref(struct kvg_buf *out, const cJSON *n, const char *s, size_t len);
/* Text the converters compose (joined blocks, a flattened name) as a JSON
 * string; -EAGAIN under kvg_api_to_chat_refs when it starts with the
 * placeholders' byte (the caller converts without placeholders). */
int kvg__api_text(struct kvg_buf *out, const char *s, size_t len);
/* kvg__api_json for JSON that becomes a string's content (a tool call's
 * arguments): never a placeholder inside. */
int kvg__api_json_plain(struct kvg_buf *out, const cJSON *n);
/* The shortest string kvg_api_to_chat_refs names instead of writing (the
 * unit tests set 1). */
extern size_t kvg__api_ref_min_len;
/* A double as JSON (integers without a fraction). */
int kvg__api_num(struct kvg_buf *out, double v);
/* "<sep>"key":" : sep is ',' or 0 for none. */
int kvg__api_key(struct kvg_buf *out, char sep, const char *key);

/* Token counts of an answer, as the chat usage gave them. */
struct kvg__api_usage {
    int64_t input, output, cached, reasoning;
};

/* The id of output item / content block `index` of answer x: "<prefix>_"
 * then x->id past its own prefix ("resp_ab" -> "msg_ab_2"). */
void kvg__api_item_id(char *out, size_t cap, const char *prefix, const struct kvg_api_xctx *x,
                      int index);
/* A thinking block's signature: opaque to every reader (kvgate's own
 * translation drops it), 32 hex digits made from x->id and index. */
void kvg__api_signature(char out[33], const struct kvg_api_xctx *x, int index);
/* Anthropic's stop_reason for a chat finish_reason ("stop" -> "end_turn",
 * "length" -> "max_tokens", "tool_calls" -> "tool_use"), NULL for others. */
const char *kvg__api_stop_reason(const char *finish);
/* The Responses object: x's id, model, created; status; the output items
 * (JSON members, items_len bytes); usage (NULL: null); with status
 * "incomplete", incomplete_details names max_output_tokens. */
int kvg__api_resp_object(struct kvg_buf *out, const struct kvg_api_xctx *x, const char *status,
                         const char *items, size_t items_len, const struct kvg__api_usage *u);
/* Finished Responses output items as the final object and the
 * output_item.done events show them; strings are raw bytes (escaped here). */
int kvg__api_item_reasoning(struct kvg_buf *out, const char *id, const char *text, size_t len);
int kvg__api_item_message(struct kvg_buf *out, const char *id, const char *text, size_t len);
/* A function call item; name is the engine's (flat) name, shown as the
 * client's namespace form when x's namespaces hold it (kvg__api_call_name). */
int kvg__api_item_call(struct kvg_buf *out, const struct kvg_api_xctx *x, const char *id,
                       const char *call_id, size_t call_id_len, const char *name, size_t name_len,
                       const char *args, size_t args_len, const char *status);
/* A function call's name as the client declared it: when flat[0, n) is
 * "<namespace>__<name>" of an entry of x->namespaces, 1 with *ns, *ns_len
 * the namespace and *name, *name_len the name (views into flat and the
 * map); else 0 and *name, *name_len = flat, n. */
int kvg__api_call_name(const struct kvg_api_xctx *x, const char *flat, size_t n, const char **ns,
                       size_t *ns_len, const char **name, size_t *name_len);
/* The Messages usage object {"input_tokens":..,"output_tokens":..}. */
int kvg__api_msg_usage(struct kvg_buf *out, const struct kvg__api_usage *u);

/* Each translation direction, one file each. */
int kvg__api_responses_to_chat(const cJSON *body, struct kvg_buf *out, struct kvg_api_err *err);
int kvg__api_messages_to_chat(const cJSON *body, int count_tokens, struct kvg_buf *out,
                              struct kvg_api_err *err);

#endif
