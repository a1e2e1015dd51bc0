/* Text helpers shared by the registry, the renderer and the parser: label
 * names and number formatting that round-trips. (UTF-8 validation is
 * base/utf8.h: Prometheus rejects label values that are not UTF-8, so the
 * registry refuses them up front and the parser refuses them from engines.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "metrics/internal.h"

static int is_alpha_(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

int kvg__metrics_label_name_ok(const char *p, size_t n)
{
    if (n == 0 || !is_alpha_((unsigned char)p[0])) return 0;
    for (size_t i = 1; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (!is_alpha_(c) && !is_digit(c)) return 0;
    }
    return 1;
}

size_t kvg__metrics_fmt_double(char *buf, double v)
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
