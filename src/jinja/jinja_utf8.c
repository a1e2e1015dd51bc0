/* UTF-8 text with JavaScript's rules: JS whitespace (\s, String.trim), UTF-16
 * lengths, JSON.stringify's string escaping (validation is kvg_utf8_valid). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "jinja/jinja_int.h"

static int is_js_space(uint32_t c)
{
    return (c >= 9 && c <= 13) || c == 0x20 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000 || c == 0xFEFF;
}

size_t kvg__jinja_str_ws_len(const char *p, const char *end)
{
    if (p >= end) return 0;
    unsigned char c = (unsigned char)*p;
    if (c < 0x80) return (c >= 9 && c <= 13) || c == ' ' ? 1 : 0;
    uint32_t cp;
    size_t l = kvg_utf8_decode_fast(p, (size_t)(end - p), &cp);
    return is_js_space(cp) ? l : 0;
}

size_t kvg__jinja_str_ws_len_before(const char *start, const char *p)
{
    if (p <= start) return 0;
    const char *q = p - 1;
    while (q > start && ((unsigned char)*q & 0xC0) == 0x80 && p - q < 4) q--;
    size_t l = (size_t)(p - q);
    return kvg__jinja_str_ws_len(q, p) == l ? l : 0;
}

void kvg__jinja_str_trim(const char **s, size_t *n, int left, int right)
{
    const char *b = *s, *e = *s + *n;
    size_t w;
    if (left)
        while ((w = kvg__jinja_str_ws_len(b, e)) > 0) b += w;
    if (right)
        while ((w = kvg__jinja_str_ws_len_before(b, e)) > 0) e -= w;
    *s = b;
    *n = (size_t)(e - b);
}

size_t kvg__jinja_str_utf16_len(const char *s, size_t n)
{
    size_t u = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c & 0xC0) != 0x80) u += c >= 0xF0 ? 2 : 1;
    }
    return u;
}

int kvg__jinja_str_json(struct kvg_buf *b, const char *s, size_t n, int ensure_ascii)
{
    static const char hex[] = "0123456789abcdef";
    char tmp[16];
    if (kvg_buf_append(b, "\"", 1)) return -ENOMEM;
    size_t run = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        size_t el = 0, adv = 1;
        if (c == '"')
            esc = "\\\"", el = 2;
        else if (c == '\\')
            esc = "\\\\", el = 2;
        else if (c == '\n')
            esc = "\\n", el = 2;
        else if (c == '\r')
            esc = "\\r", el = 2;
        else if (c == '\t')
            esc = "\\t", el = 2;
        else if (c == '\b')
            esc = "\\b", el = 2;
        else if (c == '\f')
            esc = "\\f", el = 2;
        else if (c < 0x20 || (ensure_ascii && c == 0x7F)) {
            sprintf(tmp, "\\u%c%c%c%c", '0', '0', hex[c >> 4], hex[c & 15]);
            esc = tmp;
            el = 6;
        } else if (ensure_ascii && c >= 0x80) {
            uint32_t cp;
            adv = kvg_utf8_decode_fast(s + i, n - i, &cp);
            if (cp >= 0x10000) {
                uint32_t v = cp - 0x10000, hi = 0xD800 + (v >> 10), lo = 0xDC00 + (v & 0x3FF);
                sprintf(tmp, "\\u%04x\\u%04x", hi, lo);
                el = 12;
            } else {
                sprintf(tmp, "\\u%04x", cp);
                el = 6;
            }
            esc = tmp;
        }
        if (esc) {
            if (run && kvg_buf_append(b, s + i - run, run)) return -ENOMEM;
            run = 0;
            if (kvg_buf_append(b, esc, el)) return -ENOMEM;
            i += adv;
        } else {
            run++;
            i++;
        }
    }
    if (run && kvg_buf_append(b, s + n - run, run)) return -ENOMEM;
    return kvg_buf_append(b, "\"", 1) ? -ENOMEM : 0;
}
