/* UTF-8 validation and decoding; see utf8.h. */
#include "base/utf8.h"

#include <string.h>

size_t kvg_utf8_lead(uint8_t b, uint8_t *lo, uint8_t *hi)
{
    *lo = 0x80;
    *hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) return 1;
    if (b >= 0xE0 && b <= 0xEF) {
        if (b == 0xE0) *lo = 0xA0;
        if (b == 0xED) *hi = 0x9F;
        return 2;
    }
    if (b >= 0xF0 && b <= 0xF4) {
        if (b == 0xF0) *lo = 0x90;
        if (b == 0xF4) *hi = 0x8F;
        return 3;
    }
    return 0;
}

/* Length of the valid multi-byte sequence at u (left >= 1, u[0] >= 0x80), or 0. */
static size_t multi_len(const uint8_t *u, size_t left)
{
    uint8_t lo, hi;
    size_t need = kvg_utf8_lead(u[0], &lo, &hi);
    if (!need || left - 1 < need) return 0;
    if (u[1] < lo || u[1] > hi) return 0;
    for (size_t k = 2; k <= need; k++)
        if ((u[k] & 0xC0) != 0x80) return 0;
    return need + 1;
}

int kvg_utf8_valid(const char *s, size_t n)
{
    const uint8_t *u = (const uint8_t *)s;
    size_t i = 0;
    while (i < n) {
        /* ASCII runs dominate: check 8 bytes at a time. */
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, u + i, 8);
            if (w & 0x8080808080808080ull) break;
            i += 8;
        }
        if (i >= n) break;
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        size_t l = multi_len(u + i, n - i);
        if (!l) return 0;
        i += l;
    }
    return 1;
}

size_t kvg_utf8_decode(const char *p, size_t left, uint32_t *cp)
{
    const uint8_t *u = (const uint8_t *)p;
    if (!left) return 0;
    if (u[0] < 0x80) {
        *cp = u[0];
        return 1;
    }
    size_t l = multi_len(u, left);
    if (!l) return 0;
    static const uint8_t lead_mask[5] = {0, 0, 0x1F, 0x0F, 0x07};
    uint32_t c = u[0] & lead_mask[l];
    for (size_t k = 1; k < l; k++) c = c << 6 | (u[k] & 0x3F);
    *cp = c;
    return l;
}

size_t kvg_utf8_put(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}
