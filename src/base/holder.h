/* The current version of something a reload replaces whole (the keys
 * file's set, gateway/keys.h; the model catalog, router/catalog.h): a
 * reader on any thread takes a reference for as long as it uses what it
 * read; a reload swaps a new version in, and the old one goes when its
 * last reader drops it. The object's own ref/unref count the references. */
#ifndef KVG_BASE_HOLDER_H
#define KVG_BASE_HOLDER_H

#include <pthread.h>

struct kvg_holder {
    pthread_mutex_t mu; /* held only to copy the pointer and take a reference */
    void *cur;
    void (*ref)(void *obj);
    void (*unref)(void *obj);
};

/* Takes over the caller's reference to cur (NULL: none yet). */
void kvg_holder_init(struct kvg_holder *h, void *cur, void (*ref)(void *), void (*unref)(void *));
/* Drops the holder's reference. */
void kvg_holder_destroy(struct kvg_holder *h);
/* A new reference to the current version (NULL: none); the caller drops it. */
void *kvg_holder_acquire(struct kvg_holder *h);
/* Installs next (takes over the caller's reference) and drops the
 * holder's reference to the previous version. */
void kvg_holder_swap(struct kvg_holder *h, void *next);

#endif
