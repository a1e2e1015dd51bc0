/* Text helpers shared by the registry, the renderer and the parser: UTF-8
 * validation (Prometheus rejects label values
 * that are not UTF-8, so the registry refuses them up front and the parser
 * refuses them from engines), label names, and number formatting that
 * round-trips. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "metrics/internal.h"

int kvg_metrics__utf8_valid(const char *p, size_t n)
{
    const unsigned char *s = (const unsigned char *)p;
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        unsigned cp, min;
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2, cp = c & 0x1F, min = 0x80;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3, cp = c & 0x0F, min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4, cp = c & 0x07, min = 0x10000;
        } else {
            return 0; /* stray continuation byte, C0/C1 overlong lead, or > U+10FFFF lead */
        }
        if (n - i < len) return 0;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += len;
    }
    return 1;
}

static int is_alpha_(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

int kvg_metrics__label_name_ok(const char *p, size_t n)
{
    if (n == 0 || !is_alpha_((unsigned char)p[0])) return 0;
    for (size_t i = 1; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (!is_alpha_(c) && !is_digit(c)) return 0;
    }
    return 1;
}

size_t kvg_metrics__fmt_double(char *buf, double v)
{
    if (isnan(v)) return (size_t)snprintf(buf, 32, "NaN");
    if (isinf(v)) return (size_t)snprintf(buf, 32, v > 0 ? "+Inf" : "-Inf");
    /* %.17g always round-trips but prints 0.1 as 0.10000000000000001; try
     * the shorter precisions first so bucket bounds read as written. */
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(buf, 32, "%.*g", prec, v);
        if (prec == 17 || strtod(buf, NULL) == v) break;
    }
    return (size_t)n;
}
