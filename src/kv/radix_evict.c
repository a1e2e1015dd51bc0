/* cache_aware radix tree: classic per-tenant LRU eviction, tenant removal,
 * teardown, statistics, and the per-model forest. See radix.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/heap.h"
#include "kv/radix_int.h"

/* Pre-order list of the nodes reachable from the root (through children
 * carrying `only` when only >= 0). Iterative: trees of long texts are deep.
 * Returns a malloc'd array (caller frees) or NULL on ENOMEM. */
static struct kvg_kv_rnode **collect(struct kvg_kv_rnode *root, int only, size_t *count)
{
    size_t n = 0, cap = 64;
    struct kvg_kv_rnode **v = malloc(cap * sizeof *v);
    if (!v) return NULL;
    v[n++] = root;
    for (size_t i = 0; i < n; i++) {
        struct kvg_kv_rnode *x = v[i];
        for (uint32_t k = 0; k < x->nkids; k++) {
            if (only >= 0 && !kvg__kv_rnode_tenant(x->kids[k].n, only)) continue;
            if (n == cap) {
                struct kvg_kv_rnode **nv = realloc(v, cap * 2 * sizeof *nv);
                if (!nv) {
                    free(v);
                    return NULL;
                }
                v = nv;
                cap *= 2;
            }
            v[n++] = x->kids[k].n;
        }
    }
    *count = n;
    return v;
}

void kvg_kv_radix_free(struct kvg_kv_radix *t)
{
    if (!t) return;
    for (struct kvg_lfs_node *d = kvg_lfs_take(&t->deferred), *next; d; d = next) {
        next = d->next;
        free(d);
    }
    /* Free children before parents without recursion: detach as we go. */
    struct kvg_kv_rnode *n = t->root;
    while (n) {
        if (n->nkids) {
            struct kvg_kv_rnode *c = n->kids[--n->nkids].n;
            c->parent = n;
            n = c;
            continue;
        }
        struct kvg_kv_rnode *p = n->parent;
        kvg__kv_rnode_free_one(n);
        n = p;
    }
    free(t->tc);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

/* 1 if no child of n carries tenant (n is a leaf for that tenant). */
static int leaf_for(const struct kvg_kv_rnode *n, int tenant)
{
    for (uint32_t i = 0; i < n->nkids; i++)
        if (kvg__kv_rnode_tenant(n->kids[i].n, tenant)) return 0;
    return 1;
}

/* A (node, tenant) leaf waiting for eviction, oldest access first. */
struct leaf {
    uint64_t ts;
    struct kvg_kv_rnode *n;
    int tenant;
};

static int leaf_older(const void *a, const void *b)
{
    return ((const struct leaf *)a)->ts < ((const struct leaf *)b)->ts;
}

int kvg_kv_radix_evict_by_size(struct kvg_kv_radix *t, uint64_t max_chars)
{
    struct kvg_heap h;
    kvg_heap_init(&h, sizeof(struct leaf), leaf_older);
    size_t count;
    int evicted = 0, rc = 0;
    kvg__kv_radix_lock(t);
    struct kvg_kv_rnode **all = collect(t->root, -1, &count);
    if (!all) {
        rc = -ENOMEM;
        goto out;
    }
    /* Seed: every (node, tenant) where the node is a leaf for the tenant. */
    for (size_t i = 0; i < count; i++) {
        struct kvg_kv_rnode *n = all[i];
        for (uint32_t k = 0; k < n->nten; k++) {
            int tn = n->ten[k].tenant;
            struct leaf l = {n->ten[k].ts, n, tn};
            if (leaf_for(n, tn) && (rc = kvg_heap_push(&h, &l))) goto out;
        }
    }
    while (h.n) {
        struct leaf it;
        kvg_heap_pop(&h, &it);
        struct kvg_kv_rnode *n = it.n;
        struct kvg_kv_rtc *tc = &t->tc[it.tenant];
        if (tc->chars <= max_chars) continue;
        if (!kvg__kv_rnode_tenant(n, it.tenant)) continue;
        tc->chars -= n->chars;
        kvg__kv_rnode_drop_tenant(n, it.tenant);
        evicted++;
        struct kvg_kv_rnode *p = n->parent;
        /* n has no tenants left only after all its queue items were popped,
         * so deleting it cannot leave a dangling item behind. */
        if (p && !n->nkids && !n->nten) kvg__kv_rnode_delete(n);
        if (p) {
            struct kvg_kv_rten *pr = kvg__kv_rnode_tenant(p, it.tenant);
            struct leaf l = {pr ? pr->ts : 0, p, it.tenant};
            if (pr && leaf_for(p, it.tenant) && (rc = kvg_heap_push(&h, &l))) goto out;
        }
    }
out:
    pthread_mutex_unlock(&t->mu);
    free(all);
    kvg_heap_free(&h);
    return rc ? rc : evicted;
}

int kvg_kv_radix_remove_tenant(struct kvg_kv_radix *t, int tenant)
{
    size_t count;
    int rc = 0;
    kvg__kv_radix_lock(t);
    if (tenant < 0 || (uint32_t)tenant >= t->ntc || !t->tc[tenant].present) {
        rc = -ENOENT;
        goto out;
    }
    /* Nodes carrying the tenant form a subtree from the root; children come
     * after their parent in pre-order, so walking the list backwards removes
     * leaves first and a parent sees its emptied children already gone. */
    struct kvg_kv_rnode **v = collect(t->root, tenant, &count);
    if (!v) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = count; i-- > 0;) {
        struct kvg_kv_rnode *n = v[i];
        kvg__kv_rnode_drop_tenant(n, tenant);
        if (n->parent && !n->nkids && !n->nten) kvg__kv_rnode_delete(n);
    }
    free(v);
    t->tc[tenant].present = 0;
    t->tc[tenant].chars = 0;
out:
    pthread_mutex_unlock(&t->mu);
    return rc;
}

void kvg_kv_radix_stats(struct kvg_kv_radix *t, struct kvg_kv_radix_stats *st)
{
    size_t count = 0;
    memset(st, 0, sizeof *st);
    kvg__kv_radix_lock(t);
    struct kvg_kv_rnode **v = collect(t->root, -1, &count);
    st->bytes = sizeof *t + (uint64_t)t->ntc * sizeof *t->tc;
    for (size_t i = 0; v && i < count; i++) {
        const struct kvg_kv_rnode *n = v[i];
        st->bytes += sizeof *n + n->len + n->capkids * sizeof *n->kids + n->capten * sizeof *n->ten;
    }
    st->nodes = v ? count : 0;
    for (uint32_t i = 0; i < t->ntc; i++) {
        st->tenants += t->tc[i].present != 0;
        st->total_chars += t->tc[i].chars;
    }
    st->busy = atomic_load_explicit(&t->busy, memory_order_relaxed);
    st->deferred_inserts = atomic_load_explicit(&t->deferred_inserts, memory_order_relaxed);
    st->dropped_inserts = atomic_load_explicit(&t->dropped_inserts, memory_order_relaxed);
    pthread_mutex_unlock(&t->mu);
    free(v);
}

/* ---- forest: one tree per model ---- */

struct forest_tree {
    char *model;
    struct kvg_kv_radix *tree;
};

struct kvg_kv_radix_forest {
    pthread_mutex_t mu;
    struct forest_tree *v;
    size_t n, cap;
};

int kvg_kv_radix_forest_new(struct kvg_kv_radix_forest **out)
{
    struct kvg_kv_radix_forest *f = calloc(1, sizeof *f);
    if (!f) return -ENOMEM;
    pthread_mutex_init(&f->mu, NULL);
    *out = f;
    return 0;
}

void kvg_kv_radix_forest_free(struct kvg_kv_radix_forest *f)
{
    if (!f) return;
    for (size_t i = 0; i < f->n; i++) {
        free(f->v[i].model);
        kvg_kv_radix_free(f->v[i].tree);
    }
    free(f->v);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

struct kvg_kv_radix *kvg_kv_radix_forest_get(struct kvg_kv_radix_forest *f, const char *model,
                                             int create)
{
    if (!model || !*model || !strcmp(model, "unknown")) model = "default";
    struct kvg_kv_radix *t = NULL;
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->n; i++) {
        if (!strcmp(f->v[i].model, model)) {
            t = f->v[i].tree;
            goto out;
        }
    }
    if (!create) goto out;
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 4;
        struct forest_tree *v = realloc(f->v, cap * sizeof *v);
        if (!v) goto out;
        f->v = v;
        f->cap = cap;
    }
    char *name = strdup(model);
    if (!name || kvg_kv_radix_new(&t)) {
        free(name);
        t = NULL;
        goto out;
    }
    f->v[f->n].model = name;
    f->v[f->n].tree = t;
    f->n++;
out:
    pthread_mutex_unlock(&f->mu);
    return t;
}

/* The trees as they are now (a tree lives until the forest is freed), so
 * that work on each runs without the forest's lock, which every pick takes.
 * *n 0 without memory. */
static struct kvg_kv_radix **trees(struct kvg_kv_radix_forest *f, size_t *n)
{
    pthread_mutex_lock(&f->mu);
    struct kvg_kv_radix **v = malloc((f->n ? f->n : 1) * sizeof *v);
    *n = v ? f->n : 0;
    for (size_t i = 0; i < *n; i++) v[i] = f->v[i].tree;
    pthread_mutex_unlock(&f->mu);
    return v;
}

int kvg_kv_radix_forest_evict(struct kvg_kv_radix_forest *f, uint64_t max_chars)
{
    int total = 0;
    size_t n;
    struct kvg_kv_radix **v = trees(f, &n);
    if (!v) return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        int k = kvg_kv_radix_evict_by_size(v[i], max_chars);
        if (k > 0) total += k;
    }
    free(v);
    return total;
}

void kvg_kv_radix_forest_remove_tenant(struct kvg_kv_radix_forest *f, int tenant)
{
    size_t n;
    struct kvg_kv_radix **v = trees(f, &n);
    if (!v) { /* no memory for the list: under the forest's lock, as it must happen */
        pthread_mutex_lock(&f->mu);
        for (size_t i = 0; i < f->n; i++) kvg_kv_radix_remove_tenant(f->v[i].tree, tenant);
        pthread_mutex_unlock(&f->mu);
        return;
    }
    for (size_t i = 0; i < n; i++) kvg_kv_radix_remove_tenant(v[i], tenant);
    free(v);
}
