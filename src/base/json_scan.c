/* Top-level member scan (base/json_scan.h). */
#include "base/json_scan.h"

#include <string.h>

#include "base/err.h"

static size_t skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
    return i;
}

/* s[i] is '"': the index after the closing quote, or n when unterminated.
 * *esc is set when the string holds an escape. */
static size_t skip_string(const char *s, size_t n, size_t i, int *esc)
{
    for (i++; i < n;) {
        const char *q = memchr(s + i, '"', n - i);
        if (!q) return n;
        size_t at = (size_t)(q - s), bs = 0;
        while (at - bs > i && s[at - bs - 1] == '\\') bs++;
        if (memchr(s + i, '\\', at - i)) *esc = 1;
        i = at + 1;
        if (bs % 2 == 0) return i;
    }
    return n;
}

/* A value from s[i]: the index after it, or n when it does not end. */
static size_t skip_value(const char *s, size_t n, size_t i)
{
    int esc = 0;
    if (i < n && s[i] == '"') return skip_string(s, n, i, &esc);
    if (i < n && (s[i] == '{' || s[i] == '[')) {
        size_t depth = 0;
        while (i < n) {
            char c = s[i];
            if (c == '"') {
                i = skip_string(s, n, i, &esc);
                continue;
            }
            if (c == '{' || c == '[') depth++;
            if ((c == '}' || c == ']') && --depth == 0) return i + 1;
            i++;
        }
        return n;
    }
    while (i < n && !strchr(",}] \t\r\n", s[i])) i++;
    return i;
}

int kvg_json_members(const char *s, size_t n,
                     int (*cb)(void *ud, const char *s, const struct kvg_json_member *m), void *ud,
                     size_t *open, size_t *close)
{
    if (!s) n = 0;
    size_t i = skip_ws(s, n, 0);
    if (i == n || s[i] != '{') return KVG_EPARSE;
    if (open) *open = i;
    i = skip_ws(s, n, i + 1);
    while (i < n && s[i] != '}') {
        struct kvg_json_member m = {0};
        if (s[i] != '"') return KVG_EPARSE;
        size_t ke = skip_string(s, n, i, &m.key_escaped);
        if (ke >= n) return KVG_EPARSE;
        m.key = i + 1;
        m.key_end = ke - 1;
        i = skip_ws(s, n, ke);
        if (i == n || s[i] != ':') return KVG_EPARSE;
        m.val = skip_ws(s, n, i + 1);
        m.val_end = skip_value(s, n, m.val);
        if (m.val_end == m.val || m.val_end >= n) return KVG_EPARSE;
        int rc = cb(ud, s, &m);
        if (rc) return rc;
        i = skip_ws(s, n, m.val_end);
        if (i < n && s[i] == ',') {
            i = skip_ws(s, n, i + 1);
            if (i < n && s[i] == '}') return KVG_EPARSE; /* a trailing comma */
        } else if (i == n || s[i] != '}') {
            return KVG_EPARSE;
        }
    }
    if (i == n) return KVG_EPARSE;
    if (close) *close = i;
    return 0;
}
