/* The lock-free hand-off stack: every node pushed is taken exactly once,
 * oldest first (per pushing thread, in its push order), with pushers and a
 * taker running at once; a push reports whether the stack was empty. */
#include <pthread.h>
#include <stdlib.h>

#include "base/lfstack.h"
#include "support/test.h"

struct node {
    struct kvg_lfs_node link;
    int thread, seq;
};

#define PUSHERS 4
#define PER 20000

static kvg_lfs stack;
static struct node nodes[PUSHERS][PER];

static void *pusher(void *arg)
{
    int t = (int)(size_t)arg;
    for (int i = 0; i < PER; i++) {
        nodes[t][i] = (struct node){.thread = t, .seq = i};
        kvg_lfs_push(&stack, &nodes[t][i].link);
    }
    return NULL;
}

TEST(push_reports_empty_and_take_is_oldest_first)
{
    kvg_lfs s = NULL;
    struct node a = {.seq = 1}, b = {.seq = 2}, c = {.seq = 3};
    CHECK(kvg_lfs_empty(&s));
    CHECK_INT(kvg_lfs_push(&s, &a.link), 1);
    CHECK_INT(kvg_lfs_push(&s, &b.link), 0);
    CHECK_INT(kvg_lfs_push(&s, &c.link), 0);
    struct node *l = (struct node *)kvg_lfs_take(&s);
    CHECK(l == &a && (struct node *)l->link.next == &b && (struct node *)b.link.next == &c);
    CHECK(c.link.next == NULL);
    CHECK(kvg_lfs_empty(&s));
    CHECK(kvg_lfs_take(&s) == NULL);
}

TEST(concurrent_pushers_and_a_taker_lose_nothing)
{
    pthread_t th[PUSHERS];
    for (int t = 0; t < PUSHERS; t++)
        CHECK_INT(pthread_create(&th[t], NULL, pusher, (void *)(size_t)t), 0);
    int next[PUSHERS] = {0}, got = 0, bad = 0;
    /* Bounded: the pushers end, so at most a few rounds after them. */
    for (long round = 0; got < PUSHERS * PER && round < 100000000; round++) {
        for (struct kvg_lfs_node *n = kvg_lfs_take(&stack); n; n = n->next) {
            struct node *x = (struct node *)n;
            bad += x->seq != next[x->thread];
            next[x->thread] = x->seq + 1;
            got++;
        }
    }
    for (int t = 0; t < PUSHERS; t++) pthread_join(th[t], NULL);
    CHECK_INT(got, PUSHERS * PER);
    CHECK_INT(bad, 0);
    CHECK(kvg_lfs_empty(&stack));
}
