/* The members of a JSON body's top-level object, found without parsing
 * their values: where each key and value lies in the client's bytes, so a
 * caller can read one member or cut members out and forward the rest
 * unchanged. Not a validator: values are skipped by their brackets and
 * quotes; a caller that needs a verdict has parsed the body already. */
#ifndef KVG_BASE_JSON_SCAN_H
#define KVG_BASE_JSON_SCAN_H

#include <stddef.h>

struct kvg_json_member {
    size_t key, key_end; /* the key's bytes inside its quotes: s[key, key_end) */
    size_t val, val_end; /* the value's bytes: s[val, val_end) */
    int key_escaped;     /* the key holds a backslash escape: its bytes are not its text */
};

/* Calls cb for each member of the object s[0, n) in order; cb returns 0 to
 * go on. Returns 0 after the last member (*open and *close, when not NULL,
 * get the indexes of the object's braces), cb's nonzero value, or
 * KVG_EPARSE when s is not one object of well-formed members. */
int kvg_json_members(const char *s, size_t n,
                     int (*cb)(void *ud, const char *s, const struct kvg_json_member *m), void *ud,
                     size_t *open, size_t *close);

#endif
