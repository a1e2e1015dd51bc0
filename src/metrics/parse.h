/* A strict, bounded parser of Prometheus text exposition format 0.0.4, for
 * the /metrics bodies the engines (vLLM, SGLang, llama.cpp) serve. Those
 * bytes come from outside: the parser never allocates, never reads past the
 * given length, keeps its own state in a fixed-size struct, and reports any
 * line that does not follow the grammar as KVG_EPARSE instead of guessing.
 *
 * Accepted, per line ('\n'-terminated; spaces and tabs are blanks):
 *   blank line                               skipped
 *   # HELP name [docstring]                  checked (name, \\ and \n escapes), skipped
 *   # TYPE name counter|gauge|histogram|summary|untyped   checked, skipped
 *     (a bare "# HELP" or "# TYPE name" is a plain comment, as in Prometheus)
 *   # anything else                          skipped
 *   name [{label="value",...[,]}] value [timestamp_ms]
 * with name [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]*,
 * label values in double quotes with the escapes \\ \" \n only, valid UTF-8
 * and no NUL; value a decimal float with optional exponent, or Inf /
 * Infinity / NaN with optional sign, in any case (llama.cpp prints "nan");
 * timestamp an optional signed 64-bit integer. Hex floats, other escapes,
 * duplicate label names and a last line without its '\n' (a truncated body)
 * are errors. Prometheus' own parser (promtool) agrees on all of this except
 * two points, held against it in tests/integration/metrics_promtool.sh: it
 * rejects a signed NaN ("-nan", which glibc prints for x86's 0/0 and
 * llama.cpp emits) and accepts a value glued to a bare name ("m-1").
 *
 * Usage:
 *   struct kvg_metrics_parser ps;
 *   struct kvg_metrics_sample s;
 *   kvg_metrics_parser_init(&ps, body, len);
 *   while ((rc = kvg_metrics_parser_next(&ps, &s)) > 0) use(&s);
 *   if (rc < 0) error at line ps.line
 * An error leaves the parser at the start of the next line, so a caller that
 * prefers to skip bad lines can keep calling next. */
#ifndef KVG_METRICS_PARSE_H
#define KVG_METRICS_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* Most labels on one sample; more is KVG_ETOOBIG. */
#define KVG_METRICS_PARSE_MAX_LABELS 32
/* Bytes available per sample for label values that contained escapes (the
 * unescaped copies live here); more is KVG_ETOOBIG. */
#define KVG_METRICS_PARSE_SCRATCH 4096

struct kvg_metrics_label {
    struct kvg_str name;
    struct kvg_str value; /* unescaped */
};

/* Views into the input text or into the parser's scratch space: valid until
 * the next kvg_metrics_parser_next call and while the input lives. */
struct kvg_metrics_sample {
    struct kvg_str name;
    size_t nlabels;
    struct kvg_metrics_label labels[KVG_METRICS_PARSE_MAX_LABELS];
    double value;
    int has_timestamp;
    int64_t timestamp_ms;
};

struct kvg_metrics_parser {
    const char *p, *end;
    size_t line; /* 1-based number of the line last read */
    size_t scratch_len;
    char scratch[KVG_METRICS_PARSE_SCRATCH];
};

/* Starts parsing text[0..len). The parser does not copy or own the text. */
void kvg_metrics_parser_init(struct kvg_metrics_parser *ps, const char *text, size_t len);
/* 1 with *out filled, 0 at the end of the input, KVG_EPARSE or KVG_ETOOBIG
 * for a bad line (ps->line says which). */
int kvg_metrics_parser_next(struct kvg_metrics_parser *ps, struct kvg_metrics_sample *out);

/* The value of label `name` on s, or NULL. */
const struct kvg_str *kvg_metrics_sample_label(const struct kvg_metrics_sample *s,
                                               const char *name);

#endif
