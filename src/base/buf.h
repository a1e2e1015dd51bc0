/* Byte buffers and string views.
 *
 * struct kvg_buf is a growable buffer with a hard cap fixed at creation: every
 * buffer that holds bytes from a client or an engine has one, so hitting it is
 * a clean KVG_ETOOBIG (mapped to 413/431/502 by the caller), never unbounded
 * growth. The buffer owns its memory; kvg_buf_free releases it.
 *
 * struct kvg_str is a non-owning view {ptr, len}; it is valid only as long as
 * whatever it points into. */
#ifndef KVG_BASE_BUF_H
#define KVG_BASE_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

struct kvg_str {
    const char *p;
    size_t len;
};

#define KVG_STR(lit) ((struct kvg_str){(lit), sizeof(lit) - 1})
#define KVG_STR_NULL ((struct kvg_str){NULL, 0})

/* A view of a NUL-terminated string (NULL: the NULL view). */
static inline struct kvg_str kvg_str_c(const char *s)
{
    return (struct kvg_str){s, s ? strlen(s) : 0};
}

struct kvg_buf {
    char *data;
    size_t len;
    size_t cap;   /* allocated bytes */
    size_t limit; /* never grow past this; 0 means SIZE_MAX */
};

/* Zero-initialises b with a growth limit (0 = unlimited). Allocates nothing. */
void kvg_buf_init(struct kvg_buf *b, size_t limit);
void kvg_buf_free(struct kvg_buf *b);
void kvg_buf_reset(struct kvg_buf *b);
/* Ensures room for n more bytes; KVG_ETOOBIG past the limit, -ENOMEM. */
int kvg_buf_reserve(struct kvg_buf *b, size_t n);
int kvg_buf_append(struct kvg_buf *b, const void *p, size_t n);
/* Appends everything f still has (to its end) to b: 0, KVG_ETOOBIG past b's
 * cap, -ENOMEM, or -EIO. The stream stays the caller's. */
int kvg_buf_read_stream(struct kvg_buf *b, FILE *f);
/* The same for the file at path (-errno when it cannot be opened). */
int kvg_buf_read_file(struct kvg_buf *b, const char *path);
/* Inline, so that a literal's length is the compiler's count: the JSON
 * writers (src/api/) append several short literals per message of a long
 * conversation. */
static inline int kvg_buf_append_str(struct kvg_buf *b, const char *s)
{
    return kvg_buf_append(b, s, strlen(s));
}
int kvg_buf_printf(struct kvg_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int kvg_buf_vprintf(struct kvg_buf *b, const char *fmt, va_list ap);
/* Appends s as a JSON string literal, quotes included. */
int kvg_buf_append_json_str(struct kvg_buf *b, const char *s, size_t n);
/* Appends "name: value\r\n" (HTTP header line). */
int kvg_buf_append_header(struct kvg_buf *b, struct kvg_str name, struct kvg_str value);
/* Appends v in decimal. */
int kvg_buf_append_u64(struct kvg_buf *b, uint64_t v);
/* Removes the first n bytes. */
void kvg_buf_consume(struct kvg_buf *b, size_t n);
/* Makes data NUL-terminated (not counted in len); returns data or NULL. */
char *kvg_buf_cstr(struct kvg_buf *b);

int kvg_str_eq(struct kvg_str a, const char *lit);
int kvg_str_eq_nocase(struct kvg_str a, const char *lit);
/* Returns a malloc'd NUL-terminated copy (caller frees), NULL on ENOMEM. */
char *kvg_str_dup(struct kvg_str s);

#endif
