/* Expressions: the grammar and operator precedence of @huggingface/jinja's
 * parser, lowest first: ternary `a if b else c` (and `a if b`, a select), or,
 * and, not, comparisons and membership, + - ~, * / // %, **, `is` tests, `|`
 * filters, unary signs, calls and member access, primaries. Its oddities are
 * kept on purpose (`a|length - 1` filters before subtracting; commas between
 * call arguments are optional) since they decide what a template means. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "jinja/jinja_parse.h"

static struct jnode *parse_or(struct parser *p);

struct jnode *kvg__jinja_parse_sequence(struct parser *p, int primary)
{
    struct jnode *first = primary ? kvg__jinja_parse_primary(p) : kvg__jinja_parse_expression(p);
    if (!first || kvg__jinja_parse_peek(p, 0) != JT_COMMA) return first;
    struct nlist l = {0};
    struct jnode *tup = kvg__jinja_parse_node(p, N_TUPLE);
    if (!tup || kvg__jinja_parse_push(p, &l, first)) goto fail;
    while (kvg__jinja_parse_peek(p, 0) == JT_COMMA) {
        p->cur++;
        struct jnode *x = primary ? kvg__jinja_parse_primary(p) : kvg__jinja_parse_expression(p);
        if (!x || kvg__jinja_parse_push(p, &l, x)) goto fail;
    }
    tup->list = kvg__jinja_parse_done(p, &l, &tup->n);
    return p->rc ? NULL : tup;
fail:
    free(l.v);
    return NULL;
}

struct jnode *kvg__jinja_parse_args(struct parser *p, int params, struct jnode ***list,
                                    uint32_t *count)
{
    struct nlist l = {0};
    int saw_kw = 0, saw_spread = 0;
    if (kvg__jinja_parse_expect(p, JT_LPAREN, "Expected opening parenthesis for arguments list"))
        return NULL;
    while (kvg__jinja_parse_peek(p, 0) != JT_RPAREN) {
        if (p->cur >= p->n) {
            kvg__jinja_parse_fail(p, KVG_ETEMPLATE, "Unexpected end of template in arguments list");
            goto fail;
        }
        int kwspread = kvg__jinja_parse_peek(p, 0) == JT_POW;
        int spread = kvg__jinja_parse_peek(p, 0) == JT_MUL && p->tk[p->cur].len == 1 &&
                     p->tk[p->cur].s[0] == '*';
        if (params && (kwspread || spread)) {
            kvg__jinja_parse_fail(p, KVG_ETEMPLATE,
                                  "Argument unpacking is not allowed in parameter declarations");
            goto fail;
        }
        struct jnode *arg;
        if (kwspread) {
            p->cur++;
            arg = kvg__jinja_parse_node(p, N_KWSPREAD);
            if (!arg || !(arg->a = kvg__jinja_parse_expression(p)) ||
                kvg__jinja_parse_push(p, &l, arg))
                goto fail;
            if (kvg__jinja_parse_peek(p, 0) == JT_COMMA) p->cur++;
            if (kvg__jinja_parse_peek(p, 0) != JT_RPAREN) {
                kvg__jinja_parse_fail(p, KVG_ETEMPLATE,
                                      "Expected closing parenthesis: `**` must be applied to "
                                      "the final argument");
                goto fail;
            }
            break;
        }
        if (spread) {
            if (saw_spread) {
                kvg__jinja_parse_fail(p, KVG_ETEMPLATE,
                                      "Only one `*` argument unpacking is allowed");
                goto fail;
            }
            saw_spread = 1;
            p->cur++;
            arg = kvg__jinja_parse_node(p, N_SPREAD);
            if (!arg || !(arg->a = kvg__jinja_parse_expression(p))) goto fail;
        } else {
            arg = kvg__jinja_parse_expression(p);
            if (!arg) goto fail;
            if (kvg__jinja_parse_peek(p, 0) == JT_EQUALS) {
                p->cur++;
                if (arg->kind != N_IDENT) {
                    kvg__jinja_parse_fail(p, KVG_ETEMPLATE,
                                          params ? "Expected identifier for parameter declaration"
                                                 : "Expected identifier for keyword argument");
                    goto fail;
                }
                struct jnode *kw = kvg__jinja_parse_node(p, N_KWARG);
                if (!kw) goto fail;
                kw->sym = arg->sym;
                kw->str = p->t->syms[arg->sym];
                kw->n = p->t->symlen[arg->sym];
                if (!(kw->a = kvg__jinja_parse_expression(p))) goto fail;
                arg = kw;
            }
            if (params) {
                if (arg->kind != N_IDENT && arg->kind != N_KWARG) {
                    kvg__jinja_parse_fail(p, KVG_ETEMPLATE,
                                          "Expected identifier for parameter declaration");
                    goto fail;
                }
                for (size_t i = 0; i < l.n; i++)
                    if (l.v[i]->sym == arg->sym) {
                        kvg__jinja_parse_fail(p, KVG_ETEMPLATE, "Duplicate parameter name: %s",
                                              p->t->syms[arg->sym]);
                        goto fail;
                    }
            }
            if (arg->kind == N_KWARG) {
                saw_kw = 1;
            } else if (saw_kw) {
                kvg__jinja_parse_fail(p, KVG_ETEMPLATE,
                                      params ? "Non-default argument follows default argument"
                                             : "Positional arguments must come before keyword "
                                               "arguments");
                goto fail;
            } else if (saw_spread) {
                kvg__jinja_parse_fail(p, KVG_ETEMPLATE,
                                      "Positional arguments must not follow `*` argument "
                                      "unpacking");
                goto fail;
            }
        }
        if (kvg__jinja_parse_push(p, &l, arg)) goto fail;
        if (kvg__jinja_parse_peek(p, 0) == JT_COMMA) p->cur++;
    }
    if (kvg__jinja_parse_expect(p, JT_RPAREN, "Expected closing parenthesis for arguments list"))
        goto fail;
    *list = kvg__jinja_parse_done(p, &l, count);
    return p->rc ? NULL : (struct jnode *)1;
fail:
    free(l.v);
    return NULL;
}

static struct jnode *parse_member_args(struct parser *p)
{
    struct jnode *s[4] = {0};
    size_t ns = 0;
    int is_slice = 0;
    while (kvg__jinja_parse_peek(p, 0) != JT_RBRACKET) {
        if (p->cur >= p->n)
            return kvg__jinja_parse_fail(p, KVG_ETEMPLATE, "Unexpected end of template in []");
        if (ns == 4)
            return kvg__jinja_parse_fail(p, KVG_ETEMPLATE,
                                         "Expected 0-3 arguments for slice expression");
        if (kvg__jinja_parse_peek(p, 0) == JT_COLON) {
            s[ns++] = NULL;
            p->cur++;
            is_slice = 1;
        } else {
            if (!(s[ns++] = kvg__jinja_parse_expression(p))) return NULL;
            if (kvg__jinja_parse_peek(p, 0) == JT_COLON) {
                p->cur++;
                is_slice = 1;
            }
        }
    }
    if (!ns)
        return kvg__jinja_parse_fail(p, KVG_ETEMPLATE,
                                     "Expected at least one argument for member/slice "
                                     "expression");
    if (!is_slice) return s[0];
    if (ns > 3)
        return kvg__jinja_parse_fail(p, KVG_ETEMPLATE,
                                     "Expected 0-3 arguments for slice expression");
    struct jnode *sl = kvg__jinja_parse_node(p, N_SLICE);
    if (!sl) return NULL;
    sl->a = s[0];
    sl->b = s[1];
    sl->c = s[2];
    return sl;
}

static struct jnode *parse_member(struct parser *p, struct jnode *obj)
{
    while (obj &&
           (kvg__jinja_parse_peek(p, 0) == JT_DOT || kvg__jinja_parse_peek(p, 0) == JT_LBRACKET)) {
        int computed = kvg__jinja_parse_peek(p, 0) == JT_LBRACKET;
        p->cur++;
        struct jnode *m = kvg__jinja_parse_node(p, N_MEMBER);
        if (!m) return NULL;
        m->a = obj;
        if (computed) {
            m->flags |= FL_COMPUTED;
            if (!(m->b = parse_member_args(p))) return NULL;
            if (kvg__jinja_parse_expect(p, JT_RBRACKET, "Expected closing square bracket"))
                return NULL;
        } else {
            struct jnode *prop = kvg__jinja_parse_primary(p);
            if (!prop) return NULL;
            if (prop->kind == N_IDENT) {
                m->str = p->t->syms[prop->sym];
                m->n = p->t->symlen[prop->sym];
            } else if (prop->kind == N_INT) {
                m->flags |= FL_DOTINT;
                m->num = prop->num;
            } else {
                return kvg__jinja_parse_fail(p, KVG_ETEMPLATE,
                                             "Expected identifier or integer following dot "
                                             "operator");
            }
        }
        obj = m;
    }
    return obj;
}

struct jnode *kvg__jinja_parse_call(struct parser *p, struct jnode *callee)
{
    struct jnode *c = kvg__jinja_parse_node(p, N_CALL);
    if (!c) return NULL;
    c->a = callee;
    if (!kvg__jinja_parse_args(p, 0, &c->list, &c->n)) return NULL;
    struct jnode *e = parse_member(p, c);
    if (e && kvg__jinja_parse_peek(p, 0) == JT_LPAREN) e = kvg__jinja_parse_call(p, e);
    return e;
}

struct jnode *kvg__jinja_parse_primary(struct parser *p)
{
    if (p->cur >= p->n)
        return kvg__jinja_parse_fail(p, KVG_ETEMPLATE, "Unexpected end of template");
    if (++p->depth > MAX_NESTING)
        return kvg__jinja_parse_fail(p, KVG_EUNSUPP, "template nesting too deep");
    const struct jtok *tk = &p->tk[p->cur++];
    struct jnode *n = NULL;
    switch (tk->type) {
    case JT_NUM: {
        char buf[64];
        size_t l = tk->len < sizeof(buf) - 1 ? tk->len : sizeof(buf) - 1;
        memcpy(buf, tk->s, l);
        buf[l] = 0;
        n = kvg__jinja_parse_node(p, memchr(tk->s, '.', tk->len) ? N_FLOAT : N_INT);
        if (n) n->num = strtod(buf, NULL);
        break;
    }
    case JT_STR: {
        size_t total = tk->len, k = p->cur;
        while (k < p->n && p->tk[k].type == JT_STR) total += p->tk[k++].len;
        n = kvg__jinja_parse_node(p, N_STR);
        if (!n) break;
        if (k == p->cur) {
            n->str = tk->s;
            n->n = tk->len;
            break;
        }
        char *s = kvg__jinja_arena_alloc(&p->t->arena, total + 1);
        if (!s) return kvg__jinja_parse_fail(p, -ENOMEM, "out of memory");
        memcpy(s, tk->s, tk->len);
        size_t off = tk->len;
        for (; p->cur < k; p->cur++) {
            memcpy(s + off, p->tk[p->cur].s, p->tk[p->cur].len);
            off += p->tk[p->cur].len;
        }
        n->str = s;
        n->n = (uint32_t)total;
        break;
    }
    case JT_IDENT:
        n = kvg__jinja_parse_node(p, N_IDENT);
        if (n && kvg__jinja_parse_intern(p, tk->s, tk->len, &n->sym))
            return kvg__jinja_parse_fail(p, -ENOMEM, "out of memory");
        break;
    case JT_LPAREN:
        n = kvg__jinja_parse_sequence(p, 0);
        if (n && kvg__jinja_parse_expect(p, JT_RPAREN, "Expected closing parenthesis")) n = NULL;
        break;
    case JT_LBRACKET:
    case JT_LBRACE: {
        int arr = tk->type == JT_LBRACKET;
        int close = arr ? JT_RBRACKET : JT_RBRACE;
        struct nlist l = {0};
        n = kvg__jinja_parse_node(p, arr ? N_ARRAY : N_OBJECT);
        while (n && kvg__jinja_parse_peek(p, 0) != close) {
            struct jnode *x;
            if (p->cur >= p->n || !(x = kvg__jinja_parse_expression(p)) ||
                kvg__jinja_parse_push(p, &l, x)) {
                n = kvg__jinja_parse_fail(p, KVG_ETEMPLATE,
                                          "Unexpected end of template in literal");
                break;
            }
            if (!arr) {
                if (kvg__jinja_parse_expect(
                        p, JT_COLON, "Expected colon between key and value in object literal") ||
                    !(x = kvg__jinja_parse_expression(p)) || kvg__jinja_parse_push(p, &l, x)) {
                    n = NULL;
                    break;
                }
            }
            if (kvg__jinja_parse_peek(p, 0) == JT_COMMA) p->cur++;
        }
        if (!n) {
            free(l.v);
            break;
        }
        p->cur++;
        n->list = kvg__jinja_parse_done(p, &l, &n->n);
        if (!arr) n->n /= 2;
        break;
    }
    default:
        n = kvg__jinja_parse_fail(p, KVG_ETEMPLATE, "Unexpected token: '%.*s'", (int)tk->len,
                                  tk->s);
    }
    p->depth--;
    return p->rc ? NULL : n;
}

static struct jnode *parse_unary_sign(struct parser *p)
{
    int t = kvg__jinja_parse_peek(p, 0);
    if ((t == JT_UNARY || t == JT_ADD) && p->tk[p->cur].len == 1 &&
        (p->tk[p->cur].s[0] == '-' || p->tk[p->cur].s[0] == '+')) {
        if (++p->depth > MAX_NESTING)
            return kvg__jinja_parse_fail(p, KVG_EUNSUPP, "template nesting too deep");
        struct jnode *n = kvg__jinja_parse_node(p, N_NEG);
        if (!n) return NULL;
        n->op = (uint8_t)p->tk[p->cur++].s[0];
        n->a = parse_unary_sign(p);
        p->depth--;
        return n->a ? n : NULL;
    }
    struct jnode *m = parse_member(p, kvg__jinja_parse_primary(p));
    if (m && kvg__jinja_parse_peek(p, 0) == JT_LPAREN) m = kvg__jinja_parse_call(p, m);
    return m;
}

static struct jnode *parse_filter(struct parser *p)
{
    struct jnode *operand = parse_unary_sign(p);
    while (operand && kvg__jinja_parse_peek(p, 0) == JT_PIPE) {
        p->cur++;
        struct jnode *f = kvg__jinja_parse_primary(p);
        if (!f) return NULL;
        if (f->kind != N_IDENT)
            return kvg__jinja_parse_fail(p, KVG_ETEMPLATE, "Expected identifier for the filter");
        struct jnode *fx = kvg__jinja_parse_node(p, N_FILTER);
        if (!fx) return NULL;
        fx->a = operand;
        fx->str = p->t->syms[f->sym];
        fx->n = p->t->symlen[f->sym];
        fx->op = (uint8_t)kvg__jinja_filter_id(fx->str, fx->n);
        if (kvg__jinja_parse_peek(p, 0) == JT_LPAREN) {
            struct jnode *c = kvg__jinja_parse_call(p, f);
            if (!c) return NULL;
            if (c->kind == N_CALL && c->a == f) {
                fx->flags |= FL_CALL;
                fx->list = c->list;
                fx->nbody = c->n; /* argument count */
                /* selectattr/rejectattr name their test with a literal */
                fx->sym = c->n > 1 && c->list[1]->kind == N_STR
                              ? (uint32_t)kvg__jinja_test_id(c->list[1]->str, c->list[1]->n)
                              : UINT32_MAX;
            } else {
                fx->op = JFILTER_UNKNOWN; /* `x|f(1).y` or `x|f()()`: fails when run */
                fx->b = c;
            }
        }
        operand = fx;
    }
    return operand;
}

static struct jnode *parse_test(struct parser *p)
{
    struct jnode *operand = parse_filter(p);
    while (operand && kvg__jinja_parse_is_ident(p, 0, "is")) {
        p->cur++;
        int neg = kvg__jinja_parse_is_ident(p, 0, "not");
        if (neg) p->cur++;
        struct jnode *f = kvg__jinja_parse_primary(p);
        if (!f) return NULL;
        if (f->kind != N_IDENT)
            return kvg__jinja_parse_fail(p, KVG_ETEMPLATE, "Expected identifier for the test");
        struct jnode *t = kvg__jinja_parse_node(p, N_TEST);
        if (!t) return NULL;
        t->a = operand;
        t->str = p->t->syms[f->sym];
        t->n = p->t->symlen[f->sym];
        t->op = (uint8_t)kvg__jinja_test_id(t->str, t->n);
        if (neg) t->flags |= FL_NEGATE;
        operand = t;
    }
    return operand;
}

static struct jnode *binary(struct parser *p, int kind, int op, struct jnode *l, struct jnode *r)
{
    if (!l || !r) return NULL;
    struct jnode *n = kvg__jinja_parse_node(p, kind);
    if (!n) return NULL;
    n->op = (uint8_t)op;
    n->a = l;
    n->b = r;
    return n;
}

static struct jnode *parse_pow(struct parser *p)
{
    struct jnode *l = parse_test(p);
    while (l && kvg__jinja_parse_peek(p, 0) == JT_POW) {
        p->cur++;
        l = binary(p, N_BINARY, OP_POW, l, parse_test(p));
    }
    return l;
}

static struct jnode *parse_mul(struct parser *p)
{
    struct jnode *l = parse_pow(p);
    while (l && kvg__jinja_parse_peek(p, 0) == JT_MUL) {
        const struct jtok *t = &p->tk[p->cur++];
        int op = t->len == 2      ? OP_FLOORDIV
                 : t->s[0] == '*' ? OP_MUL
                 : t->s[0] == '/' ? OP_DIV
                                  : OP_MOD;
        l = binary(p, N_BINARY, op, l, parse_pow(p));
    }
    return l;
}

static struct jnode *parse_add(struct parser *p)
{
    struct jnode *l = parse_mul(p);
    while (l && kvg__jinja_parse_peek(p, 0) == JT_ADD) {
        char c = p->tk[p->cur++].s[0];
        l = binary(p, N_BINARY, c == '+' ? OP_ADD : c == '-' ? OP_SUB : OP_CONCAT, l, parse_mul(p));
    }
    return l;
}

static struct jnode *parse_comparison(struct parser *p)
{
    struct jnode *l = parse_add(p);
    while (l) {
        int op;
        if (kvg__jinja_parse_is_ident(p, 0, "not") && kvg__jinja_parse_is_ident(p, 1, "in")) {
            op = OP_NOTIN;
            p->cur += 2;
        } else if (kvg__jinja_parse_is_ident(p, 0, "in")) {
            op = OP_IN;
            p->cur++;
        } else if (kvg__jinja_parse_peek(p, 0) == JT_CMP) {
            const struct jtok *t = &p->tk[p->cur++];
            if (t->len == 2)
                op = t->s[0] == '<'   ? OP_LE
                     : t->s[0] == '>' ? OP_GE
                     : t->s[0] == '=' ? OP_EQ
                                      : OP_NE;
            else
                op = t->s[0] == '<' ? OP_LT : OP_GT;
        } else {
            break;
        }
        l = binary(p, N_BINARY, op, l, parse_add(p));
    }
    return l;
}

static struct jnode *parse_not(struct parser *p)
{
    struct jnode *right = NULL;
    while (kvg__jinja_parse_is_ident(p, 0, "not")) {
        p->cur++;
        if (++p->depth > MAX_NESTING)
            return kvg__jinja_parse_fail(p, KVG_EUNSUPP, "template nesting too deep");
        struct jnode *n = kvg__jinja_parse_node(p, N_NOT);
        if (!n || !(n->a = parse_not(p))) return NULL;
        p->depth--;
        right = n;
    }
    return right ? right : parse_comparison(p);
}

static struct jnode *parse_and(struct parser *p)
{
    struct jnode *l = parse_not(p);
    while (l && kvg__jinja_parse_is_ident(p, 0, "and")) {
        p->cur++;
        l = binary(p, N_AND, 0, l, parse_not(p));
    }
    return l;
}

static struct jnode *parse_or(struct parser *p)
{
    struct jnode *l = parse_and(p);
    while (l && kvg__jinja_parse_is_ident(p, 0, "or")) {
        p->cur++;
        l = binary(p, N_OR, 0, l, parse_and(p));
    }
    return l;
}

struct jnode *kvg__jinja_parse_expression(struct parser *p)
{
    if (++p->depth > MAX_NESTING)
        return kvg__jinja_parse_fail(p, KVG_EUNSUPP, "template nesting too deep");
    struct jnode *a = parse_or(p);
    if (a && kvg__jinja_parse_is_ident(p, 0, "if")) {
        p->cur++;
        struct jnode *test = parse_or(p);
        if (!test) return NULL;
        if (kvg__jinja_parse_is_ident(p, 0, "else")) {
            p->cur++;
            struct jnode *t = kvg__jinja_parse_node(p, N_TERNARY);
            if (!t) return NULL;
            t->a = test;
            t->b = a;
            if (!(t->c = kvg__jinja_parse_expression(p))) return NULL;
            a = t;
        } else {
            a = binary(p, N_SELECT, 0, a, test);
        }
    }
    p->depth--;
    return a;
}
