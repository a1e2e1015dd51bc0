/* Error codes shared by every part of kvgate.
 *
 * Like libuv, a function that can fail returns int: 0 (or a count) on success,
 * a negative code on failure. Negative errno values (-ENOMEM, -EINVAL, ...)
 * and libuv's UV_E* codes pass through unchanged; kvgate's own codes sit below
 * KVG_E_BASE so they never collide with either. kvg_strerror() names any of
 * them. */
#ifndef KVG_BASE_ERR_H
#define KVG_BASE_ERR_H

#include <stddef.h>

#define KVG_E_BASE (-20000)

enum {
    KVG_EPARSE = KVG_E_BASE - 1,     /* malformed input (JSON, YAML, msgpack, HTTP) */
    KVG_ETOOBIG = KVG_E_BASE - 2,    /* input over a configured limit */
    KVG_ENOTFOUND = KVG_E_BASE - 3,  /* named thing does not exist */
    KVG_EUNSUPP = KVG_E_BASE - 4,    /* valid input using something kvgate does not support */
    KVG_ENOWORKER = KVG_E_BASE - 5,  /* no healthy worker can take the request */
    KVG_EUPSTREAM = KVG_E_BASE - 6,  /* the engine failed or answered garbage */
    KVG_ETIMEOUT = KVG_E_BASE - 7,   /* a deadline passed */
    KVG_ECONFIG = KVG_E_BASE - 8,    /* invalid configuration */
    KVG_EUTF8 = KVG_E_BASE - 9,      /* input is not valid UTF-8 */
    KVG_ETEMPLATE = KVG_E_BASE - 10, /* chat template raised or failed */
    KVG_ECLOSED = KVG_E_BASE - 11,   /* the peer or the object is gone */
};

/* Writes the printf-style message into err (when err and errlen are set)
 * and returns code: the one-line failure exit of parsers and loaders that
 * explain themselves. */
int kvg_err_set(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Returns a static string for any negative code (kvgate's, errno's, libuv's). */
const char *kvg_strerror(int err);

#endif
