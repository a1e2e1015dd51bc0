/* Parser tests: the accepted grammar (labels, escapes, special values,
 * exponents, timestamps, comments), each kind of malformed line as an error
 * with its line number, recovery after an error, the fixed limits, and a
 * deterministic mutation run over a real body (ASan/UBSan watch it). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "metrics/parse.h"
#include "support/test.h"

static struct kvg_metrics_parser ps;
static struct kvg_metrics_sample smp;

/* First result of parsing text (a C string). */
static int first(const char *text)
{
    kvg_metrics_parser_init(&ps, text, strlen(text));
    return kvg_metrics_parser_next(&ps, &smp);
}

static int label_is(const char *name, const char *want)
{
    const struct kvg_str *v = kvg_metrics_sample_label(&smp, name);
    return v && v->len == strlen(want) && !memcmp(v->p, want, v->len);
}

TEST(plain_samples)
{
    CHECK_INT(first("up 1\n"), 1);
    CHECK(kvg_str_eq(smp.name, "up"));
    CHECK_INT(smp.nlabels, 0);
    CHECK_NEAR(smp.value, 1, 0);
    CHECK_INT(smp.has_timestamp, 0);

    CHECK_INT(first("  \t vllm:num_requests_waiting{model_name=\"m\",engine=\"0\"} 12.0\n"), 1);
    CHECK(kvg_str_eq(smp.name, "vllm:num_requests_waiting"));
    CHECK_INT(smp.nlabels, 2);
    CHECK(label_is("model_name", "m"));
    CHECK(label_is("engine", "0"));
    CHECK(!kvg_metrics_sample_label(&smp, "engin"));
    CHECK_NEAR(smp.value, 12, 0);

    /* Blanks inside braces, a trailing comma, {} and no blank before the value. */
    CHECK_INT(first("a{ x = \"1\" ,\ty=\"2\", } 3 1700000000123\n"), 1);
    CHECK_INT(smp.nlabels, 2);
    CHECK(label_is("y", "2"));
    CHECK_INT(smp.has_timestamp, 1);
    CHECK_INT(smp.timestamp_ms, 1700000000123LL);
    CHECK_INT(first("a{} 4\n"), 1);
    CHECK_INT(smp.nlabels, 0);
    CHECK_INT(first("a{b=\"c\"}5\n"), 1);
    CHECK_NEAR(smp.value, 5, 0);
    CHECK_INT(first("a 1 -42 \t\n"), 1);
    CHECK_INT(smp.timestamp_ms, -42);
    CHECK_INT(first("a 1 9223372036854775807\n"), 1);
    CHECK_INT(smp.timestamp_ms, INT64_MAX);
    CHECK_INT(first("a 1 -9223372036854775808\n"), 1);
    CHECK_INT(smp.timestamp_ms, INT64_MIN);
}

TEST(values)
{
    static const struct {
        const char *text;
        double v;
    } ok[] = {
        {"1.5e3", 1500},
        {"1.5E-3", 0.0015},
        {".5", 0.5},
        {"1.", 1},
        {"-0", 0},
        {"+3", 3},
        {"2.841903104e+09", 2841903104.0},
        {"1e-320", 1e-320}, /* subnormal: fine */
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char line[64];
        snprintf(line, sizeof line, "m %s\n", ok[i].text);
        CHECK_INT(first(line), 1);
        CHECK_NEAR(smp.value, ok[i].v, 0);
    }
    static const char *const nans[] = {"NaN", "nan", "-nan", "+NAN"};
    for (size_t i = 0; i < 4; i++) {
        char line[64];
        snprintf(line, sizeof line, "m %s\n", nans[i]);
        CHECK_INT(first(line), 1);
        CHECK(isnan(smp.value));
    }
    static const char *const infs[] = {"+Inf", "Inf", "inf", "Infinity", "+infinity"};
    for (size_t i = 0; i < 5; i++) {
        char line[64];
        snprintf(line, sizeof line, "m %s\n", infs[i]);
        CHECK_INT(first(line), 1);
        CHECK(isinf(smp.value) && smp.value > 0);
    }
    CHECK_INT(first("m -Inf\n"), 1);
    CHECK(isinf(smp.value) && smp.value < 0);
}

TEST(escapes_and_utf8)
{
    CHECK_INT(first("m{p=\"a\\\\b\\\"c\\nd\",q=\"plain\",u=\"\xe6\xa8\xa1\xc3\xbc\"} 1\n"), 1);
    CHECK(label_is("p", "a\\b\"c\nd"));
    CHECK(label_is("q", "plain"));
    CHECK(label_is("u", "\xe6\xa8\xa1\xc3\xbc"));
    CHECK_INT(first("m{p=\"\"} 1\n"), 1);
    CHECK(label_is("p", ""));
    /* Braces, commas, '=' and '#' inside a value are just bytes. */
    CHECK_INT(first("m{p=\"}{,=# x\"} 1\n"), 1);
    CHECK(label_is("p", "}{,=# x"));
}

TEST(comments)
{
    const char *text = "# HELP m Help with \\\\ and \\n escapes\n"
                       "# TYPE m counter\n"
                       "#TYPE m2 gauge\n"
                       "# just a comment with \\q and \xff bytes\n"
                       "#\n"
                       "# HELP\n"
                       "# HELP m3\n"
                       "# TYPE m4\n"
                       "\n"
                       "   \n"
                       "m 1\n";
    CHECK_INT(first(text), 1);
    CHECK(kvg_str_eq(smp.name, "m"));
    CHECK_INT(ps.line, 11);
    CHECK_INT(kvg_metrics_parser_next(&ps, &smp), 0);
    CHECK_INT(first(""), 0);
    CHECK_INT(first("\n\n# only comments\n"), 0);
}

TEST(malformed_lines_are_errors)
{
    static const char *const bad[] = {
        "m\n",                        /* no value */
        "m \n",                       /* no value */
        "9m 1\n",                     /* bad name */
        "m-1\n",                      /* value not set apart */
        "{a=\"b\"} 1\n",              /* no name */
        "m{a=\"b} 1\n",               /* unterminated quote */
        "m{a=\"b\\t\"} 1\n",          /* unknown escape */
        "m{a=\"b\\",                  /* escape at end of line */
        "m{a \"b\"} 1\n",             /* missing '=' */
        "m{a=b} 1\n",                 /* unquoted */
        "m{a=\"1\",a=\"2\"} 1\n",     /* duplicate label */
        "m{a=\"1\" b=\"2\"} 1\n",     /* missing comma */
        "m{,} 1\n",                   /* empty label */
        "m{9a=\"1\"} 1\n",            /* bad label name */
        "m{a:b=\"1\"} 1\n",           /* colon not allowed in label names */
        "m{a=\"1\"\n",                /* unclosed brace */
        "m 0x10\n",                   /* hex float */
        "m 1e\n",                     /* empty exponent */
        "m 1.2.3\n",                  /* junk */
        "m .\n",                      /* no digits */
        "m nan(123)\n",               /* strtod extension */
        "m infinit\n",                /* near miss */
        "m 1,5\n",                    /* locale comma */
        "m 1e999\n",                  /* overflow */
        "m 1 2 3\n",                  /* trailing token */
        "m 1 1.5\n",                  /* non-integer timestamp */
        "m 1 9223372036854775808\n",  /* timestamp overflow */
        "m 1 -9223372036854775809\n", /* timestamp underflow */
        "m{a=\"\xc3\x28\"} 1\n",      /* invalid UTF-8 */
        "m{a=\"\xed\xa0\x80\"} 1\n",  /* surrogate */
        "m 1",                        /* last line cut short */
        "# TYPE m countr\n",          /* unknown type */
        "# TYPE m gauge extra\n",     /* trailing junk */
        "# TYPE 9m gauge\n",          /* bad name */
        "# HELP m bad \\t escape\n",  /* HELP escapes are \\ and \n only */
        "# HELP m ends in backslash\\\n",
        "m 00000000000000000000000000000000000000000000000000000000000000001\n", /* > 63 chars */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = first(bad[i]);
        if (rc != KVG_EPARSE)
            kvg_test_fail(__FILE__, __LINE__, "case %zu (%s): rc %d", i, bad[i], rc);
    }
    /* A NUL inside a label value (length-delimited input, so it can get in). */
    static const char nul[] = "m{a=\"x\0y\"} 1\n";
    kvg_metrics_parser_init(&ps, nul, sizeof nul - 1);
    CHECK_INT(kvg_metrics_parser_next(&ps, &smp), KVG_EPARSE);
}

TEST(error_line_and_recovery)
{
    const char *text = "a 1\n"
                       "b{x=\"1\"} oops\n"
                       "c 3\n";
    kvg_metrics_parser_init(&ps, text, strlen(text));
    CHECK_INT(kvg_metrics_parser_next(&ps, &smp), 1);
    CHECK_INT(kvg_metrics_parser_next(&ps, &smp), KVG_EPARSE);
    CHECK_INT(ps.line, 2);
    CHECK_INT(kvg_metrics_parser_next(&ps, &smp), 1); /* a caller may skip the bad line */
    CHECK(kvg_str_eq(smp.name, "c"));
    CHECK_INT(kvg_metrics_parser_next(&ps, &smp), 0);
}

TEST(limits)
{
    char line[4096 * 3];
    /* 32 labels fit, 33 do not. */
    for (int n = 32; n <= 33; n++) {
        size_t len = (size_t)snprintf(line, sizeof line, "m{");
        for (int i = 0; i < n; i++)
            len += (size_t)snprintf(line + len, sizeof line - len, "l%d=\"v\",", i);
        snprintf(line + len, sizeof line - len, "} 1\n");
        CHECK_INT(first(line), n == 32 ? 1 : KVG_ETOOBIG);
    }
    /* Escaped values share a 4096-byte scratch space per sample; plain ones
     * are views and need none. */
    size_t len = (size_t)snprintf(line, sizeof line, "m{a=\"");
    for (int i = 0; i < 5000; i++) line[len++] = 'x';
    snprintf(line + len, sizeof line - len, "\"} 1\n");
    CHECK_INT(first(line), 1);
    CHECK_INT(kvg_metrics_sample_label(&smp, "a")->len, 5000);
    len = (size_t)snprintf(line, sizeof line, "m{a=\"\\n");
    for (int i = 0; i < 5000; i++) line[len++] = 'x';
    snprintf(line + len, sizeof line - len, "\"} 1\n");
    CHECK_INT(first(line), KVG_ETOOBIG);
    /* The scratch space is per sample: many escaped samples in a row fit. */
    len = 0;
    for (int i = 0; i < 100; i++)
        len += (size_t)snprintf(line + len, sizeof line - len, "m{a=\"%s\\n\"} %d\n",
                                "0123456789012345678901234567890123456789", i);
    kvg_metrics_parser_init(&ps, line, len);
    int n = 0, rc;
    while ((rc = kvg_metrics_parser_next(&ps, &smp)) > 0) n++;
    CHECK_INT(rc, 0);
    CHECK_INT(n, 100);
}

/* Deterministic mutations of a realistic body: every result must be a
 * sample, the end, or an error; never a crash or a read out of bounds (the
 * copy is exactly sized, so ASan sees any overrun). */
TEST(mutation_robustness)
{
    const char *base = "# HELP vllm:num_requests_waiting Waiting.\n"
                       "# TYPE vllm:num_requests_waiting gauge\n"
                       "vllm:num_requests_waiting{engine=\"0\",model_name=\"a\\\"b\\\\c\\n\"} 3.0\n"
                       "vllm:kv_cache_usage_perc{engine=\"0\"} 8.125e-01 1700000000000\n"
                       "m{le=\"+Inf\"} NaN\n";
    size_t n = strlen(base);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    static const char alphabet[] = "{}\"\\=, \t\n#e.+-0aZ:\xff\xc3";
    for (int iter = 0; iter < 20000; iter++) {
        size_t len = 1 + (size_t)(iter % (int)n);
        char *buf = malloc(len);
        CHECK(buf);
        memcpy(buf, base, len);
        for (int k = 0; k < 1 + iter % 4; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            buf[(x >> 8) % len] = alphabet[(x >> 40) % (sizeof alphabet - 1)];
        }
        kvg_metrics_parser_init(&ps, buf, len);
        int rc, guard = 0;
        while ((rc = kvg_metrics_parser_next(&ps, &smp)) != 0 && guard++ < 64) {
            if (rc > 0) {
                CHECK(smp.name.len > 0 && smp.nlabels <= KVG_METRICS_PARSE_MAX_LABELS);
                for (size_t i = 0; i < smp.nlabels; i++)
                    CHECK(smp.labels[i].value.len == 0 || smp.labels[i].value.p);
            } else {
                CHECK(rc == KVG_EPARSE || rc == KVG_ETOOBIG);
            }
        }
        CHECK(guard < 64);
        free(buf);
    }
}
