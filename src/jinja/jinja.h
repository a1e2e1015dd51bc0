/* A Jinja-subset template interpreter for chat templates.
 *
 * It renders the chat templates of HuggingFace models byte for byte as the
 * JavaScript engine @huggingface/jinja (0.5.x) does, with the same
 * preprocessing (lstrip_blocks and trim_blocks on, one final newline dropped),
 * the same statements (if/elif/else, for with loop.* and else, set with
 * namespace() and blocks, macro, filter blocks, break/continue), expressions,
 * filters, tests and string/object methods. A construct it cannot reproduce
 * exactly is an error naming it (KVG_EUNSUPP), never different text.
 *
 * A compiled struct kvg_jinja is immutable: any number of threads may render
 * it at the same time. */
#ifndef KVG_JINJA_JINJA_H
#define KVG_JINJA_JINJA_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/buf.h"

struct kvg_jinja;

/* Bounds on one render, so hostile templates or contexts stay cheap. Zero
 * fields take the defaults (64 MiB of values, 10 M evaluation steps; the
 * output is bounded by the kvg_buf's own limit). */
struct kvg_jinja_limits {
    size_t max_memory;
    uint64_t max_steps;
};

/* Compiles template source (UTF-8; len bytes, NUL not needed). On success
 * *out is owned by the caller (kvg_jinja_free). Errors: KVG_ETEMPLATE for a
 * syntax error, KVG_EUNSUPP for a statement kvgate does not implement,
 * KVG_EUTF8, -ENOMEM; a message goes to err[errlen]. */
int kvg_jinja_compile(const char *src, size_t len, struct kvg_jinja **out, char *err,
                      size_t errlen);
void kvg_jinja_free(struct kvg_jinja *t);

/* Renders with every member of the JSON object `ctx` as a variable (JSON
 * values convert as JavaScript's would: integral numbers are integers). The
 * text is appended to out. Errors: KVG_ETEMPLATE when the template raises
 * (raise_exception: err holds its message verbatim) or fails as the
 * reference would; KVG_EUNSUPP for what kvgate does not reproduce;
 * KVG_ETOOBIG past a limit. On error out keeps its old length. `lim` may be
 * NULL. */
int kvg_jinja_render_json(const struct kvg_jinja *t, const cJSON *ctx,
                          const struct kvg_jinja_limits *lim, struct kvg_buf *out, char *err,
                          size_t errlen);

#endif
