/* Unicode for the tokenizer: UTF-8 checks, the character classes HF
 * tokenizers uses around added tokens (White_Space, Rust's \w), lowercase,
 * NFC/NFD normalization and Rust's lossy UTF-8 decoding.
 *
 * Normalization follows HF tokenizers, whose crate has Unicode 9.0 tables
 * (see gen_ucd.py). Most text needs no work, so kvg__tok_unicode_nf copies
 * "safe" characters (combining class 0, no decomposition, never the second
 * half of a composition) as they are and runs the full decompose / reorder /
 * compose algorithm only on the short regions around the others: NFC of a
 * string is the concatenation of the NFC of such regions. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/utf8.h"
#include "tokenizer/tok_impl.h"

#define HANGUL_S 0xAC00u
#define HANGUL_L 0x1100u
#define HANGUL_V 0x1161u
#define HANGUL_T 0x11A7u
#define HANGUL_LN 19u
#define HANGUL_VN 21u
#define HANGUL_TN 28u
#define HANGUL_N (HANGUL_VN * HANGUL_TN)
#define HANGUL_SN (HANGUL_LN * HANGUL_N)

/* Binary search in a table of rows [first, last, ...] of `stride` entries:
 * the row whose range holds cp, or NULL. */
static const uint32_t *find_row(const uint32_t *r, size_t len, size_t stride, uint32_t cp)
{
    size_t lo = 0, hi = len / stride;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < r[stride * mid])
            hi = mid;
        else if (cp > r[stride * mid + 1])
            lo = mid + 1;
        else
            return &r[stride * mid];
    }
    return NULL;
}

/* Binary search in a table of [first, last] pairs. */
static int in_ranges(const uint32_t *r, size_t len, uint32_t cp)
{
    return find_row(r, len, 2, cp) != NULL;
}

int kvg__tok_is_space(uint32_t cp)
{
    if (cp < 0x80) return cp == ' ' || (cp >= 9 && cp <= 13);
    return in_ranges(kvg__tok_ucd_space, kvg__tok_ucd_space_len, cp);
}

int kvg__tok_is_word(uint32_t cp)
{
    if (cp < 0x80)
        return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9') ||
               cp == '_';
    return in_ranges(kvg__tok_ucd_word, kvg__tok_ucd_word_len, cp);
}

int kvg__tok_lower_append(uint32_t cp, struct kvg_buf *out)
{
    char tmp[8];
    size_t n;
    if (cp == 0x130) { /* the one unconditional multi-char lowercase: i + dot above */
        n = kvg_utf8_put('i', tmp);
        n += kvg_utf8_put(0x307, tmp + n);
        return kvg_buf_append(out, tmp, n);
    }
    uint32_t lc = cp;
    const uint32_t *row = find_row(kvg__tok_ucd_lower, kvg__tok_ucd_lower_len, 4, cp);
    if (row && (row[2] == 0 || (cp - row[0]) % row[2] == 0)) lc = cp + row[3];
    n = kvg_utf8_put(lc, tmp);
    return kvg_buf_append(out, tmp, n);
}

/* ---- normalization data, derived once from the generated tables ---- */

static uint64_t *g_comp; /* sorted (first << 21 | second) << 21 | composite */
static size_t g_ncomp;
static uint8_t g_unsafe_bmp[0x10000 / 8]; /* BMP code points that need the slow path */
static uint32_t *g_unsafe_hi;             /* sorted astral unsafe code points */
static size_t g_nunsafe_hi;
static int g_init_rc;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}
static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static uint32_t ccc_of(uint32_t cp)
{
    if (cp < 0x300) return 0;
    const uint32_t *row = find_row(kvg__tok_ucd_ccc, kvg__tok_ucd_ccc_len, 3, cp);
    return row ? row[2] : 0;
}

/* Index into kvg__tok_ucd_decomp (in entries of 3) or -1. */
static long decomp_of(uint32_t cp)
{
    const uint32_t *d = kvg__tok_ucd_decomp;
    size_t lo = 0, hi = kvg__tok_ucd_decomp_len / 3;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        uint32_t c = d[3 * mid] & 0x7FFFFFFF;
        if (cp < c)
            hi = mid;
        else if (cp > c)
            lo = mid + 1;
        else
            return (long)mid;
    }
    return -1;
}

static void mark_unsafe(uint32_t cp, uint32_t *hi, size_t *nhi)
{
    if (cp < 0x10000)
        g_unsafe_bmp[cp >> 3] |= (uint8_t)(1u << (cp & 7));
    else
        hi[(*nhi)++] = cp;
}

static void nf_init(void)
{
    size_t nd = kvg__tok_ucd_decomp_len / 3, nc = kvg__tok_ucd_ccc_len / 3;
    size_t hicap = 2 * nd + 4096;
    g_comp = malloc(nd * sizeof *g_comp);
    g_unsafe_hi = malloc(hicap * sizeof *g_unsafe_hi);
    if (!g_comp || !g_unsafe_hi) {
        g_init_rc = -ENOMEM;
        return;
    }
    for (size_t i = 0; i < nd; i++) {
        const uint32_t *e = &kvg__tok_ucd_decomp[3 * i];
        uint32_t cp = e[0] & 0x7FFFFFFF;
        mark_unsafe(cp, g_unsafe_hi, &g_nunsafe_hi);
        if (e[2] && !(e[0] >> 31)) {
            g_comp[g_ncomp++] = (((uint64_t)e[1] << 21 | e[2]) << 21) | cp;
            mark_unsafe(e[2], g_unsafe_hi, &g_nunsafe_hi);
        }
    }
    for (size_t i = 0; i < nc; i++)
        for (uint32_t cp = kvg__tok_ucd_ccc[3 * i]; cp <= kvg__tok_ucd_ccc[3 * i + 1]; cp++) {
            if (cp >= 0x10000 && g_nunsafe_hi == hicap) {
                g_init_rc = -ENOMEM;
                return;
            }
            mark_unsafe(cp, g_unsafe_hi, &g_nunsafe_hi);
        }
    /* Hangul: syllables compose from jamo algorithmically, not via the table. */
    for (uint32_t cp = HANGUL_V; cp < HANGUL_V + HANGUL_VN; cp++)
        mark_unsafe(cp, g_unsafe_hi, &g_nunsafe_hi);
    for (uint32_t cp = HANGUL_T + 1; cp < HANGUL_T + HANGUL_TN; cp++)
        mark_unsafe(cp, g_unsafe_hi, &g_nunsafe_hi);
    qsort(g_comp, g_ncomp, sizeof *g_comp, cmp_u64);
    qsort(g_unsafe_hi, g_nunsafe_hi, sizeof *g_unsafe_hi, cmp_u32);
}

static int nf_ready(void)
{
    pthread_once(&g_once, nf_init);
    return g_init_rc;
}

static int is_unsafe(uint32_t cp)
{
    if (cp < 0x10000) return g_unsafe_bmp[cp >> 3] >> (cp & 7) & 1;
    return bsearch(&cp, g_unsafe_hi, g_nunsafe_hi, sizeof *g_unsafe_hi, cmp_u32) != NULL;
}

static uint32_t compose(uint32_t a, uint32_t b)
{
    if (a >= HANGUL_L && a < HANGUL_L + HANGUL_LN && b >= HANGUL_V && b < HANGUL_V + HANGUL_VN)
        return HANGUL_S + ((a - HANGUL_L) * HANGUL_VN + (b - HANGUL_V)) * HANGUL_TN;
    if (a >= HANGUL_S && a < HANGUL_S + HANGUL_SN && (a - HANGUL_S) % HANGUL_TN == 0 &&
        b > HANGUL_T && b < HANGUL_T + HANGUL_TN)
        return a + (b - HANGUL_T);
    uint64_t key = ((uint64_t)a << 21 | b) << 21;
    size_t lo = 0, hi = g_ncomp;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        uint64_t k = g_comp[mid] & ~(uint64_t)0x1FFFFF;
        if (key < k)
            hi = mid;
        else if (key > k)
            lo = mid + 1;
        else
            return (uint32_t)(g_comp[mid] & 0x1FFFFF);
    }
    return 0;
}

struct cpbuf {
    uint32_t *v;
    size_t n, cap;
    uint32_t local[256];
};

static int cp_push(struct cpbuf *b, uint32_t cp)
{
    if (b->n == b->cap) {
        size_t cap = b->cap * 2;
        uint32_t *v = b->v == b->local ? malloc(cap * sizeof *v) : realloc(b->v, cap * sizeof *v);
        if (!v) return -ENOMEM;
        if (b->v == b->local) memcpy(v, b->local, b->n * sizeof *v);
        b->v = v;
        b->cap = cap;
    }
    b->v[b->n++] = cp;
    return 0;
}

static int decompose(struct cpbuf *b, uint32_t cp)
{
    if (cp >= HANGUL_S && cp < HANGUL_S + HANGUL_SN) {
        uint32_t s = cp - HANGUL_S, t = s % HANGUL_TN;
        int rc = cp_push(b, HANGUL_L + s / HANGUL_N);
        if (!rc) rc = cp_push(b, HANGUL_V + (s % HANGUL_N) / HANGUL_TN);
        if (!rc && t) rc = cp_push(b, HANGUL_T + t);
        return rc;
    }
    long i = cp >= 0xC0 ? decomp_of(cp) : -1;
    if (i < 0) return cp_push(b, cp);
    const uint32_t *e = &kvg__tok_ucd_decomp[3 * i];
    int rc = decompose(b, e[1]);
    if (!rc && e[2]) rc = decompose(b, e[2]);
    return rc;
}

/* Full algorithm on one region: decompose, canonical order, compose. */
static int nf_region(const char *s, size_t n, int do_compose, struct kvg_buf *out)
{
    struct cpbuf b = {.v = NULL, .n = 0, .cap = 256};
    b.v = b.local;
    int rc = 0;
    for (size_t i = 0; i < n && !rc;) {
        uint32_t cp;
        i += kvg_utf8_decode_fast(s + i, SIZE_MAX, &cp);
        rc = decompose(&b, cp);
    }
    /* Canonical ordering: stable insertion sort of each run of non-starters. */
    for (size_t i = 1; i < b.n && !rc; i++) {
        uint32_t c = b.v[i], cc = ccc_of(c);
        if (!cc) continue;
        size_t j = i;
        while (j > 0) {
            uint32_t pc = ccc_of(b.v[j - 1]);
            if (pc <= cc || pc == 0) break;
            b.v[j] = b.v[j - 1];
            j--;
        }
        b.v[j] = c;
    }
    size_t len = b.n;
    if (do_compose && len > 0 && !rc) {
        size_t starter = 0, w = 1;
        uint32_t last = ccc_of(b.v[0]);
        if (last) last = 256; /* a leading non-starter blocks everything after it */
        for (size_t i = 1; i < len; i++) {
            uint32_t c = b.v[i], cc = ccc_of(c);
            uint32_t comp = compose(b.v[starter], c);
            if (comp && (last < cc || last == 0)) {
                b.v[starter] = comp;
                continue;
            }
            if (cc == 0) starter = w;
            last = cc;
            b.v[w++] = c;
        }
        len = w;
    }
    for (size_t i = 0; i < len && !rc; i++) {
        char tmp[4];
        rc = kvg_buf_append(out, tmp, kvg_utf8_put(b.v[i], tmp));
    }
    if (b.v != b.local) free(b.v);
    return rc;
}

int kvg__tok_unicode_nfc_quick(const char *s, size_t n)
{
    if (nf_ready()) return 0;
    size_t i = 0;
    while (i < n) {
        uint8_t c = (uint8_t)s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        uint32_t cp;
        i += kvg_utf8_decode_fast(s + i, SIZE_MAX, &cp);
        if (is_unsafe(cp)) return 0;
    }
    return 1;
}

int kvg__tok_unicode_nf(const char *s, size_t n, int do_compose, struct kvg_buf *out)
{
    int rc = nf_ready();
    if (rc) return rc;
    /* last_safe: start of the last safe char not yet output, SIZE_MAX none. */
    size_t i = 0, copied = 0, last_safe = SIZE_MAX;
    while (i < n) {
        uint32_t cp;
        size_t l = kvg_utf8_decode_fast(s + i, SIZE_MAX, &cp);
        /* NFD must also take Hangul syllables apart (NFC leaves them). */
        int hangul = !do_compose && cp >= HANGUL_S && cp < HANGUL_S + HANGUL_SN;
        if (cp < 0x80 || (!is_unsafe(cp) && !hangul)) {
            last_safe = i;
            i += l;
            continue;
        }
        /* A region: from the last safe char (it may compose with what follows)
         * to the next safe char (nothing composes or reorders across it). */
        size_t start = last_safe != SIZE_MAX ? last_safe : copied;
        size_t end = i + l;
        while (end < n) {
            uint32_t c2;
            size_t l2 = kvg_utf8_decode_fast(s + end, SIZE_MAX, &c2);
            if (c2 < 0x80 ||
                (!is_unsafe(c2) && (do_compose || c2 < HANGUL_S || c2 >= HANGUL_S + HANGUL_SN)))
                break;
            end += l2;
        }
        if ((rc = kvg_buf_append(out, s + copied, start - copied))) return rc;
        if ((rc = nf_region(s + start, end - start, do_compose, out))) return rc;
        copied = end;
        last_safe = SIZE_MAX;
        i = end;
    }
    return kvg_buf_append(out, s + copied, n - copied);
}

int kvg__tok_unicode_has_age15(const char *s, size_t n)
{
    const uint8_t *u = (const uint8_t *)s;
    for (size_t i = 0; i < n; i++) {
        /* All such code points but two are astral (lead F0); the two others
         * lead with E0. Everything else is skipped a byte at a time. */
        if (u[i] != 0xF0 && u[i] != 0xE0) continue;
        if (i + 1 >= n) break;
        uint32_t cp;
        kvg_utf8_decode_fast(s + i, SIZE_MAX, &cp);
        if (find_row(kvg__tok_ucd_age15, kvg__tok_ucd_age15_len, 3, cp)) return 1;
    }
    return 0;
}

int kvg__tok_utf8_lossy(const char *s, size_t n, struct kvg_buf *out)
{
    static const char fffd[] = "\xEF\xBF\xBD";
    const uint8_t *u = (const uint8_t *)s;
    size_t i = 0, run = 0;
    int rc;
    while (i < n) {
        uint8_t b = u[i];
        if (b < 0x80) {
            i++;
            continue;
        }
        uint8_t lo, hi;
        size_t need = kvg_utf8_lead(b, &lo, &hi);
        /* The invalid part is the longest prefix of a valid sequence (at least
         * one byte): Rust's and Unicode's "maximal subpart" rule. */
        size_t k = 1;
        int ok = need > 0;
        while (ok && k <= need) {
            if (i + k >= n) {
                ok = 0;
                break;
            }
            uint8_t c = u[i + k];
            uint8_t l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
            if (c < l || c > h) {
                ok = 0;
                break;
            }
            k++;
        }
        if (ok) {
            i += need + 1;
            continue;
        }
        if ((rc = kvg_buf_append(out, s + run, i - run))) return rc;
        if ((rc = kvg_buf_append(out, fffd, 3))) return rc;
        i += k;
        run = i;
    }
    return kvg_buf_append(out, s + run, n - run);
}
