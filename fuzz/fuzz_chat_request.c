/* libFuzzer target: an OpenAI chat request body from outside, rendered
 * through the built-in template and through a template that walks every part
 * of the converted request (messages, tool calls and their parsed
 * arguments, tools, kwargs). Must never crash, leak or overrun. */
#include <stdint.h>
#include <stdlib.h>

#include "base/buf.h"
#include "jinja/chat.h"

static const char g_walk[] =
    "{%- for m in messages -%}{{ m.role }}:{{ m.content | tojson }}"
    "{%- if m.tool_calls is defined %}{% for c in m.tool_calls %}{{ c.function.name }}"
    "{{ c.function.arguments | tojson(indent=1) }}{% endfor %}{% endif %}"
    "{%- if m.reasoning_content is defined %}{{ m.reasoning_content.strip() }}{% endif %}"
    "{%- if '</think>' in m.content %}{{ m.content.split('</think>')[-1].lstrip('\\n') }}{% endif "
    "%}"
    "{%- endfor %}{{ tools | tojson }}{{ enable_thinking is defined }}{{ add_generation_prompt }}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct kvg_jinja_chat *builtin, *walk;
    char err[256];
    if (!builtin && (kvg_jinja_chat_new(NULL, "<s>", "</s>", &builtin, err, sizeof(err)) ||
                     kvg_jinja_chat_new(g_walk, NULL, NULL, &walk, err, sizeof(err))))
        abort();
    struct kvg_jinja_limits lim = {.max_memory = 8u << 20, .max_steps = 200000};
    struct kvg_buf out;
    struct kvg_jinja_chat_info info;
    kvg_buf_init(&out, 1u << 20);
    kvg_jinja_chat_render(builtin, (const char *)data, size, &lim, &out, &info, err, sizeof(err));
    kvg_buf_reset(&out);
    kvg_jinja_chat_render(walk, (const char *)data, size, &lim, &out, &info, err, sizeof(err));
    kvg_buf_free(&out);
    return 0;
}
