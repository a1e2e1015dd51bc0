/* Edits to a JSON body's top-level members made on the client's bytes:
 * a member removed, a member's value set (replaced in place or added), a
 * member of a top-level object member set. Every byte not edited is copied
 * as sent, so strings holding \u0000, integers past 2^53 and the client's
 * whitespace reach the engine exactly; the body is never reprinted from a
 * tree. Every body kvgate changes before forwarding (the gate's engine-only
 * members, include_usage, the PD and EPD legs) goes through here. */
#ifndef KVG_BASE_JSON_EDIT_H
#define KVG_BASE_JSON_EDIT_H

#include <stddef.h>
#include <string.h>

#include "base/buf.h"

enum kvg_json_edit_op {
    KVG_JSON_EDIT_REMOVE,  /* every member called name goes */
    KVG_JSON_EDIT_SET,     /* the first's value becomes value, later ones go; added when absent */
    KVG_JSON_EDIT_REPLACE, /* as SET, but nothing is added when absent */
    KVG_JSON_EDIT_SET_IN,  /* name.inner = value, as SET inside the object name (the first
                            * of them; later ones go); name absent or null: {inner: value} */
};

struct kvg_json_edit {
    enum kvg_json_edit_op op;
    const char *name;  /* the member's text (ASCII, no NUL); a key written with escapes
                        * matches when its decoded text is this */
    const char *inner; /* SET_IN: the member inside name's object */
    const char *value; /* SET, REPLACE, SET_IN: raw JSON text, written as given */
    size_t value_len;
    int at_start; /* an added member goes right after the opening brace, not before the
                   * closing one */
};

/* The common two, for edit lists: remove name; set name to the C string v. */
#define KVG_JSON_REMOVE(n)                                                                         \
    {                                                                                              \
        .op = KVG_JSON_EDIT_REMOVE, .name = (n)                                                    \
    }
#define KVG_JSON_SET(n, v)                                                                         \
    {                                                                                              \
        .op = KVG_JSON_EDIT_SET, .name = (n), .value = (v), .value_len = strlen(v)                 \
    }

#define KVG_JSON_EDIT_MAX 32 /* edits in one call */

/* Applies the edits (each name in at most one of them; at most
 * KVG_JSON_EDIT_MAX, else -EINVAL) to the object s[0, n)
 * and appends the result to out. Returns the number of members changed,
 * removed or added (0: out holds s unchanged), KVG_EPARSE when s is not one
 * object of well-formed members, KVG_EUNSUPP when a SET_IN's member is
 * neither an object nor null (out is then incomplete), or -ENOMEM /
 * KVG_ETOOBIG from out. The caller owns out. The scan is not a validator: a
 * caller needing strict JSON has checked it (base/json.h). */
int kvg_json_edit(const char *s, size_t n, const struct kvg_json_edit *e, size_t ne,
                  struct kvg_buf *out);

/* The same, but the members are joined by bare commas: the whitespace
 * between the braces goes (every member's own bytes stay as sent). The
 * gate's cut of engine-only members has always forwarded this shape. */
int kvg_json_edit_joined(const char *s, size_t n, const struct kvg_json_edit *e, size_t ne,
                         struct kvg_buf *out);

/* Whether the key s[m->key, m->key_end) (a struct kvg_json_member's span)
 * reads as the ASCII text name once its escapes are decoded: 1 or 0. */
int kvg_json_key_is(const char *s, size_t key, size_t key_end, const char *name);

#endif
