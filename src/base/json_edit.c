/* Byte-level edits of a body's top-level members (base/json_edit.h). Two
 * scans of the members (base/json_scan.h): the first learns which edited
 * names are present and how many members stay, the second copies the
 * body with each edit made where its member lies. */
#include "base/json_edit.h"

#include <errno.h>
#include <string.h>

#include "base/err.h"
#include "base/json_scan.h"

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int kvg_json_key_is(const char *s, size_t key, size_t key_end, const char *name)
{
    size_t i = key, j = 0;
    while (i < key_end) {
        int c = (unsigned char)s[i++];
        if (c == '\\') {
            if (i == key_end) return 0;
            char e = s[i++];
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            const char *p = e ? strchr(from, e) : NULL;
            if (p) {
                c = (unsigned char)to[p - from];
            } else if (e == 'u' && key_end - i >= 4) {
                c = 0;
                for (int k = 0; k < 4; k++) {
                    int h = hexval(s[i++]);
                    if (h < 0) return 0;
                    c = c * 16 + h;
                }
                /* Names are ASCII without NUL: any other code point differs. */
                if (c == 0 || c >= 0x80) return 0;
            } else {
                return 0;
            }
        }
        if (name[j] == 0 || (unsigned char)name[j] != c) return 0;
        j++;
    }
    return name[j] == 0;
}

struct edit_state {
    const struct kvg_json_edit *e;
    size_t ne;
    unsigned char *seen; /* per edit: its first member was met */
    /* pass 2 */
    struct kvg_buf *out;
    size_t w0, w0_end; /* the whitespace after the opening brace */
    size_t prev_end;   /* the end of the previous member's value */
    int any_member;    /* a member was met */
    size_t emitted;    /* items written between the braces: added and kept members */
    size_t kept_out;   /* kept members written */
    int compact;       /* members joined by bare commas */
    int changes;
};

/* The edit naming this member, or -1. */
static int edit_for(const struct edit_state *st, const char *s, const struct kvg_json_member *m)
{
    size_t kn = m->key_end - m->key;
    for (size_t i = 0; i < st->ne; i++) {
        const char *name = st->e[i].name;
        if (m->key_escaped ? kvg_json_key_is(s, m->key, m->key_end, name)
                           : strlen(name) == kn && !memcmp(s + m->key, name, kn))
            return (int)i;
    }
    return -1;
}

/* Whether the member stays (the first of an edited name other than
 * REMOVE's, or one not edited); marks its edit seen. */
static int stays(struct edit_state *st, int k)
{
    if (k < 0) return 1;
    if (st->e[k].op == KVG_JSON_EDIT_REMOVE || st->seen[k]) return 0;
    st->seen[k] = 1;
    return 1;
}

static int count_member(void *ud, const char *s, const struct kvg_json_member *m)
{
    struct edit_state *st = ud;
    (void)stays(st, edit_for(st, s, m));
    return 0;
}

static int put(struct kvg_buf *out, const char *p, size_t n)
{
    return n ? kvg_buf_append(out, p, n) : 0;
}

/* {"inner":value} */
static int put_inner(struct kvg_buf *out, const struct kvg_json_edit *e)
{
    int rc = put(out, "{", 1);
    if (!rc) rc = kvg_buf_append_json_str(out, e->inner, strlen(e->inner));
    if (!rc) rc = put(out, ":", 1);
    if (!rc) rc = put(out, e->value, e->value_len);
    return rc ? rc : put(out, "}", 1);
}

/* An added member: "name":value, or "name":{"inner":value} for SET_IN. */
static int put_added(struct kvg_buf *out, const struct kvg_json_edit *e)
{
    int rc = kvg_buf_append_json_str(out, e->name, strlen(e->name));
    if (!rc) rc = put(out, ":", 1);
    if (rc) return rc;
    return e->op == KVG_JSON_EDIT_SET_IN ? put_inner(out, e) : put(out, e->value, e->value_len);
}

/* The edited value of a kept member whose edit is e. */
static int put_value(struct kvg_buf *out, const char *s, const struct kvg_json_member *m,
                     const struct kvg_json_edit *e)
{
    if (e->op != KVG_JSON_EDIT_SET_IN) return put(out, e->value, e->value_len);
    const char *v = s + m->val;
    size_t vn = m->val_end - m->val;
    if (vn == 4 && !memcmp(v, "null", 4)) return put_inner(out, e);
    if (v[0] != '{') return KVG_EUNSUPP;
    struct kvg_json_edit in = {
        .op = KVG_JSON_EDIT_SET, .name = e->inner, .value = e->value, .value_len = e->value_len};
    int rc = kvg_json_edit(v, vn, &in, 1, out);
    return rc < 0 ? rc : 0;
}

static int copy_member(void *ud, const char *s, const struct kvg_json_member *m)
{
    struct edit_state *st = ud;
    size_t start = m->key - 1, gap = st->prev_end;
    if (!st->any_member) st->w0_end = start;
    st->any_member = 1;
    st->prev_end = m->val_end;
    int k = edit_for(st, s, m);
    if (!stays(st, k)) {
        st->changes++;
        return 0;
    }
    int rc = 0;
    if (st->compact) {
        if (st->emitted) rc = put(st->out, ",", 1);
    } else if (st->kept_out == 0) { /* the brace's whitespace, after any member added first */
        if (st->emitted) rc = put(st->out, ",", 1);
        if (!rc) rc = put(st->out, s + st->w0, st->w0_end - st->w0);
    } else { /* the comma and whitespace before this member as sent */
        rc = put(st->out, s + gap, start - gap);
    }
    if (!rc && k >= 0) {
        st->changes++;
        rc = put(st->out, s + start, m->val - start);
        if (!rc) rc = put_value(st->out, s, m, &st->e[k]);
    } else if (!rc) {
        rc = put(st->out, s + start, m->val_end - start);
    }
    st->emitted++;
    st->kept_out++;
    return rc;
}

/* Adds the members of SET and SET_IN edits whose name was absent, those
 * with at_start == first. */
static int add_absent(struct edit_state *st, int first)
{
    for (size_t i = 0; i < st->ne; i++) {
        const struct kvg_json_edit *e = &st->e[i];
        if (st->seen[i] || !e->at_start != !first ||
            (e->op != KVG_JSON_EDIT_SET && e->op != KVG_JSON_EDIT_SET_IN))
            continue;
        int rc = st->emitted ? put(st->out, ",", 1) : 0;
        if (!rc) rc = put_added(st->out, e);
        if (rc) return rc;
        st->emitted++;
        st->changes++;
    }
    return 0;
}

static int edit(const char *s, size_t n, const struct kvg_json_edit *e, size_t ne,
                struct kvg_buf *out, int compact)
{
    unsigned char seen[KVG_JSON_EDIT_MAX];
    if (ne > sizeof seen) return -EINVAL;
    memset(seen, 0, sizeof seen);
    struct edit_state st = {.e = e, .ne = ne, .seen = seen, .out = out, .compact = compact};
    size_t open = 0, close = 0;
    int rc = kvg_json_members(s, n, count_member, &st, &open, &close);
    if (rc) return rc;
    /* seen now says which names are present: SET adds only the absent. */
    unsigned char present[KVG_JSON_EDIT_MAX];
    memcpy(present, seen, sizeof seen);
    memset(seen, 0, sizeof seen);
    st.w0 = st.w0_end = open + 1;
    if ((rc = put(out, s, open + 1))) return rc;
    st.seen = present; /* add_absent skips the present */
    if ((rc = add_absent(&st, 1))) return rc;
    st.seen = seen;
    if ((rc = kvg_json_members(s, n, copy_member, &st, NULL, NULL))) return rc;
    st.seen = present;
    if ((rc = add_absent(&st, 0))) return rc;
    /* The whitespace before the closing brace (all of it when there were no
     * members), then the brace and whatever follows it as sent. */
    size_t tail = compact ? close : st.any_member ? st.prev_end : open + 1;
    if ((rc = put(out, s + tail, n - tail))) return rc;
    return st.changes;
}

int kvg_json_edit(const char *s, size_t n, const struct kvg_json_edit *e, size_t ne,
                  struct kvg_buf *out)
{
    return edit(s, n, e, ne, out, 0);
}

int kvg_json_edit_joined(const char *s, size_t n, const struct kvg_json_edit *e, size_t ne,
                         struct kvg_buf *out)
{
    return edit(s, n, e, ne, out, 1);
}
