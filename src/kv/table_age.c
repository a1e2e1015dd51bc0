/* The age order of a table's worker lists (see struct kvg_kv_tab): which
 * slot holds the oldest tail, without scanning every slot. The approximate
 * index prunes millions of records in one request; a scan of 4,096 slots per
 * pruned record stalled its loop thread for seconds. */
#include "kv/table.h"

struct age_el {
    uint32_t stamp, w;
};

/* Older stamp first (stamps within 2^31 of each other), then the lower
 * slot: the order kvg_kv_tab_oldest_scan picks in. */
static int age_less(const void *a, const void *b)
{
    const struct age_el *x = a, *y = b;
    if (x->stamp != y->stamp) return (int32_t)(x->stamp - y->stamp) < 0;
    return x->w < y->w;
}

void kvg_kv_tab_age_enable(struct kvg_kv_tab *t)
{
    kvg_heap_init(&t->age, sizeof(struct age_el), age_less);
    t->age_on = 1;
    t->age_bad = 0;
    t->age_slots = 0;
}

/* One element per slot with entries, none stale. Pushes within the heap's
 * capacity cannot fail; beyond it a failure leaves age_bad set. */
static void age_rebuild(struct kvg_kv_tab *t)
{
    t->age.n = 0;
    t->age_bad = 0;
    for (uint32_t w = 0; w < t->max_workers; w++) {
        if (t->w[w].tail == KVG_KV_NIL) continue;
        struct age_el el = {t->tail_stamp[w], w};
        if (kvg_heap_push(&t->age, &el)) {
            t->age_bad = 1;
            return;
        }
    }
}

void kvg_kv_tab_age_note(struct kvg_kv_tab *t, uint32_t w)
{
    if (t->age_bad) return; /* the next oldest() rebuilds */
    /* Stale elements pile up (one per tail change): once they outnumber the
     * live ones, start afresh. The rebuild costs O(slots) once per at least
     * as many changes. */
    if (t->age.n > 2 * (size_t)t->age_slots + 64) {
        age_rebuild(t);
        return; /* the rebuild read w's new tail */
    }
    struct age_el el = {t->tail_stamp[w], w};
    if (kvg_heap_push(&t->age, &el)) t->age_bad = 1;
}

int kvg_kv_tab_oldest(struct kvg_kv_tab *t, uint32_t ref)
{
    if (!t->age_on) return kvg_kv_tab_oldest_scan(t, ref);
    if (t->age_bad) {
        age_rebuild(t);
        if (t->age_bad) return kvg_kv_tab_oldest_scan(t, ref);
    }
    for (;;) {
        const struct age_el *top = kvg_heap_top(&t->age);
        if (!top) return -1;
        if (t->w[top->w].tail != KVG_KV_NIL && t->tail_stamp[top->w] == top->stamp)
            return (int)top->w;
        struct age_el stale;
        kvg_heap_pop(&t->age, &stale);
    }
}
