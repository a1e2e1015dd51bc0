/* Calls: arguments, macros (bound with the reference's rules for defaults,
 * extra keyword arguments and `kwargs`/`varargs`), the global functions
 * (namespace, raise_exception, range, strftime_now) and dispatch to the
 * string/object methods of jinja_str.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "jinja/jinja_int.h"

int kvg__jinja_eval_args(struct jrender *r, struct jscope *env, struct jnode **list, uint32_t n,
                         struct jargs *a)
{
    int rc;
    if (!(a->pos = kvg__jinja_arr_new(r, n))) return r->err;
    a->kw = NULL;
    for (uint32_t i = 0; i < n; i++) {
        const struct jnode *x = list[i];
        struct jv v;
        if (x->kind == N_KWARG || x->kind == N_KWSPREAD) continue;
        if ((rc = kvg__jinja_eval(r, env, x->kind == N_SPREAD ? x->a : x, &v))) return rc;
        if (x->kind == N_SPREAD) {
            if (!jv_is_arr(v))
                return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "Cannot unpack non-iterable type: %s",
                                           kvg__jinja_value_type_name(v));
            for (uint32_t k = 0; k < v.u.a->n; k++)
                if ((rc = kvg__jinja_arr_push(r, a->pos, v.u.a->v[k]))) return rc;
        } else if ((rc = kvg__jinja_arr_push(r, a->pos, v))) {
            return rc;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        const struct jnode *x = list[i];
        if (x->kind != N_KWARG && x->kind != N_KWSPREAD) continue;
        if (!a->kw && !(a->kw = kvg__jinja_obj_new(r, 4))) return r->err;
        struct jv v;
        if ((rc = kvg__jinja_eval(r, env, x->a, &v))) return rc;
        if (x->kind == N_KWARG) {
            if (kvg__jinja_obj_get(a->kw, x->str, x->n))
                return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                           "Got multiple values for keyword argument '%.*s'",
                                           (int)x->n, x->str);
            if ((rc = kvg__jinja_obj_push(r, a->kw, x->str, x->n, v))) return rc;
        } else {
            if (!jv_is_obj(v))
                return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                           "Argument after ** must be a mapping, not %s",
                                           kvg__jinja_value_type_name(v));
            for (uint32_t k = 0; k < v.u.o->n; k++) {
                const struct jkv *kv = &v.u.o->kv[k];
                if (kvg__jinja_obj_get(a->kw, kv->k, kv->klen))
                    return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                               "Got multiple values for keyword argument '%.*s'",
                                               (int)kv->klen, kv->k);
                if ((rc = kvg__jinja_obj_push(r, a->kw, kv->k, kv->klen, kv->v))) return rc;
            }
        }
    }
    return 0;
}

static int call_macro(struct jrender *r, struct jscope *caller, const struct jnode *m,
                      struct jv *args, size_t nargs, struct jv *out)
{
    const struct kvg_jinja *t = r->t;
    struct jscope ms = {.parent = caller};
    const struct jobj *kwin = NULL;
    int rc, want_kw = !!(m->flags & FL_MACRO_KW), want_va = !!(m->flags & FL_MACRO_VA);
    if (nargs && args[nargs - 1].t == JV_KWARGS) kwin = args[--nargs].u.o;
    if (m->flags & FL_MACRO_DECL)
        return kvg__jinja_run_fail(r, KVG_EUNSUPP,
                                   "unsupported: a macro declaring kwargs or varargs");
    struct jobj *kwleft = kvg__jinja_obj_new(r, kwin ? kwin->n : 0);
    uint8_t *pending = m->n ? kvg__jinja_arena_alloc(&r->arena, m->n) : NULL;
    if (!kwleft || (m->n && !pending))
        return kvg__jinja_run_fail(r, KVG_ETOOBIG, "template render memory limit reached");
    for (uint32_t i = 0; kwin && i < kwin->n; i++) kwleft->kv[kwleft->n++] = kwin->kv[i];
    for (uint32_t i = 0; i < m->n; i++) {
        const struct jnode *prm = m->list[i];
        const char *name = t->syms[prm->sym];
        size_t nl = t->symlen[prm->sym];
        struct jv v = jv_undef();
        int have = 0;
        if (i < nargs) {
            v = args[i];
            have = 1;
        } else {
            for (uint32_t k = 0; k < kwleft->n; k++)
                if (kwleft->kv[k].klen == nl && !memcmp(kwleft->kv[k].k, name, nl)) {
                    v = kwleft->kv[k].v;
                    have = 1;
                    memmove(&kwleft->kv[k], &kwleft->kv[k + 1],
                            (kwleft->n - k - 1) * sizeof(struct jkv));
                    kwleft->n--;
                    break;
                }
        }
        pending[i] = !have && prm->kind == N_KWARG;
        if ((rc = kvg__jinja_scope_set(r, &ms, prm->sym, v))) return rc;
    }
    const char *mname = t->syms[m->sym];
    if (want_kw) {
        struct jv kv = {.t = JV_OBJ};
        kv.u.o = kwleft;
        int64_t s = kvg__jinja_sym_find(t, "kwargs", 6);
        if (s >= 0 && (rc = kvg__jinja_scope_set(r, &ms, (uint32_t)s, kv))) return rc;
    } else if (kwleft->n) {
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "macro '%s' takes no keyword argument '%.*s'",
                                   mname, (int)kwleft->kv[0].klen, kwleft->kv[0].k);
    }
    if (want_va) {
        struct jarr *va = kvg__jinja_arr_new(r, nargs > m->n ? nargs - m->n : 0);
        if (!va) return r->err;
        for (size_t i = m->n; i < nargs; i++) va->v[va->n++] = args[i];
        struct jv vv = {.t = JV_ARR};
        vv.u.a = va;
        int64_t s = kvg__jinja_sym_find(t, "varargs", 7);
        if (s >= 0 && (rc = kvg__jinja_scope_set(r, &ms, (uint32_t)s, vv))) return rc;
    } else if (nargs > m->n) {
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                   "macro '%s' takes not more than %u argument(s)", mname, m->n);
    }
    for (uint32_t i = 0; i < m->n; i++) { /* defaults, once every name is bound */
        struct jv dv;
        if (pending[i] && ((rc = kvg__jinja_eval(r, &ms, m->list[i]->a, &dv)) ||
                           (rc = kvg__jinja_scope_set(r, &ms, m->list[i]->sym, dv))))
            return rc;
    }
    if (++r->depth > JR_MAX_DEPTH)
        return kvg__jinja_run_fail(r, KVG_EUNSUPP, "unsupported: macro recursion deeper than %d",
                                   JR_MAX_DEPTH);
    rc = kvg__jinja_block_string(r, &ms, m->body, m->nbody, out);
    r->depth--;
    return rc;
}

static int call_builtin_fn(struct jrender *r, const struct jfunc *f, struct jv *args, size_t n,
                           struct jv *out)
{
    int rc;
    switch (f->kind) {
    case JF_RAISE: {
        struct jv msg = jv_str("", 0);
        if (n && args[0].t != JV_UNDEF && (rc = kvg__jinja_value_to_string(r, args[0], 1, &msg)))
            return rc;
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "%.*s", (int)msg.n, msg.u.s);
    }
    case JF_RANGE: {
        for (size_t i = 0; i < n && i < 3; i++)
            if (!jv_is_num(args[i]))
                return kvg__jinja_run_fail(r, KVG_EUNSUPP, "unsupported: range() of %s",
                                           kvg__jinja_value_type_name(args[i]));
        double start = n ? args[0].u.d : NAN, stop = n > 1 ? args[1].u.d : NAN;
        double step = n > 2 ? args[2].u.d : 1;
        if (n < 2) {
            stop = start;
            start = 0;
        }
        if (step == 0)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "range() step must not be zero");
        struct jarr *a = kvg__jinja_arr_new(r, 0);
        if (!a) return r->err;
        for (double i = start; step > 0 ? i < stop : i > stop; i += step) {
            if (++r->steps > r->max_steps)
                return kvg__jinja_run_fail(r, KVG_ETOOBIG, "template step budget exhausted");
            if ((rc = kvg__jinja_arr_push(r, a, i == floor(i) ? jv_int(i) : jv_float(i))))
                return rc;
        }
        out->t = JV_ARR;
        out->u.a = a;
        return 0;
    }
    case JF_STRFTIME: {
        static const char *mon[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                    "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
        static const char *monl[] = {"January",   "February", "March",    "April",
                                     "May",       "June",     "July",     "August",
                                     "September", "October",  "November", "December"};
        if (!n || args[0].t != JV_STR)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "strftime_now() needs a format string");
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        struct kvg_buf b;
        kvg_buf_init(&b, 0);
        const char *s = args[0].u.s;
        size_t len = args[0].n;
        rc = 0;
        for (size_t i = 0; i < len && !rc; i++) {
            if (s[i] == '%' && i + 1 < len && strchr("YmdbBHM%", s[i + 1])) {
                char c = s[++i];
                if (c == 'Y')
                    rc = kvg_buf_printf(&b, "%d", tm.tm_year + 1900);
                else if (c == 'm')
                    rc = kvg_buf_printf(&b, "%02d", tm.tm_mon + 1);
                else if (c == 'd')
                    rc = kvg_buf_printf(&b, "%02d", tm.tm_mday);
                else if (c == 'b')
                    rc = kvg_buf_append_str(&b, mon[tm.tm_mon]);
                else if (c == 'B')
                    rc = kvg_buf_append_str(&b, monl[tm.tm_mon]);
                else if (c == 'H')
                    rc = kvg_buf_printf(&b, "%02d", tm.tm_hour);
                else if (c == 'M')
                    rc = kvg_buf_printf(&b, "%02d", tm.tm_min);
                else
                    rc = kvg_buf_append(&b, "%", 1);
            } else {
                rc = kvg_buf_append(&b, s + i, 1);
            }
        }
        if (!rc) {
            char *d = kvg__jinja_arena_strdup(&r->arena, b.data ? b.data : "", b.len);
            if (!d)
                rc = kvg__jinja_run_fail(r, KVG_ETOOBIG, "template render memory limit reached");
            else
                *out = jv_str(d, b.len);
        } else {
            rc = kvg__jinja_run_fail(r, -ENOMEM, "out of memory");
        }
        kvg_buf_free(&b);
        return rc;
    }
    case JF_NAMESPACE: {
        const struct jobj *kw = NULL;
        if (n && args[n - 1].t == JV_KWARGS) kw = args[--n].u.o;
        if (n > 1)
            return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                       "namespace expected at most 1 argument, got %zu", n);
        struct jobj *o = kvg__jinja_obj_new(r, 4);
        if (!o) return r->err;
        if (n == 1) {
            struct jv src = jv_norm(r, args[0]);
            if (r->err) return r->err;
            if (jv_is_obj(src)) {
                for (uint32_t i = 0; i < src.u.o->n; i++)
                    if ((rc = kvg__jinja_obj_set(r, o, src.u.o->kv[i].k, src.u.o->kv[i].klen,
                                                 src.u.o->kv[i].v)))
                        return rc;
            } else if (jv_is_arr(src)) {
                for (uint32_t i = 0; i < src.u.a->n; i++) {
                    struct jv pr = src.u.a->v[i];
                    if (!jv_is_arr(pr) || pr.u.a->n != 2)
                        return kvg__jinja_run_fail(
                            r, pr.t == JV_STR ? KVG_EUNSUPP : KVG_ETEMPLATE,
                            "namespace expected an object or an iterable of [key, "
                            "value] pairs");
                    if (pr.u.a->v[0].t != JV_STR)
                        return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                                   "namespace keys must be strings");
                    if ((rc = kvg__jinja_obj_set(r, o, pr.u.a->v[0].u.s, pr.u.a->v[0].n,
                                                 pr.u.a->v[1])))
                        return rc;
                }
            } else {
                return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "'%s' object is not iterable",
                                           kvg__jinja_value_type_name(src));
            }
        }
        for (uint32_t i = 0; kw && i < kw->n; i++)
            if ((rc = kvg__jinja_obj_set(r, o, kw->kv[i].k, kw->kv[i].klen, kw->kv[i].v)))
                return rc;
        out->t = JV_NS;
        out->u.o = o;
        return 0;
    }
    default:
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE, "not callable");
    }
}

int kvg__jinja_call_value(struct jrender *r, struct jscope *env, struct jv fn, struct jv *args,
                          size_t nargs, struct jv *out)
{
    if (fn.t != JV_FUNC)
        return kvg__jinja_run_fail(r, KVG_ETEMPLATE,
                                   "Cannot call something that is not a function: got %s",
                                   kvg__jinja_value_type_name(fn));
    const struct jfunc *f = fn.u.f;
    if (f->kind == JF_MACRO) return call_macro(r, env, f->macro, args, nargs, out);
    if (f->kind == JF_METHOD)
        return kvg__jinja_method_call(r, f->method, f->self, args, nargs, out);
    return call_builtin_fn(r, f, args, nargs, out);
}
