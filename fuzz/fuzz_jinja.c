/* libFuzzer target: template source and context JSON from outside. The
 * input is "<template>\0<context JSON>" (no NUL: all template, empty
 * context). Compiling and rendering must never crash, leak or run away:
 * renders run under small step, memory and output limits. */
#include <stdint.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "jinja/jinja.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    const char *nul = memchr(s, 0, size);
    size_t tlen = nul ? (size_t)(nul - s) : size;
    char err[256];
    struct kvg_jinja *t;
    if (kvg_jinja_compile(s, tlen, &t, err, sizeof(err))) return 0;
    cJSON *ctx = nul ? cJSON_ParseWithLength(nul + 1, size - tlen - 1) : NULL;
    struct kvg_jinja_limits lim = {.max_memory = 8u << 20, .max_steps = 200000};
    struct kvg_buf out;
    kvg_buf_init(&out, 1u << 20);
    kvg_jinja_render_json(t, cJSON_IsObject(ctx) ? ctx : NULL, &lim, &out, err, sizeof(err));
    kvg_buf_free(&out);
    cJSON_Delete(ctx);
    kvg_jinja_free(t);
    return 0;
}
