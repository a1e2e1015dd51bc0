/* Unit tests for base/heap: order against a sorted reference, ties broken
 * by the caller's comparison, growth, and an empty heap. */
#include "support/test.h"

#include <stdlib.h>

#include "base/heap.h"
#include "base/util.h"

struct item {
    double t;
    unsigned seq;
};

static int item_less(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    return x->t < y->t || (x->t == y->t && x->seq < y->seq);
}

static int cmp_item(const void *a, const void *b)
{
    return item_less(a, b) ? -1 : item_less(b, a) ? 1 : 0;
}

/* Removes and returns the smallest of live[0..*n): the reference. */
static struct item take_min(struct item *live, size_t *n)
{
    size_t m = 0;
    for (size_t i = 1; i < *n; i++)
        if (item_less(&live[i], &live[m])) m = i;
    struct item it = live[m];
    live[m] = live[--*n];
    return it;
}

TEST(pops_the_smallest_with_interleaved_pushes)
{
    struct kvg_heap h;
    kvg_heap_init(&h, sizeof(struct item), item_less);
    CHECK(kvg_heap_top(&h) == NULL);
    struct kvg_rng rng;
    kvg_rng_seed(&rng, 3);
    enum { N = 5000 };
    static struct item live[N];
    size_t nlive = 0, popped = 0;
    /* 5,000 pushes with many equal times (ties broken by seq), a pop after
     * every third: each pop is the smallest of what is in, as a linear scan
     * of a plain array says. */
    for (unsigned i = 0; i < N; i++) {
        struct item it = {(double)kvg_rng_below(&rng, 100), i}, out;
        live[nlive++] = it;
        CHECK_INT(kvg_heap_push(&h, &it), 0);
        if (i % 3 == 2) {
            struct item want = take_min(live, &nlive);
            struct item top = *(const struct item *)kvg_heap_top(&h);
            kvg_heap_pop(&h, &out);
            CHECK_INT(out.seq, want.seq);
            CHECK_INT(top.seq, want.seq);
            popped++;
        }
    }
    while (h.n) {
        struct item want = take_min(live, &nlive), out;
        kvg_heap_pop(&h, &out);
        CHECK_INT(out.seq, want.seq);
        popped++;
    }
    CHECK_INT(popped, N);
    CHECK_INT(nlive, 0);
    kvg_heap_free(&h);
    CHECK(h.v == NULL);
}

TEST(matches_a_sort)
{
    struct kvg_heap h;
    kvg_heap_init(&h, sizeof(struct item), item_less);
    static struct item in[1000], out[1000];
    for (unsigned i = 0; i < 1000; i++) {
        in[i] = (struct item){(double)((i * 7919u) % 211), i};
        CHECK_INT(kvg_heap_push(&h, &in[i]), 0);
    }
    for (unsigned i = 0; i < 1000; i++) CHECK(((struct item *)kvg_heap_at(&h, i))->seq < 1000);
    for (unsigned i = 0; i < 1000; i++) kvg_heap_pop(&h, &out[i]);
    qsort(in, 1000, sizeof in[0], cmp_item);
    for (unsigned i = 0; i < 1000; i++) {
        CHECK_NEAR(out[i].t, in[i].t, 0);
        CHECK_INT(out[i].seq, in[i].seq);
    }
    kvg_heap_free(&h);
}
