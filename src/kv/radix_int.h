/* Internals of the cache_aware radix tree shared by radix.c (insert, match)
 * and radix_evict.c (eviction, tenant removal). Not a public interface. */
#ifndef KVG_KV_RADIX_INT_H
#define KVG_KV_RADIX_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lfstack.h"
#include "kv/radix.h"

struct kvg_kv_rten {
    int32_t tenant;
    uint64_t ts; /* logical time of the tenant's last insert/match through here */
};

struct kvg_kv_rkid {
    uint32_t first; /* first code point of the child's edge */
    struct kvg_kv_rnode *n;
};

/* A node owns its edge text, its tenant list and its children array (and,
 * through it, the children). */
struct kvg_kv_rnode {
    struct kvg_kv_rnode *parent; /* NULL for the root */
    char *text;                  /* edge bytes (UTF-8), not NUL-terminated */
    uint32_t len, chars;         /* edge length in bytes and in characters */
    struct kvg_kv_rkid *kids;    /* sorted by first */
    uint32_t nkids, capkids;
    struct kvg_kv_rten *ten; /* unsorted; usually few */
    uint32_t nten, capten;
};

struct kvg_kv_rtc {
    uint64_t chars;
    int present;
};

/* An insert an event loop could not make at once (radix.h's _nowait). */
struct kvg_kv_rdefer {
    struct kvg_lfs_node link; /* first */
    int tenant;
    size_t len;
    char text[];
};

struct kvg_kv_radix {
    pthread_mutex_t mu;
    struct kvg_kv_rnode *root;
    uint64_t clock;
    struct kvg_kv_rtc *tc; /* per tenant id */
    uint32_t ntc;
    kvg_lfs deferred; /* made by the next holder of mu */
    _Atomic uint64_t deferred_bytes;
    _Atomic uint64_t busy, deferred_inserts, dropped_inserts;
};

/* mu, then the deferred inserts (every holder of mu takes it this way). */
void kvg__kv_radix_lock(struct kvg_kv_radix *t);

/* Length in bytes of the character at p (1 for an invalid byte) and its
 * code point in *cp (0x110000 + byte for an invalid byte). */
uint32_t kvg__kv_utf8_next(const unsigned char *p, const unsigned char *end, uint32_t *cp);
struct kvg_kv_rten *kvg__kv_rnode_tenant(struct kvg_kv_rnode *n, int tenant);
void kvg__kv_rnode_drop_tenant(struct kvg_kv_rnode *n, int tenant);
/* Unlinks n from its parent's children and frees it (its children must be gone). */
void kvg__kv_rnode_delete(struct kvg_kv_rnode *n);
void kvg__kv_rnode_free_one(struct kvg_kv_rnode *n);

#endif
