/* Chat requests to prompt text: an OpenAI /v1/chat/completions body rendered
 * through the model's chat template the way vLLM renders it, so that the
 * tokenizer then yields the ids the engine will compute.
 *
 * What reaches the template (vLLM's chat_utils, "string" content format):
 *   messages  one object per request message, keys in this order:
 *             role; content (a string: text parts joined with "\n", null or
 *             absent content is ""); for assistant: tool_calls when not null
 *             (an empty list is dropped; each function.arguments that is a
 *             JSON string is parsed into its value, invalid JSON becomes {},
 *             anything else but an object or list becomes {}), and
 *             reasoning + reasoning_content from the request's `reasoning`;
 *             for tool: tool_call_id when present; name and task when
 *             strings; for developer: tools.
 *             Text parts are {"type": "text"|"input_text"|"output_text",
 *             "text"}, {"type": "refusal", "refusal"}, {"type": "thinking",
 *             "thinking"} or plain strings; a text part whose text is null is
 *             skipped; image/audio/video parts are KVG_EUNSUPP.
 *   tools     none without `tools`, else each tool as pydantic dumps it:
 *             {"type": "function", "function": {"name", "description" (or
 *             null), "parameters" (or null), extra keys}, extra keys}.
 *   add_generation_prompt  the request's (default true).
 *   bos_token, eos_token   from the tokenizer config (absent when NULL).
 *   documents, reasoning_effort  the request's, when not null.
 *   chat_template_kwargs   every key becomes a variable and overrides the
 *             above, except that the request's add_generation_prompt wins
 *             and `chat_template`/`tokenize` are ignored, as in vLLM;
 *             `messages` is rejected.
 * Values convert as JavaScript would (the reference renderer is
 * @huggingface/jinja): a float with an integral value such as 1.0 in tool
 * arguments prints as 1, where Python would print 1.0.
 *
 * Tokenizing the result: vLLM encodes a rendered chat prompt with
 * add_special_tokens=false (the template already wrote BOS where the model
 * wants one) unless the request sets "add_special_tokens": true; that flag
 * is reported in struct kvg_jinja_chat_info.
 *
 * Built-in template (kvg_jinja_chat_builtin_template(), used with the built-in
 * byte tokenizer "builtin:bytes", whose special tokens include <|im_start|>
 * and <|im_end|>): ChatML.
 *   [<|im_start|>tools\n{tool as JSON}\n...<|im_end|>\n]      when tools
 *   <|im_start|>{role}\n{content}[\n<tool_call>{function as JSON}</tool_call>...]<|im_end|>\n
 *   ...                                                         per message
 *   <|im_start|>assistant\n                       when add_generation_prompt
 *
 * A struct kvg_jinja_chat is immutable after kvg_jinja_chat_new: render with it from any
 * number of threads at once. */
#ifndef KVG_JINJA_CHAT_H
#define KVG_JINJA_CHAT_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "jinja/jinja.h"

struct kvg_jinja_chat;

struct kvg_jinja_chat_info {
    int add_special_tokens;    /* the request asked for them on top of the template */
    int add_generation_prompt; /* as rendered */
};

/* The built-in ChatML template's Jinja source (static storage). */
const char *kvg_jinja_chat_builtin_template(void);

/* Compiles `template_src` (NULL: the built-in template). bos/eos (nullable)
 * are copied. On success *out is owned by the caller: kvg_jinja_chat_free().
 * Errors as kvg_jinja_compile, with a message in err[errlen]. */
int kvg_jinja_chat_new(const char *template_src, const char *bos_token, const char *eos_token,
                       struct kvg_jinja_chat **out, char *err, size_t errlen);
void kvg_jinja_chat_free(struct kvg_jinja_chat *c);

/* Renders a request body (JSON text, len bytes) and appends the prompt to
 * out. Errors: KVG_EPARSE for a malformed request (message in err),
 * KVG_EUTF8, KVG_ETEMPLATE when the template raises (err holds its message
 * verbatim) or fails, KVG_EUNSUPP for what kvgate does not render exactly,
 * KVG_ETOOBIG past out's limit or the render limits. On error out keeps its
 * length. info and lim may be NULL. */
int kvg_jinja_chat_render(const struct kvg_jinja_chat *c, const char *body, size_t len,
                          const struct kvg_jinja_limits *lim, struct kvg_buf *out,
                          struct kvg_jinja_chat_info *info, char *err, size_t errlen);
/* The same for a request already parsed (borrowed; must outlive the call). */
int kvg_jinja_chat_render_json(const struct kvg_jinja_chat *c, const cJSON *req,
                               const struct kvg_jinja_limits *lim, struct kvg_buf *out,
                               struct kvg_jinja_chat_info *info, char *err, size_t errlen);

#endif
