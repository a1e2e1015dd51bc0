/* The option mechanism (base/opt.h): every type from the command line and
 * from YAML, ranges, choices, lists against repeatable lists, --x=y, unknown
 * names with the nearest one, --help, emit-argv round trips and diffs. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "base/opt.h"
#include "support/test.h"

struct sub {
    double w;
    uint32_t n;
};

struct row {
    char name[16];
    uint32_t port;
};

struct cfg {
    char s[8];
    int i;
    uint32_t u;
    size_t z;
    uint64_t q;
    uint32_t secs;
    uint64_t secs64;
    uint32_t ms;
    double d;
    int b, nb;
    struct kvg_strlist l, la;
    char es[16];
    int ei;
    int lvl;
    int even;
    struct sub inc, named;
    struct kvg_strlist urls, eps;
    struct row rows[3];
    size_t nrows;
};

#define O(f) offsetof(struct cfg, f)

static const char *const modes[] = {"fast", "slow", NULL};
static const char *const shapes[] = {"round", "square", "flat", NULL};

static int even_parse(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                      size_t errlen)
{
    (void)index;
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n % 2) return kvg_err_set(err, errlen, KVG_ECONFIG, "an even number");
    *(int *)(void *)((char *)obj + o->off) = (int)n;
    return 0;
}

static int even_format(const void *obj, const struct kvg_opt *o, char *out, size_t cap)
{
    snprintf(out, cap, "%d", *(const int *)(const void *)((const char *)obj + o->off));
    return 0;
}

static int not_seven(void *parent, void *item, size_t index, char *err, size_t errlen)
{
    (void)parent;
    (void)index;
    const struct sub *s = item;
    return s->w == 7 ? kvg_err_set(err, errlen, KVG_ECONFIG, "weight 7 is unlucky") : 0;
}

static int row_init(void *parent, void *item, size_t index, char *err, size_t errlen)
{
    (void)parent;
    (void)index;
    (void)err;
    (void)errlen;
    struct row *r = item;
    memset(r, 0, sizeof *r);
    r->port = 80;
    return 0;
}

static const struct kvg_opt sub_t[] = {
    {"weight", NULL, KVG_OPT_DOUBLE, offsetof(struct sub, w), .help = "a weight", .min = 0,
     .max = 10, .section = "sub"},
    {"count-n", NULL, KVG_OPT_U32, offsetof(struct sub, n), .help = "a count"},
    KVG_OPT_END,
};

static const struct kvg_opt col_t[] = {
    {"url", NULL, KVG_OPT_LIST, O(urls), .flags = KVG_OPT_F_PRIMARY | KVG_OPT_F_REQUIRED},
    {"kv_endpoint", NULL, KVG_OPT_LIST, O(eps), .help = "an endpoint"},
    KVG_OPT_END,
};

static const struct kvg_opt row_t[] = {
    {"name", NULL, KVG_OPT_STR, offsetof(struct row, name), sizeof(((struct row *)0)->name),
     .flags = KVG_OPT_F_REQUIRED},
    {"port", NULL, KVG_OPT_U32, offsetof(struct row, port), .min = 1, .max = 65535},
    KVG_OPT_END,
};

static const struct kvg_opt table[] = {
    {"name", NULL, KVG_OPT_STR, O(s), sizeof(((struct cfg *)0)->s), .meta = "NAME",
     .help = "a name", .section = "basic"},
    {"level-n", "lvl-n", KVG_OPT_INT, O(i), .help = "an int", .min = -5, .max = 5},
    {"count", NULL, KVG_OPT_U32, O(u), .help = "a count"},
    {"bytes", NULL, KVG_OPT_SIZE, O(z), .help = "a size"},
    {"big", NULL, KVG_OPT_U64, O(q), .help = "a u64"},
    {"timeout-secs", NULL, KVG_OPT_SECS_MS, O(secs), .help = "seconds", .section = "time"},
    {"idle-secs", NULL, KVG_OPT_SECS_MS64, O(secs64), .help = "seconds, 64-bit"},
    {"wait-ms", NULL, KVG_OPT_MS, O(ms), .help = "milliseconds"},
    {"ratio", NULL, KVG_OPT_DOUBLE, O(d), .help = "a fraction", .min = 0, .max = 1,
     .section = "basic"},
    {"verbose", NULL, KVG_OPT_BOOL, O(b), .help = "say more"},
    {"no-color", NULL, KVG_OPT_NBOOL, O(nb), .help = "no colours"},
    {"items", NULL, KVG_OPT_LIST, O(l), .help = "a list"},
    {"add", NULL, KVG_OPT_LIST_APPEND, O(la), .help = "repeatable"},
    {"mode", NULL, KVG_OPT_ENUM, O(es), sizeof(((struct cfg *)0)->es), .choices = modes,
     .help = "as a string"},
    {"shape", NULL, KVG_OPT_ENUM, O(ei), .choices = shapes, .help = "as an index"},
    {"log-level", NULL, KVG_OPT_LEVEL, O(lvl), .help = "how much to log"},
    {"even", NULL, KVG_OPT_CUSTOM, O(even), sizeof(int), .parse = even_parse, .format = even_format,
     .help = "an even number"},
    {NULL, NULL, KVG_OPT_INCLUDE, O(inc), .sub = sub_t},
    {"nested", NULL, KVG_OPT_INCLUDE, O(named), .sub = sub_t, .check = not_seven,
     .help = "a mapping"},
    {"workers", NULL, KVG_OPT_ROWS, 0, 0, .sub = col_t, .help = "columns"},
    {"pools", NULL, KVG_OPT_ROWS, O(rows), sizeof(struct row), .sub = row_t, .count_off = O(nrows),
     .max_rows = 3, .init = row_init, .help = "structs"},
    KVG_OPT_END,
};

static void defaults(struct cfg *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->s, sizeof c->s, "x");
    c->u = 3;
    c->secs = 30000;
    c->d = 0.25;
    c->nb = 1;
    snprintf(c->es, sizeof c->es, "fast");
    c->lvl = KVG_LOG_INFO;
    c->inc.w = 1.5;
}

static int parse(struct cfg *c, const char *line, char *err, size_t errlen)
{
    char buf[1024], *argv[64];
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *t = strtok(buf, " "); t && argc < 64; t = strtok(NULL, " ")) argv[argc++] = t;
    return kvg_opt_parse_argv(table, c, argc, argv, 0, err, errlen);
}

static int yaml(struct cfg *c, const char *text, char *err, size_t errlen)
{
    return kvg_opt_load_yaml_text(table, c, text, strlen(text), "t.yaml", err, errlen);
}

TEST(argv_every_type)
{
    struct cfg c;
    char err[512] = "";
    defaults(&c);
    CHECK_INT(parse(&c,
                    "--name ab --level-n -4 --count 7 --bytes 9 --big 18446744073709551615 "
                    "--timeout-secs 1.5 --idle-secs 86400 --wait-ms 20 --ratio 0.5 --verbose "
                    "--no-color --items a b --add c --mode slow --shape flat --log-level debug "
                    "--even 4 --weight 2.5 --count-n 6",
                    err, sizeof err),
              0);
    CHECK_STR(c.s, "ab");
    CHECK_INT(c.i, -4);
    CHECK_INT(c.u, 7);
    CHECK_INT(c.z, 9);
    CHECK(c.q == UINT64_MAX);
    CHECK_INT(c.secs, 1500);
    CHECK(c.secs64 == 86400000ull);
    CHECK_INT(c.ms, 20);
    CHECK_NEAR(c.d, 0.5, 1e-12);
    CHECK_INT(c.b, 1);
    CHECK_INT(c.nb, 0);
    CHECK_INT(c.l.n, 2);
    CHECK_STR(c.l.v[1], "b");
    CHECK_INT(c.la.n, 1);
    CHECK_STR(c.es, "slow");
    CHECK_INT(c.ei, 2);
    CHECK_INT(c.lvl, KVG_LOG_DEBUG);
    CHECK_INT(c.even, 4);
    CHECK_NEAR(c.inc.w, 2.5, 1e-12); /* the unnamed include's flags are the table's */
    CHECK_INT(c.inc.n, 6);
    CHECK_INT(parse(&c, "--lvl-n 3", err, sizeof err), 0); /* the alias */
    CHECK_INT(c.i, 3);
    CHECK_INT(parse(&c, "--weight 1 --help", err, sizeof err), 1);
    CHECK_NEAR(c.inc.w, 2.5, 1e-12); /* --help: nothing parsed */
    kvg_opt_free(table, &c);
    CHECK_INT(c.l.n, 0);
}

TEST(argv_ranges_and_choices)
{
    struct cfg c;
    char err[512];
    defaults(&c);
    CHECK_INT(parse(&c, "--level-n 6", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "--level-n: expects an integer -5..5, got '6'");
    CHECK_INT(parse(&c, "--count abc", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "--count: expects an integer 0..4294967295, got 'abc'");
    CHECK_INT(parse(&c, "--count 4294967296", err, sizeof err), KVG_ECONFIG);
    CHECK_INT(parse(&c, "--ratio 1.5", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "--ratio: expects a number 0..1, got '1.5'");
    CHECK_INT(parse(&c, "--timeout-secs -1", err, sizeof err), KVG_ECONFIG);
    CHECK(strstr(err, "expects a number of seconds") != NULL);
    CHECK_INT(parse(&c, "--mode medium", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "--mode: expects one of fast, slow, got 'medium'");
    CHECK_INT(parse(&c, "--shape oval", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "--shape: expects one of round, square, flat, got 'oval'");
    CHECK_INT(parse(&c, "--log-level loud", err, sizeof err), KVG_ECONFIG);
    CHECK_INT(parse(&c, "--name toolongname", err, sizeof err), KVG_ECONFIG);
    CHECK(strstr(err, "--name: value too long") == err);
    CHECK_INT(parse(&c, "--even 3", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "--even: an even number");
    CHECK_INT(parse(&c, "--count", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "--count: needs a value");
    CHECK_INT(parse(&c, "--items --count 1", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "--items: needs at least one value");
    CHECK_INT(parse(&c, "stray", err, sizeof err), KVG_ECONFIG);
    CHECK(strstr(err, "unexpected argument 'stray'") != NULL);
    CHECK_STR(c.es, "fast"); /* failures leave the field */
    CHECK_INT(c.u, 3);
    kvg_opt_free(table, &c);
}

TEST(argv_lists_append_and_equals)
{
    struct cfg c;
    char err[512];
    defaults(&c);
    CHECK_INT(parse(&c, "--items a b --items c --add a --add b c", err, sizeof err), 0);
    CHECK_INT(c.l.n, 1); /* a later list replaces */
    CHECK_STR(c.l.v[0], "c");
    CHECK_INT(c.la.n, 3); /* a repeatable one adds */
    CHECK_STR(c.la.v[2], "c");
    CHECK_INT(parse(&c, "--count=5 --items=x --verbose=true --no-color=false --mode=slow", err,
                    sizeof err),
              0);
    CHECK_INT(c.u, 5);
    CHECK_INT(c.l.n, 1);
    CHECK_STR(c.l.v[0], "x");
    CHECK_INT(c.b, 1);
    CHECK_INT(c.nb, 1); /* --no-color=false: colours stay */
    CHECK_INT(parse(&c, "--verbose=maybe", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "--verbose: expects true or false, got 'maybe'");
    kvg_opt_free(table, &c);
}

TEST(argv_unknown_flags_suggest)
{
    struct cfg c;
    char err[512];
    defaults(&c);
    CHECK_INT(parse(&c, "--cuont 1", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "unknown flag '--cuont' (did you mean --count?)");
    CHECK_INT(parse(&c, "--timeout-sec=3", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "unknown flag '--timeout-sec' (did you mean --timeout-secs?)");
    CHECK_INT(parse(&c, "--weigth 1", err, sizeof err), KVG_ECONFIG); /* an include's name */
    CHECK_STR(err, "unknown flag '--weigth' (did you mean --weight?)");
    CHECK_INT(parse(&c, "--zzzzzzzz 1", err, sizeof err), KVG_ECONFIG); /* nothing close */
    CHECK_STR(err, "unknown flag '--zzzzzzzz' (see --help)");
    CHECK_INT(parse(&c, "--workers a", err, sizeof err), KVG_ECONFIG); /* rows: YAML only */
}

TEST(help_sections_placeholders_defaults_choices)
{
    struct cfg d;
    defaults(&d);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f != NULL);
    kvg_opt_help(table, &d, f);
    fclose(f);
    /* Sections in the order they first appear, entries grouped under them. */
    char *basic = strstr(buf, "basic:\n"), *time = strstr(buf, "\ntime:\n"),
         *sub = strstr(buf, "\nsub:\n");
    CHECK(basic == buf && time && sub && time < sub);
    CHECK(strstr(buf, "--ratio") < time); /* back in basic, printed with it */
    CHECK(strstr(buf, "  --name NAME ") != NULL);
    CHECK(strstr(buf, "  --count N ") != NULL);
    CHECK(strstr(buf, "a count (default: 3)\n") != NULL);
    CHECK(strstr(buf, "  --timeout-secs SECS ") != NULL);
    CHECK(strstr(buf, "seconds (default: 30)\n") != NULL); /* 30000 ms, shown as seconds */
    CHECK(strstr(buf, "  --ratio X ") != NULL);
    CHECK(strstr(buf, "a fraction (default: 0.25)\n") != NULL);
    CHECK(strstr(buf, "  --mode fast|slow ") != NULL);
    CHECK(strstr(buf, "  --shape round|square|flat ") != NULL);
    CHECK(strstr(buf, "as an index (default: round)\n") != NULL);
    CHECK(strstr(buf, "  --log-level debug|info|warn|error ") != NULL);
    CHECK(strstr(buf, "how much to log (default: info)\n") != NULL);
    CHECK(strstr(buf, "  --verbose  ") != NULL);
    CHECK(strstr(buf, "(also --lvl-n)") != NULL);
    CHECK(strstr(buf, "  --weight X ") != NULL); /* the include, in its own section */
    CHECK(strstr(buf, "a weight (default: 1.5)\n") != NULL);
    CHECK(strstr(buf, "  workers: [{url, kv_endpoint}, ...] ") != NULL);
    CHECK(strstr(buf, "(YAML file only)") != NULL);
    CHECK(strstr(buf, "--items VALUE...") != NULL);
    free(buf);
}

struct args {
    char *v[64];
    int n;
};

static int collect(void *ud, const char *arg)
{
    struct args *a = ud;
    if (a->n == 64) return -E2BIG;
    a->v[a->n++] = strdup(arg);
    return a->v[a->n - 1] ? 0 : -ENOMEM;
}

static void args_free(struct args *a)
{
    for (int i = 0; i < a->n; i++) free(a->v[i]);
    a->n = 0;
}

TEST(emit_round_trip)
{
    struct cfg d, x, y;
    char err[512], diff[512];
    defaults(&d);
    defaults(&x);
    struct args a = {.n = 0};
    CHECK_INT(kvg_opt_emit(table, &x, &d, collect, &a), 0);
    CHECK_INT(a.n, 0); /* defaults say nothing */
    CHECK_INT(parse(&x,
                    "--name --dash --level-n -2 --count 0 --bytes 12 --big 77 --timeout-secs 1.234 "
                    "--idle-secs 0.001 --wait-ms 9 --ratio 0.1 --verbose --no-color --items a b "
                    "--add c d --mode slow --shape square --log-level error --even 8 --weight 3.3",
                    err, sizeof err),
              KVG_ECONFIG); /* a value starting with -- is a flag on the command line */
    CHECK_INT(
        parse(&x,
              "--name=--dash --level-n -2 --count 0 --bytes 12 --big 77 --timeout-secs "
              "1.234 --idle-secs 0.001 --wait-ms 9 --ratio 0.1 --verbose --no-color --items a "
              "b --add c d --mode slow --shape square --log-level error --even 8 --weight 3.3",
              err, sizeof err),
        0);
    CHECK_INT(kvg_opt_emit(table, &x, &d, collect, &a), 0);
    CHECK(a.n > 0);
    defaults(&y);
    CHECK_INT(kvg_opt_parse_argv(table, &y, a.n, a.v, 0, err, sizeof err), 0);
    CHECK_INT(kvg_opt_diff(table, &x, &y, NULL, NULL, diff, sizeof diff), 0);
    CHECK_STR(diff, "");
    CHECK_STR(y.s, "--dash");
    CHECK_INT(y.secs, x.secs);
    CHECK(y.secs64 == 1);
    CHECK_INT(y.nb, 0);
    args_free(&a);
    /* Back to a default that is on: said with =false. */
    x.b = 0;
    x.nb = 1;
    d.b = 1;
    d.nb = 0;
    CHECK_INT(kvg_opt_emit(table, &x, &d, collect, &a), 0);
    int saw_b = 0, saw_nb = 0;
    for (int i = 0; i < a.n; i++) {
        saw_b += !strcmp(a.v[i], "--verbose=false");
        saw_nb += !strcmp(a.v[i], "--no-color=false");
    }
    CHECK_INT(saw_b, 1);
    CHECK_INT(saw_nb, 1);
    args_free(&a);
    kvg_opt_free(table, &x);
    kvg_opt_free(table, &y);
}

static int skip_count(void *ud, const struct kvg_opt *o, size_t off)
{
    (void)o;
    return off == *(size_t *)ud;
}

TEST(diff_names_fields)
{
    struct cfg a, b;
    char out[256];
    defaults(&a);
    defaults(&b);
    CHECK_INT(kvg_opt_diff(table, &a, &b, NULL, NULL, out, sizeof out), 0);
    b.u = 4;
    b.inc.w = 9;
    b.named.n = 1;
    CHECK_INT(kvg_strlist_add(&b.urls, "u"), 0);
    CHECK_INT(kvg_opt_diff(table, &a, &b, NULL, NULL, out, sizeof out), 3);
    CHECK_STR(out, "count, weight, nested");
    size_t off = O(u);
    CHECK_INT(kvg_opt_diff(table, &a, &b, skip_count, &off, out, sizeof out), 2);
    CHECK_STR(out, "weight, nested");
    kvg_opt_free(table, &b);
}

TEST(yaml_every_kind)
{
    struct cfg c;
    char err[512] = "";
    defaults(&c);
    const char *y = "name: ab\n"
                    "level_n: -3\n" /* '_' for '-' */
                    "timeout-secs: 2\n"
                    "verbose: true\n"
                    "no_color: false\n"
                    "items: [a, b]\n"
                    "add: c\n"
                    "mode: slow\n"
                    "log_level: warn\n"
                    "weight: 4\n"
                    "nested: {weight: 2, count_n: 5}\n"
                    "workers:\n"
                    "  - url: http://a\n"
                    "    kv_endpoint: tcp://a\n"
                    "  - http://b\n"
                    "  - {url: http://c}\n"
                    "pools:\n"
                    "  - {name: p, port: 8000}\n"
                    "  - name: q\n";
    CHECK_INT(yaml(&c, y, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_STR(c.s, "ab");
    CHECK_INT(c.i, -3);
    CHECK_INT(c.secs, 2000);
    CHECK_INT(c.b, 1);
    CHECK_INT(c.nb, 1);
    CHECK_INT(c.l.n, 2);
    CHECK_INT(c.la.n, 1);
    CHECK_STR(c.es, "slow");
    CHECK_INT(c.lvl, KVG_LOG_WARN);
    CHECK_NEAR(c.inc.w, 4, 1e-12);
    CHECK_NEAR(c.named.w, 2, 1e-12);
    CHECK_INT(c.named.n, 5);
    CHECK_INT(c.urls.n, 3);
    CHECK_STR(c.urls.v[1], "http://b");
    CHECK_INT(c.eps.n, 3); /* one per row, "none" where a row has none */
    CHECK_STR(c.eps.v[0], "tcp://a");
    CHECK_STR(c.eps.v[1], "none");
    CHECK_STR(c.eps.v[2], "none");
    CHECK_INT(c.nrows, 2);
    CHECK_STR(c.rows[0].name, "p");
    CHECK_INT(c.rows[0].port, 8000);
    CHECK_INT(c.rows[1].port, 80); /* init's default */
    kvg_opt_free(table, &c);
    /* No row names an endpoint: the list is left alone. */
    defaults(&c);
    CHECK_INT(yaml(&c, "workers: [http://a, http://b]\n", err, sizeof err), 0);
    CHECK_INT(c.urls.n, 2);
    CHECK_INT(c.eps.n, 0);
    kvg_opt_free(table, &c);
    CHECK_INT(yaml(&c, "", err, sizeof err), 0); /* an empty file sets nothing */
}

TEST(yaml_errors_name_file_line_path)
{
    struct cfg c;
    char err[512];
    defaults(&c);
    CHECK_INT(yaml(&c, "count: 1\ncuont: 2\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "t.yaml:2: cuont: unknown key (did you mean count?)");
    CHECK_INT(yaml(&c, "workers:\n  - url: a\n  - url: b\n    kv_endpiont: x\n", err, sizeof err),
              KVG_ECONFIG);
    CHECK_STR(err, "t.yaml:4: workers[1].kv_endpiont: unknown key (did you mean kv_endpoint?)");
    CHECK_INT(yaml(&c, "pools:\n  - name: a\n    prot: 1\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "t.yaml:3: pools[0].prot: unknown key (did you mean port?)");
    CHECK_INT(yaml(&c, "nested:\n  wieght: 1\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "t.yaml:2: nested.wieght: unknown key (did you mean weight?)");
    CHECK_INT(yaml(&c, "\ncount: {a: 1}\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "t.yaml:2: count: expects a value, got a mapping");
    CHECK_INT(yaml(&c, "name: [a, b]\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "t.yaml:1: name: expects a value, got a list");
    CHECK_INT(yaml(&c, "items: [a, {b: 1}]\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "t.yaml:1: items[1]: expects a value, got a mapping");
    CHECK_INT(yaml(&c, "nested: 3\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "t.yaml:1: nested: expects a mapping, got a value");
    CHECK_INT(yaml(&c, "workers: {url: a}\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "t.yaml:1: workers: expects a list of mappings, got a mapping");
    CHECK_INT(yaml(&c, "workers:\n  - kv_endpoint: x\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "t.yaml:2: workers[0]: needs url");
    CHECK_INT(yaml(&c, "workers:\n  - url: [a]\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "t.yaml:2: workers[0].url: expects a value, got a list");
    CHECK_INT(yaml(&c, "pools:\n  - port: 1\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "t.yaml:2: pools[0]: needs name");
    CHECK_INT(yaml(&c, "pools:\n  - {name: a, port: 0}\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "t.yaml:2: pools[0].port: expects an integer 1..65535, got '0'");
    CHECK_INT(yaml(&c, "pools: [{name: a}, {name: b}, {name: c}, {name: d}]\n", err, sizeof err),
              KVG_ECONFIG);
    CHECK_STR(err, "t.yaml:1: pools[3]: at most 3 entries");
    CHECK_INT(yaml(&c, "nested: {weight: 7}\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "t.yaml:1: nested: weight 7 is unlucky");
    CHECK_INT(yaml(&c, "verbose: maybe\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "t.yaml:1: verbose: expects true or false, got 'maybe'");
    CHECK_INT(yaml(&c, "- a\n- b\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "t.yaml:1: the top level must be a mapping, got a list");
    CHECK_INT(yaml(&c, "a: [\n", err, sizeof err), KVG_ECONFIG);
    CHECK(strstr(err, "t.yaml:2: invalid YAML") == err);
    kvg_opt_free(table, &c);
    CHECK_INT(kvg_opt_load_yaml(table, &c, "/nonexistent/x.yaml", err, sizeof err), KVG_ECONFIG);
    CHECK(strstr(err, "/nonexistent/x.yaml") != NULL);
}

/* The extensions for files shaped like the keys file: a map of named rows
 * (MAP) into grown arrays (F_ALLOC) with each row's line, lists that must
 * be lists, a document entry with required keys and its own wording. */
struct tag {
    char name[16];
    int line;
    uint32_t weight;
    int *seen; /* CUSTOM-owned: freed by the caller, also after a failure */
};

struct doc {
    struct tag *tags;
    size_t ntags;
    struct tag *list;
    size_t nlist;
    int checked;
};

static int tag_name(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                    size_t errlen)
{
    (void)index;
    if (!strcmp(v, "bad")) return kvg_err_set(err, errlen, KVG_ECONFIG, "'bad' is not a tag");
    snprintf((char *)obj + o->off, 16, "%s", v);
    return 0;
}

static int tag_seen(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                    size_t errlen)
{
    (void)o;
    struct tag *t = obj;
    if (!strcmp(v, "x")) return kvg_err_set(err, errlen, KVG_ECONFIG, "x is refused");
    if (!t->seen && !(t->seen = calloc(8, sizeof *t->seen))) return -ENOMEM;
    if (index < 8) t->seen[index] = 1;
    return 0;
}

static int doc_check(void *parent, void *item, size_t index, char *err, size_t errlen)
{
    (void)item, (void)index, (void)err, (void)errlen;
    ((struct doc *)parent)->checked = 1;
    return 0;
}

static const struct kvg_opt tag_t[] = {
    {"name", NULL, KVG_OPT_CUSTOM, offsetof(struct tag, name), .parse = tag_name,
     .flags = KVG_OPT_F_KEY},
    {"line", NULL, KVG_OPT_INT, offsetof(struct tag, line), .flags = KVG_OPT_F_LINE},
    {"weight", NULL, KVG_OPT_U32, offsetof(struct tag, weight), .flags = KVG_OPT_F_REQUIRED},
    {"seen", NULL, KVG_OPT_CUSTOM, offsetof(struct tag, seen), .meta = "names", .parse = tag_seen,
     .flags = KVG_OPT_F_MULTI | KVG_OPT_F_LIST_ONLY},
    KVG_OPT_END,
};

static const struct kvg_opt doc_t[] = {
    {"tags", NULL, KVG_OPT_MAP, offsetof(struct doc, tags), sizeof(struct tag), .sub = tag_t,
     .count_off = offsetof(struct doc, ntags), .flags = KVG_OPT_F_ALLOC | KVG_OPT_F_REQUIRED,
     .noun = "tag key", .expect = "weight, seen"},
    {"list", NULL, KVG_OPT_ROWS, offsetof(struct doc, list), sizeof(struct tag), .sub = tag_t,
     .count_off = offsetof(struct doc, nlist), .flags = KVG_OPT_F_ALLOC},
    KVG_OPT_END,
};

static const struct kvg_opt doc_e = {"",
                                     NULL,
                                     KVG_OPT_INCLUDE,
                                     0,
                                     .sub = doc_t,
                                     .check = doc_check,
                                     .noun = "top-level key",
                                     .expect = "tags, list"};

static int load_doc(struct doc *d, const char *y, char *err, size_t errlen)
{
    for (size_t i = 0; i < d->ntags; i++) free(d->tags[i].seen);
    for (size_t i = 0; i < d->nlist; i++) free(d->list[i].seen);
    kvg_opt_free(doc_t, d);
    memset(d, 0, sizeof *d);
    err[0] = 0;
    return kvg_opt_load_yaml_doc(&doc_e, d, y, strlen(y), "d.yaml", err, errlen);
}

TEST(yaml_map_of_named_rows_into_grown_arrays)
{
    struct doc d = {0};
    char err[512];
    CHECK_INT(load_doc(&d,
                       "tags:\n  a: {weight: 1_000}\n  b:\n    weight: 2\n    seen: [p, q]\n"
                       "list:\n  - {weight: 3}\n  - {weight: 4}\n  - {weight: 5}\n",
                       err, sizeof err),
              0);
    CHECK_INT(d.ntags, 2);
    CHECK_STR(d.tags[0].name, "a");
    CHECK_INT(d.tags[0].weight, 1000);
    CHECK_INT(d.tags[0].line, 2);
    CHECK_STR(d.tags[1].name, "b");
    CHECK_INT(d.tags[1].line, 4);
    CHECK(d.tags[1].seen && d.tags[1].seen[1] == 1);
    CHECK_INT(d.nlist, 3); /* no max_rows: as many as the file has */
    CHECK_INT(d.list[2].weight, 5);
    CHECK_INT(d.list[2].line, 9);
    CHECK_INT(d.checked, 1);
    /* Keys are checked through the F_KEY entry, and F_KEY / F_LINE
     * entries are not keys of the rows. */
    CHECK_INT(load_doc(&d, "tags:\n  bad: {weight: 1}\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "d.yaml:2: tags: 'bad' is not a tag");
    CHECK_INT(load_doc(&d, "tags:\n  a: {weight: 1, line: 3}\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "d.yaml:2: tags.a: unknown tag key 'line' (expected weight, seen)");
    CHECK_INT(load_doc(&d, "tags: [a]\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "d.yaml:1: tags: expects a mapping of names, got a list");
    /* A failing row stays counted, so what its parsers allocated is freed. */
    CHECK_INT(load_doc(&d, "tags:\n  a: {weight: 1, seen: [p, x]}\n", err, sizeof err),
              KVG_ECONFIG);
    CHECK_STR(err, "d.yaml:2: tags.a.seen[1]: x is refused");
    CHECK_INT(d.ntags, 1);
    CHECK(d.tags[0].seen != NULL);
    load_doc(&d, "tags: {}\n", err, sizeof err);
    free(d.tags);
}

TEST(yaml_required_list_only_and_document_wording)
{
    struct doc d = {0};
    char err[512];
    CHECK_INT(load_doc(&d, "", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "d.yaml:1: the file is empty (expected 'tags')");
    CHECK_INT(load_doc(&d, "list: []\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "d.yaml:1: needs tags");
    CHECK_INT(load_doc(&d, "tags: {}\nlsit: []\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "d.yaml:2: unknown top-level key 'lsit' (expected tags, list)");
    CHECK_INT(load_doc(&d, "tags:\n  a: {seen: [p]}\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "d.yaml:2: tags.a: needs weight");
    CHECK_INT(load_doc(&d, "tags:\n  a: {weight: 1, seen: p}\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "d.yaml:2: tags.a.seen: expects a list of names, got a value");
    CHECK_INT(load_doc(&d, "tags:\n  a: {weight: 1, seen: []}\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "d.yaml:2: tags.a.seen: empty list: expects one value or more");
    CHECK_INT(d.checked, 0); /* the document's check runs only after a good load */
    load_doc(&d, "tags: {}\n", err, sizeof err);
    free(d.tags);
}

TEST(yaml_duplicate_keys_anywhere)
{
    struct cfg c;
    char err[512];
    defaults(&c);
    CHECK_INT(yaml(&c, "count: 1\nname: a\ncount: 2\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "t.yaml:3: duplicate key 'count'");
    CHECK_INT(yaml(&c, "nested: {weight: 1, weight: 2}\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "t.yaml:1: nested: duplicate key 'weight'");
    CHECK_INT(yaml(&c, "pools:\n  - name: a\n    port: 1\n    port: 2\n", err, sizeof err),
              KVG_ECONFIG);
    CHECK_STR(err, "t.yaml:4: pools[0]: duplicate key 'port'");
    CHECK_INT(yaml(&c, "workers:\n  - {url: a, url: b}\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "t.yaml:2: workers[0]: duplicate key 'url'");
    struct doc d = {0};
    CHECK_INT(load_doc(&d, "tags:\n  a: {weight: 1}\n  a: {weight: 2}\n", err, sizeof err),
              KVG_ECONFIG);
    CHECK_STR(err, "d.yaml:3: tags: duplicate key 'a'");
    load_doc(&d, "tags: {}\n", err, sizeof err);
    free(d.tags);
    kvg_opt_free(table, &c);
}

TEST(integers_take_underscore_separators)
{
    struct cfg c;
    char err[512];
    defaults(&c);
    CHECK_INT(yaml(&c, "count: 100_000\nbig: 1_000_000_000_000\nlevel_n: -1_0\n", err, sizeof err),
              KVG_ECONFIG); /* -10 is outside -5..5 */
    CHECK_STR(err, "t.yaml:3: level_n: expects an integer -5..5, got '-1_0'");
    CHECK_INT(c.u, 100000);
    CHECK(c.q == 1000000000000ull);
    char *argv[] = {"x", "--count", "4_2", "--bytes=1_0"};
    CHECK_INT(kvg_opt_parse_argv(table, &c, 4, argv, 1, err, sizeof err), 0);
    CHECK_INT(c.u, 42);
    CHECK_INT(c.z, 10);
    char *bad[] = {"x", "--count", "_42"};
    CHECK_INT(kvg_opt_parse_argv(table, &c, 3, bad, 1, err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "--count: expects an integer 0..4294967295, got '_42'");
    uint64_t u = 7;
    CHECK_INT(kvg_opt_parse_u64("1_2_3", &u), 0);
    CHECK(u == 123);
    CHECK_INT(kvg_opt_parse_u64("12_", &u), -1);
    CHECK_INT(kvg_opt_parse_u64("1 2", &u), -1);
    CHECK_INT(kvg_opt_parse_u64("", &u), -1);
    CHECK(u == 123);
    kvg_opt_free(table, &c);
}

TEST(copy_one_value)
{
    struct cfg a, b;
    defaults(&a);
    defaults(&b);
    a.d = 0.75;
    snprintf(a.es, sizeof a.es, "slow");
    a.ei = 2;
    a.q = 1ull << 40;
    CHECK_INT(kvg_opt_copy(&table[8], &b, &a), 0); /* ratio */
    CHECK_NEAR(b.d, 0.75, 0);
    CHECK_INT(kvg_opt_copy(&table[13], &b, &a), 0); /* mode, as a string */
    CHECK_STR(b.es, "slow");
    CHECK_INT(kvg_opt_copy(&table[14], &b, &a), 0); /* shape, as an index */
    CHECK_INT(b.ei, 2);
    CHECK_INT(kvg_opt_copy(&table[4], &b, &a), 0); /* big */
    CHECK(b.q == 1ull << 40);
    CHECK_INT(kvg_opt_copy(&table[11], &b, &a), -1); /* a list owns its values */
    CHECK_INT(kvg_opt_copy(&table[16], &b, &a), -1); /* a CUSTOM: its parser knows */
    CHECK_INT(kvg_opt_copy(&table[17], &b, &a), -1); /* an include */
    CHECK_STR(b.s, "x");
}
