/* Fast JSON reader; see json.h. It accepts a subset of what cJSON 1.7
 * accepts (strict JSON) and builds the identical tree for it; whatever it
 * declines goes to cJSON, which gives the verdict. */
#include "base/json.h"

#include "base/utf8.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Well under cJSON's CJSON_NESTING_LIMIT (1000): deeper input is cJSON's
 * to accept or refuse. */
#define JSON_MAX_DEPTH 512
/* cJSON copies at most 63 number bytes before strtod: longer numbers are
 * cJSON's to read. */
#define JSON_NUM_MAX 48

struct kvg_json_block {
    struct kvg_json_block *next;
    size_t cap, used;
    _Alignas(cJSON) char data[];
};

/* The reader's place in the bytes, and where its tree goes: a (not NULL)
 * an arena, first the size of the arena's first block; else cJSON's heap. */
struct jr {
    const char *p, *e;
    struct kvg_json_arena *a;
    size_t first;
};

/* size bytes at an align-aligned address, from the arena's newest block or a
 * new one of twice its size (at least size); NULL when out of memory. */
static void *arena_alloc(struct jr *r, size_t size, size_t align)
{
    struct kvg_json_block *b = r->a->blocks;
    if (b) {
        size_t at = (b->used + align - 1) & ~(align - 1);
        if (at <= b->cap && size <= b->cap - at) {
            b->used = at + size;
            return b->data + at;
        }
    }
    size_t cap = b ? b->cap * 2 : r->first;
    if (cap < size) cap = size;
    struct kvg_json_block *nb = malloc(sizeof *nb + cap);
    if (!nb) return NULL;
    nb->next = b;
    nb->cap = cap;
    nb->used = size;
    r->a->blocks = nb;
    return nb->data;
}

static void *jr_alloc(struct jr *r, size_t size, size_t align)
{
    return r->a ? arena_alloc(r, size, align) : cJSON_malloc(size);
}

/* A failed read lets go of what it built: on the heap piece by piece, in an
 * arena all at once when the whole parse gives up (kvg_json_parse_in). */
static void jr_free_string(struct jr *r, char *s)
{
    if (!r->a) cJSON_free(s);
}

static void jr_delete(struct jr *r, cJSON *n)
{
    if (!r->a) cJSON_Delete(n);
}

static cJSON *new_node(struct jr *r, int type)
{
    cJSON *n = jr_alloc(r, sizeof *n, _Alignof(cJSON));
    if (n) {
        memset(n, 0, sizeof *n);
        n->type = type;
    }
    return n;
}

static void skip_ws(struct jr *r)
{
    while (r->p < r->e && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t')) r->p++;
}

static int hex4(const char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

size_t kvg_json_u_escape(const char *p, const char *end, uint32_t *cp)
{
    unsigned hi, lo;
    if (end - p < 4 || hex4(p, &hi)) return 0;
    if (hi >= 0xDC00 && hi <= 0xDFFF) return 0;
    *cp = hi;
    if (hi < 0xD800 || hi > 0xDBFF) return 4;
    p += 4;
    if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &lo)) return 0;
    if (lo < 0xDC00 || lo > 0xDFFF) return 0;
    *cp = 0x10000 + (((hi & 0x3FF) << 10) | (lo & 0x3FF));
    return 10;
}

/* The string whose opening quote is at r->p: a copy (jr_alloc), or
 * NULL (unterminated, an escape cJSON would refuse or read otherwise, no
 * memory). Raw bytes, control characters included, are copied as cJSON
 * copies them. A \u0000 is read into the copy when len is not NULL and
 * the tree is an arena's (*len then gets the copy's length: the string
 * carries it, kvg_json_str); else it is declined, as cJSON ends the string
 * there. */
static char *read_string(struct jr *r, size_t *len)
{
    const char *s = r->p + 1, *q = s;
    for (;;) { /* the closing quote: one not escaped by an odd run of '\' */
        q = memchr(q, '"', (size_t)(r->e - q));
        if (!q) return NULL;
        const char *b = q;
        while (b > s && b[-1] == '\\') b--;
        if (((q - b) & 1) == 0) break;
        q++;
    }
    char *out = jr_alloc(r, (size_t)(q - s) + 1, 1);
    if (!out) return NULL;
    char *o = out;
    const char *p = s;
    while (p < q) {
        const char *bs = memchr(p, '\\', (size_t)(q - p));
        size_t run = (size_t)((bs ? bs : q) - p);
        memcpy(o, p, run);
        o += run;
        if (!bs) break;
        p = bs + 1; /* bs + 1 < q: an escaping '\' never precedes q */
        char c = *p;
        if (c == 'u') {
            uint32_t cp;
            size_t k = kvg_json_u_escape(p + 1, q, &cp);
            if (!k || (cp == 0 && (!len || !r->a))) goto decline;
            p += 1 + k;
            o += kvg_utf8_put(cp, o);
            continue;
        }
        int b = kvg_json_unescape(c);
        if (b < 0) goto decline;
        *o++ = (char)b;
        p++;
    }
    *o = '\0';
    if (len) *len = (size_t)(o - out);
    r->p = q + 1;
    return out;
decline:
    jr_free_string(r, out);
    return NULL;
}

int kvg_json_has_nul_escape(const char *s, size_t n)
{
    /* memchr to each backslash: glibc's memmem is several times slower on a
     * big body. */
    for (const char *p = s, *e = s + n; p && (p = memchr(p, '\\', (size_t)(e - p))); p++)
        if ((size_t)(e - p) >= 6 && !memcmp(p, "\\u0000", 6)) return 1;
    return 0;
}

const char *kvg_json_str(const cJSON *n, size_t *len)
{
    if (!cJSON_IsString(n) || !n->valuestring) return NULL;
    *len = n->type & KVG_JSON_STRING_LEN ? (size_t)n->valueint : strlen(n->valuestring);
    return n->valuestring;
}

int kvg_json_unescape(char c)
{
    switch (c) {
    case '"':
    case '\\':
    case '/':
        return c;
    case 'b':
        return '\b';
    case 'f':
        return '\f';
    case 'n':
        return '\n';
    case 'r':
        return '\r';
    case 't':
        return '\t';
    default:
        return -1;
    }
}

static int num_char(char c)
{
    return (c >= '0' && c <= '9') || c == '+' || c == '-' || c == 'e' || c == 'E' || c == '.';
}

static int digits(struct jr *r)
{
    const char *s = r->p;
    while (r->p < r->e && *r->p >= '0' && *r->p <= '9') r->p++;
    return r->p > s;
}

/* RFC 8259's number grammar, followed by no byte cJSON would take into
 * the number: then cJSON's strtod reads exactly these bytes. */
static int read_number(struct jr *r, cJSON *n)
{
    const char *s = r->p;
    if (r->p < r->e && *r->p == '-') r->p++;
    if (r->p < r->e && *r->p == '0')
        r->p++;
    else if (!digits(r))
        return -1;
    if (r->p < r->e && *r->p == '.') {
        r->p++;
        if (!digits(r)) return -1;
    }
    if (r->p < r->e && (*r->p == 'e' || *r->p == 'E')) {
        r->p++;
        if (r->p < r->e && (*r->p == '+' || *r->p == '-')) r->p++;
        if (!digits(r)) return -1;
    }
    size_t len = (size_t)(r->p - s);
    if (len > JSON_NUM_MAX || (r->p < r->e && num_char(*r->p))) return -1;
    char buf[JSON_NUM_MAX + 1], *end = NULL;
    memcpy(buf, s, len);
    buf[len] = '\0';
    double d = strtod(buf, &end);
    if (end != buf + len) return -1;
    n->valuedouble = d;
    n->valueint = d >= INT_MAX ? INT_MAX : d <= (double)INT_MIN ? INT_MIN : (int)d;
    return 0;
}

static cJSON *read_value(struct jr *r, int depth);

/* An array or object at r->p ('[' or '{'): children linked as cJSON links
 * them (next/prev, the first's prev is the last). */
static cJSON *read_container(struct jr *r, int depth, int obj)
{
    if (depth >= JSON_MAX_DEPTH) return NULL;
    cJSON *n = new_node(r, obj ? cJSON_Object : cJSON_Array), *tail = NULL;
    if (!n) return NULL;
    char close = obj ? '}' : ']';
    r->p++;
    skip_ws(r);
    if (r->p < r->e && *r->p == close) {
        r->p++;
        return n;
    }
    for (;;) {
        char *key = NULL;
        if (obj) {
            if (r->p >= r->e || *r->p != '"' || !(key = read_string(r, NULL))) goto fail;
            skip_ws(r);
            if (r->p >= r->e || *r->p != ':') {
                jr_free_string(r, key);
                goto fail;
            }
            r->p++;
            skip_ws(r);
        }
        cJSON *c = read_value(r, depth + 1);
        if (!c) {
            jr_free_string(r, key);
            goto fail;
        }
        c->string = key;
        if (tail) {
            tail->next = c;
            c->prev = tail;
        } else {
            n->child = c;
        }
        tail = c;
        n->child->prev = tail;
        skip_ws(r);
        if (r->p >= r->e) goto fail;
        if (*r->p == close) {
            r->p++;
            return n;
        }
        if (*r->p != ',') goto fail;
        r->p++;
        skip_ws(r);
    }
fail:
    jr_delete(r, n);
    return NULL;
}

static int literal(struct jr *r, const char *w, size_t len)
{
    if ((size_t)(r->e - r->p) < len || memcmp(r->p, w, len)) return 0;
    r->p += len;
    return 1;
}

static cJSON *read_value(struct jr *r, int depth)
{
    if (r->p >= r->e) return NULL;
    char c = *r->p;
    if (c == '{' || c == '[') return read_container(r, depth, c == '{');
    if (c == '"') {
        size_t len = 0;
        char *s = read_string(r, &len);
        cJSON *n = s && len <= INT_MAX ? new_node(r, cJSON_String) : NULL;
        if (!n) {
            jr_free_string(r, s);
            return NULL;
        }
        /* Every string carries its length: one may hold U+0000, and no
         * reader of a long prompt's strings need count them again. */
        n->valuestring = s;
        n->type |= KVG_JSON_STRING_LEN;
        n->valueint = (int)len;
        return n;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        cJSON *n = new_node(r, cJSON_Number);
        if (n && read_number(r, n)) {
            jr_delete(r, n);
            return NULL;
        }
        return n;
    }
    cJSON *n = NULL;
    if (literal(r, "null", 4))
        n = new_node(r, cJSON_NULL);
    else if (literal(r, "false", 5))
        n = new_node(r, cJSON_False);
    else if (literal(r, "true", 4) && (n = new_node(r, cJSON_True)))
        n->valueint = 1;
    return n;
}

static void arena_release(struct kvg_json_arena *a)
{
    for (struct kvg_json_block *b = a->blocks, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    a->blocks = NULL;
}

static cJSON *parse_strict(struct kvg_json_arena *a, const char *s, size_t n)
{
    if (!s || !n) return NULL;
    /* The strings are at most the input's bytes; the rest is nodes. A chat
     * body (long strings, few nodes) then takes one block. */
    struct jr r = {s, s + n, a, n + n / 4 + 1024};
    skip_ws(&r);
    /* What follows the value is not read: cJSON_ParseWithLength ignores it. */
    cJSON *j = read_value(&r, 0);
    if (!j && a) arena_release(a);
    return j;
}

cJSON *kvg_json_parse_strict(const char *s, size_t n)
{
    return parse_strict(NULL, s, n);
}

cJSON *kvg_json_parse(const char *s, size_t n)
{
    cJSON *j = kvg_json_parse_strict(s, n);
    return j ? j : cJSON_ParseWithLength(s, n);
}

cJSON *kvg_json_parse_strict_in(struct kvg_json_arena *a, const char *s, size_t n)
{
    return a->blocks ? NULL : parse_strict(a, s, n);
}

cJSON *kvg_json_parse_in(struct kvg_json_arena *a, const char *s, size_t n)
{
    if (a->blocks) return NULL;
    cJSON *j = parse_strict(a, s, n);
    return j ? j : cJSON_ParseWithLength(s, n);
}

void kvg_json_free(struct kvg_json_arena *a, cJSON *tree)
{
    if (a->blocks)
        arena_release(a);
    else
        cJSON_Delete(tree);
}

static int same_str(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

/* Whether o's children are linked as cJSON links them: each one's prev is
 * the one before, the first's is the last. */
static int linked(const cJSON *o)
{
    const cJSON *prev = NULL, *c;
    for (c = o->child; c; prev = c, c = c->next)
        if (prev && c->prev != prev) return 0;
    return !o->child || o->child->prev == prev;
}

int kvg_json_same(const cJSON *a, const cJSON *b)
{
    if (!a || !b) return a == b;
    /* -0 and 0 differ as bytes: compare the doubles bit for bit. */
    /* A string that carries its length is cJSON's when the bytes are; with
     * a NUL inside, cJSON decoded past it too, it only cannot say so. */
    int la = (a->type & KVG_JSON_STRING_LEN) != 0, lb = (b->type & KVG_JSON_STRING_LEN) != 0;
    if (la || lb) {
        const cJSON *w = la ? a : b, *o = la ? b : a;
        size_t wl = (size_t)w->valueint;
        if ((a->type & ~KVG_JSON_STRING_LEN) != (b->type & ~KVG_JSON_STRING_LEN) ||
            (la && lb && a->valueint != b->valueint) || !w->valuestring || !o->valuestring)
            return 0;
        if (memchr(w->valuestring, 0, wl)
                ? memcmp(w->valuestring, o->valuestring, wl + 1)
                : strlen(o->valuestring) != wl || memcmp(w->valuestring, o->valuestring, wl))
            return 0;
    } else if (a->type != b->type || a->valueint != b->valueint ||
               !same_str(a->valuestring, b->valuestring)) {
        return 0;
    }
    if (memcmp(&a->valuedouble, &b->valuedouble, sizeof a->valuedouble) ||
        !same_str(a->string, b->string) || linked(a) != linked(b))
        return 0;
    const cJSON *x = a->child, *y = b->child;
    for (; x && y; x = x->next, y = y->next)
        if (!kvg_json_same(x, y)) return 0;
    return !x && !y;
}
