/* Internals of the Jinja-subset interpreter (jinja_*.c) and of the chat layer
 * that builds template contexts directly (chat*.c). Not a public face: other
 * parts use jinja.h and chat.h.
 *
 * The semantics follow @huggingface/jinja 0.5.x, the JavaScript engine the
 * tests compare against, rather than Python's Jinja2: numbers are doubles
 * (integers are doubles with an integer flag, as in JS), equality is JS loose
 * equality on the underlying values, strings are measured in UTF-16 code
 * units where that engine measures them so. Where matching it would need
 * something kvgate does not implement (Unicode case mapping, locale collation)
 * the interpreter stops with KVG_EUNSUPP naming the construct instead of
 * producing different text.
 *
 * Memory: a compiled template owns one arena (AST, interned names, decoded
 * string literals) and is never written after compilation, so many threads
 * may render it at once. Each render owns another arena for every value it
 * creates; values may also point at memory owned by the caller (cJSON strings)
 * which must outlive the render. */
#ifndef KVG_JINJA_JINJA_INT_H
#define KVG_JINJA_JINJA_INT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/utf8.h"
#include "jinja/jinja.h"

/* ---- arena ---------------------------------------------------------------- */

struct jarena_chunk;
struct jarena {
    struct jarena_chunk *head;
    char *cur, *end;
    size_t used;  /* bytes handed out, for the memory limit */
    size_t limit; /* 0 = unlimited */
};
void kvg__jinja_arena_init(struct jarena *a, size_t limit);
void kvg__jinja_arena_free(struct jarena *a);
/* NULL when out of memory or over the limit. 8-byte aligned. */
void *kvg__jinja_arena_alloc(struct jarena *a, size_t n);
char *kvg__jinja_arena_strdup(struct jarena *a, const char *s, size_t n);

/* ---- values ------------------------------------------------------------- */

enum jv_type {
    JV_UNDEF,
    JV_NULL,
    JV_BOOL,
    JV_INT, /* a double holding an integral value (JS IntegerValue) */
    JV_FLOAT,
    JV_STR,
    JV_ARR,
    JV_TUPLE,
    JV_OBJ,
    JV_KWARGS, /* keyword arguments passed to a call: an object */
    JV_NS,     /* namespace(): mutable, no mapping builtins */
    JV_FUNC,
    JV_LOOP, /* the `loop` object of a for, materialised only when needed */
};

struct jarr;
struct jobj;
struct jfunc;
struct jloop;

struct jv {
    uint8_t t;
    uint32_t n; /* JV_STR: byte length; JV_LOOP: iteration index */
    union {
        double d;
        int b;
        const char *s;
        struct jarr *a;
        struct jobj *o;
        const struct jfunc *f;
        const struct jloop *lp;
    } u;
};

struct jarr {
    uint32_t n, cap;
    struct jv *v;
};

struct jkv {
    const char *k;
    uint32_t klen;
    struct jv v;
};

struct jobj {
    uint32_t n, cap;
    struct jkv *kv;
};

struct jloop {
    const struct jarr *items; /* the iterated items after the optional filter */
};

enum jfunc_kind {
    JF_NAMESPACE,
    JF_RAISE,
    JF_RANGE,
    JF_STRFTIME,
    JF_MACRO,
    JF_METHOD, /* a string or object builtin bound to its receiver */
};

struct jnode;
struct jfunc {
    uint8_t kind;
    uint8_t method; /* JF_METHOD: enum jmethod */
    struct jv self; /* JF_METHOD: receiver */
    const struct jnode *macro;
};

static inline struct jv jv_undef(void)
{
    struct jv v = {.t = JV_UNDEF};
    return v;
}
static inline struct jv jv_null(void)
{
    struct jv v = {.t = JV_NULL};
    return v;
}
static inline struct jv jv_bool(int b)
{
    struct jv v = {.t = JV_BOOL};
    v.u.b = !!b;
    return v;
}
static inline struct jv jv_int(double d)
{
    struct jv v = {.t = JV_INT};
    v.u.d = d;
    return v;
}
static inline struct jv jv_float(double d)
{
    struct jv v = {.t = JV_FLOAT};
    v.u.d = d;
    return v;
}
static inline struct jv jv_str(const char *s, size_t n)
{
    struct jv v = {.t = JV_STR, .n = (uint32_t)n};
    v.u.s = s;
    return v;
}
static inline int jv_is_arr(struct jv v)
{
    return v.t == JV_ARR || v.t == JV_TUPLE;
}
static inline int jv_is_obj(struct jv v) /* JS `instanceof ObjectValue` */
{
    return v.t == JV_OBJ || v.t == JV_KWARGS;
}
static inline int jv_is_num(struct jv v)
{
    return v.t == JV_INT || v.t == JV_FLOAT;
}

/* ---- lexer ------------------------------------------------------------- */

enum jtok_type {
    JT_TEXT,
    JT_NUM,
    JT_STR,
    JT_IDENT,
    JT_EQUALS,
    JT_LPAREN,
    JT_RPAREN,
    JT_OPEN_STMT,
    JT_CLOSE_STMT,
    JT_OPEN_EXPR,
    JT_CLOSE_EXPR,
    JT_LBRACKET,
    JT_RBRACKET,
    JT_LBRACE,
    JT_RBRACE,
    JT_COMMA,
    JT_DOT,
    JT_COLON,
    JT_PIPE,
    JT_ADD,   /* + - ~ */
    JT_MUL,   /* * / // % */
    JT_POW,   /* ** */
    JT_CMP,   /* < > <= >= == != */
    JT_UNARY, /* a lone - or + where an operand is expected */
    JT_COMMENT,
};

struct jtok {
    uint8_t type;
    uint32_t len;
    const char *s;
};

struct jtoks {
    struct jtok *v;
    size_t n, cap;
};

/* Applies the preprocessing @huggingface/jinja does (final newline,
 * lstrip_blocks, trim_blocks, the transformers `generation` tag) and splits
 * into tokens. Token text points into `a`. 0, KVG_ETEMPLATE (syntax, message
 * in err) or -ENOMEM. */
int kvg__jinja_lex(const char *src, size_t len, struct jarena *a, struct jtoks *out, char *err,
                   size_t errlen);

/* ---- AST ---------------------------------------------------------------- */

enum jnode_kind {
    N_TEXT,         /* str */
    N_IF,           /* a=test, body, alt */
    N_FOR,          /* a=loopvar (IDENT or TUPLE), b=iterable, c=select test, body, alt */
    N_SET,          /* a=target, b=value (NULL: body is a block) */
    N_MACRO,        /* sym, list=params, body */
    N_FILTER_BLOCK, /* a=filter (IDENT or CALL), body */
    N_BREAK,
    N_CONTINUE,
    N_CALL_BLOCK, /* parsed so that the error names it; never evaluated */
    /* expressions */
    N_INT,
    N_FLOAT,
    N_STR,
    N_ARRAY,  /* list */
    N_TUPLE,  /* list */
    N_OBJECT, /* list of key, value pairs (2*n nodes) */
    N_IDENT,  /* sym */
    N_MEMBER, /* a=object, b=property (computed) or str/num (dot) */
    N_SLICE,  /* a,b,c = start, stop, step (each nullable) */
    N_CALL,   /* a=callee, list=args */
    N_KWARG,  /* str=name, a=value */
    N_SPREAD, /* a */
    N_KWSPREAD,
    N_BINARY, /* op, a, b */
    N_AND,
    N_OR,
    N_NOT,
    N_NEG,     /* op '-' or '+' */
    N_FILTER,  /* a=operand, op=filter id, str=name, list=args (flag FL_CALL) */
    N_TEST,    /* a=operand, op=test id, str=name, flag FL_NEGATE */
    N_SELECT,  /* a=value, b=test: `x if y` with no else */
    N_TERNARY, /* a=cond, b=true, c=false */
};

enum kvg__jinja_binop {
    OP_ADD,
    OP_SUB,
    OP_CONCAT,
    OP_MUL,
    OP_DIV,
    OP_FLOORDIV,
    OP_MOD,
    OP_POW,
    OP_EQ,
    OP_NE,
    OP_LT,
    OP_GT,
    OP_LE,
    OP_GE,
    OP_IN,
    OP_NOTIN,
};

#define FL_COMPUTED 1    /* N_MEMBER: obj[expr] */
#define FL_CALL 2        /* N_FILTER: with an argument list */
#define FL_NEGATE 4      /* N_TEST: is not */
#define FL_DOTINT 8      /* N_MEMBER: obj.0 */
#define FL_MACRO_KW 16   /* N_MACRO: the body reads `kwargs` */
#define FL_MACRO_VA 32   /* N_MACRO: the body reads `varargs` */
#define FL_MACRO_DECL 64 /* N_MACRO: the body declares one of them (unsupported) */

struct jnode {
    uint8_t kind;
    uint8_t op;
    uint16_t flags;
    uint32_t sym;   /* N_IDENT, N_MACRO; N_FILTER: literal test name id or UINT32_MAX */
    uint32_t n;     /* list length; string length */
    uint32_t nbody; /* statements in body */
    uint32_t nalt;  /* statements in alt */
    const char *str;
    double num;
    struct jnode *a, *b, *c;
    struct jnode **list;
    struct jnode **body;
    struct jnode **alt;
};

/* Names every template knows before it declares any: their symbol numbers. */
enum {
    SYM_FALSE,
    SYM_TRUE,
    SYM_NONE,
    SYM_FALSE_T,
    SYM_TRUE_T,
    SYM_NONE_T,
    SYM_RAISE,
    SYM_RANGE,
    SYM_STRFTIME,
    SYM_NAMESPACE,
    SYM_LOOP,
    SYM_NBUILTIN,
};

struct kvg_jinja {
    struct jarena arena;
    struct jnode **body;
    uint32_t nbody;
    const char **syms; /* interned identifier names, NUL-terminated */
    uint32_t *symlen;
    uint32_t nsyms;
};

int kvg__jinja_parse(struct kvg_jinja *t, const struct jtoks *toks, char *err, size_t errlen);
/* Symbol number of a name, or -1 when the template never mentions it. */
int64_t kvg__jinja_sym_find(const struct kvg_jinja *t, const char *name, size_t len);

/* Filter and test names resolved at compile time; an unknown name only
 * fails when evaluated, as in the reference. */
int kvg__jinja_filter_id(const char *name, size_t len);
int kvg__jinja_test_id(const char *name, size_t len);
#define JFILTER_UNKNOWN 255
#define JTEST_UNKNOWN 255

/* ---- render state ----------------------------------------------------- */

#define JR_MAX_DEPTH 400 /* nested calls and filters in one render */

struct jscope_var {
    uint32_t sym;
    struct jv v;
};

struct jscope {
    struct jscope *parent;
    uint32_t n, cap;
    struct jscope_var *vars;
};

struct jrender {
    const struct kvg_jinja *t;
    struct jarena arena;
    struct jv *gvals; /* global scope, indexed by symbol */
    uint8_t *gset;
    struct kvg_buf *out;
    size_t max_output;
    uint64_t steps, max_steps;
    int depth;
    int err;
    char msg[512];
};

int kvg__jinja_run_init(struct jrender *r, const struct kvg_jinja *t,
                        const struct kvg_jinja_limits *lim);
void kvg__jinja_run_free(struct jrender *r);
/* Declares a context variable; names the template never uses are skipped.
 * Fails (KVG_ETEMPLATE) on a name the globals already hold, as the
 * reference's Environment.set does. */
int kvg__jinja_run_set_global(struct jrender *r, const char *name, size_t len, struct jv v);
/* Sets a global by symbol number (from kvg__jinja_sym_find), replacing any. */
static inline void jr_put_global(struct jrender *r, uint32_t sym, struct jv v)
{
    r->gvals[sym] = v;
    r->gset[sym] = 1;
}
/* Runs the template into out (appending). On failure out is restored to its
 * old length and r->msg says why. */
int kvg__jinja_run(struct jrender *r, struct kvg_buf *out);
/* Records an error (message formatted into r->msg) and returns code. */
int kvg__jinja_run_fail(struct jrender *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- values (jinja_value.c) ------------------------------------------- */

struct jarr *kvg__jinja_arr_new(struct jrender *r, size_t cap);
int kvg__jinja_arr_push(struct jrender *r, struct jarr *a, struct jv v);
struct jobj *kvg__jinja_obj_new(struct jrender *r, size_t cap);
/* Sets key (replacing an existing one in place, as a JS Map does). */
int kvg__jinja_obj_set(struct jrender *r, struct jobj *o, const char *k, size_t klen, struct jv v);
/* Appends without looking for an existing key (caller knows it is new). */
int kvg__jinja_obj_push(struct jrender *r, struct jobj *o, const char *k, size_t klen, struct jv v);
const struct jv *kvg__jinja_obj_get(const struct jobj *o, const char *k, size_t klen);

/* Converts parsed JSON as JS's JSON.parse + the reference's
 * convertToRuntimeValues would: integral numbers are integers, object keys
 * that are array indices come first in ascending order, a repeated key keeps
 * its first position and its last value. Strings point into the cJSON tree. */
int kvg__jinja_value_from_json(struct jrender *r, const cJSON *j, struct jv *out);

/* Turns a JV_LOOP into the plain object the reference builds. */
struct jv kvg__jinja_value_loop_object(struct jrender *r, struct jv v);
static inline struct jv jv_norm(struct jrender *r, struct jv v)
{
    return v.t == JV_LOOP ? kvg__jinja_value_loop_object(r, v) : v;
}
int kvg__jinja_value_truthy(struct jv v);
const char *kvg__jinja_value_type_name(struct jv v);

/* Appends the reference's toString() of v (what {{ v }} prints). */
int kvg__jinja_value_print(struct jrender *r, struct kvg_buf *b, struct jv v);
/* Appends JS String(v.value): what `~` and string `+` use. */
int kvg__jinja_value_print_raw(struct jrender *r, struct kvg_buf *b, struct jv v);
/* Makes the kvg__jinja_value_print / kvg__jinja_value_print_raw text a string value in the arena.
 */
int kvg__jinja_value_to_string(struct jrender *r, struct jv v, int raw, struct jv *out);

struct jjson_opts {
    int indent; /* <= 0: none */
    int ensure_ascii;
    const char *item_sep, *key_sep; /* NULL: defaults */
    size_t item_len, key_len;
    int undef_as_null;
};
int kvg__jinja_value_tojson(struct jrender *r, struct kvg_buf *b, struct jv v,
                            const struct jjson_opts *o, int depth);

/* JS Number.prototype.toString(); buf needs 32 bytes. */
size_t kvg__jinja_str_num(double d, char *buf);
/* JSON.stringify of a string. */
int kvg__jinja_str_json(struct kvg_buf *b, const char *s, size_t n, int ensure_ascii);

/* JS loose (==) and strict (===) equality of the reference's .value. */
int kvg__jinja_value_loose_eq(struct jrender *r, struct jv a, struct jv b, int *eq);
int kvg__jinja_value_strict_eq(struct jv a, struct jv b);

/* UTF-8 helpers with JS semantics. */
size_t kvg__jinja_str_ws_len(const char *p, const char *end);          /* JS \s at p, else 0 */
size_t kvg__jinja_str_ws_len_before(const char *start, const char *p); /* JS \s ending at p */
void kvg__jinja_str_trim(const char **s, size_t *n, int left, int right);
size_t kvg__jinja_str_utf16_len(const char *s, size_t n);

/* ---- evaluation (jinja_eval.c) and builtins (jinja_filter.c) --------- */

int kvg__jinja_eval(struct jrender *r, struct jscope *env, const struct jnode *n, struct jv *out);
/* Sets a variable in env (NULL: the global scope). */
int kvg__jinja_scope_set(struct jrender *r, struct jscope *env, uint32_t sym, struct jv v);
/* Renders a block into a fresh string value (set blocks, macros, filters). */
int kvg__jinja_block_string(struct jrender *r, struct jscope *env, struct jnode **body, uint32_t n,
                            struct jv *res);
struct jargs {
    struct jarr *pos;
    struct jobj *kw; /* NULL when there are none */
};
/* A call's arguments: every positional (spreads expanded) first, then the
 * keywords, as the reference evaluates them. */
int kvg__jinja_eval_args(struct jrender *r, struct jscope *env, struct jnode **list, uint32_t n,
                         struct jargs *a);
/* a op b on evaluated operands (not and/or, which short-circuit). */
int kvg__jinja_binop(struct jrender *r, int op, struct jv a, struct jv b, struct jv *out);
/* A + / ~ chain as a value, building a concatenated string in one copy. */
int kvg__jinja_concat_chain(struct jrender *r, struct jscope *env, const struct jnode *n,
                            struct jv *out);
/* A + / ~ chain printed: *done is 1 when its string went straight to out,
 * else 0 and *acc holds the (non-string) value to print. */
int kvg__jinja_print_chain(struct jrender *r, struct jscope *env, const struct jnode *n,
                           struct kvg_buf *out, struct jv *acc, int *done);
int kvg__jinja_call_value(struct jrender *r, struct jscope *env, struct jv fn, struct jv *args,
                          size_t nargs, struct jv *out);

int kvg__jinja_filter_apply(struct jrender *r, struct jscope *env, struct jv operand,
                            const struct jnode *f, struct jv *out);
int kvg__jinja_test_apply(struct jrender *r, int id, const char *name, size_t nlen, struct jv v,
                          struct jv *extra, int *res);

enum jmethod {
    JM_NONE,
    /* strings */
    JM_UPPER,
    JM_LOWER,
    JM_STRIP,
    JM_TITLE,
    JM_CAPITALIZE,
    JM_RSTRIP,
    JM_LSTRIP,
    JM_STARTSWITH,
    JM_ENDSWITH,
    JM_SPLIT,
    JM_REPLACE,
    /* objects */
    JM_GET,
    JM_ITEMS,
    JM_KEYS,
    JM_VALUES,
    JM_DICTSORT,
};
/* The builtin attribute `name` of a string, array or object (JS .builtins):
 * methods become bound functions, `length` an integer. 0 when absent. */
int kvg__jinja_builtin_attr(struct jrender *r, struct jv self, const char *name, size_t nlen,
                            struct jv *out);
int kvg__jinja_method_call(struct jrender *r, int method, struct jv self, struct jv *args,
                           size_t nargs, struct jv *out);

/* The reference's compareRuntimeValues (-1, 0, 1 in *res). */
int kvg__jinja_value_compare(struct jrender *r, struct jv a, struct jv b, int case_sensitive,
                             int *res);
/* Stable sort (as V8's TimSort) of v by key(v[i]) with kvg__jinja_value_compare. */
typedef int (*jv_key_fn)(struct jrender *r, struct jv v, void *ctx, struct jv *out);
int kvg__jinja_value_sort(struct jrender *r, struct jv *v, size_t n, jv_key_fn key, void *ctx,
                          int case_sensitive, int reverse);

/* String operations shared by filters and methods. */
int kvg__jinja_str_slice(struct jrender *r, struct jv obj, struct jv start, struct jv stop,
                         struct jv step, struct jv *out);

#endif
