/* UTF-8 as RFC 3629 defines it (Rust's and Prometheus's too): no overlong
 * forms, no surrogates, nothing above U+10FFFF. One implementation for the
 * tokenizer, the jinja engine, the metrics text format and the cache_aware
 * radix tree.
 *
 * Two ways to decode: kvg_utf8_decode checks every sequence (for text from
 * outside); the _fast forms check nothing (for text already checked by
 * kvg_utf8_valid, in the tokenizer's and templates' inner loops). On valid
 * UTF-8 both give the same code points and lengths. */
#ifndef KVG_BASE_UTF8_H
#define KVG_BASE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* 1 when s[0..n) is valid UTF-8. */
int kvg_utf8_valid(const char *s, size_t n);
/* The valid sequence at p, with left bytes available: writes its code point
 * and returns its length (1-4); 0 when no valid sequence starts there. */
size_t kvg_utf8_decode(const char *p, size_t left, uint32_t *cp);
/* The continuation bytes lead byte b announces (0: b cannot lead one), and
 * the range [*lo, *hi] its first continuation byte must lie in (tighter than
 * 80..BF after E0, ED, F0 and F4: that is what rules out overlongs,
 * surrogates and code points past U+10FFFF). */
size_t kvg_utf8_lead(uint8_t b, uint8_t *lo, uint8_t *hi);
/* Writes code point cp (<= U+10FFFF) at out (room for 4) and returns its
 * length (1-4). Callers pass no surrogates. */
size_t kvg_utf8_put(uint32_t cp, char *out);

/* The length of the sequence lead byte b starts, judged by b alone: 1 below
 * 0x80, 2 below 0xE0, 3 below 0xF0, else 4; a continuation byte (80..BF),
 * which cannot lead one, counts stray_len (the tokenizer steps over such
 * bytes one at a time: 1; the templates count them 2, as a lead below E0). */
static inline size_t kvg_utf8_len_fast(uint8_t b, size_t stray_len)
{
    if (b < 0x80) return 1;
    if (b < 0xC0) return stray_len;
    return b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}

/* Decodes the code point at p without checks: its length is
 * kvg_utf8_len_fast(p[0], 2), cut to left (SIZE_MAX when the text is known
 * valid and whole), and *cp the payload bits of that many bytes (one byte:
 * the byte itself; cp may be NULL for the length alone). Reads at most that
 * many bytes; returns the length (0, and *cp 0, when left is 0). */
static inline size_t kvg_utf8_decode_fast(const char *p, size_t left, uint32_t *cp)
{
    const uint8_t *u = (const uint8_t *)p;
    size_t l = left ? kvg_utf8_len_fast(u[0], 2) : 0;
    if (l > left) l = left;
    if (!cp)
        return l;
    else if (l == 0)
        *cp = 0;
    else if (l == 1)
        *cp = u[0];
    else if (l == 2)
        *cp = ((uint32_t)(u[0] & 0x1F) << 6) | (u[1] & 0x3F);
    else if (l == 3)
        *cp = ((uint32_t)(u[0] & 0x0F) << 12) | ((uint32_t)(u[1] & 0x3F) << 6) | (u[2] & 0x3F);
    else
        *cp = ((uint32_t)(u[0] & 0x07) << 18) | ((uint32_t)(u[1] & 0x3F) << 12) |
              ((uint32_t)(u[2] & 0x3F) << 6) | (u[3] & 0x3F);
    return l;
}

#endif
