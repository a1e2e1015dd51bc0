/* Parser internals shared by jinja_parse.c (statements, symbols, helpers)
 * and jinja_expr.c (expressions). */
#ifndef KVG_JINJA_JINJA_PARSE_H
#define KVG_JINJA_JINJA_PARSE_H

#include "jinja/jinja_int.h"

#define MAX_NESTING 200

struct parser {
    struct kvg_jinja *t;
    const struct jtok *tk;
    size_t n, cur;
    int depth;
    int rc;
    char *err;
    size_t errlen;
};

struct nlist {
    struct jnode **v;
    size_t n, cap;
};

/* Records the first error (message formatted into p->err); returns NULL. */
void *kvg__jinja_parse_fail(struct parser *p, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
struct jnode *kvg__jinja_parse_node(struct parser *p, int kind);
int kvg__jinja_parse_push(struct parser *p, struct nlist *l, struct jnode *x);
/* Moves the list into the template's arena (freeing the temporary). */
struct jnode **kvg__jinja_parse_done(struct parser *p, struct nlist *l, uint32_t *count);
int kvg__jinja_parse_intern(struct parser *p, const char *name, size_t len, uint32_t *out);
/* Type of the token `off` ahead, -1 past the end. */
int kvg__jinja_parse_peek(struct parser *p, size_t off);
int kvg__jinja_parse_is_ident(struct parser *p, size_t off, const char *name);
int kvg__jinja_parse_expect(struct parser *p, int type, const char *what);

struct jnode *kvg__jinja_parse_expression(struct parser *p);
struct jnode *kvg__jinja_parse_primary(struct parser *p);
/* An expression, or a tuple of them when commas follow (`a, b`). */
struct jnode *kvg__jinja_parse_sequence(struct parser *p, int primary);
/* `(...)` argument or parameter list; NULL on error. */
struct jnode *kvg__jinja_parse_args(struct parser *p, int params, struct jnode ***list,
                                    uint32_t *count);
struct jnode *kvg__jinja_parse_call(struct parser *p, struct jnode *callee);

#endif
