/* The option tables of base/opt.h: one value set from text, a field written
 * back as text, lookups with a nearest-name hint, the command line, argv for
 * a child and the field-by-field comparison. The YAML side is opt_yaml.c,
 * --help is opt_help.c. */
#include "base/opt.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "base/util.h"

static const char *const level_names[] = {"debug", "info", "warn", "error", NULL};

void kvg_strlist_free(struct kvg_strlist *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->v[i]);
    l->n = 0;
}

int kvg_strlist_add(struct kvg_strlist *l, const char *s)
{
    if (l->n == KVG_OPT_LIST_MAX) return -ENOSPC;
    if (!(l->v[l->n] = strdup(s))) return -ENOMEM;
    l->n++;
    return 0;
}

/* The range a number of this type may take: the entry's when it has one. */
static void range_of(const struct kvg_opt *o, double *lo, double *hi)
{
    if (o->min < o->max) {
        *lo = o->min;
        *hi = o->max;
        return;
    }
    *lo = 0;
    switch (o->type) {
    case KVG_OPT_INT:
        *lo = INT_MIN;
        *hi = INT_MAX;
        break;
    case KVG_OPT_U32:
    case KVG_OPT_MS:
        *hi = UINT32_MAX;
        break;
    case KVG_OPT_SECS_MS:
        *hi = 4e6; /* seconds that fit uint32_t milliseconds */
        break;
    case KVG_OPT_SECS_MS64:
        *hi = 1e12;
        break;
    case KVG_OPT_DOUBLE:
        *lo = -INFINITY;
        *hi = INFINITY;
        break;
    default: /* SIZE, U64: what parses */
        *hi = INFINITY;
        break;
    }
}

/* " 0..65535", " >= 0", or "" (anything). */
static void range_text(const struct kvg_opt *o, char *out, size_t cap)
{
    double lo, hi;
    range_of(o, &lo, &hi);
    if (isinf(lo) && isinf(hi))
        snprintf(out, cap, "%s", "");
    else if (isinf(hi))
        snprintf(out, cap, " >= %.15g", lo);
    else
        snprintf(out, cap, " %.15g..%.15g", lo, hi);
}

static int bad_value(const struct kvg_opt *o, const char *v, const char *who, char *err,
                     size_t errlen)
{
    char r[80];
    range_text(o, r, sizeof r);
    const char *what;
    switch (o->type) {
    case KVG_OPT_INT:
    case KVG_OPT_U32:
    case KVG_OPT_SIZE:
    case KVG_OPT_U64:
        what = "an integer";
        break;
    case KVG_OPT_MS:
        what = "an integer of milliseconds";
        break;
    case KVG_OPT_SECS_MS:
    case KVG_OPT_SECS_MS64:
        what = "a number of seconds";
        break;
    default:
        what = "a number";
        break;
    }
    return kvg_err_set(err, errlen, KVG_ECONFIG, "%s: expects %s%s, got '%s'", who, what, r, v);
}

/* v without its '_' separators into out (cap bytes): '_' may stand
 * anywhere but first or last. -1 when it may not, or v is too long. */
static int strip_separators(const char *v, char *out, size_t cap)
{
    size_t k = 0;
    for (const char *c = v; *c; c++) {
        if (*c == '_' && c != v && c[1]) continue;
        if (*c == '_' || k + 1 >= cap) return -1;
        out[k++] = *c;
    }
    out[k] = 0;
    return 0;
}

int kvg_opt_parse_u64(const char *v, uint64_t *out)
{
    char digits[64];
    if (strip_separators(v, digits, sizeof digits)) return -1;
    for (const char *c = digits; *c; c++)
        if (*c < '0' || *c > '9') return -1;
    return digits[0] && !kvg_parse_u64(digits, out) ? 0 : -1;
}

static int parse_bool(const char *v, int *out)
{
    if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "on") || !strcmp(v, "1"))
        *out = 1;
    else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "off") || !strcmp(v, "0"))
        *out = 0;
    else
        return -1;
    return 0;
}

static int choice_index(const char *const *choices, const char *v)
{
    for (int i = 0; choices && choices[i]; i++)
        if (!strcmp(choices[i], v)) return i;
    return -1;
}

void kvg__opt_choices_text(const struct kvg_opt *o, const char *sep, char *out, size_t cap)
{
    const char *const *ch = o->type == KVG_OPT_LEVEL ? level_names : o->choices;
    size_t n = 0;
    out[0] = 0;
    for (size_t i = 0; ch && ch[i] && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? sep : "", ch[i]);
}

int kvg__opt_set(const struct kvg_opt *o, void *obj, const char *v, size_t index, const char *who,
                 char *err, size_t errlen)
{
    char *f = (char *)obj + o->off;
    uint64_t u;
    int64_t s;
    double d, lo, hi;
    char digits[64]; /* an integer without its '_' separators */
    range_of(o, &lo, &hi);
    switch (o->type) {
    case KVG_OPT_STR:
        if (strlen(v) >= o->size)
            return kvg_err_set(err, errlen, KVG_ECONFIG, "%s: value too long (at most %zu bytes)",
                               who, o->size - 1);
        memcpy(f, v, strlen(v) + 1);
        return 0;
    case KVG_OPT_INT:
        if (strip_separators(v, digits, sizeof digits) || kvg_parse_i64(digits, &s) ||
            (double)s < lo || (double)s > hi)
            return bad_value(o, v, who, err, errlen);
        *(int *)(void *)f = (int)s;
        return 0;
    case KVG_OPT_U32:
    case KVG_OPT_MS:
    case KVG_OPT_SIZE:
    case KVG_OPT_U64:
        if (strip_separators(v, digits, sizeof digits) || kvg_parse_u64(digits, &u) ||
            (double)u < lo || (double)u > hi)
            return bad_value(o, v, who, err, errlen);
        if (o->type == KVG_OPT_SIZE)
            *(size_t *)(void *)f = (size_t)u;
        else if (o->type == KVG_OPT_U64)
            *(uint64_t *)(void *)f = u;
        else
            *(uint32_t *)(void *)f = (uint32_t)u;
        return 0;
    case KVG_OPT_SECS_MS:
    case KVG_OPT_SECS_MS64:
    case KVG_OPT_DOUBLE:
        if (kvg_parse_double(v, &d) || !(d >= lo && d <= hi))
            return bad_value(o, v, who, err, errlen);
        if (o->type == KVG_OPT_DOUBLE)
            *(double *)(void *)f = d;
        else if (o->type == KVG_OPT_SECS_MS)
            *(uint32_t *)(void *)f = (uint32_t)(d * 1000);
        else
            *(uint64_t *)(void *)f = (uint64_t)(d * 1000);
        return 0;
    case KVG_OPT_BOOL:
    case KVG_OPT_NBOOL: {
        int b;
        if (parse_bool(v, &b))
            return kvg_err_set(err, errlen, KVG_ECONFIG, "%s: expects true or false, got '%s'", who,
                               v);
        *(int *)(void *)f = o->type == KVG_OPT_BOOL ? b : !b;
        return 0;
    }
    case KVG_OPT_LIST:
    case KVG_OPT_LIST_APPEND: {
        struct kvg_strlist *l = (struct kvg_strlist *)(void *)f;
        if (o->type == KVG_OPT_LIST && index == 0) kvg_strlist_free(l); /* a later list replaces */
        int rc = kvg_strlist_add(l, v);
        if (rc == -ENOSPC)
            return kvg_err_set(err, errlen, KVG_ECONFIG, "%s: at most %d values", who,
                               KVG_OPT_LIST_MAX);
        if (rc) return kvg_err_set(err, errlen, rc, "%s: %s", who, kvg_strerror(rc));
        return 0;
    }
    case KVG_OPT_ENUM:
    case KVG_OPT_LEVEL: {
        const char *const *ch = o->type == KVG_OPT_LEVEL ? level_names : o->choices;
        int i = o->type == KVG_OPT_LEVEL ? kvg_log_parse_level(v) : choice_index(ch, v);
        if (i < 0) {
            char all[512];
            kvg__opt_choices_text(o, ", ", all, sizeof all);
            return kvg_err_set(err, errlen, KVG_ECONFIG, "%s: expects one of %s, got '%s'", who,
                               all, v);
        }
        if (o->type == KVG_OPT_ENUM && o->size)
            snprintf(f, o->size, "%s", v);
        else
            *(int *)(void *)f = i;
        return 0;
    }
    case KVG_OPT_CUSTOM: {
        char why[400] = "";
        int rc = o->parse(obj, o, v, index, why, sizeof why);
        if (rc == -ENOMEM) return kvg_err_set(err, errlen, rc, "%s: out of memory", who);
        if (rc) return kvg_err_set(err, errlen, KVG_ECONFIG, "%s: %s", who, why);
        return 0;
    }
    default:
        return kvg_err_set(err, errlen, KVG_ECONFIG, "%s: takes no value here", who);
    }
}

/* The shortest %g text (no exponent for everyday magnitudes) for which ok()
 * holds; %.17g when none does. */
static void shortest(double v, int (*ok)(const char *, const void *), const void *want, char *out,
                     size_t cap)
{
    double a = fabs(v);
    int plain = a == 0 || (a >= 1e-4 && a < 1e15);
    for (int p = 1; p <= 17; p++) {
        snprintf(out, cap, "%.*g", p, v);
        if ((!plain || !strchr(out, 'e')) && ok(out, want)) return;
    }
    snprintf(out, cap, "%.17g", v);
}

static int same_double(const char *t, const void *want)
{
    double d;
    return !kvg_parse_double(t, &d) && d == *(const double *)want;
}

static int same_ms(const char *t, const void *want)
{
    double d;
    return !kvg_parse_double(t, &d) && d >= 0 && d < 1.8e16 &&
           (uint64_t)(d * 1000) == *(const uint64_t *)want;
}

/* Seconds as the shortest text that parses back to the same milliseconds
 * (the parser truncates d * 1000, as it always has). */
static void secs_text(uint64_t ms, char *out, size_t cap)
{
    shortest((double)ms / 1000.0, same_ms, &ms, out, cap);
    if (!same_ms(out, &ms)) snprintf(out, cap, "%.17g", ((double)ms + 0.5) / 1000.0);
}

int kvg__opt_format(const struct kvg_opt *o, const void *obj, char *out, size_t cap)
{
    const char *f = (const char *)obj + o->off;
    out[0] = 0;
    switch (o->type) {
    case KVG_OPT_STR:
        snprintf(out, cap, "%s", f);
        return 0;
    case KVG_OPT_INT:
        snprintf(out, cap, "%d", *(const int *)(const void *)f);
        return 0;
    case KVG_OPT_U32:
    case KVG_OPT_MS:
        snprintf(out, cap, "%u", *(const uint32_t *)(const void *)f);
        return 0;
    case KVG_OPT_SIZE:
        snprintf(out, cap, "%zu", *(const size_t *)(const void *)f);
        return 0;
    case KVG_OPT_U64:
        snprintf(out, cap, "%llu", (unsigned long long)*(const uint64_t *)(const void *)f);
        return 0;
    case KVG_OPT_SECS_MS:
        secs_text(*(const uint32_t *)(const void *)f, out, cap);
        return 0;
    case KVG_OPT_SECS_MS64:
        secs_text(*(const uint64_t *)(const void *)f, out, cap);
        return 0;
    case KVG_OPT_DOUBLE:
        shortest(*(const double *)(const void *)f, same_double, f, out, cap);
        return 0;
    case KVG_OPT_BOOL:
    case KVG_OPT_NBOOL:
        snprintf(out, cap, "%s", *(const int *)(const void *)f ? "true" : "false");
        return 0;
    case KVG_OPT_LIST:
    case KVG_OPT_LIST_APPEND: {
        const struct kvg_strlist *l = (const struct kvg_strlist *)(const void *)f;
        size_t n = 0;
        for (size_t i = 0; i < l->n && n < cap; i++)
            n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? " " : "", l->v[i]);
        return 0;
    }
    case KVG_OPT_ENUM:
    case KVG_OPT_LEVEL: {
        if (o->type == KVG_OPT_ENUM && o->size) {
            snprintf(out, cap, "%s", f);
            return 0;
        }
        const char *const *ch = o->type == KVG_OPT_LEVEL ? level_names : o->choices;
        int i = *(const int *)(const void *)f, n = 0;
        while (ch[n]) n++;
        if (i < 0 || i >= n) return -1;
        snprintf(out, cap, "%s", ch[i]);
        return 0;
    }
    case KVG_OPT_CUSTOM:
        return o->format ? o->format(obj, o, out, cap) : -1;
    default:
        return -1;
    }
}

static int name_eq(const char *a, const char *b, int loose)
{
    if (!loose) return !strcmp(a, b);
    for (; *a && *b; a++, b++)
        if (*a != *b && !((*a == '-' || *a == '_') && (*b == '-' || *b == '_'))) return 0;
    return *a == *b;
}

const struct kvg_opt *kvg__opt_find(const struct kvg_opt *t, const char *name, int yaml,
                                    size_t *base_off)
{
    for (const struct kvg_opt *o = t; !kvg__opt_end(o); o++) {
        if (o->type == KVG_OPT_INCLUDE && !o->name) {
            size_t sub = 0;
            const struct kvg_opt *f = kvg__opt_find(o->sub, name, yaml, &sub);
            if (f) {
                *base_off += o->off + sub;
                return f;
            }
            continue;
        }
        if (!yaml && kvg__opt_yaml_only(o)) continue;
        if (o->flags & (KVG_OPT_F_KEY | KVG_OPT_F_LINE)) continue; /* set by the rows, not keys */
        if (name_eq(o->name, name, yaml) || (o->alias && name_eq(o->alias, name, yaml))) return o;
    }
    return NULL;
}

static int same_char(char x, char y)
{
    return x == y || ((x == '-' || x == '_') && (y == '-' || y == '_'));
}

/* Edit distance, a swap of neighbours counting as one edit ('_' and '-'
 * alike); names are short. */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), m[65][65];
    if (la > 64 || lb > 64) return SIZE_MAX;
    for (size_t i = 0; i <= la; i++) m[i][0] = i;
    for (size_t j = 0; j <= lb; j++) m[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t best = m[i - 1][j - 1] + !same_char(a[i - 1], b[j - 1]);
            if (m[i - 1][j] + 1 < best) best = m[i - 1][j] + 1;
            if (m[i][j - 1] + 1 < best) best = m[i][j - 1] + 1;
            if (i > 1 && j > 1 && same_char(a[i - 1], b[j - 2]) && same_char(a[i - 2], b[j - 1]) &&
                m[i - 2][j - 2] + 1 < best)
                best = m[i - 2][j - 2] + 1;
            m[i][j] = best;
        }
    return m[la][lb];
}

static void nearest(const struct kvg_opt *t, const char *name, int yaml, const char **best,
                    size_t *bd)
{
    for (const struct kvg_opt *o = t; !kvg__opt_end(o); o++) {
        if (o->type == KVG_OPT_INCLUDE && !o->name) {
            nearest(o->sub, name, yaml, best, bd);
            continue;
        }
        if ((!yaml && kvg__opt_yaml_only(o)) || (o->flags & (KVG_OPT_F_KEY | KVG_OPT_F_LINE)))
            continue;
        size_t d = distance(name, o->name);
        if (d < *bd) {
            *bd = d;
            *best = o->name;
        }
    }
}

void kvg__opt_suggest(const struct kvg_opt *t, const char *name, int yaml, const char *prefix,
                      char *out, size_t cap)
{
    const char *best = NULL;
    size_t bd = SIZE_MAX, len = strlen(name);
    nearest(t, name, yaml, &best, &bd);
    /* Close: a typo or two, more for long names; never most of the name. */
    size_t close = len < 5 ? 1 : len < 12 ? 2 : 3;
    if (!best || bd > close) {
        snprintf(out, cap, "%s", "");
        return;
    }
    char shown[128];
    snprintf(shown, sizeof shown, "%s", best);
    if (yaml && strchr(name, '_'))
        for (char *p = shown; *p; p++)
            if (*p == '-') *p = '_'; /* suggest in the file's own spelling */
    snprintf(out, cap, " (did you mean %s%s?)", prefix, shown);
}

/* Values after argv[i]: up to the next --flag. */
static int values_after(int argc, char **argv, int i)
{
    int k = 0;
    while (i + 1 + k < argc && strncmp(argv[i + 1 + k], "--", 2)) k++;
    return k;
}

int kvg_opt_parse_one(const struct kvg_opt *t, void *obj, int argc, char **argv, int *i, char *err,
                      size_t errlen)
{
    const char *a = argv[*i];
    if (strncmp(a, "--", 2)) return 1;
    char name[128], who[140];
    const char *eq = strchr(a + 2, '=');
    size_t nl = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
    if (nl >= sizeof name) return 1;
    memcpy(name, a + 2, nl);
    name[nl] = 0;
    size_t base = 0;
    const struct kvg_opt *o = kvg__opt_find(t, name, 0, &base);
    if (!o) return 1;
    snprintf(who, sizeof who, "--%s", o->name);
    char *at = (char *)obj + base;
    int multi = o->type == KVG_OPT_LIST || o->type == KVG_OPT_LIST_APPEND ||
                (o->type == KVG_OPT_CUSTOM && (o->flags & KVG_OPT_F_MULTI));
    if (eq) return kvg__opt_set(o, at, eq + 1, 0, who, err, errlen);
    if (o->type == KVG_OPT_BOOL || o->type == KVG_OPT_NBOOL)
        return kvg__opt_set(o, at, "true", 0, who, err, errlen);
    int k = multi ? values_after(argc, argv, *i) : *i + 1 < argc && strncmp(argv[*i + 1], "--", 2);
    if (!k)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "%s: needs %s", who,
                           multi ? "at least one value" : "a value");
    for (int j = 0; j < k; j++) {
        int rc = kvg__opt_set(o, at, argv[*i + 1 + j], (size_t)j, who, err, errlen);
        if (rc) return rc;
    }
    *i += k;
    return 0;
}

int kvg_opt_parse_argv(const struct kvg_opt *t, void *obj, int argc, char **argv, int first,
                       char *err, size_t errlen)
{
    for (int i = first; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        int rc = kvg_opt_parse_one(t, obj, argc, argv, &i, err, errlen);
        if (rc < 0) return rc;
        if (!rc) continue;
        if (strncmp(a, "--", 2))
            return kvg_err_set(err, errlen, KVG_ECONFIG,
                               "unexpected argument '%s' (flags start with --)", a);
        char name[128], hint[200];
        size_t nl = strcspn(a + 2, "=");
        snprintf(name, sizeof name, "%.*s", (int)(nl < sizeof name ? nl : sizeof name - 1), a + 2);
        kvg__opt_suggest(t, name, 0, "--", hint, sizeof hint);
        return kvg_err_set(err, errlen, KVG_ECONFIG, "unknown flag '--%s'%s", name,
                           hint[0] ? hint : " (see --help)");
    }
    return 0;
}

static int field_equal(const struct kvg_opt *o, const void *a, const void *b);

static int table_equal(const struct kvg_opt *t, const void *a, const void *b)
{
    for (const struct kvg_opt *o = t; !kvg__opt_end(o); o++)
        if (!field_equal(o, a, b)) return 0;
    return 1;
}

static int field_equal(const struct kvg_opt *o, const void *a, const void *b)
{
    const char *x = (const char *)a + o->off, *y = (const char *)b + o->off;
    switch (o->type) {
    case KVG_OPT_STR:
        return strcmp(x, y) == 0;
    case KVG_OPT_ENUM:
        return o->size ? strcmp(x, y) == 0
                       : *(const int *)(const void *)x == *(const int *)(const void *)y;
    case KVG_OPT_LIST:
    case KVG_OPT_LIST_APPEND: {
        const struct kvg_strlist *l = (const void *)x, *m = (const void *)y;
        if (l->n != m->n) return 0;
        for (size_t i = 0; i < l->n; i++)
            if (strcmp(l->v[i], m->v[i])) return 0;
        return 1;
    }
    case KVG_OPT_U32:
    case KVG_OPT_MS:
    case KVG_OPT_SECS_MS:
        return *(const uint32_t *)(const void *)x == *(const uint32_t *)(const void *)y;
    case KVG_OPT_SIZE:
        return *(const size_t *)(const void *)x == *(const size_t *)(const void *)y;
    case KVG_OPT_U64:
    case KVG_OPT_SECS_MS64:
        return *(const uint64_t *)(const void *)x == *(const uint64_t *)(const void *)y;
    case KVG_OPT_DOUBLE:
        return *(const double *)(const void *)x == *(const double *)(const void *)y;
    case KVG_OPT_CUSTOM: {
        char p[1024], q[1024];
        if (o->format && !o->format(a, o, p, sizeof p) && !o->format(b, o, q, sizeof q))
            return strcmp(p, q) == 0;
        return o->size ? memcmp(x, y, o->size) == 0 : 1; /* its size says what it owns */
    }
    case KVG_OPT_INCLUDE:
        return table_equal(o->sub, x, y);
    case KVG_OPT_ROWS:
    case KVG_OPT_MAP: {
        if (!o->size) return table_equal(o->sub, a, b); /* columns live in the parent */
        size_t n = *(const size_t *)(const void *)((const char *)a + o->count_off);
        if (n != *(const size_t *)(const void *)((const char *)b + o->count_off)) return 0;
        x = kvg__opt_rows(o, a);
        y = kvg__opt_rows(o, b);
        for (size_t i = 0; i < n; i++)
            if (!table_equal(o->sub, x + i * o->size, y + i * o->size)) return 0;
        return 1;
    }
    default: /* INT, BOOL, NBOOL, LEVEL */
        return *(const int *)(const void *)x == *(const int *)(const void *)y;
    }
}

static int emit_one(const struct kvg_opt *o, const void *obj, int (*add)(void *, const char *),
                    void *ud)
{
    char arg[1200], v[1024];
    const char *f = (const char *)obj + o->off;
    switch (o->type) {
    case KVG_OPT_BOOL:
    case KVG_OPT_NBOOL: {
        int set = *(const int *)(const void *)f == (o->type == KVG_OPT_BOOL);
        snprintf(arg, sizeof arg, "--%s%s", o->name, set ? "" : "=false");
        return add(ud, arg);
    }
    case KVG_OPT_LIST:
    case KVG_OPT_LIST_APPEND: {
        const struct kvg_strlist *l = (const void *)f;
        if (!l->n) return 0; /* no flag says "empty" */
        snprintf(arg, sizeof arg, "--%s", o->name);
        int rc = add(ud, arg);
        for (size_t i = 0; !rc && i < l->n; i++) rc = add(ud, l->v[i]);
        return rc;
    }
    default:
        if (kvg__opt_format(o, obj, v, sizeof v)) return 0;
        snprintf(arg, sizeof arg, "--%s=%s", o->name, v); /* '=': a value may start with -- */
        return add(ud, arg);
    }
}

int kvg_opt_emit(const struct kvg_opt *t, const void *obj, const void *defaults,
                 int (*add)(void *ud, const char *arg), void *ud)
{
    for (const struct kvg_opt *o = t; !kvg__opt_end(o); o++) {
        int rc = 0;
        if (o->type == KVG_OPT_INCLUDE && !o->name)
            rc = kvg_opt_emit(o->sub, (const char *)obj + o->off, (const char *)defaults + o->off,
                              add, ud);
        else if (!kvg__opt_yaml_only(o) && !field_equal(o, obj, defaults))
            rc = emit_one(o, obj, add, ud);
        if (rc) return rc;
    }
    return 0;
}

struct diff_state {
    size_t seen[1024], nseen, n, len;
    char *out;
    size_t cap;
    int (*skip)(void *, const struct kvg_opt *, size_t);
    void *ud;
};

static int seen_before(struct diff_state *s, size_t off)
{
    for (size_t i = 0; i < s->nseen; i++)
        if (s->seen[i] == off) return 1;
    if (s->nseen < KVG_ARRAY_LEN(s->seen)) s->seen[s->nseen++] = off;
    return 0;
}

static void diff_walk(struct diff_state *s, const struct kvg_opt *t, const char *a, const char *b,
                      size_t base)
{
    for (const struct kvg_opt *o = t; !kvg__opt_end(o); o++) {
        if (o->type == KVG_OPT_INCLUDE && !o->name) {
            diff_walk(s, o->sub, a + o->off, b + o->off, base + o->off);
            continue;
        }
        if (o->type == KVG_OPT_ROWS && !o->size) continue; /* its columns are fields too */
        if (seen_before(s, base + o->off)) continue;       /* a field two names share */
        if ((s->skip && s->skip(s->ud, o, base + o->off)) || field_equal(o, a, b)) continue;
        size_t cap = s->cap > s->len ? s->cap - s->len : 0;
        int k = snprintf(s->out + s->len, cap, "%s%s", s->n ? ", " : "", o->name);
        if (k > 0 && s->len + (size_t)k < s->cap) s->len += (size_t)k;
        s->n++;
    }
}

size_t kvg_opt_diff(const struct kvg_opt *t, const void *a, const void *b,
                    int (*skip)(void *ud, const struct kvg_opt *o, size_t off), void *ud, char *out,
                    size_t cap)
{
    struct diff_state s = {.out = out, .cap = cap, .skip = skip, .ud = ud};
    if (cap) out[0] = 0;
    diff_walk(&s, t, a, b, 0);
    return s.n;
}

/* The bytes a plain value of entry o takes; 0 when it has none of its own. */
static size_t value_size(const struct kvg_opt *o)
{
    switch (o->type) {
    case KVG_OPT_STR:
        return o->size;
    case KVG_OPT_ENUM:
        return o->size ? o->size : sizeof(int);
    case KVG_OPT_INT:
    case KVG_OPT_BOOL:
    case KVG_OPT_NBOOL:
    case KVG_OPT_LEVEL:
        return sizeof(int);
    case KVG_OPT_U32:
    case KVG_OPT_MS:
    case KVG_OPT_SECS_MS:
        return sizeof(uint32_t);
    case KVG_OPT_SIZE:
        return sizeof(size_t);
    case KVG_OPT_U64:
    case KVG_OPT_SECS_MS64:
        return sizeof(uint64_t);
    case KVG_OPT_DOUBLE:
        return sizeof(double);
    default: /* lists, includes, rows: memory of their own; CUSTOM: its parser knows */
        return 0;
    }
}

int kvg_opt_copy(const struct kvg_opt *o, void *dst, const void *src)
{
    size_t n = value_size(o);
    if (!n) return -1;
    memcpy((char *)dst + o->off, (const char *)src + o->off, n);
    return 0;
}

void kvg_opt_free(const struct kvg_opt *t, void *obj)
{
    for (const struct kvg_opt *o = t; !kvg__opt_end(o); o++) {
        char *f = (char *)obj + o->off;
        if (o->type == KVG_OPT_LIST || o->type == KVG_OPT_LIST_APPEND)
            kvg_strlist_free((struct kvg_strlist *)(void *)f);
        else if (o->type == KVG_OPT_INCLUDE)
            kvg_opt_free(o->sub, f);
        else if (o->type == KVG_OPT_ROWS && !o->size)
            kvg_opt_free(o->sub, obj); /* lists freed twice are empty the second time */
        else if (o->type == KVG_OPT_ROWS || o->type == KVG_OPT_MAP) {
            size_t *count = (size_t *)(void *)((char *)obj + o->count_off);
            char *rows = kvg__opt_rows(o, obj);
            for (size_t i = 0; rows && i < *count; i++) kvg_opt_free(o->sub, rows + i * o->size);
            if (o->flags & KVG_OPT_F_ALLOC) {
                free(rows);
                *(char **)(void *)f = NULL;
                *count = 0;
            }
        }
    }
}

char *kvg__opt_rows(const struct kvg_opt *o, const void *obj)
{
    const char *f = (const char *)obj + o->off;
    if (o->flags & KVG_OPT_F_ALLOC) return *(char *const *)(const void *)f;
    return (char *)(uintptr_t)f; /* the caller's obj says whether it may write */
}
