/* UTF-8 as RFC 3629 defines it (Rust's and Prometheus's too): no overlong
 * forms, no surrogates, nothing above U+10FFFF. One implementation for the
 * tokenizer, the metrics text format and the cache_aware radix tree. */
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

#endif
