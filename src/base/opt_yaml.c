/* YAML files through option tables (base/opt.h): the top-level mapping's keys
 * are the table's names ('_' or '-'), values go through the same setter as
 * flags, so a key means exactly what its flag means. Named includes are
 * nested mappings, rows are lists of mappings, maps are mappings of named
 * rows; an unknown or repeated key anywhere is an error naming file:line:
 * path.to.key (with the nearest known key, or the valid ones). */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "base/err.h"
#include "base/opt.h"
#include "base/util.h"

struct ys {
    yaml_document_t *d;
    const char *file;
    char *err;
    size_t errlen;
};

static size_t line_of(const yaml_node_t *n)
{
    return n ? n->start_mark.line + 1 : 1;
}

static int yerr(struct ys *s, const yaml_node_t *n, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int yerr(struct ys *s, const yaml_node_t *n, const char *path, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return kvg_err_set(s->err, s->errlen, KVG_ECONFIG, "%s:%zu: %s%s%s", s->file, line_of(n), path,
                       path[0] ? ": " : "", msg);
}

/* A path or a who: truncated when long (a message, not a key). */
static void text(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void text(char *out, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, cap, fmt, ap);
    va_end(ap);
    if (n < 0) out[0] = 0;
}

static yaml_node_t *node(struct ys *s, int id)
{
    return yaml_document_get_node(s->d, id);
}

static const char *scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static const char *kind(const yaml_node_t *n)
{
    return !n                              ? "nothing"
           : n->type == YAML_MAPPING_NODE  ? "a mapping"
           : n->type == YAML_SEQUENCE_NODE ? "a list"
                                           : "a value";
}

static int mapping(struct ys *s, const struct kvg_opt *t, char *obj, yaml_node_t *m,
                   const char *prefix, const struct kvg_opt *owner);

/* One value (or a list of them) for a non-structural entry. */
static int values(struct ys *s, const struct kvg_opt *o, char *obj, yaml_node_t *n,
                  const char *path)
{
    char who[400];
    int multi = o->type == KVG_OPT_LIST || o->type == KVG_OPT_LIST_APPEND ||
                (o->type == KVG_OPT_CUSTOM && (o->flags & KVG_OPT_F_MULTI));
    if (multi && (o->flags & KVG_OPT_F_LIST_ONLY)) {
        if (!n || n->type != YAML_SEQUENCE_NODE)
            return yerr(s, n, path, "expects a list of %s, got %s", o->meta ? o->meta : "values",
                        kind(n));
        if (n->data.sequence.items.start == n->data.sequence.items.top)
            return yerr(s, n, path, "empty list: expects one value or more");
    }
    if (n && n->type == YAML_SEQUENCE_NODE && multi) {
        if (o->type == KVG_OPT_LIST && n->data.sequence.items.start == n->data.sequence.items.top)
            kvg_strlist_free((struct kvg_strlist *)(void *)(obj + o->off)); /* [] empties it */
        size_t i = 0;
        for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
             it++, i++) {
            yaml_node_t *item = node(s, *it);
            text(who, sizeof who, "%s[%zu]", path, i);
            if (!scalar(item)) return yerr(s, item, who, "expects a value, got %s", kind(item));
            char full[480];
            text(full, sizeof full, "%s:%zu: %s", s->file, line_of(item), who);
            int rc = kvg__opt_set(o, obj, scalar(item), i, full, s->err, s->errlen);
            if (rc) return rc;
        }
        return 0;
    }
    if (!scalar(n))
        return yerr(s, n, path, "expects %s, got %s", multi ? "a value or a list" : "a value",
                    kind(n));
    text(who, sizeof who, "%s:%zu: %s", s->file, line_of(n), path);
    return kvg__opt_set(o, obj, scalar(n), 0, who, s->err, s->errlen);
}

/* A key required by a row's table that the mapping m lacks, or NULL. */
static const char *missing(struct ys *s, const struct kvg_opt *sub, yaml_node_t *m)
{
    for (const struct kvg_opt *c = sub; !kvg__opt_end(c); c++) {
        if (!(c->flags & KVG_OPT_F_REQUIRED)) continue;
        int found = 0;
        for (yaml_node_pair_t *p = m->data.mapping.pairs.start;
             !found && p < m->data.mapping.pairs.top; p++) {
            size_t off = 0;
            const char *k = scalar(node(s, p->key));
            found = k && kvg__opt_find(sub, k, 1, &off) == c;
        }
        if (!found) return c->name;
    }
    return NULL;
}

/* The value row r gives column c: a scalar row is the primary column's. */
static yaml_node_t *cell(struct ys *s, const struct kvg_opt *sub, const struct kvg_opt *c,
                         yaml_node_t *r)
{
    if (r->type == YAML_SCALAR_NODE) return (c->flags & KVG_OPT_F_PRIMARY) ? r : NULL;
    for (yaml_node_pair_t *p = r->data.mapping.pairs.start; p < r->data.mapping.pairs.top; p++) {
        size_t off = 0;
        const char *k = scalar(node(s, p->key));
        if (k && kvg__opt_find(sub, k, 1, &off) == c) return node(s, p->value);
    }
    return NULL;
}

/* Rows as columns: every list some row names gets one value per row. */
static int rows_columns(struct ys *s, const struct kvg_opt *o, char *obj, yaml_node_t *n,
                        const char *path)
{
    yaml_node_item_t *first = n->data.sequence.items.start, *top = n->data.sequence.items.top;
    char rp[300];
    for (yaml_node_item_t *it = first; it < top; it++) { /* the shape first, then the values */
        yaml_node_t *r = node(s, *it);
        text(rp, sizeof rp, "%s[%zu]", path, (size_t)(it - first));
        if (r && r->type == YAML_SCALAR_NODE) {
            const struct kvg_opt *c = o->sub;
            while (!kvg__opt_end(c) && !(c->flags & KVG_OPT_F_PRIMARY)) c++;
            if (kvg__opt_end(c)) return yerr(s, r, rp, "expects a mapping, got a value");
            continue;
        }
        if (!r || r->type != YAML_MAPPING_NODE)
            return yerr(s, r, rp, "expects a mapping, got %s", kind(r));
        int rc = mapping(s, o->sub, NULL, r, rp, o); /* keys only */
        if (rc) return rc;
        for (yaml_node_pair_t *p = r->data.mapping.pairs.start; p < r->data.mapping.pairs.top;
             p++) {
            yaml_node_t *v = node(s, p->value);
            char kp[400];
            text(kp, sizeof kp, "%s.%s", rp, scalar(node(s, p->key)));
            if (!scalar(v)) return yerr(s, v, kp, "expects a value, got %s", kind(v));
        }
        const char *need = missing(s, o->sub, r);
        if (need) return yerr(s, r, rp, "needs %s", need);
    }
    for (const struct kvg_opt *c = o->sub; !kvg__opt_end(c); c++) {
        int any = 0;
        for (yaml_node_item_t *it = first; it < top && !any; it++)
            any = cell(s, o->sub, c, node(s, *it)) != NULL;
        if (!any) continue;
        for (yaml_node_item_t *it = first; it < top; it++) {
            yaml_node_t *v = cell(s, o->sub, c, node(s, *it));
            char who[400];
            text(who, sizeof who, "%s:%zu: %s[%zu].%s", s->file, line_of(v ? v : node(s, *it)),
                 path, (size_t)(it - first), c->name);
            int rc = kvg__opt_set(c, obj, v ? scalar(v) : "none", (size_t)(it - first), who, s->err,
                                  s->errlen);
            if (rc) return rc;
        }
    }
    return 0;
}

/* Room for more rows in an F_ALLOC array (zeroed), never past max_rows
 * (a row past it is refused before it is written); -ENOMEM. */
static int grow(const struct kvg_opt *o, char *obj, size_t more)
{
    size_t n = *(size_t *)(void *)(obj + o->count_off);
    if (o->max_rows) more = n >= o->max_rows ? 0 : KVG_MIN(more, o->max_rows - n);
    if (!(o->flags & KVG_OPT_F_ALLOC) || !more) return 0;
    char **rows = (char **)(void *)(obj + o->off);
    if (more > SIZE_MAX / o->size - n) return -ENOMEM;
    char *p = realloc(*rows, (n + more) * o->size);
    if (!p) return -ENOMEM;
    memset(p + n * o->size, 0, more * o->size);
    *rows = p;
    return 0;
}

/* The row table's entry with flag f, or NULL. */
static const struct kvg_opt *flagged(const struct kvg_opt *t, unsigned f)
{
    for (const struct kvg_opt *c = t; !kvg__opt_end(c); c++)
        if (c->flags & f) return c;
    return NULL;
}

/* A plain scalar row of structs: the primary key's value (p), when no
 * other key is required. */
static int plain_row(struct ys *s, const struct kvg_opt *o, const struct kvg_opt *p, char *row,
                     yaml_node_t *r, const char *rp)
{
    for (const struct kvg_opt *c = o->sub; !kvg__opt_end(c); c++)
        if ((c->flags & KVG_OPT_F_REQUIRED) && c != p) return yerr(s, r, rp, "needs %s", c->name);
    char who[400];
    text(who, sizeof who, "%s:%zu: %s", s->file, line_of(r), rp);
    int rc = kvg__opt_set(p, row, scalar(r), 0, who, s->err, s->errlen);
    if (!rc && o->seen) o->seen(row, p);
    return rc;
}

/* One row of structs (ROWS, MAP): counted, init(), its line and its name
 * (MAP: key, from the node kn, in the map at mpath), its keys (or the
 * primary key's value alone), check(). */
static int one_row(struct ys *s, const struct kvg_opt *o, char *obj, yaml_node_t *r, const char *rp,
                   const char *key, yaml_node_t *kn, const char *mpath)
{
    size_t *count = (size_t *)(void *)(obj + o->count_off);
    char why[400] = "";
    const struct kvg_opt *primary = flagged(o->sub, KVG_OPT_F_PRIMARY);
    int plain = r && r->type == YAML_SCALAR_NODE && primary;
    if (!r || (r->type != YAML_MAPPING_NODE && !plain))
        return yerr(s, r, rp, "expects a mapping, got %s", kind(r));
    if ((!(o->flags & KVG_OPT_F_ALLOC) || o->max_rows) && *count == o->max_rows)
        return yerr(s, r, rp, "at most %zu entries", o->max_rows);
    /* A grown array's row is counted first: the caller's cleanup sees what
     * its parsers allocated even when it fails. */
    int early = (o->flags & KVG_OPT_F_ALLOC) != 0;
    size_t index = *count;
    char *row = kvg__opt_rows(o, obj) + index * o->size;
    int rc;
    if (early) (*count)++;
    if (o->init && (rc = o->init(obj, row, index, why, sizeof why)))
        return rc == -ENOMEM ? rc : yerr(s, r, rp, "%s", why);
    const struct kvg_opt *c = flagged(o->sub, KVG_OPT_F_LINE);
    if (c) *(int *)(void *)(row + c->off) = (int)line_of(r);
    if (key && (c = flagged(o->sub, KVG_OPT_F_KEY))) {
        char who[400];
        text(who, sizeof who, "%s:%zu: %s", s->file, line_of(kn), mpath);
        if ((rc = kvg__opt_set(c, row, key, 0, who, s->err, s->errlen))) return rc;
    }
    if ((rc = plain ? plain_row(s, o, primary, row, r, rp) : mapping(s, o->sub, row, r, rp, o)))
        return rc;
    if (o->check && (rc = o->check(obj, row, index, why, sizeof why)))
        return rc == -ENOMEM ? rc : yerr(s, r, rp, "%s", why);
    if (!early) (*count)++;
    return 0;
}

/* Rows as an array of structs. */
static int rows_structs(struct ys *s, const struct kvg_opt *o, char *obj, yaml_node_t *n,
                        const char *path)
{
    yaml_node_item_t *first = n->data.sequence.items.start, *top = n->data.sequence.items.top;
    int rc = grow(o, obj, (size_t)(top - first));
    for (yaml_node_item_t *it = first; !rc && it < top; it++) {
        char rp[300];
        text(rp, sizeof rp, "%s[%zu]", path, (size_t)(it - first));
        rc = one_row(s, o, obj, node(s, *it), rp, NULL, NULL, path);
    }
    return rc;
}

/* A mapping of named rows (MAP). */
static int map_structs(struct ys *s, const struct kvg_opt *o, char *obj, yaml_node_t *n,
                       const char *path)
{
    yaml_node_pair_t *first = n->data.mapping.pairs.start, *top = n->data.mapping.pairs.top;
    int rc = grow(o, obj, (size_t)(top - first));
    for (yaml_node_pair_t *p = first; !rc && p < top; p++) {
        yaml_node_t *kn = node(s, p->key);
        const char *k = scalar(kn);
        char rp[300];
        if (!k) return yerr(s, kn, path, "keys must be plain names, got %s", kind(kn));
        text(rp, sizeof rp, "%s%s%s", path, path[0] ? "." : "", k);
        rc = one_row(s, o, obj, node(s, p->value), rp, k, kn, path);
    }
    return rc;
}

static int entry(struct ys *s, const struct kvg_opt *o, char *obj, yaml_node_t *n, const char *path)
{
    if (o->type == KVG_OPT_INCLUDE) { /* named: a nested mapping */
        char why[400] = "";
        int rc = mapping(s, o->sub, obj ? obj + o->off : NULL, n, path, o);
        if (rc || !obj || !o->check) return rc;
        if ((rc = o->check(obj, obj + o->off, 0, why, sizeof why)))
            return rc == -ENOMEM ? rc : yerr(s, n, path, "%s", why);
        return 0;
    }
    if (o->type == KVG_OPT_ROWS) {
        if (!n || n->type != YAML_SEQUENCE_NODE)
            return yerr(s, n, path, "expects a list of mappings, got %s", kind(n));
        if (!obj) return 0;
        return o->size ? rows_structs(s, o, obj, n, path) : rows_columns(s, o, obj, n, path);
    }
    if (o->type == KVG_OPT_MAP) {
        if (!n || n->type != YAML_MAPPING_NODE)
            return yerr(s, n, path, "expects a mapping of names, got %s", kind(n));
        int rc = mapping(s, NULL, NULL, n, path, NULL); /* plain, distinct names */
        if (rc || !obj) return rc;
        return map_structs(s, o, obj, n, path);
    }
    if (!obj) { /* a shape check only: the kind of node */
        int multi = o->type == KVG_OPT_LIST || o->type == KVG_OPT_LIST_APPEND ||
                    (o->type == KVG_OPT_CUSTOM && (o->flags & KVG_OPT_F_MULTI));
        if (!scalar(n) && !(multi && n && n->type == YAML_SEQUENCE_NODE))
            return yerr(s, n, path, "expects a value, got %s", kind(n));
        return 0;
    }
    return values(s, o, obj, n, path);
}

/* "PREFIX: unknown key": the nearest name, or what the table's owner says
 * its keys are. */
static int unknown(struct ys *s, const struct kvg_opt *t, const struct kvg_opt *owner,
                   yaml_node_t *kn, const char *k, const char *prefix, const char *path)
{
    if (owner && owner->noun)
        return yerr(s, kn, prefix, "unknown %s '%s'%s%s%s", owner->noun, k,
                    owner->expect ? " (expected " : "", owner->expect ? owner->expect : "",
                    owner->expect ? ")" : "");
    char hint[200];
    kvg__opt_suggest(t, k, 1, "", hint, sizeof hint);
    return yerr(s, kn, path, "unknown key%s", hint);
}

/* The keys of mapping m against table t, into obj (NULL: check only; t
 * NULL: only that the keys are distinct names). owner is the entry whose
 * table t is (NULL for none), for its noun in errors. */
static int mapping(struct ys *s, const struct kvg_opt *t, char *obj, yaml_node_t *m,
                   const char *prefix, const struct kvg_opt *owner)
{
    if (!m || m->type != YAML_MAPPING_NODE)
        return yerr(s, m, prefix, "expects a mapping, got %s", kind(m));
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = node(s, p->key);
        const char *k = scalar(kn);
        char path[300];
        if (!k) return yerr(s, kn, prefix, "keys must be plain names, got %s", kind(kn));
        for (yaml_node_pair_t *q = m->data.mapping.pairs.start; q < p; q++)
            if (!strcmp(k, scalar(node(s, q->key))))
                return yerr(s, kn, prefix, "duplicate key '%s'", k);
        if (!t) continue;
        text(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "", k);
        size_t off = 0;
        const struct kvg_opt *o = kvg__opt_find(t, k, 1, &off);
        if (!o) return unknown(s, t, owner, kn, k, prefix, path);
        int rc = entry(s, o, obj ? obj + off : NULL, node(s, p->value), path);
        if (rc) return rc;
        if (obj && owner && owner->seen &&
            (owner->type == KVG_OPT_ROWS || owner->type == KVG_OPT_MAP))
            owner->seen(obj, o);
    }
    const char *need = t && obj ? missing(s, t, m) : NULL;
    if (need) return yerr(s, m, prefix, "needs %s", need);
    return 0;
}

static int load(const struct kvg_opt *doc, void *obj, yaml_parser_t *yp, const char *name,
                char *err, size_t errlen)
{
    yaml_document_t doc_;
    if (!yaml_parser_load(yp, &doc_))
        return kvg_err_set(err, errlen, KVG_ECONFIG, "%s:%zu: invalid YAML: %s", name,
                           yp->problem_mark.line + 1, yp->problem ? yp->problem : "error");
    struct ys s = {.d = &doc_, .file = name, .err = err, .errlen = errlen};
    yaml_node_t *root = yaml_document_get_root_node(&doc_);
    const struct kvg_opt *need = flagged(doc->sub, KVG_OPT_F_REQUIRED);
    char *top = (char *)obj + doc->off, why[400] = "";
    int rc = 0;
    if (root && root->type != YAML_MAPPING_NODE)
        rc = yerr(&s, root, "", "the top level must be a mapping, got %s", kind(root));
    else if (root)
        rc = mapping(&s, doc->sub, top, root, "", doc);
    else if (need)
        rc = yerr(&s, NULL, "", "the file is empty (expected '%s')", need->name);
    if (!rc && doc->check && (rc = doc->check(top, top, 0, why, sizeof why)) && rc != -ENOMEM)
        rc = yerr(&s, root, "", "%s", why);
    yaml_document_delete(&doc_);
    return rc;
}

static int load_text(const struct kvg_opt *doc, void *obj, const char *text, size_t len,
                     const char *name, char *err, size_t errlen)
{
    yaml_parser_t yp;
    if (!yaml_parser_initialize(&yp)) return -ENOMEM;
    yaml_parser_set_input_string(&yp, (const unsigned char *)text, len);
    int rc = load(doc, obj, &yp, name, err, errlen);
    yaml_parser_delete(&yp);
    return rc;
}

int kvg_opt_load_yaml_doc(const struct kvg_opt *doc, void *obj, const char *text, size_t len,
                          const char *name, char *err, size_t errlen)
{
    return load_text(doc, obj, text, len, name, err, errlen);
}

int kvg_opt_load_yaml_text(const struct kvg_opt *t, void *obj, const char *text, size_t len,
                           const char *name, char *err, size_t errlen)
{
    const struct kvg_opt doc = {"", NULL, KVG_OPT_INCLUDE, 0, .sub = t};
    return load_text(&doc, obj, text, len, name, err, errlen);
}

int kvg_opt_load_yaml(const struct kvg_opt *t, void *obj, const char *path, char *err,
                      size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "cannot open %s: %s", path, strerror(errno));
    yaml_parser_t yp;
    if (!yaml_parser_initialize(&yp)) {
        fclose(f);
        return -ENOMEM;
    }
    yaml_parser_set_input_file(&yp, f);
    const struct kvg_opt doc = {"", NULL, KVG_OPT_INCLUDE, 0, .sub = t};
    int rc = load(&doc, obj, &yp, path, err, errlen);
    yaml_parser_delete(&yp);
    fclose(f);
    return rc;
}
