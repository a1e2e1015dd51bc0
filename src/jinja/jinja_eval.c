/* The tree-walking evaluator: statements write straight into the output
 * buffer, expressions produce values in the render's arena. Scoping follows
 * the reference engine: a for loop opens one scope for all its iterations,
 * `set` writes the innermost scope, a macro runs in a scope whose parent is
 * the *caller's* scope. Its control-flow quirks are kept too: the output of a
 * loop iteration that ends in break/continue is dropped, and the loop's else
 * block runs when no iteration completed.
 *
 * Every function returns 0, JR_BREAK/JR_CONTINUE while a loop control
 * statement unwinds, or a negative code with r->msg set. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "jinja/jinja_int.h"

#define JR_BREAK 1
#define JR_CONTINUE 2

#define DEFAULT_STEPS 10000000ull
#define DEFAULT_MEMORY (64u << 20)

int kvg__jinja_run_fail(struct jrender *r, int code, const char *fmt, ...)
{
    if (!r->err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
        va_end(ap);
        r->err = code;
    }
    return r->err;
}

static int out_rc(struct jrender *r, int rc)
{
    if (!rc) return 0;
    return kvg__jinja_run_fail(r, rc == KVG_ETOOBIG ? KVG_ETOOBIG : -ENOMEM,
                               "template output limit reached");
}

int kvg__jinja_run_init(struct jrender *r, const struct kvg_jinja *t,
                        const struct kvg_jinja_limits *lim)
{
    memset(r, 0, sizeof(*r));
    r->t = t;
    kvg__jinja_arena_init(&r->arena, lim && lim->max_memory ? lim->max_memory : DEFAULT_MEMORY);
    r->max_steps = lim && lim->max_steps ? lim->max_steps : DEFAULT_STEPS;
    r->gvals = kvg__jinja_arena_alloc(&r->arena, t->nsyms * sizeof(struct jv) + t->nsyms + 8);
    if (!r->gvals) return -ENOMEM;
    r->gset = (uint8_t *)(r->gvals + t->nsyms);
    memset(r->gset, 0, t->nsyms);
    return 0;
}

void kvg__jinja_run_free(struct jrender *r)
{
    kvg__jinja_arena_free(&r->arena);
}

int kvg__jinja_run_set_global(struct jrender *r, const char *name, size_t len, struct jv v)
{
    int64_t s = kvg__jinja_sym_find(r->t, name, len);
    if (s < 0) return 0; /* the template never names it */
    if ((s < SYM_NBUILTIN && s != SYM_LOOP) || r->gset[s])
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Variable already declared: %.*s", (int)len,
                                   name);
    r->gvals[s] = v;
    r->gset[s] = 1;
    return 0;
}

/* ---- scopes ---- */

static const struct jfunc g_fn_namespace = {.kind = JF_NAMESPACE};
static const struct jfunc g_fn_raise = {.kind = JF_RAISE};
static const struct jfunc g_fn_range = {.kind = JF_RANGE};
static const struct jfunc g_fn_strftime = {.kind = JF_STRFTIME};

static struct jv fn_value(const struct jfunc *f)
{
    struct jv v = {.t = JV_FUNC};
    v.u.f = f;
    return v;
}

static struct jv builtin_global(uint32_t sym)
{
    switch (sym) {
    case SYM_FALSE:
    case SYM_FALSE_T:
        return jv_bool(0);
    case SYM_TRUE:
    case SYM_TRUE_T:
        return jv_bool(1);
    case SYM_NONE:
    case SYM_NONE_T:
        return jv_null();
    case SYM_RAISE:
        return fn_value(&g_fn_raise);
    case SYM_RANGE:
        return fn_value(&g_fn_range);
    case SYM_STRFTIME:
        return fn_value(&g_fn_strftime);
    case SYM_NAMESPACE:
        return fn_value(&g_fn_namespace);
    default:
        return jv_undef();
    }
}

static struct jv lookup(struct jrender *r, struct jscope *env, uint32_t sym)
{
    if (sym == SYM_NAMESPACE) {
        /* every reference Environment declares its own `namespace`, so only
         * the innermost scope can shadow it */
        if (env) {
            for (uint32_t i = 0; i < env->n; i++)
                if (env->vars[i].sym == sym) return env->vars[i].v;
        } else if (r->gset[sym]) {
            return r->gvals[sym];
        }
        return fn_value(&g_fn_namespace);
    }
    for (struct jscope *s = env; s; s = s->parent)
        for (uint32_t i = 0; i < s->n; i++)
            if (s->vars[i].sym == sym) return s->vars[i].v;
    if (r->gset[sym]) return r->gvals[sym];
    return builtin_global(sym);
}

int kvg__jinja_scope_set(struct jrender *r, struct jscope *env, uint32_t sym, struct jv v)
{
    if (!env) {
        r->gvals[sym] = v;
        r->gset[sym] = 1;
        return 0;
    }
    for (uint32_t i = 0; i < env->n; i++)
        if (env->vars[i].sym == sym) {
            env->vars[i].v = v;
            return 0;
        }
    if (env->n == env->cap) {
        uint32_t nc = env->cap ? env->cap * 2 : 4;
        struct jscope_var *nv = kvg__jinja_arena_alloc(&r->arena, nc * sizeof(*nv));
        if (!nv) return kvg__jinja_run_fail(r, KVG_ETOOBIG, "template render memory limit reached");
        if (env->n) memcpy(nv, env->vars, env->n * sizeof(*nv));
        env->vars = nv;
        env->cap = nc;
    }
    env->vars[env->n].sym = sym;
    env->vars[env->n].v = v;
    env->n++;
    return 0;
}

/* ---- blocks ---- */

static int exec_block(struct jrender *r, struct jscope *env, struct jnode **body, uint32_t n,
                      struct kvg_buf *out);

int kvg__jinja_block_string(struct jrender *r, struct jscope *env, struct jnode **body, uint32_t n,
                            struct jv *res)
{
    struct kvg_buf b;
    kvg_buf_init(&b, r->out ? r->out->limit : 0);
    int rc = exec_block(r, env, body, n, &b);
    if (!rc) {
        char *s = b.len ? kvg__jinja_arena_alloc(&r->arena, b.len) : (char *)"";
        if (!s)
            rc = kvg__jinja_run_fail(r, KVG_ETOOBIG, "template render memory limit reached");
        else {
            if (b.len) memcpy(s, b.data, b.len);
            *res = jv_str(s, b.len);
        }
    }
    kvg_buf_free(&b);
    return rc;
}

static int bind_target(struct jrender *r, struct jscope *env, const struct jnode *target,
                       struct jv v, int in_set)
{
    const char *what = in_set ? " in set" : "";
    if (target->kind == N_IDENT) return kvg__jinja_scope_set(r, env, target->sym, v);
    if (target->kind != N_TUPLE)
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Invalid loop variable(s)");
    if (v.t != JV_ARR && !(in_set && v.t == JV_TUPLE))
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Cannot unpack non-iterable type%s: %s", what,
                                   kvg__jinja_value_type_name(v));
    if (v.u.a->n != target->n)
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Too %s items to unpack%s",
                                   target->n > v.u.a->n ? "few" : "many", what);
    for (uint32_t i = 0; i < target->n; i++) {
        if (target->list[i]->kind != N_IDENT)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Cannot unpack to non-identifier");
        int rc = kvg__jinja_scope_set(r, env, target->list[i]->sym, v.u.a->v[i]);
        if (rc) return rc;
    }
    return 0;
}

static int exec_for(struct jrender *r, struct jscope *env, const struct jnode *n,
                    struct kvg_buf *out)
{
    struct jscope scope = {.parent = env};
    struct jv it;
    int rc = kvg__jinja_eval(r, &scope, n->b, &it);
    if (rc) return rc;
    it = jv_norm(r, it);
    if (r->err) return r->err;
    const struct jarr *src;
    if (jv_is_arr(it)) {
        src = it.u.a;
    } else if (jv_is_obj(it)) {
        struct jarr *keys = kvg__jinja_arr_new(r, it.u.o->n);
        if (!keys) return r->err;
        for (uint32_t i = 0; i < it.u.o->n; i++)
            keys->v[keys->n++] = jv_str(it.u.o->kv[i].k, it.u.o->kv[i].klen);
        src = keys;
    } else {
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                   "Expected iterable or object type in for loop: got %s",
                                   kvg__jinja_value_type_name(it));
    }
    const struct jarr *items = src;
    if (n->c) { /* `for x in xs if test`: filter first, each in its own scope */
        struct jarr *kept = kvg__jinja_arr_new(r, src->n);
        if (!kept) return r->err;
        for (uint32_t i = 0; i < src->n; i++) {
            struct jscope ls = {.parent = &scope};
            struct jv tv;
            if ((rc = bind_target(r, &ls, n->a, src->v[i], 0)) ||
                (rc = kvg__jinja_eval(r, &ls, n->c, &tv)))
                return rc;
            if (kvg__jinja_value_truthy(tv)) kept->v[kept->n++] = src->v[i];
        }
        items = kept;
    } else if (n->a->kind == N_TUPLE) {
        for (uint32_t i = 0; i < src->n; i++) { /* the reference checks all first */
            struct jv v = src->v[i];
            if (v.t != JV_ARR)
                return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Cannot unpack non-iterable type: %s",
                                           kvg__jinja_value_type_name(v));
            if (v.u.a->n != n->a->n)
                return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Too %s items to unpack",
                                           n->a->n > v.u.a->n ? "few" : "many");
        }
    }
    struct jloop *lp = kvg__jinja_arena_alloc(&r->arena, sizeof(*lp));
    if (!lp) return kvg__jinja_run_fail(r, KVG_ETOOBIG, "template render memory limit reached");
    lp->items = items;
    int none = 1;
    for (uint32_t i = 0; i < items->n; i++) {
        struct jv lv = {.t = JV_LOOP, .n = i};
        lv.u.lp = lp;
        if ((rc = kvg__jinja_scope_set(r, &scope, SYM_LOOP, lv)) ||
            (rc = bind_target(r, &scope, n->a, items->v[i], 0)))
            return rc;
        size_t mark = out->len;
        rc = exec_block(r, &scope, n->body, n->nbody, out);
        if (rc == JR_CONTINUE || rc == JR_BREAK) {
            out->len = mark; /* the reference drops the unfinished iteration */
            if (rc == JR_BREAK) break;
            continue;
        }
        if (rc) return rc;
        none = 0;
    }
    if (none) return exec_block(r, &scope, n->alt, n->nalt, out);
    return 0;
}

static int exec_set(struct jrender *r, struct jscope *env, const struct jnode *n)
{
    struct jv v;
    int rc = n->b ? kvg__jinja_eval(r, env, n->b, &v)
                  : kvg__jinja_block_string(r, env, n->body, n->nbody, &v);
    if (rc) return rc;
    const struct jnode *t = n->a;
    if (t->kind == N_IDENT) return kvg__jinja_scope_set(r, env, t->sym, v);
    if (t->kind == N_TUPLE) {
        if (!jv_is_arr(v))
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                       "Cannot unpack non-iterable type in set: %s",
                                       kvg__jinja_value_type_name(v));
        return bind_target(r, env, t, v, 1);
    }
    if (t->kind == N_MEMBER) {
        struct jv obj;
        if ((rc = kvg__jinja_eval(r, env, t->a, &obj))) return rc;
        if (obj.t != JV_NS)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                       "cannot assign attribute on non-namespace object");
        if ((t->flags & (FL_COMPUTED | FL_DOTINT)))
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                       "Cannot assign to member with non-identifier property");
        return kvg__jinja_obj_set(r, obj.u.o, t->str, t->n, v);
    }
    return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Invalid LHS inside assignment expression");
}

static int exec_stmt(struct jrender *r, struct jscope *env, const struct jnode *n,
                     struct kvg_buf *out)
{
    int rc;
    struct jv v;
    if (++r->steps > r->max_steps)
        return kvg__jinja_run_fail(r, KVG_ETOOBIG, "template step budget exhausted");
    switch (n->kind) {
    case N_TEXT:
        return out_rc(r, kvg_buf_append(out, n->str, n->n));
    case N_IF:
        if ((rc = kvg__jinja_eval(r, env, n->a, &v))) return rc;
        if (kvg__jinja_value_truthy(v)) return exec_block(r, env, n->body, n->nbody, out);
        return exec_block(r, env, n->alt, n->nalt, out);
    case N_FOR:
        return exec_for(r, env, n, out);
    case N_SET:
        return exec_set(r, env, n);
    case N_MACRO: {
        struct jfunc *f = kvg__jinja_arena_alloc(&r->arena, sizeof(*f));
        if (!f) return kvg__jinja_run_fail(r, KVG_ETOOBIG, "template render memory limit reached");
        memset(f, 0, sizeof(*f));
        f->kind = JF_MACRO;
        f->macro = n;
        return kvg__jinja_scope_set(r, env, n->sym, fn_value(f));
    }
    case N_BREAK:
        return JR_BREAK;
    case N_CONTINUE:
        return JR_CONTINUE;
    case N_CALL_BLOCK:
        return kvg__jinja_run_fail(r, KVG_EUNSUPP, "unsupported: {%% call %%} blocks");
    case N_FILTER_BLOCK: {
        struct jv s;
        if ((rc = kvg__jinja_block_string(r, env, n->body, n->nbody, &s)) ||
            (rc = kvg__jinja_filter_apply(r, env, s, n->a, &v)))
            return rc;
        break;
    }
    case N_BINARY:
        if (n->op == OP_ADD || n->op == OP_CONCAT) {
            int done = 0;
            size_t mark = out->len;
            if ((rc = kvg__jinja_print_chain(r, env, n, out, &v, &done))) {
                out->len = mark;
                return rc;
            }
            if (done) return 0;
            break;
        }
        /* fall through */
    default:
        if ((rc = kvg__jinja_eval(r, env, n, &v))) return rc;
    }
    if (v.t == JV_NULL || v.t == JV_UNDEF) return 0;
    if (v.t == JV_STR) return out_rc(r, kvg_buf_append(out, v.u.s, v.n));
    return kvg__jinja_value_print(r, out, v);
}

static int exec_block(struct jrender *r, struct jscope *env, struct jnode **body, uint32_t n,
                      struct kvg_buf *out)
{
    for (uint32_t i = 0; i < n; i++) {
        int rc = exec_stmt(r, env, body[i], out);
        if (rc) return rc;
    }
    return 0;
}

int kvg__jinja_run(struct jrender *r, struct kvg_buf *out)
{
    size_t mark = out->len;
    r->out = out;
    int rc = exec_block(r, NULL, r->t->body, r->t->nbody, out);
    if (rc == JR_BREAK || rc == JR_CONTINUE)
        rc = kvg__jinja_run_fail(r, KVG_ETEMPLATE, "%s outside of a loop",
                                 rc == JR_BREAK ? "break" : "continue");
    if (rc) out->len = mark;
    return rc;
}

/* ---- member access ---- */

static int loop_attr(struct jv v, const char *k, size_t kl, struct jv *out)
{
    const struct jarr *it = v.u.lp->items;
    uint32_t i = v.n, n = it->n;
#define IS(s) (kl == sizeof(s) - 1 && !memcmp(k, s, kl))
    if (IS("index"))
        *out = jv_int(i + 1);
    else if (IS("index0"))
        *out = jv_int(i);
    else if (IS("revindex"))
        *out = jv_int(n - i);
    else if (IS("revindex0"))
        *out = jv_int((double)n - i - 1);
    else if (IS("first"))
        *out = jv_bool(i == 0);
    else if (IS("last"))
        *out = jv_bool(i == n - 1);
    else if (IS("length"))
        *out = jv_int(n);
    else if (IS("previtem"))
        *out = i > 0 ? it->v[i - 1] : jv_undef();
    else if (IS("nextitem"))
        *out = i + 1 < n ? it->v[i + 1] : jv_undef();
    else
        return 0;
#undef IS
    return 1;
}

/* String index in UTF-16 code units, as String.prototype.at. */
static int str_at(struct jrender *r, struct jv s, double idx, struct jv *out)
{
    size_t ulen = kvg__jinja_str_utf16_len(s.u.s, s.n);
    double k = idx < 0 ? (double)ulen + idx : idx;
    if (k < 0 || k >= (double)ulen) {
        *out = jv_undef();
        return 0;
    }
    size_t want = (size_t)k, u = 0;
    for (size_t i = 0; i < s.n;) {
        size_t l = kvg_utf8_decode_fast(s.u.s + i, s.n - i, NULL);
        size_t w = l == 4 ? 2 : 1;
        if (want < u + w) {
            if (w == 2)
                return kvg__jinja_run_fail(r, KVG_EUNSUPP,
                                           "unsupported: indexing half of a surrogate pair");
            *out = jv_str(s.u.s + i, l);
            return 0;
        }
        u += w;
        i += l;
    }
    *out = jv_undef();
    return 0;
}

static int member_get(struct jrender *r, struct jv obj, struct jv prop, struct jv *out)
{
    if (obj.t == JV_LOOP && prop.t == JV_STR && loop_attr(obj, prop.u.s, prop.n, out)) return 0;
    obj = jv_norm(r, obj);
    if (r->err) return r->err;
    *out = jv_undef();
    if (jv_is_obj(obj) || obj.t == JV_NS) {
        if (prop.t != JV_STR)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                       "Cannot access property with non-string: got %s",
                                       kvg__jinja_value_type_name(prop));
        const struct jv *v = kvg__jinja_obj_get(obj.u.o, prop.u.s, prop.n);
        if (v) {
            *out = *v;
            return 0;
        }
        if (obj.t == JV_NS) return 0;
        return kvg__jinja_builtin_attr(r, obj, prop.u.s, prop.n, out) < 0 ? r->err : 0;
    }
    if (jv_is_arr(obj) || obj.t == JV_STR) {
        if (prop.t == JV_INT) {
            if (obj.t == JV_STR) return str_at(r, obj, prop.u.d, out);
            double k = prop.u.d < 0 ? obj.u.a->n + prop.u.d : prop.u.d;
            if (k >= 0 && k < obj.u.a->n) *out = obj.u.a->v[(size_t)k];
            return 0;
        }
        if (prop.t == JV_STR)
            return kvg__jinja_builtin_attr(r, obj, prop.u.s, prop.n, out) < 0 ? r->err : 0;
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                   "Cannot access property with non-string/non-number: got %s",
                                   kvg__jinja_value_type_name(prop));
    }
    if (prop.t != JV_STR)
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                   "Cannot access property with non-string: got %s",
                                   kvg__jinja_value_type_name(prop));
    return 0; /* numbers, booleans, none, undefined, functions: no attributes */
}

static int eval_member(struct jrender *r, struct jscope *env, const struct jnode *n, struct jv *out)
{
    struct jv obj, prop;
    int rc = kvg__jinja_eval(r, env, n->a, &obj);
    if (rc) return rc;
    if (n->flags & FL_COMPUTED) {
        if (n->b->kind == N_SLICE) {
            struct jv st = jv_undef(), sp = jv_undef(), sz = jv_undef();
            if ((n->b->a && (rc = kvg__jinja_eval(r, env, n->b->a, &st))) ||
                (n->b->b && (rc = kvg__jinja_eval(r, env, n->b->b, &sp))) ||
                (n->b->c && (rc = kvg__jinja_eval(r, env, n->b->c, &sz))))
                return rc;
            return kvg__jinja_str_slice(r, obj, st, sp, sz, out);
        }
        if ((rc = kvg__jinja_eval(r, env, n->b, &prop))) return rc;
    } else if (n->flags & FL_DOTINT) {
        prop = jv_int(n->num);
    } else {
        prop = jv_str(n->str, n->n);
    }
    return member_get(r, obj, prop, out);
}

static int eval_call(struct jrender *r, struct jscope *env, const struct jnode *n, struct jv *out)
{
    struct jargs a = {0};
    int rc = kvg__jinja_eval_args(r, env, n->list, n->n, &a);
    if (rc) return rc;
    if (a.kw && a.kw->n) {
        struct jv kv = {.t = JV_KWARGS};
        kv.u.o = a.kw;
        if ((rc = kvg__jinja_arr_push(r, a.pos, kv))) return rc;
    }
    struct jv fn;
    if ((rc = kvg__jinja_eval(r, env, n->a, &fn))) return rc;
    if (++r->depth > JR_MAX_DEPTH)
        return kvg__jinja_run_fail(r, KVG_EUNSUPP, "unsupported: calls nested deeper than %d",
                                   JR_MAX_DEPTH);
    rc = kvg__jinja_call_value(r, env, fn, a.pos->v, a.pos->n, out);
    r->depth--;
    return rc;
}

/* ---- operators ---- */

int kvg__jinja_eval(struct jrender *r, struct jscope *env, const struct jnode *n, struct jv *out)
{
    int rc;
    struct jv v;
    if (++r->steps > r->max_steps)
        return kvg__jinja_run_fail(r, KVG_ETOOBIG, "template step budget exhausted");
    switch (n->kind) {
    case N_TEXT:
    case N_STR:
        *out = jv_str(n->str, n->n);
        return 0;
    case N_INT:
        *out = jv_int(n->num);
        return 0;
    case N_FLOAT:
        *out = jv_float(n->num);
        return 0;
    case N_IDENT:
        *out = lookup(r, env, n->sym);
        return 0;
    case N_ARRAY:
    case N_TUPLE: {
        struct jarr *a = kvg__jinja_arr_new(r, n->n);
        if (!a) return r->err;
        for (uint32_t i = 0; i < n->n; i++) {
            if ((rc = kvg__jinja_eval(r, env, n->list[i], &a->v[i]))) return rc;
            a->n++;
        }
        out->t = n->kind == N_ARRAY ? JV_ARR : JV_TUPLE;
        out->u.a = a;
        return 0;
    }
    case N_OBJECT: {
        struct jobj *o = kvg__jinja_obj_new(r, n->n);
        if (!o) return r->err;
        for (uint32_t i = 0; i < n->n; i++) {
            struct jv k;
            if ((rc = kvg__jinja_eval(r, env, n->list[2 * i], &k))) return rc;
            if (k.t != JV_STR)
                return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Object keys must be strings: got %s",
                                           kvg__jinja_value_type_name(k));
            if ((rc = kvg__jinja_eval(r, env, n->list[2 * i + 1], &v)) ||
                (rc = kvg__jinja_obj_set(r, o, k.u.s, k.n, v)))
                return rc;
        }
        out->t = JV_OBJ;
        out->u.o = o;
        return 0;
    }
    case N_MEMBER:
        return eval_member(r, env, n, out);
    case N_CALL:
        return eval_call(r, env, n, out);
    case N_BINARY:
        if (n->op == OP_ADD || n->op == OP_CONCAT) return kvg__jinja_concat_chain(r, env, n, out);
        {
            struct jv a, b;
            if ((rc = kvg__jinja_eval(r, env, n->a, &a)) ||
                (rc = kvg__jinja_eval(r, env, n->b, &b)))
                return rc;
            return kvg__jinja_binop(r, n->op, a, b, out);
        }
    case N_AND:
    case N_OR:
        if ((rc = kvg__jinja_eval(r, env, n->a, &v))) return rc;
        if (kvg__jinja_value_truthy(v) == (n->kind == N_OR)) {
            *out = v;
            return 0;
        }
        return kvg__jinja_eval(r, env, n->b, out);
    case N_NOT:
        if ((rc = kvg__jinja_eval(r, env, n->a, &v))) return rc;
        *out = jv_bool(!kvg__jinja_value_truthy(v));
        return 0;
    case N_NEG:
        if ((rc = kvg__jinja_eval(r, env, n->a, &v))) return rc;
        if (v.t == JV_BOOL) v = jv_int(v.u.b);
        if (!jv_is_num(v))
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Unknown operator \"%c\" for %s", n->op,
                                       kvg__jinja_value_type_name(v));
        if (n->op == '-') v.u.d = -v.u.d;
        *out = v;
        return 0;
    case N_FILTER:
        if (++r->depth > JR_MAX_DEPTH)
            return kvg__jinja_run_fail(
                r, KVG_EUNSUPP, "unsupported: expressions nested deeper than %d", JR_MAX_DEPTH);
        if (!(rc = kvg__jinja_eval(r, env, n->a, &v)))
            rc = kvg__jinja_filter_apply(r, env, v, n, out);
        r->depth--;
        return rc;
    case N_TEST: {
        int res;
        if ((rc = kvg__jinja_eval(r, env, n->a, &v)) ||
            (rc = kvg__jinja_test_apply(r, n->op, n->str, n->n, v, NULL, &res)))
            return rc;
        *out = jv_bool((n->flags & FL_NEGATE) ? !res : res);
        return 0;
    }
    case N_SELECT:
        if ((rc = kvg__jinja_eval(r, env, n->b, &v))) return rc;
        if (!kvg__jinja_value_truthy(v)) {
            *out = jv_undef();
            return 0;
        }
        return kvg__jinja_eval(r, env, n->a, out);
    case N_TERNARY:
        if ((rc = kvg__jinja_eval(r, env, n->a, &v))) return rc;
        return kvg__jinja_eval(r, env, kvg__jinja_value_truthy(v) ? n->b : n->c, out);
    default:
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Unknown node type in expression");
    }
}
