/* Operators: arithmetic, comparison, membership and concatenation with the
 * reference engine's type rules (numbers are JS doubles, `+` concatenates
 * when either side is a string, lists join, `==` is JS loose equality), plus
 * the fast path for chains of `+`/`~` that build strings: each piece is
 * copied once, or printed straight to the output. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "base/err.h"
#include "jinja/jinja_int.h"

static int out_rc(struct jrender *r, int rc)
{
    if (!rc) return 0;
    return kvg__jinja_run_fail(r, rc == KVG_ETOOBIG ? KVG_ETOOBIG : -ENOMEM,
                               "template output limit reached");
}

static const char *g_opname[] = {"+",  "-",  "~", "*", "/",  "//", "%",  "**",
                                 "==", "!=", "<", ">", "<=", ">=", "in", "not in"};

static int concat(struct jrender *r, struct jv a, struct jv b, struct jv *out)
{
    int rc;
    if ((rc = kvg__jinja_value_to_string(r, a, 1, &a)) ||
        (rc = kvg__jinja_value_to_string(r, b, 1, &b)))
        return rc;
    if (!b.n) {
        *out = a;
        return 0;
    }
    if (!a.n) {
        *out = b;
        return 0;
    }
    char *s = kvg__jinja_arena_alloc(&r->arena, (size_t)a.n + b.n);
    if (!s) return kvg__jinja_run_fail(r, KVG_ETOOBIG, "template render memory limit reached");
    memcpy(s, a.u.s, a.n);
    memcpy(s + a.n, b.u.s, b.n);
    *out = jv_str(s, (size_t)a.n + b.n);
    return 0;
}

/* A + or ~ that concatenates strings (rather than adding numbers, joining
 * lists or failing)? The same order of checks as kvg__jinja_binop. */
static int is_string_concat(int op, struct jv a, struct jv b)
{
    if (a.t <= JV_NULL || b.t <= JV_NULL) return 0; /* undefined/none: an error */
    if (op == OP_CONCAT) return 1;
    if (jv_is_num(a) && jv_is_num(b)) return 0;
    if (jv_is_arr(a) && jv_is_arr(b)) return 0;
    return (a.t == JV_STR || b.t == JV_STR) && a.t != JV_FUNC && b.t != JV_FUNC;
}

/* A left-leaning chain `a + b ~ c ...` evaluated in one go. When its value is
 * a string concatenation the pieces (as strings) go to pieces[] and *np is
 * their count, so the caller copies each byte once (or prints the pieces
 * straight to the output); otherwise *np is 0 and *acc holds the value. */
#define CHAIN_MAX 32
static int eval_chain(struct jrender *r, struct jscope *env, const struct jnode *n,
                      struct jv *pieces, int *np, struct jv *acc)
{
    const struct jnode *spine[CHAIN_MAX];
    int k = 0, rc, cnt = 0;
    while (n->kind == N_BINARY && (n->op == OP_ADD || n->op == OP_CONCAT) && k < CHAIN_MAX - 1) {
        spine[k++] = n;
        n = n->a;
    }
    if ((rc = kvg__jinja_eval(r, env, n, acc))) return rc;
    while (k--) {
        const struct jnode *b = spine[k];
        struct jv v;
        if ((rc = kvg__jinja_eval(r, env, b->b, &v))) return rc;
        if (!cnt) {
            struct jv x = jv_norm(r, *acc), y = jv_norm(r, v);
            if (r->err) return r->err;
            if (!is_string_concat(b->op, x, y)) {
                if ((rc = kvg__jinja_binop(r, b->op, *acc, v, acc))) return rc;
                continue;
            }
            if ((rc = kvg__jinja_value_to_string(r, x, 1, &pieces[cnt++]))) return rc;
            v = y;
        } else if (v.t <= JV_NULL || v.t == JV_FUNC) {
            return kvg__jinja_binop(r, b->op, jv_str("", 0), v, acc); /* its error */
        }
        if ((rc = kvg__jinja_value_to_string(r, jv_norm(r, v), 1, &pieces[cnt++]))) return rc;
    }
    *np = cnt;
    return 0;
}

int kvg__jinja_print_chain(struct jrender *r, struct jscope *env, const struct jnode *n,
                           struct kvg_buf *out, struct jv *acc, int *done)
{
    struct jv pieces[CHAIN_MAX];
    int np = 0, rc = eval_chain(r, env, n, pieces, &np, acc);
    if (rc) return rc;
    for (int i = 0; i < np; i++)
        if ((rc = out_rc(r, kvg_buf_append(out, pieces[i].u.s, pieces[i].n)))) return rc;
    *done = np > 0;
    return 0;
}

int kvg__jinja_concat_chain(struct jrender *r, struct jscope *env, const struct jnode *n,
                            struct jv *out)
{
    struct jv pieces[CHAIN_MAX];
    int np = 0, rc = eval_chain(r, env, n, pieces, &np, out);
    if (rc || !np) return rc;
    size_t total = 0;
    for (int i = 0; i < np; i++) total += pieces[i].n;
    char *d = total ? kvg__jinja_arena_alloc(&r->arena, total) : (char *)"";
    if (!d) return kvg__jinja_run_fail(r, KVG_ETOOBIG, "template render memory limit reached");
    size_t off = 0;
    for (int i = 0; i < np; i++) {
        memcpy(d + off, pieces[i].u.s, pieces[i].n);
        off += pieces[i].n;
    }
    *out = jv_str(d, total);
    return 0;
}

int kvg__jinja_binop(struct jrender *r, int op, struct jv a, struct jv b, struct jv *out)
{
    int rc;
    if (op == OP_EQ || op == OP_NE) {
        int eq;
        if ((rc = kvg__jinja_value_loose_eq(r, a, b, &eq))) return rc;
        *out = jv_bool(op == OP_EQ ? eq : !eq);
        return 0;
    }
    a = jv_norm(r, a);
    b = jv_norm(r, b);
    if (r->err) return r->err;
    if (a.t == JV_UNDEF || b.t == JV_UNDEF) {
        if (b.t == JV_UNDEF && (op == OP_IN || op == OP_NOTIN)) {
            *out = jv_bool(op == OP_NOTIN);
            return 0;
        }
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                   "Cannot perform operation %s on undefined values", g_opname[op]);
    }
    if (a.t == JV_NULL || b.t == JV_NULL)
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Cannot perform operation on null values");
    if (op == OP_CONCAT) return concat(r, a, b, out);
    int an = jv_is_num(a) || a.t == JV_BOOL, bn = jv_is_num(b) || b.t == JV_BOOL;
    if (op == OP_POW && an && bn) {
        double x = a.t == JV_BOOL ? a.u.b : a.u.d, y = b.t == JV_BOOL ? b.u.b : b.u.d;
        if (x == 0 && y < 0)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                       "0.0 cannot be raised to a negative power");
        double res = pow(x, y);
        if (!isfinite(res))
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                       "Exponentiation result is not a finite real number");
        *out = (a.t == JV_FLOAT || b.t == JV_FLOAT || y < 0) ? jv_float(res) : jv_int(res);
        return 0;
    }
    if (jv_is_num(a) && jv_is_num(b)) {
        double x = a.u.d, y = b.u.d, res;
        int fl = a.t == JV_FLOAT || b.t == JV_FLOAT;
        switch (op) {
        case OP_ADD:
        case OP_SUB:
        case OP_MUL:
            res = op == OP_ADD ? x + y : op == OP_SUB ? x - y : x * y;
            *out = fl ? jv_float(res) : jv_int(res);
            return 0;
        case OP_DIV:
            *out = jv_float(x / y);
            return 0;
        case OP_FLOORDIV:
            res = floor(x / y);
            *out = fl ? jv_float(res) : jv_int(res);
            return 0;
        case OP_MOD:
            res = fmod(x, y);
            *out = fl ? jv_float(res) : jv_int(res);
            return 0;
        case OP_LT:
            *out = jv_bool(x < y);
            return 0;
        case OP_GT:
            *out = jv_bool(x > y);
            return 0;
        case OP_LE:
            *out = jv_bool(x <= y);
            return 0;
        case OP_GE:
            *out = jv_bool(x >= y);
            return 0;
        }
    } else if (jv_is_arr(a) && jv_is_arr(b)) {
        if (op == OP_ADD) {
            struct jarr *c = kvg__jinja_arr_new(r, (size_t)a.u.a->n + b.u.a->n);
            if (!c) return r->err;
            if (a.u.a->n) memcpy(c->v, a.u.a->v, a.u.a->n * sizeof(struct jv));
            if (b.u.a->n) memcpy(c->v + a.u.a->n, b.u.a->v, b.u.a->n * sizeof(struct jv));
            c->n = a.u.a->n + b.u.a->n;
            out->t = JV_ARR;
            out->u.a = c;
            return 0;
        }
    } else if (jv_is_arr(b)) {
        if (op == OP_IN || op == OP_NOTIN) {
            int found = 0;
            for (uint32_t i = 0; i < b.u.a->n && !found; i++)
                found = kvg__jinja_value_strict_eq(b.u.a->v[i], a);
            *out = jv_bool(op == OP_IN ? found : !found);
            return 0;
        }
    }
    if ((a.t == JV_STR || b.t == JV_STR) && op == OP_ADD) {
        if (a.t == JV_FUNC || b.t == JV_FUNC)
            return kvg__jinja_run_fail(r, KVG_EUNSUPP, "unsupported: concatenating a function");
        return concat(r, a, b, out);
    }
    if (a.t == JV_STR && b.t == JV_STR && (op == OP_IN || op == OP_NOTIN)) {
        int found = a.n == 0 || (b.n >= a.n && memmem(b.u.s, b.n, a.u.s, a.n) != NULL);
        *out = jv_bool(op == OP_IN ? found : !found);
        return 0;
    }
    if (a.t == JV_STR && jv_is_obj(b) && (op == OP_IN || op == OP_NOTIN)) {
        int found = kvg__jinja_obj_get(b.u.o, a.u.s, a.n) != NULL;
        *out = jv_bool(op == OP_IN ? found : !found);
        return 0;
    }
    return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Unknown operator \"%s\" between %s and %s",
                               g_opname[op], kvg__jinja_value_type_name(a),
                               kvg__jinja_value_type_name(b));
}
