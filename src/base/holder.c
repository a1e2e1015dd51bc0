/* See holder.h. */
#include "base/holder.h"

void kvg_holder_init(struct kvg_holder *h, void *cur, void (*ref)(void *), void (*unref)(void *))
{
    pthread_mutex_init(&h->mu, NULL);
    h->cur = cur;
    h->ref = ref;
    h->unref = unref;
}

void kvg_holder_destroy(struct kvg_holder *h)
{
    if (h->cur) h->unref(h->cur);
    h->cur = NULL;
    pthread_mutex_destroy(&h->mu);
}

void *kvg_holder_acquire(struct kvg_holder *h)
{
    /* A mutex rather than a bare atomic pointer: loading the pointer and
     * taking the reference must be one step, or a swap in between could
     * free the version under the reader. */
    pthread_mutex_lock(&h->mu);
    void *obj = h->cur;
    if (obj) h->ref(obj);
    pthread_mutex_unlock(&h->mu);
    return obj;
}

void kvg_holder_swap(struct kvg_holder *h, void *next)
{
    pthread_mutex_lock(&h->mu);
    void *old = h->cur;
    h->cur = next;
    pthread_mutex_unlock(&h->mu);
    if (old) h->unref(old);
}
