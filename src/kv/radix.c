/* cache_aware radix tree: nodes, UTF-8 character handling, insert with edge
 * splitting, prefix matching, per-tenant character counts. Eviction and
 * tenant removal are in radix_evict.c. See radix.h for the semantics. */
#include "kv/radix_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/lock.h"
#include "base/utf8.h"

uint32_t kvg__kv_utf8_next(const unsigned char *p, const unsigned char *end, uint32_t *cp)
{
    size_t l = kvg_utf8_decode((const char *)p, (size_t)(end - p), cp);
    if (l) return (uint32_t)l;
    *cp = 0x110000u + p[0]; /* an invalid byte is a character of its own */
    return 1;
}

size_t kvg_kv_utf8_chars(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    size_t n = 0;
    uint32_t cp;
    while (p < end) {
        if (*p < 0x80) { /* ASCII runs are the common case */
            p++;
        } else {
            p += kvg__kv_utf8_next(p, end, &cp);
        }
        n++;
    }
    return n;
}

/* Shared prefix of a and b in whole characters: bytes into *bytes,
 * characters returned. */
static uint32_t common_prefix(const char *a, size_t alen, const char *b, size_t blen, size_t *bytes)
{
    const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;
    const unsigned char *pe = p + alen, *qe = q + blen, *p0 = p;
    uint32_t chars = 0, c1, c2;
    while (p < pe && q < qe) {
        if (*p < 0x80 && *p == *q) {
            p++;
            q++;
            chars++;
            continue;
        }
        uint32_t l1 = kvg__kv_utf8_next(p, pe, &c1), l2 = kvg__kv_utf8_next(q, qe, &c2);
        if (l1 != l2 || c1 != c2 || memcmp(p, q, l1)) break;
        p += l1;
        q += l1;
        chars++;
    }
    *bytes = (size_t)(p - p0);
    return chars;
}

static uint32_t first_cp(const char *s, size_t len)
{
    uint32_t cp;
    kvg__kv_utf8_next((const unsigned char *)s, (const unsigned char *)s + len, &cp);
    return cp;
}

struct kvg_kv_rten *kvg__kv_rnode_tenant(struct kvg_kv_rnode *n, int tenant)
{
    for (uint32_t i = 0; i < n->nten; i++)
        if (n->ten[i].tenant == tenant) return &n->ten[i];
    return NULL;
}

void kvg__kv_rnode_drop_tenant(struct kvg_kv_rnode *n, int tenant)
{
    for (uint32_t i = 0; i < n->nten; i++) {
        if (n->ten[i].tenant == tenant) {
            n->ten[i] = n->ten[--n->nten];
            return;
        }
    }
}

/* Index of the child starting with cp, or where it would go (*found = 0). */
static uint32_t kid_pos(const struct kvg_kv_rnode *n, uint32_t cp, int *found)
{
    uint32_t lo = 0, hi = n->nkids;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (n->kids[mid].first < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < n->nkids && n->kids[lo].first == cp;
    return lo;
}

static struct kvg_kv_rnode *kid_find(const struct kvg_kv_rnode *n, uint32_t cp)
{
    int found;
    uint32_t i = kid_pos(n, cp, &found);
    return found ? n->kids[i].n : NULL;
}

static int kid_add(struct kvg_kv_rnode *n, uint32_t cp, struct kvg_kv_rnode *child)
{
    int found;
    uint32_t i = kid_pos(n, cp, &found);
    if (n->nkids == n->capkids) {
        uint32_t cap = n->capkids ? n->capkids * 2 : 2;
        struct kvg_kv_rkid *k = realloc(n->kids, cap * sizeof *k);
        if (!k) return -ENOMEM;
        n->kids = k;
        n->capkids = cap;
    }
    memmove(&n->kids[i + 1], &n->kids[i], (n->nkids - i) * sizeof *n->kids);
    n->kids[i].first = cp;
    n->kids[i].n = child;
    n->nkids++;
    child->parent = n;
    return 0;
}

void kvg__kv_rnode_free_one(struct kvg_kv_rnode *n)
{
    free(n->text);
    free(n->kids);
    free(n->ten);
    free(n);
}

void kvg__kv_rnode_delete(struct kvg_kv_rnode *n)
{
    struct kvg_kv_rnode *p = n->parent;
    if (p) {
        for (uint32_t i = 0; i < p->nkids; i++) {
            if (p->kids[i].n == n) {
                memmove(&p->kids[i], &p->kids[i + 1], (p->nkids - i - 1) * sizeof *p->kids);
                p->nkids--;
                break;
            }
        }
    }
    kvg__kv_rnode_free_one(n);
}

static struct kvg_kv_rnode *node_new(const char *text, size_t len)
{
    struct kvg_kv_rnode *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    if (len && !(n->text = malloc(len))) {
        free(n);
        return NULL;
    }
    if (len) memcpy(n->text, text, len);
    n->len = (uint32_t)len;
    n->chars = (uint32_t)kvg_kv_utf8_chars(text, len);
    return n;
}

/* Stamps tenant on n; returns 1 if it was not there yet, -ENOMEM. */
static int attach(struct kvg_kv_rnode *n, int tenant, uint64_t ts)
{
    struct kvg_kv_rten *r = kvg__kv_rnode_tenant(n, tenant);
    if (r) {
        r->ts = ts;
        return 0;
    }
    if (n->nten == n->capten) {
        uint32_t cap = n->capten ? n->capten * 2 : 2;
        struct kvg_kv_rten *t = realloc(n->ten, cap * sizeof *t);
        if (!t) return -ENOMEM;
        n->ten = t;
        n->capten = cap;
    }
    n->ten[n->nten].tenant = tenant;
    n->ten[n->nten].ts = ts;
    n->nten++;
    return 1;
}

int kvg_kv_radix_new(struct kvg_kv_radix **out)
{
    struct kvg_kv_radix *t = calloc(1, sizeof *t);
    if (!t) return -ENOMEM;
    if (!(t->root = node_new("", 0))) {
        free(t);
        return -ENOMEM;
    }
    pthread_mutex_init(&t->mu, NULL);
    *out = t;
    return 0;
}

/* Makes tenant's count slot exist (registered). */
static int tenant_slot(struct kvg_kv_radix *t, int tenant)
{
    if ((uint32_t)tenant < t->ntc) return 0;
    uint32_t n = t->ntc ? t->ntc : 16;
    while (n <= (uint32_t)tenant) n *= 2;
    struct kvg_kv_rtc *tc = realloc(t->tc, n * sizeof *tc);
    if (!tc) return -ENOMEM;
    memset(tc + t->ntc, 0, (n - t->ntc) * sizeof *tc);
    t->tc = tc;
    t->ntc = n;
    return 0;
}

/* Splits child's edge after `bytes` bytes (`chars` characters): a new node
 * with the first part takes child's place under parent and inherits a copy of
 * its tenants; child keeps the rest. Returns the new node or NULL (ENOMEM,
 * nothing changed). */
static struct kvg_kv_rnode *split(struct kvg_kv_rnode *parent, struct kvg_kv_rnode *child,
                                  size_t bytes, uint32_t chars)
{
    struct kvg_kv_rnode *mid = node_new(child->text, bytes);
    char *rest = malloc(child->len - bytes);
    struct kvg_kv_rkid *kids = malloc(sizeof *kids);
    struct kvg_kv_rten *ten = malloc((child->nten ? child->nten : 1) * sizeof *ten);
    if (!mid || !rest || !kids || !ten) {
        if (mid) kvg__kv_rnode_free_one(mid);
        free(rest);
        free(kids);
        free(ten);
        return NULL;
    }
    memcpy(ten, child->ten, child->nten * sizeof *ten);
    mid->ten = ten;
    mid->capten = child->nten ? child->nten : 1;
    mid->nten = child->nten;
    memcpy(rest, child->text + bytes, child->len - bytes);
    free(child->text);
    child->text = rest;
    child->len -= (uint32_t)bytes;
    child->chars -= chars;
    int found;
    uint32_t i = kid_pos(parent, first_cp(mid->text, mid->len), &found);
    parent->kids[i].n = mid; /* same first character as child had */
    mid->parent = parent;
    mid->kids = kids;
    mid->capkids = mid->nkids = 1;
    kids[0].first = first_cp(child->text, child->len);
    kids[0].n = child;
    child->parent = mid;
    return mid;
}

/* mu held. */
static int insert_locked(struct kvg_kv_radix *t, const char *text, size_t len, int tenant)
{
    int rc = tenant_slot(t, tenant);
    if (rc) goto out;
    uint64_t ts = ++t->clock;
    struct kvg_kv_rtc *tc = &t->tc[tenant];
    tc->present = 1;
    struct kvg_kv_rnode *node = t->root;
    if ((rc = attach(node, tenant, ts)) < 0) goto out;
    while (len) {
        uint32_t cp = first_cp(text, len);
        struct kvg_kv_rnode *child = kid_find(node, cp);
        if (!child) {
            struct kvg_kv_rnode *leaf = node_new(text, len);
            if (!leaf || attach(leaf, tenant, ts) < 0 || kid_add(node, cp, leaf)) {
                if (leaf) kvg__kv_rnode_free_one(leaf);
                rc = -ENOMEM;
                goto out;
            }
            tc->chars += leaf->chars;
            break;
        }
        size_t bytes;
        uint32_t chars = common_prefix(child->text, child->len, text, len, &bytes);
        if (bytes < child->len && !(child = split(node, child, bytes, chars))) {
            rc = -ENOMEM;
            goto out;
        }
        if ((rc = attach(child, tenant, ts)) < 0) goto out;
        if (rc == 1) tc->chars += child->chars;
        node = child;
        text += bytes;
        len -= bytes;
    }
    rc = 0;
out:
    return rc < 0 ? rc : 0;
}

/* Inserts the deferred texts, oldest first (mu held). */
static void apply_deferred(struct kvg_kv_radix *t)
{
    for (struct kvg_kv_rdefer *r = (struct kvg_kv_rdefer *)kvg_lfs_take(&t->deferred), *next; r;
         r = next) {
        next = (struct kvg_kv_rdefer *)r->link.next;
        insert_locked(t, r->text, r->len, r->tenant);
        atomic_fetch_sub_explicit(&t->deferred_bytes, r->len, memory_order_relaxed);
        free(r);
    }
}

void kvg__kv_radix_lock(struct kvg_kv_radix *t)
{
    pthread_mutex_lock(&t->mu);
    apply_deferred(t);
}

static int lock_try(struct kvg_kv_radix *t)
{
    if (kvg_mutex_try_for(&t->mu, KVG_LOCK_TRY_NS)) {
        atomic_fetch_add_explicit(&t->busy, 1, memory_order_relaxed);
        return -EBUSY;
    }
    apply_deferred(t);
    return 0;
}

int kvg_kv_radix_insert(struct kvg_kv_radix *t, const char *text, size_t len, int tenant)
{
    if (tenant < 0 || tenant > KVG_KV_RADIX_MAX_TENANT || (!text && len)) return -EINVAL;
    kvg__kv_radix_lock(t);
    int rc = insert_locked(t, text, len, tenant);
    pthread_mutex_unlock(&t->mu);
    return rc;
}

int kvg_kv_radix_insert_nowait(struct kvg_kv_radix *t, const char *text, size_t len, int tenant)
{
    if (tenant < 0 || tenant > KVG_KV_RADIX_MAX_TENANT || (!text && len)) return -EINVAL;
    if (lock_try(t) == 0) {
        int rc = insert_locked(t, text, len, tenant);
        pthread_mutex_unlock(&t->mu);
        return rc;
    }
    uint64_t before = atomic_fetch_add_explicit(&t->deferred_bytes, len, memory_order_relaxed);
    struct kvg_kv_rdefer *d =
        before + len > KVG_KV_RADIX_DEFER_MAX ? NULL : malloc(sizeof *d + (len ? len : 1));
    if (!d) {
        atomic_fetch_sub_explicit(&t->deferred_bytes, len, memory_order_relaxed);
        atomic_fetch_add_explicit(&t->dropped_inserts, 1, memory_order_relaxed);
        return before + len > KVG_KV_RADIX_DEFER_MAX ? -EBUSY : -ENOMEM;
    }
    d->tenant = tenant;
    d->len = len;
    if (len) memcpy(d->text, text, len);
    kvg_lfs_push(&t->deferred, &d->link);
    atomic_fetch_add_explicit(&t->deferred_inserts, 1, memory_order_relaxed);
    return 0;
}

/* The walk shared by both matches: only through nodes carrying `only` when
 * it is >= 0. Returns the final node; fills chars/bytes matched. */
static struct kvg_kv_rnode *walk(struct kvg_kv_radix *t, const char *text, size_t len, int only,
                                 size_t *mchars, size_t *mbytes)
{
    struct kvg_kv_rnode *node = t->root;
    size_t chars = 0, done = 0;
    while (done < len) {
        struct kvg_kv_rnode *child = kid_find(node, first_cp(text + done, len - done));
        if (!child || (only >= 0 && !kvg__kv_rnode_tenant(child, only))) break;
        size_t bytes;
        chars += common_prefix(child->text, child->len, text + done, len - done, &bytes);
        done += bytes;
        node = child;
        if (bytes < child->len) break;
    }
    *mchars = chars;
    *mbytes = done;
    return node;
}

/* Refreshes tenant's timestamp on n and its ancestors that carry it. */
static void refresh(struct kvg_kv_rnode *n, int tenant, uint64_t ts)
{
    for (; n; n = n->parent) {
        struct kvg_kv_rten *r = kvg__kv_rnode_tenant(n, tenant);
        if (r) r->ts = ts;
    }
}

static int prefix_match(struct kvg_kv_radix *t, const char *text, size_t len,
                        struct kvg_kv_radix_match *m, int nowait)
{
    if (!text && len) return -EINVAL;
    memset(m, 0, sizeof *m);
    m->text_chars = kvg_kv_utf8_chars(text, len);
    m->tenant = -1;
    if (!nowait)
        kvg__kv_radix_lock(t);
    else if (lock_try(t))
        return -EBUSY;
    uint64_t ts = ++t->clock;
    struct kvg_kv_rnode *node = walk(t, text, len, -1, &m->matched_chars, &m->matched_bytes);
    m->tenant = -1;
    uint64_t best = 0;
    for (uint32_t i = 0; i < node->nten; i++) {
        if (m->tenant < 0 || node->ten[i].ts > best) {
            m->tenant = node->ten[i].tenant;
            best = node->ten[i].ts;
        }
    }
    if (m->tenant >= 0) refresh(node, m->tenant, ts);
    pthread_mutex_unlock(&t->mu);
    return 0;
}

int kvg_kv_radix_prefix_match(struct kvg_kv_radix *t, const char *text, size_t len,
                              struct kvg_kv_radix_match *m)
{
    return prefix_match(t, text, len, m, 0);
}

int kvg_kv_radix_prefix_match_nowait(struct kvg_kv_radix *t, const char *text, size_t len,
                                     struct kvg_kv_radix_match *m)
{
    return prefix_match(t, text, len, m, 1);
}

size_t kvg_kv_radix_prefix_match_tenant(struct kvg_kv_radix *t, const char *text, size_t len,
                                        int tenant)
{
    size_t chars = 0, bytes;
    if (tenant < 0 || (!text && len)) return 0;
    kvg__kv_radix_lock(t);
    uint64_t ts = ++t->clock;
    struct kvg_kv_rnode *node = walk(t, text, len, tenant, &chars, &bytes);
    refresh(node, tenant, ts);
    pthread_mutex_unlock(&t->mu);
    return chars;
}

static int smallest_tenant(struct kvg_kv_radix *t, int nowait)
{
    int best = -1;
    if (!nowait)
        kvg__kv_radix_lock(t);
    else if (lock_try(t))
        return -EBUSY;
    for (uint32_t i = 0; i < t->ntc; i++) {
        if (!t->tc[i].present) continue;
        if (best < 0 || t->tc[i].chars < t->tc[best].chars) best = (int)i;
    }
    pthread_mutex_unlock(&t->mu);
    return best;
}

int kvg_kv_radix_smallest_tenant(struct kvg_kv_radix *t)
{
    return smallest_tenant(t, 0);
}

int kvg_kv_radix_smallest_tenant_nowait(struct kvg_kv_radix *t)
{
    return smallest_tenant(t, 1);
}

uint64_t kvg_kv_radix_tenant_chars(struct kvg_kv_radix *t, int tenant)
{
    uint64_t n = 0;
    kvg__kv_radix_lock(t);
    if (tenant >= 0 && (uint32_t)tenant < t->ntc) n = t->tc[tenant].chars;
    pthread_mutex_unlock(&t->mu);
    return n;
}

int kvg_kv_radix_has_tenant(struct kvg_kv_radix *t, int tenant)
{
    int r = 0;
    kvg__kv_radix_lock(t);
    if (tenant >= 0 && (uint32_t)tenant < t->ntc) r = t->tc[tenant].present;
    pthread_mutex_unlock(&t->mu);
    return r;
}
