/* Public face of chat rendering (chat.h): compile a chat template with the
 * model's special tokens once, then render request bodies into prompts. The
 * request conversion is chat_request.c; the interpreter is jinja*.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/json.h"
#include "base/utf8.h"
#include "jinja/chat_int.h"

/* ChatML over the built-in tokenizer's special tokens; see chat.h. Written
 * in the template language itself so the tests can render it with the
 * reference engine too. */
static const char g_builtin[] =
    "{%- if tools -%}\n"
    "{{- '<|im_start|>tools\\n' -}}\n"
    "{%- for tool in tools -%}{{- tool | tojson -}}{{- '\\n' -}}{%- endfor -%}\n"
    "{{- '<|im_end|>\\n' -}}\n"
    "{%- endif -%}\n"
    "{%- for message in messages -%}\n"
    "{{- '<|im_start|>' + message.role + '\\n' -}}\n"
    "{%- if message.content is string -%}{{- message.content -}}{%- endif -%}\n"
    "{%- if message.tool_calls -%}\n"
    "{%- for call in message.tool_calls -%}\n"
    "{{- '\\n<tool_call>' -}}{{- call.function | tojson -}}{{- '</tool_call>' -}}\n"
    "{%- endfor -%}\n"
    "{%- endif -%}\n"
    "{{- '<|im_end|>\\n' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}\n";

const char *const kvg__jinja_chat_var_names[CV_COUNT] = {"messages",
                                                         "tools",
                                                         "bos_token",
                                                         "eos_token",
                                                         "documents",
                                                         "reasoning_effort",
                                                         "add_generation_prompt"};

const char *kvg_jinja_chat_builtin_template(void)
{
    return g_builtin;
}

int kvg_jinja_chat_new(const char *template_src, const char *bos_token, const char *eos_token,
                       struct kvg_jinja_chat **out, char *err, size_t errlen)
{
    struct kvg_jinja_chat *c = calloc(1, sizeof(*c));
    if (!c) return -ENOMEM;
    const char *src = template_src ? template_src : g_builtin;
    int rc = kvg_jinja_compile(src, strlen(src), &c->tpl, err, errlen);
    if (rc) {
        free(c);
        return rc;
    }
    if ((bos_token && !(c->bos = strdup(bos_token))) ||
        (eos_token && !(c->eos = strdup(eos_token)))) {
        kvg_jinja_chat_free(c);
        return -ENOMEM;
    }
    for (int i = 0; i < CV_COUNT; i++)
        c->sym[i] = kvg__jinja_sym_find(c->tpl, kvg__jinja_chat_var_names[i],
                                        strlen(kvg__jinja_chat_var_names[i]));
    *out = c;
    return 0;
}

void kvg_jinja_chat_free(struct kvg_jinja_chat *c)
{
    if (!c) return;
    kvg_jinja_free(c->tpl);
    free(c->bos);
    free(c->eos);
    free(c);
}

cJSON *kvg__jinja_chat_parse_json(const char *s, size_t n)
{
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(s, n, &end, 0);
    if (!j) return NULL;
    for (const char *e = s + n; end && end < e; end++)
        if (*end != ' ' && *end != '\t' && *end != '\n' && *end != '\r') {
            cJSON_Delete(j);
            return NULL;
        }
    return j;
}

int kvg_jinja_chat_render_json(const struct kvg_jinja_chat *c, const cJSON *req,
                               const struct kvg_jinja_limits *lim, struct kvg_buf *out,
                               struct kvg_jinja_chat_info *info, char *err, size_t errlen)
{
    struct jrender r;
    struct chat_scratch s = {0};
    struct kvg_jinja_chat_info tmp;
    if (err && errlen) err[0] = 0;
    int rc = kvg__jinja_run_init(&r, c->tpl, lim);
    if (!rc) rc = kvg__jinja_chat_build_context(&r, c, req, &s, info ? info : &tmp);
    if (!rc) rc = kvg__jinja_run(&r, out);
    if (rc && err && errlen) snprintf(err, errlen, "%s", r.msg[0] ? r.msg : "out of memory");
    kvg__jinja_run_free(&r);
    kvg__jinja_chat_scratch_free(&s);
    return rc;
}

int kvg_jinja_chat_render(const struct kvg_jinja_chat *c, const char *body, size_t len,
                          const struct kvg_jinja_limits *lim, struct kvg_buf *out,
                          struct kvg_jinja_chat_info *info, char *err, size_t errlen)
{
    if (!kvg_utf8_valid(body, len)) {
        if (err && errlen) snprintf(err, errlen, "request is not valid UTF-8");
        return KVG_EUTF8;
    }
    cJSON *req = kvg__jinja_chat_parse_json(body, len);
    if (!req) {
        if (err && errlen) snprintf(err, errlen, "request is not valid JSON");
        return KVG_EPARSE;
    }
    /* cJSON's verdict; a \u0000 in a string is data, read by the fast
     * reader whose strings carry their length (base/json.h). */
    struct kvg_json_arena a = {0};
    cJSON *exact = NULL;
    if (kvg_json_has_nul_escape(body, len) &&
        (!(exact = kvg_json_parse_in(&a, body, len)) || !a.blocks)) {
        kvg_json_free(&a, exact);
        cJSON_Delete(req);
        if (err && errlen) snprintf(err, errlen, "unsupported: \\u0000 in this request");
        return KVG_EUNSUPP;
    }
    int rc = kvg_jinja_chat_render_json(c, exact ? exact : req, lim, out, info, err, errlen);
    kvg_json_free(&a, exact);
    cJSON_Delete(req);
    return rc;
}
