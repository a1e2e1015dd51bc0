/* Internals shared by chat.c (the public face) and chat_request.c (OpenAI
 * request -> template context). */
#ifndef KVG_JINJA_CHAT_INT_H
#define KVG_JINJA_CHAT_INT_H

#include <cjson/cJSON.h>

#include "jinja/chat.h"
#include "jinja/jinja_int.h"

/* The variables every request sets, in struct kvg_jinja_chat's sym[]. */
enum { CV_MESSAGES, CV_TOOLS, CV_BOS, CV_EOS, CV_DOCUMENTS, CV_EFFORT, CV_AGP, CV_COUNT };
extern const char *const kvg__jinja_chat_var_names[CV_COUNT];

struct kvg_jinja_chat {
    struct kvg_jinja *tpl;
    char *bos, *eos;       /* owned; NULL when the config has none */
    int64_t sym[CV_COUNT]; /* their symbols in tpl, -1 when it never names one */
};

/* JSON trees parsed during one render (tool-call arguments); values in the
 * context point into them, so they are freed after the render. */
struct chat_scratch {
    cJSON **trees;
    size_t n, cap;
};
void kvg__jinja_chat_scratch_free(struct chat_scratch *s);

/* Declares the template variables for request `req` in r (see chat.h for
 * the exact rules). Errors set r->msg. */
int kvg__jinja_chat_build_context(struct jrender *r, const struct kvg_jinja_chat *c,
                                  const cJSON *req, struct chat_scratch *s,
                                  struct kvg_jinja_chat_info *info);

/* Is `s` JSON that JavaScript's JSON.parse (and Python's json.loads) would
 * accept, as far as cJSON is more lenient: no raw control characters inside
 * strings, no leading zeros or bare trailing dots in numbers. Returns 1 when
 * it may be handed to cJSON, 0 when it is invalid, -1 when it holds a \u0000
 * escape (which cJSON would cut the string at). */
int kvg__jinja_chat_json_strict(const char *s, size_t n);

/* cJSON_Parse of exactly n bytes, refusing anything but whitespace after
 * the value (as JSON.parse does). NULL when invalid; caller frees. */
cJSON *kvg__jinja_chat_parse_json(const char *s, size_t n);

#endif
