/* The parser's statement level (text, {{ }}, {% if/for/set/macro/filter/
 * call/break/continue %}), its shared helpers and symbol interning; the
 * expression grammar is jinja_expr.c. Tokens in, AST out (jinja_int.h), with
 * @huggingface/jinja's block structure: elif chains nest, a for may carry an
 * `if` filter and an else block, set may capture a block.
 *
 * All nodes live in the template's arena. Identifiers are interned into
 * symbol numbers so that rendering compares integers, not strings. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "jinja/jinja_int.h"

#include "jinja/jinja_parse.h"

static const char *g_builtin_syms[SYM_NBUILTIN] = {
    "false",           "true",  "none",         "False",     "True", "None",
    "raise_exception", "range", "strftime_now", "namespace", "loop",
};

void *kvg__jinja_parse_fail(struct parser *p, int code, const char *fmt, ...)
{
    if (!p->rc) {
        p->rc = code;
        if (p->err && p->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(p->err, p->errlen, fmt, ap);
            va_end(ap);
        }
    }
    return NULL;
}

struct jnode *kvg__jinja_parse_node(struct parser *p, int kind)
{
    struct jnode *n = kvg__jinja_arena_alloc(&p->t->arena, sizeof(*n));
    if (!n) return kvg__jinja_parse_fail(p, -ENOMEM, "out of memory");
    memset(n, 0, sizeof(*n));
    n->kind = (uint8_t)kind;
    return n;
}

int kvg__jinja_parse_push(struct parser *p, struct nlist *l, struct jnode *x)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 8;
        struct jnode **v = realloc(l->v, nc * sizeof(*v));
        if (!v) {
            kvg__jinja_parse_fail(p, -ENOMEM, "out of memory");
            return -1;
        }
        l->v = v;
        l->cap = nc;
    }
    l->v[l->n++] = x;
    return 0;
}

/* Moves the list into the arena (freeing the temporary). */
struct jnode **kvg__jinja_parse_done(struct parser *p, struct nlist *l, uint32_t *count)
{
    struct jnode **v = NULL;
    *count = (uint32_t)l->n;
    if (l->n) {
        v = kvg__jinja_arena_alloc(&p->t->arena, l->n * sizeof(*v));
        if (!v)
            kvg__jinja_parse_fail(p, -ENOMEM, "out of memory");
        else
            memcpy(v, l->v, l->n * sizeof(*v));
    }
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
    return v;
}

int64_t kvg__jinja_sym_find(const struct kvg_jinja *t, const char *name, size_t len)
{
    for (uint32_t i = 0; i < t->nsyms; i++)
        if (t->symlen[i] == len && !memcmp(t->syms[i], name, len)) return i;
    return -1;
}

int kvg__jinja_parse_intern(struct parser *p, const char *name, size_t len, uint32_t *out)
{
    struct kvg_jinja *t = p->t;
    int64_t f = kvg__jinja_sym_find(t, name, len);
    if (f >= 0) {
        *out = (uint32_t)f;
        return 0;
    }
    if ((t->nsyms & (t->nsyms - 1)) == 0 || t->nsyms < 16) {
        size_t nc = t->nsyms < 16 ? 16 : (size_t)t->nsyms * 2;
        const char **s = realloc(t->syms, nc * sizeof(*s));
        if (!s) return -1;
        t->syms = s;
        uint32_t *l = realloc(t->symlen, nc * sizeof(*l));
        if (!l) return -1;
        t->symlen = l;
    }
    char *c = kvg__jinja_arena_strdup(&t->arena, name, len);
    if (!c) return -1;
    t->syms[t->nsyms] = c;
    t->symlen[t->nsyms] = (uint32_t)len;
    *out = t->nsyms++;
    return 0;
}

int kvg__jinja_parse_peek(struct parser *p, size_t off)
{
    return p->cur + off < p->n ? p->tk[p->cur + off].type : -1;
}

int kvg__jinja_parse_is_ident(struct parser *p, size_t off, const char *name)
{
    if (p->cur + off >= p->n || p->tk[p->cur + off].type != JT_IDENT) return 0;
    size_t l = strlen(name);
    return p->tk[p->cur + off].len == l && !memcmp(p->tk[p->cur + off].s, name, l);
}

static int is_statement(struct parser *p, const char *a, const char *b, const char *c)
{
    if (kvg__jinja_parse_peek(p, 0) != JT_OPEN_STMT) return 0;
    return kvg__jinja_parse_is_ident(p, 1, a) || (b && kvg__jinja_parse_is_ident(p, 1, b)) ||
           (c && kvg__jinja_parse_is_ident(p, 1, c));
}

int kvg__jinja_parse_expect(struct parser *p, int type, const char *what)
{
    if (p->cur >= p->n) {
        kvg__jinja_parse_fail(p, KVG_ETEMPLATE, "Parser Error: %s (end of template)", what);
        return -1;
    }
    if (p->tk[p->cur].type != type) {
        kvg__jinja_parse_fail(p, KVG_ETEMPLATE, "Parser Error: %s, got '%.*s'", what,
                              (int)p->tk[p->cur].len, p->tk[p->cur].s);
        return -1;
    }
    p->cur++;
    return 0;
}

static int expect_ident(struct parser *p, const char *name)
{
    if (!kvg__jinja_parse_is_ident(p, 0, name)) {
        kvg__jinja_parse_fail(p, KVG_ETEMPLATE, "Expected %s", name);
        return -1;
    }
    p->cur++;
    return 0;
}

static struct jnode *parse_any(struct parser *p);

/* Statements until one of the named block tags; running out is an error. */
static struct jnode **parse_block_until(struct parser *p, const char *a, const char *b,
                                        const char *c, uint32_t *count)
{
    struct nlist l = {0};
    while (!is_statement(p, a, b, c)) {
        if (p->cur >= p->n) {
            kvg__jinja_parse_fail(p, KVG_ETEMPLATE,
                                  "Unexpected end of template: missing {%% %s %%}", a);
            break;
        }
        struct jnode *x = parse_any(p);
        if (p->rc) break;
        if (x && kvg__jinja_parse_push(p, &l, x)) break;
    }
    if (p->rc) {
        free(l.v);
        return NULL;
    }
    return kvg__jinja_parse_done(p, &l, count);
}

static struct jnode *parse_if(struct parser *p)
{
    struct jnode *n = kvg__jinja_parse_node(p, N_IF);
    if (!n || !(n->a = kvg__jinja_parse_expression(p))) return NULL;
    if (kvg__jinja_parse_expect(p, JT_CLOSE_STMT, "Expected closing statement token")) return NULL;
    n->body = parse_block_until(p, "elif", "else", "endif", &n->nbody);
    if (p->rc) return NULL;
    if (is_statement(p, "elif", NULL, NULL)) {
        p->cur += 2;
        struct jnode *e = parse_if(p);
        if (!e) return NULL;
        n->alt = kvg__jinja_arena_alloc(&p->t->arena, sizeof(*n->alt));
        if (!n->alt) return kvg__jinja_parse_fail(p, -ENOMEM, "out of memory");
        n->alt[0] = e;
        n->nalt = 1;
    } else if (is_statement(p, "else", NULL, NULL)) {
        p->cur += 2;
        if (kvg__jinja_parse_expect(p, JT_CLOSE_STMT, "Expected closing statement token"))
            return NULL;
        n->alt = parse_block_until(p, "endif", NULL, NULL, &n->nalt);
    }
    return p->rc ? NULL : n;
}

static int end_tag(struct parser *p, const char *name)
{
    if (kvg__jinja_parse_expect(p, JT_OPEN_STMT, "Expected {% token") || expect_ident(p, name) ||
        kvg__jinja_parse_expect(p, JT_CLOSE_STMT, "Expected %} token"))
        return -1;
    return 0;
}

/* Which of the special names `kwargs`/`varargs` a macro body mentions, and
 * whether it declares one (which the reference resolves by visit order:
 * left unsupported). Computed once here so rendering never walks the body. */
static void scan_special(const struct jnode *n, const struct kvg_jinja *t, uint16_t *fl)
{
    if (!n) return;
    if (n->kind == N_IDENT) {
        const char *s = t->syms[n->sym];
        if (!strcmp(s, "kwargs")) *fl |= FL_MACRO_KW;
        if (!strcmp(s, "varargs")) *fl |= FL_MACRO_VA;
    }
    if ((n->kind == N_SET || n->kind == N_FOR) && n->a) {
        uint16_t f2 = 0;
        scan_special(n->a, t, &f2);
        if (f2) *fl |= FL_MACRO_DECL;
    }
    if (n->kind == N_MACRO)
        for (uint32_t i = 0; i < n->n; i++) {
            const char *s = t->syms[n->list[i]->sym];
            if (!strcmp(s, "kwargs") || !strcmp(s, "varargs")) *fl |= FL_MACRO_DECL;
        }
    scan_special(n->a, t, fl);
    scan_special(n->b, t, fl);
    scan_special(n->c, t, fl);
    uint32_t nl = n->kind == N_FILTER ? n->nbody : n->kind == N_OBJECT ? 2 * n->n : n->n;
    for (uint32_t i = 0; n->list && i < nl; i++) scan_special(n->list[i], t, fl);
    if (n->kind != N_FILTER)
        for (uint32_t i = 0; n->body && i < n->nbody; i++) scan_special(n->body[i], t, fl);
    for (uint32_t i = 0; n->alt && i < n->nalt; i++) scan_special(n->alt[i], t, fl);
}

static struct jnode *parse_statement(struct parser *p)
{
    p->cur++; /* {% */
    if (kvg__jinja_parse_peek(p, 0) != JT_IDENT)
        return kvg__jinja_parse_fail(p, KVG_ETEMPLATE, "Unknown statement");
    const struct jtok *nt = &p->tk[p->cur];
    struct jnode *n = NULL;
    if (++p->depth > MAX_NESTING)
        return kvg__jinja_parse_fail(p, KVG_EUNSUPP, "template nesting too deep");
    if (kvg__jinja_parse_is_ident(p, 0, "set")) {
        p->cur++;
        n = kvg__jinja_parse_node(p, N_SET);
        if (!n || !(n->a = kvg__jinja_parse_sequence(p, 0))) return NULL;
        if (kvg__jinja_parse_peek(p, 0) == JT_EQUALS) {
            p->cur++;
            if (!(n->b = kvg__jinja_parse_sequence(p, 0))) return NULL;
        } else {
            if (kvg__jinja_parse_expect(p, JT_CLOSE_STMT, "Expected %} token")) return NULL;
            n->body = parse_block_until(p, "endset", NULL, NULL, &n->nbody);
            if (p->rc || kvg__jinja_parse_expect(p, JT_OPEN_STMT, "Expected {% token") ||
                expect_ident(p, "endset"))
                return NULL;
        }
        if (kvg__jinja_parse_expect(p, JT_CLOSE_STMT, "Expected closing statement token"))
            return NULL;
    } else if (kvg__jinja_parse_is_ident(p, 0, "if")) {
        p->cur++;
        if (!(n = parse_if(p)) || end_tag(p, "endif")) return NULL;
    } else if (kvg__jinja_parse_is_ident(p, 0, "macro")) {
        p->cur++;
        struct jnode *name = kvg__jinja_parse_primary(p);
        if (!name) return NULL;
        if (name->kind != N_IDENT)
            return kvg__jinja_parse_fail(p, KVG_ETEMPLATE,
                                         "Expected identifier following macro statement");
        n = kvg__jinja_parse_node(p, N_MACRO);
        if (!n) return NULL;
        n->sym = name->sym;
        if (!kvg__jinja_parse_args(p, 1, &n->list, &n->n)) return NULL;
        if (kvg__jinja_parse_expect(p, JT_CLOSE_STMT, "Expected closing statement token"))
            return NULL;
        n->body = parse_block_until(p, "endmacro", NULL, NULL, &n->nbody);
        if (p->rc || end_tag(p, "endmacro")) return NULL;
        for (uint32_t i = 0; i < n->nbody; i++) scan_special(n->body[i], p->t, &n->flags);
        for (uint32_t i = 0; i < n->n; i++) {
            const char *s = p->t->syms[n->list[i]->sym];
            if (!strcmp(s, "kwargs") || !strcmp(s, "varargs")) n->flags |= FL_MACRO_DECL;
            if (n->list[i]->kind == N_KWARG) scan_special(n->list[i]->a, p->t, &n->flags);
        }
    } else if (kvg__jinja_parse_is_ident(p, 0, "for")) {
        p->cur++;
        n = kvg__jinja_parse_node(p, N_FOR);
        if (!n || !(n->a = kvg__jinja_parse_sequence(p, 1))) return NULL;
        if (n->a->kind != N_IDENT && n->a->kind != N_TUPLE)
            return kvg__jinja_parse_fail(p, KVG_ETEMPLATE,
                                         "Expected identifier/tuple for the loop variable");
        if (!kvg__jinja_parse_is_ident(p, 0, "in"))
            return kvg__jinja_parse_fail(p, KVG_ETEMPLATE,
                                         "Expected `in` keyword following loop variable");
        p->cur++;
        struct jnode *it = kvg__jinja_parse_expression(p);
        if (!it) return NULL;
        if (it->kind == N_SELECT) {
            n->b = it->a;
            n->c = it->b;
        } else {
            n->b = it;
        }
        if (kvg__jinja_parse_expect(p, JT_CLOSE_STMT, "Expected closing statement token"))
            return NULL;
        n->body = parse_block_until(p, "endfor", "else", NULL, &n->nbody);
        if (p->rc) return NULL;
        if (is_statement(p, "else", NULL, NULL)) {
            p->cur += 2;
            if (kvg__jinja_parse_expect(p, JT_CLOSE_STMT, "Expected closing statement token"))
                return NULL;
            n->alt = parse_block_until(p, "endfor", NULL, NULL, &n->nalt);
            if (p->rc) return NULL;
        }
        if (end_tag(p, "endfor")) return NULL;
    } else if (kvg__jinja_parse_is_ident(p, 0, "call")) {
        /* Parsed in full so a template that merely contains one compiles;
         * rendering one fails with KVG_EUNSUPP. */
        p->cur++;
        struct jnode **unused;
        uint32_t nu;
        if (kvg__jinja_parse_peek(p, 0) == JT_LPAREN && !kvg__jinja_parse_args(p, 1, &unused, &nu))
            return NULL;
        struct jnode *callee = kvg__jinja_parse_primary(p);
        if (!callee) return NULL;
        if (callee->kind != N_IDENT)
            return kvg__jinja_parse_fail(p, KVG_ETEMPLATE,
                                         "Expected identifier following call statement");
        if (!kvg__jinja_parse_args(p, 0, &unused, &nu)) return NULL;
        if (kvg__jinja_parse_expect(p, JT_CLOSE_STMT, "Expected closing statement token"))
            return NULL;
        n = kvg__jinja_parse_node(p, N_CALL_BLOCK);
        if (!n) return NULL;
        n->body = parse_block_until(p, "endcall", NULL, NULL, &n->nbody);
        if (p->rc || end_tag(p, "endcall")) return NULL;
    } else if (kvg__jinja_parse_is_ident(p, 0, "break") ||
               kvg__jinja_parse_is_ident(p, 0, "continue")) {
        n = kvg__jinja_parse_node(p,
                                  kvg__jinja_parse_is_ident(p, 0, "break") ? N_BREAK : N_CONTINUE);
        p->cur++;
        if (!n || kvg__jinja_parse_expect(p, JT_CLOSE_STMT, "Expected closing statement token"))
            return NULL;
    } else if (kvg__jinja_parse_is_ident(p, 0, "filter")) {
        p->cur++;
        n = kvg__jinja_parse_node(p, N_FILTER_BLOCK);
        if (!n) return NULL;
        struct jnode *f = kvg__jinja_parse_primary(p);
        if (!f) return NULL;
        if (f->kind == N_IDENT && kvg__jinja_parse_peek(p, 0) == JT_LPAREN)
            f = kvg__jinja_parse_call(p, f);
        if (!f) return NULL;
        /* the body's text becomes the operand of an ordinary filter node */
        struct jnode *fx = kvg__jinja_parse_node(p, N_FILTER);
        if (!fx) return NULL;
        fx->sym = UINT32_MAX;
        if (f->kind == N_IDENT) {
            fx->str = p->t->syms[f->sym];
            fx->n = p->t->symlen[f->sym];
            fx->op = (uint8_t)kvg__jinja_filter_id(fx->str, fx->n);
        } else if (f->kind == N_CALL && f->a->kind == N_IDENT) {
            fx->str = p->t->syms[f->a->sym];
            fx->n = p->t->symlen[f->a->sym];
            fx->op = (uint8_t)kvg__jinja_filter_id(fx->str, fx->n);
            fx->flags |= FL_CALL;
            fx->list = f->list;
            fx->nbody = f->n;
        } else {
            fx->op = JFILTER_UNKNOWN;
            fx->b = f;
        }
        n->a = fx;
        if (kvg__jinja_parse_expect(p, JT_CLOSE_STMT, "Expected closing statement token"))
            return NULL;
        n->body = parse_block_until(p, "endfilter", NULL, NULL, &n->nbody);
        if (p->rc || end_tag(p, "endfilter")) return NULL;
    } else {
        return kvg__jinja_parse_fail(p, KVG_ETEMPLATE, "Unknown statement type: %.*s", (int)nt->len,
                                     nt->s);
    }
    p->depth--;
    return n;
}

/* NULL with p->rc == 0 for a comment (which renders nothing). */
static struct jnode *parse_any(struct parser *p)
{
    const struct jtok *tk = &p->tk[p->cur];
    struct jnode *n;
    switch (tk->type) {
    case JT_COMMENT:
        p->cur++;
        return NULL;
    case JT_TEXT:
        p->cur++;
        n = kvg__jinja_parse_node(p, N_TEXT);
        if (n) {
            n->str = tk->s;
            n->n = tk->len;
        }
        return n;
    case JT_OPEN_STMT:
        return parse_statement(p);
    case JT_OPEN_EXPR:
        p->cur++;
        n = kvg__jinja_parse_expression(p);
        if (n && kvg__jinja_parse_expect(p, JT_CLOSE_EXPR, "Expected closing expression token"))
            return NULL;
        return n;
    default:
        return kvg__jinja_parse_fail(p, KVG_ETEMPLATE, "Unexpected token: '%.*s'", (int)tk->len,
                                     tk->s);
    }
}

int kvg__jinja_parse(struct kvg_jinja *t, const struct jtoks *toks, char *err, size_t errlen)
{
    struct parser p = {.t = t, .tk = toks->v, .n = toks->n, .err = err, .errlen = errlen};
    struct nlist l = {0};
    for (int i = 0; i < SYM_NBUILTIN; i++) {
        uint32_t s;
        if (kvg__jinja_parse_intern(&p, g_builtin_syms[i], strlen(g_builtin_syms[i]), &s))
            return -ENOMEM;
    }
    while (p.cur < p.n) {
        struct jnode *x = parse_any(&p);
        if (p.rc) break;
        if (x && kvg__jinja_parse_push(&p, &l, x)) break;
    }
    if (p.rc) {
        free(l.v);
        return p.rc;
    }
    t->body = kvg__jinja_parse_done(&p, &l, &t->nbody);
    return p.rc;
}
