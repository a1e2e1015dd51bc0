/* Unit tests of the template interpreter (jinja*.c): preprocessing and
 * lexing, expressions, statements, filters and methods, and the failures. The
 * cases are hand-picked; their expected output is what @huggingface/jinja
 * 0.5.11 renders for them (the integration test
 * tests/integration/chat_vs_jinja.mjs compares thousands more against the
 * live reference). Error cases expect KVG_ETEMPLATE, and raise_exception's
 * message verbatim. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/utf8.h"
#include "support/test.h"
#include "jinja/jinja.h"
#include "jinja/jinja_int.h"

struct jcase {
    const char *tpl, *ctx, *want, *err;
};

static const struct jcase g_lex[] = {
    {"a\n", "{}", "a", NULL},
    {"  {% if true %}\nx\n  {% endif %}\n", "{}", "x\n", NULL},
    {"{{- ' a ' -}}  \n b", "{}", " a b", NULL},
    {"x  {#- comment -#}  y", "{}", "xy", NULL},
    {"{% generation %}abc{% endgeneration %}", "{}", "abc", NULL},
    {"a \n{%- generation -%}\n b", "{}", "ab", NULL},
    {"{{ 'a' \"b\" }}", "{}", "ab", NULL},
    {"{{ '\\u00e9\\x41\\t\\'q\\'' }}", "{}", "éA\t'q'", NULL},
    {"{{ -1 }}{{ 5-2 }}{{ 1 - -1 }}{{ -x }}", "{\"x\": 2.5}", "-132-2.5", NULL},
    {"{{ {'a': {'b': 1}} }}", "{}", "{\"a\": {\"b\": 1}}", NULL},
    {"\t{%- if true %}a{% endif %}  \n  {{ 'b' }}", "{}", "a  \n  b", NULL},
    {"{# c #}\n{% if true -%}\n\n  x{%- endif %}", "{}", "x", NULL},
    {"{{ '%}\n' }}|", "{}", "%}|", NULL},
};
static const struct jcase g_expr[] = {
    {"{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ 10 - 2 - 3 }}", "{}", "7 9 64 5",
     NULL},
    {"{{ not true and false }} {{ not (true and false) }} {{ true or x.y.z }}", "{}",
     "false true true", NULL},
    {"{{ 'ab' if x else 'cd' }}|{{ 'x' if false }}|{{ 1 if 0 else 2 if 0 else 3 }}", "{}", "cd||3",
     NULL},
    {"{{ [1,2,3]|length - 1 }} {{ -2|abs }}", "{}", "2 2", NULL},
    {"{{ 1 in [1, 2] }} {{ 'a' not in 'abc' }} {{ 'k' in {'k': 1} }} {{ 'z' in x }}", "{}",
     "true false true false", NULL},
    {"{{ 1/2 }} {{ 4/2 }} {{ 7//2 }} {{ -7//2 }} {{ 7%-3 }} {{ 0.1+0.2 }} {{ 10**21 }} {{ 2**53 + "
     "1 }} {{ 1/0 }}",
     "{}", "0.5 2.0 3 -4 1 0.30000000000000004 1e+21 9007199254740992 Infinity", NULL},
    {"{{ '1' == 1 }} {{ 0 == false }} {{ '' == 0 }} {{ none == false }} {{ [] == '' }} {{ [1,2] == "
     "'1,2' }} {{ x == none }} {{ ' 12 ' == 12 }}",
     "{}", "true true true false true true true true", NULL},
    {"{{ 'a' + 1 }} {{ 1 ~ 2.0 }} {{ [1,[2,3]] ~ '' }} {{ {'a':1} ~ '' }} {{ true ~ none is none "
     "}} {{ 'x' + [1, 'y'] }}",
     "{}", "a1 12 1,[2, 3] [object Map] truetrue x1,y", NULL},
    {"{{ none }}|{{ undefined }}|{{ true }}|{{ 2.0 }}|{{ -0.0 }}|{{ [2.0, none, 'x'] }}|{{ {'a': "
     "undefined_v} }}|{{ 123456789.125 }}|{{ 0.000001 }}|{{ 0.0000001 }}",
     "{}", "||true|2.0|-0.0|[2, null, \"x\"]|{\"a\": undefined}|123456789.125|0.000001|1e-7", NULL},
    {"{{ m.a }}|{{ m['b'] }}|{{ m.c.d }}|{{ m.l[1] }}|{{ m.l[-1] }}|{{ m.l.0 }}|{{ m.l.length "
     "}}|{{ m.get('a') }}|{{ m.get('zz', 'dflt') }}",
     "{\"m\": {\"a\": 1, \"b\": \"two\", \"c\": {\"d\": null}, \"l\": [10, 20, 30]}}",
     "1|two||20|30|10|3|1|dflt", NULL},
    {"{{ [1,2,3,4][1:3] }}{{ 'hello'[::-1] }}{{ [1,2,3][-2:] }}{{ 'abc'[5:] }}{{ [1,2,3,4,5][::2] "
     "}}{{ [1,2,3][::-2] }}{{ 'héllo😀'[1:] }}",
     "{}", "[2, 3]olleh[2, 3][1, 3, 5][3, 1]éllo😀", NULL},
    {"{{ 'abc'[0] }}{{ 'abc'[-1] }}{{ 'abc'[9] is defined }}{{ none.x is defined }}{{ "
     "'ab😀c'|length }}",
     "{}", "acfalsefalse5", NULL},
    {"{{ n }} {{ f }} {{ big }} {{ neg }} {{ obj }}",
     "{\"n\": 3, \"f\": 2.5, \"big\": 1e300, \"neg\": -0.5, \"obj\": {\"2\": \"b\", \"x\": 1, "
     "\"1\": \"a\"}}",
     "3 2.5 1e+300 -0.5 {\"1\": \"a\", \"2\": \"b\", \"x\": 1}", NULL},
};
static const struct jcase g_stmt[] = {
    {"{% for x in [1,2,3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 "
     "}}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}",
     "{}", "1032truefalse3;2121falsefalse3;3210falsetrue3;", NULL},
    {"{% for x in ['a','b','c'] %}{{ loop.previtem }}{{ loop.nextitem }}|{% endfor %}", "{}",
     "b|ac|b|", NULL},
    {"{% for k in {'b':1,'a':2} %}{{ k }}{% endfor %}", "{}", "ba", NULL},
    {"{% for k, v in {'a': 1, 'b': [2]}.items() %}{{ k }}={{ v }};{% endfor %}", "{}", "a=1;b=[2];",
     NULL},
    {"{% for x in [1,2,3] if x > 5 %}{{ x }}{% else %}none{% endfor %}", "{}", "none", NULL},
    {"{% for x in [1,2,3] %}a{% if x == 2 %}{% continue %}{% endif %}b{% endfor %}", "{}", "abab",
     NULL},
    {"{% for x in [1,2,3] %}a{% if x == 2 %}{% break %}{% endif %}b{% endfor %}", "{}", "ab", NULL},
    {"{% for x in [1] %}{% continue %}{% else %}E{% endfor %}", "{}", "E", NULL},
    {"{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}", "{}", "21",
     NULL},
    {"{% set ns = namespace(a=1) %}{% for i in [1,2] %}{% set ns.a = ns.a + i %}{% endfor %}{{ "
     "ns.a }} {{ ns }}",
     "{}", "4 {\"a\": 4}", NULL},
    {"{% macro m(a, b='B') %}{{ a }}{{ b }}{% endmacro %}{{ m(1) }}{{ m(1, 2) }}{{ m(a=3) }}{{ "
     "m(b=4, a=5) }}",
     "{}", "1B123B54", NULL},
    {"{% macro m() %}{{ v }}{% endmacro %}{% for v in ['x'] %}{{ m() }}{% endfor %}", "{}", "x",
     NULL},
    {"{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k=4) }}", "{}",
     "1[2, 3]{\"k\": 4}", NULL},
    {"{% set s %}a{{ 1 }}{% endset %}{{ s | length }}{{ s }}", "{}", "2a1", NULL},
    {"{% filter upper %}ab{{ 'c' }}{% endfilter %}", "{}", "ABC", NULL},
    {"{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = (3, 4) %}{{ t }}", "{}", NULL,
     "Cannot convert to JSON: TupleValue"},
    {"{% if a %}A{% elif b %}B{% elif c %}C{% else %}D{% endif %}", "{\"c\": 1}", "C", NULL},
    {"{% for m in messages[::-1] %}{% set i = (messages|length - 1) - loop.index0 %}{{ i }}{{ "
     "m.role }}{% endfor %}",
     "{\"messages\": [{\"role\": \"a\"}, {\"role\": \"b\"}]}", "1b0a", NULL},
    {"{% for x in [[1, 2], [3, 4]] %}{% for y in x %}{{ loop.index }}{{ y }}{% endfor %}{{ "
     "loop.index }}|{% endfor %}",
     "{}", "11221|13242|", NULL},
};
static const struct jcase g_filters[] = {
    {"{{ {'a': [1, 2.5, 'é', none, true], 'q': 'x\"y\\\\z\\n'} | tojson }}", "{}",
     "{\"a\": [1, 2.5, \"é\", null, true], \"q\": \"x\\\"y\\\\z\\n\"}", NULL},
    {"{{ {'a': [1, {}], 'b': [], 'c': {'d': 1}} | tojson(indent=2) }}", "{}",
     "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": [],\n  \"c\": {\n    \"d\": 1\n  }\n}", NULL},
    {"{{ [1, {'k': 2}] | tojson(separators=(',', ':')) }} {{ undefined_v | tojson }} {{ 2.0 | "
     "tojson }}",
     "{}", "[1,{\"k\":2}] null 2", NULL},
    {"{{ s | tojson(ensure_ascii=true) }}", "{\"s\": \"é😀\\u0001\\u007f\"}",
     "\"\\u00e9\\ud83d\\ude00\\u0001\\u007f\"", NULL},
    {"{{ '\\n\\u3000 a \\n'.strip('\\n') }}|{{ '  a  '.lstrip() }}|{{ '  a  '.rstrip() }}|{{ ' \\t "
     "a \\n' | trim }}|",
     "{}", "a|a  |  a|a|", NULL},
    {"{{ ' a  b '.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a b c'.split(' ', 1) }} {{ ' a b c "
     "'.split(none, 1) }} {{ 'a-b-c'.split('-', 0) }}",
     "{}",
     "[\"a\", \"b\"] [\"a\", \"b\", \"\", \"c\"] [\"a\", \"b c\"] [\"a\", \"b c \"] [\"a-b-c\"]",
     NULL},
    {"{{ 'aaa'.replace('a', 'b', 2) }} {{ 'ab'.replace('', '-') }} {{ 'aaa'|replace('a','c') }} {{ "
     "'aXbX'|replace('X', '', count=1) }}",
     "{}", "bba -a-b- ccc abX", NULL},
    {"{{ 'hello'.startswith(('x', 'he')) }} {{ 'hello'.endswith('lo') }} {{ 'hello world'.title() "
     "}} {{ 'hello'.capitalize() }} {{ 'Hello'.upper() }}{{ 'Hello'.lower() }}",
     "{}", "true true Hello World Hello HELLOhello", NULL},
    {"{{ items | selectattr('role', 'equalto', 'user') | map(attribute='n') | list }} {{ items | "
     "rejectattr('role', 'equalto', 'user') | list | length }} {{ items | selectattr('flag') | "
     "list | length }} {{ items | selectattr('n', 'undefined') | list | length }}",
     "{\"items\": [{\"role\": \"user\", \"n\": 1}, {\"role\": \"bot\", \"n\": 2, \"flag\": true}, "
     "{\"role\": \"user\", \"n\": 3, \"flag\": 0}]}",
     "[1, 3] 1 1 0", NULL},
    {"{{ items | map(attribute='a.b') | list }} {{ items | map(attribute='z', default='d') | "
     "join(',') }}",
     "{\"items\": [{\"a\": {\"b\": 1}}, {\"a\": {\"c\": 2}}]}", "[1, undefined] d,d", NULL},
    {"{{ x | default('d') }} {{ '' | default('d', true) }} {{ none | default('d') }}|{{ 0 | "
     "default('d', boolean=true) }}",
     "{}", "d d |d", NULL},
    {"{{ [1, none, 'a', [2, 3], true] | join('-') }} {{ 'abc' | join(',') }} {{ [1, 2] | join }}",
     "{}", "1--a-2,3-true a,b,c 12", NULL},
    {"{{ [3, 1, 2, 1] | unique | list }} {{ [3, 1, 2] | sort }} {{ ['b', 'A', 'c'] | sort }} {{ "
     "[3, 1] | sort(reverse=true) }} {{ [1, 2] | reverse }} {{ [1, 2] | first }}{{ [1, 2] | last "
     "}}{{ 'abc' | length }}",
     "{}", "[3, 1, 2] [1, 2, 3] [\"A\", \"b\", \"c\"] [3, 1] [2, 1] 123", NULL},
    {"{{ d | items }} {{ d.keys() }} {{ d.values() }} {{ d | dictsort }} {{ d | "
     "dictsort(by='value', reverse=true) }} {{ d | length }}",
     "{\"d\": {\"b\": 2, \"a\": 3, \"C\": 1}}",
     "[[\"b\", 2], [\"a\", 3], [\"C\", 1]] [\"b\", \"a\", \"C\"] [2, 3, 1] [[\"a\", 3], [\"b\", "
     "2], [\"C\", 1]] [[\"a\", 3], [\"b\", 2], [\"C\", 1]] 3",
     NULL},
    {"{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\nb' | indent }}",
     "{}", "a\n  b\n\n  c|  a\n  b|a\n    b", NULL},
    {"{{ 1.7 | int }} {{ -1.5 | int }} {{ '42abc' | int }} {{ ' 3.5e2x' | float }} {{ 'x' | int }} "
     "{{ 'x' | float(1.5) }} {{ -3 | abs }} {{ 2 | float }} {{ 2 | string }} {{ 2.0 | string }} {{ "
     "true | int }} {{ false | string }} {{ [1] | string }}",
     "{}", "1 -2 42 350.0 0 1.5 3 2.0 2 2.0 1 false [1]", NULL},
    {"{{ 3 is odd }} {{ 4 is even }} {{ 1 is number }} {{ 1.5 is integer }} {{ [] is iterable }} "
     "{{ (1, 2) is iterable }} {{ {} is mapping }} {{ 'a' is sequence }} {{ true is boolean }} {{ "
     "range is callable }} {{ none is none }} {{ 'abc' is lower }} {{ 'aBc' is upper }}",
     "{}", "true true true false true false true true true true true true false", NULL},
    {"{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }} {{ range(3) }} {{ range(1, 7, 2) "
     "}} {{ range(5, 0, -2) }}",
     "{}", "12 [0, 1, 2] [1, 3, 5] [5, 3, 1]", NULL},
    {"{{ 'abc' | safe }} {{ x | list if false else '' }}{{ [1, 2] | list }}", "{}", "abc [1, 2]",
     NULL},
};
static const struct jcase g_errors[] = {
    {"{{ raise_exception('boom: ' ~ 1) }}", "{}", NULL, "boom: 1"},
    {"{{ 1 + none }}", "{}", NULL, "Cannot perform operation on null values"},
    {"{{ undefined_x + 1 }}", "{}", NULL, "Cannot perform operation + on undefined values"},
    {"{{ x.y( }}", "{}", NULL, "Unexpected token: CloseExpression"},
    {"{% raw %}x{% endraw %}", "{}", NULL, "Unknown statement type: raw"},
    {"{% if %}x{% endif %}", "{}", NULL, "Unexpected token: CloseStatement"},
    {"{% for x in 'abc' %}{% endfor %}", "{}", NULL,
     "Expected iterable or object type in for loop: got StringValue"},
    {"{{ 'a' | nosuch }}", "{}", NULL, "Unknown StringValue filter: nosuch"},
    {"{{ 'a' < 'b' }}", "{}", NULL, "Unknown operator \"<\" between StringValue and StringValue"},
    {"{% break %}", "{}", NULL, ""},
    {"{{ (1, 2) }}", "{}", NULL, "Cannot convert to JSON: TupleValue"},
    {"{% set x.y = 1 %}", "{}", NULL, "cannot assign attribute on non-namespace object"},
    {"{{ none }}", "{\"none\": 1}", NULL, "Variable already declared: none"},
    {"{{ [1] | selectattr('a') | list }}", "{}", NULL,
     "`selectattr` can only be applied to array of objects"},
    {"{{ 'abc' | indent(-1) }}", "{}", NULL, "Invalid count value: -1"},
};

/* Compiles and renders; the output (NUL-terminated) and message are
 * malloc'd into *got / err (caller frees *got). */
static int render(const char *tpl, const char *ctx, const struct kvg_jinja_limits *lim,
                  size_t out_limit, char **got, char *err, size_t errlen)
{
    struct kvg_jinja *t = NULL;
    struct kvg_buf b;
    cJSON *j = cJSON_Parse(ctx ? ctx : "{}");
    int rc = kvg_jinja_compile(tpl, strlen(tpl), &t, err, errlen);
    kvg_buf_init(&b, out_limit);
    if (!rc) rc = kvg_jinja_render_json(t, j, lim, &b, err, errlen);
    *got = strdup(b.data ? (kvg_buf_cstr(&b) ? b.data : "") : "");
    kvg_buf_free(&b);
    kvg_jinja_free(t);
    cJSON_Delete(j);
    return rc;
}

static void check_table(const struct jcase *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct jcase *c = &cases[i];
        char err[512] = "", *got = NULL;
        int rc = render(c->tpl, c->ctx, NULL, 0, &got, err, sizeof(err));
        int ok = c->want ? rc == 0 && !strcmp(got, c->want)
                         : rc == KVG_ETEMPLATE &&
                               (strncmp(c->tpl, "{{ raise_exception", 18) || !strcmp(err, c->err));
        if (!ok) {
            char msg[600];
            snprintf(msg, sizeof(msg), "%s", got);
            free(got);
            kvg_test_fail(__FILE__, __LINE__, "case %zu %s: rc %d (%s), got \"%s\", want %s \"%s\"",
                          i, c->tpl, rc, err, msg, c->want ? "text" : "error",
                          c->want ? c->want : c->err);
        }
        free(got);
    }
}

#define TABLE(t) check_table(t, sizeof(t) / sizeof(t[0]))

TEST(preprocessing_and_lexing)
{
    TABLE(g_lex);
}

TEST(expressions)
{
    TABLE(g_expr);
}

TEST(statements)
{
    TABLE(g_stmt);
}

TEST(filters_methods_tests)
{
    TABLE(g_filters);
}

TEST(errors_as_the_reference)
{
    TABLE(g_errors);
}

static int rc_of(const char *tpl, const char *ctx)
{
    char err[512], *got;
    int rc = render(tpl, ctx, NULL, 0, &got, err, sizeof(err));
    free(got);
    return rc;
}

TEST(unsupported_is_an_error_not_a_guess)
{
    CHECK_INT(rc_of("{{ 'é'|upper }}", NULL), KVG_EUNSUPP);
    CHECK_INT(rc_of("{{ 'Straße'.lower() }}", NULL), KVG_EUNSUPP);
    CHECK_INT(rc_of("{{ '中文'|upper }}", NULL), 0); /* caseless scripts are fine */
    CHECK_INT(rc_of("{% call foo() %}x{% endcall %}", NULL), KVG_EUNSUPP);
    CHECK_INT(rc_of("{% if false %}{% call foo() %}x{% endcall %}{% endif %}ok", NULL), 0);
    CHECK_INT(rc_of("{{ [] | first }}", NULL), KVG_EUNSUPP);
    CHECK_INT(rc_of("{{ {'b': 1} | tojson(sort_keys=true) }}", NULL), KVG_EUNSUPP);
    CHECK_INT(rc_of("{{ '\\ud800' }}", NULL), KVG_EUNSUPP);
    CHECK_INT(rc_of("{{ '\\ud83d\\ude00' }}", NULL), 0); /* a whole pair is fine */
    CHECK_INT(rc_of("{{ range }}", NULL), KVG_EUNSUPP);  /* JS prints a function's source */
    CHECK_INT(rc_of("{{ '😀'[0] }}", NULL), KVG_EUNSUPP); /* half a surrogate pair */
}

TEST(limits)
{
    struct kvg_jinja_limits lim = {.max_steps = 10000};
    char err[512], *got;
    CHECK_INT(render("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}",
                     NULL, &lim, 0, &got, err, sizeof(err)),
              KVG_ETOOBIG);
    free(got);
    CHECK_INT(rc_of("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", NULL), KVG_EUNSUPP);
    /* the output buffer's own cap */
    CHECK_INT(render("{% for i in range(100) %}0123456789{% endfor %}", NULL, NULL, 500, &got, err,
                     sizeof(err)),
              KVG_ETOOBIG);
    free(got);
    struct kvg_jinja_limits mem = {.max_memory = 64 << 10};
    CHECK_INT(render("{% set ns = namespace(s='') %}{% for i in range(10000) %}"
                     "{% set ns.s = ns.s ~ 'abcdefgh' %}{% endfor %}{{ ns.s|length }}",
                     NULL, &mem, 0, &got, err, sizeof(err)),
              KVG_ETOOBIG);
    free(got);
    /* deeply nested syntax is refused at compile time, not on the stack */
    char deep[4096];
    size_t k = 0;
    k += (size_t)sprintf(deep, "{{ ");
    for (int i = 0; i < 1000; i++) deep[k++] = '(';
    deep[k++] = '1';
    for (int i = 0; i < 1000; i++) deep[k++] = ')';
    strcpy(deep + k, " }}");
    CHECK_INT(rc_of(deep, NULL), KVG_EUNSUPP);
}

/* Allocations larger than the arena's first chunk (a long template, a long
 * concatenation) get a chunk of their own size. */
TEST(large_strings)
{
    static char tpl[20000], ctx[20000];
    memset(tpl, 'x', 6000);
    strcpy(tpl + 6000, "{{ s ~ s }}|{{ (s ~ s) | length }}");
    strcpy(ctx, "{\"s\": \"");
    memset(ctx + 7, 'y', 5000);
    strcpy(ctx + 5007, "\"}");
    char err[256], *got;
    CHECK_INT(render(tpl, ctx, NULL, 0, &got, err, sizeof(err)), 0);
    CHECK_INT(strlen(got), 6000 + 10000 + 6);
    CHECK(!strcmp(got + 16000, "|10000"));
    free(got);
}

TEST(failed_render_leaves_output_untouched)
{
    struct kvg_jinja *t;
    struct kvg_buf b;
    char err[256];
    const char *src = "abc{{ raise_exception('no') }}";
    CHECK_INT(kvg_jinja_compile(src, strlen(src), &t, err, sizeof(err)), 0);
    kvg_buf_init(&b, 0);
    kvg_buf_append_str(&b, "keep");
    CHECK_INT(kvg_jinja_render_json(t, NULL, NULL, &b, err, sizeof(err)), KVG_ETEMPLATE);
    CHECK_INT(b.len, 4);
    CHECK_STR(err, "no");
    kvg_buf_free(&b);
    kvg_jinja_free(t);
}

TEST(js_number_format)
{
    static const struct {
        double d;
        const char *s;
    } c[] = {{0.1, "0.1"},
             {1e21, "1e+21"},
             {1e-7, "1e-7"},
             {123456789012345680000.0, "123456789012345680000"},
             {5e-324, "5e-324"},
             {-1.5, "-1.5"},
             {100, "100"},
             {1.7976931348623157e308, "1.7976931348623157e+308"},
             {0.000001, "0.000001"},
             {-0.0, "0"},
             {1.0 / 3, "0.3333333333333333"},
             {2.5e-5, "0.000025"},
             {1.5e300, "1.5e+300"}};
    char buf[40];
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        kvg__jinja_str_num(c[i].d, buf);
        CHECK_STR(buf, c[i].s);
    }
}

TEST(utf8_and_whitespace_helpers)
{
    const char *s = "\xe3\x80\x80 a\xc2\xa0";
    size_t n = strlen(s);
    kvg__jinja_str_trim(&s, &n, 1, 1);
    CHECK_INT(n, 1);
    CHECK(*s == 'a');
    CHECK_INT(kvg__jinja_str_utf16_len("a\xf0\x9f\x98\x80", 5), 3);
    CHECK(kvg_utf8_valid("ok \xe2\x82\xac", 6));
    CHECK(!kvg_utf8_valid("\xc0\x80", 2));     /* overlong */
    CHECK(!kvg_utf8_valid("\xed\xa0\x80", 3)); /* surrogate */
    CHECK(!kvg_utf8_valid("\xe2\x82", 2));     /* truncated */
    CHECK_INT(kvg__jinja_str_ws_len("\xe2\x80\xa8x", "\xe2\x80\xa8x" + 4), 3);
    CHECK_INT(kvg__jinja_str_ws_len("\xc2\x85", "\xc2\x85" + 2), 0); /* NEL is not JS whitespace */
}
