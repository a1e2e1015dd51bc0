/* The in-process quota store (the default): one counter entry per (scope,
 * limit), in a hash table behind one mutex.
 *
 * Why one mutex: a reservation must be all or nothing across up to
 * KVG_QUOTA_MAX_ITEMS entries of several scopes, which per-entry locks could
 * only do with ordered multi-locking; the critical section is a handful of
 * hash lookups and integer adds (well under a microsecond), so one lock costs
 * less than the bookkeeping that would avoid it.
 *
 * Entries whose windows have both passed and that hold no concurrency slot
 * are swept every SWEEP_EVERY reservations, so memory follows the active
 * scopes, not every scope ever seen. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "gateway/quota_int.h"

#define SWEEP_EVERY 4096

struct entry {
    struct entry *next;
    uint64_t hash;
    int64_t cur, prev, idx; /* window counters; idx = window index of cur */
    int64_t conc;           /* concurrency slots in use */
    int win;                /* enum kvg_quota_win; -1 for a concurrency entry */
    size_t klen;
    char key[];
};

struct qmem {
    pthread_mutex_t mu;
    struct entry **tab;
    size_t nbuckets, n;
    uint64_t ops;
};

static size_t make_key(char *out, size_t cap, const char *scope, const struct kvg_quota_item *it)
{
    size_t n = strnlen(scope, KVG_QUOTA_SCOPE_ID_MAX);
    if (n + 3 > cap) n = cap - 3;
    memcpy(out, scope, n);
    out[n++] = '\x1f'; /* cannot appear in a scope id: the YAML loader refuses control bytes */
    out[n++] = "trc"[it->kind];
    out[n++] = it->kind == KVG_QK_CONCURRENT ? 'c' : "mhdM"[it->win];
    return n;
}

int kvg__qmem_new(struct qmem **out)
{
    struct qmem *m = calloc(1, sizeof *m);
    if (!m) return -ENOMEM;
    m->nbuckets = 256;
    m->tab = calloc(m->nbuckets, sizeof *m->tab);
    if (!m->tab) {
        free(m);
        return -ENOMEM;
    }
    pthread_mutex_init(&m->mu, NULL);
    *out = m;
    return 0;
}

void kvg__qmem_free(struct qmem *m)
{
    for (size_t b = 0; b < m->nbuckets; b++)
        for (struct entry *e = m->tab[b], *nx; e; e = nx) {
            nx = e->next;
            free(e);
        }
    free(m->tab);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

size_t kvg__qmem_entries(struct qmem *m)
{
    pthread_mutex_lock(&m->mu);
    size_t n = m->n;
    pthread_mutex_unlock(&m->mu);
    return n;
}

static void grow(struct qmem *m)
{
    size_t nb = m->nbuckets * 2;
    struct entry **t = calloc(nb, sizeof *t);
    if (!t) return; /* keep the longer chains: still correct */
    for (size_t b = 0; b < m->nbuckets; b++)
        for (struct entry *e = m->tab[b], *nx; e; e = nx) {
            nx = e->next;
            e->next = t[e->hash & (nb - 1)];
            t[e->hash & (nb - 1)] = e;
        }
    free(m->tab);
    m->tab = t;
    m->nbuckets = nb;
}

static struct entry *find(struct qmem *m, const char *key, size_t klen, uint64_t h)
{
    for (struct entry *e = m->tab[h & (m->nbuckets - 1)]; e; e = e->next)
        if (e->hash == h && e->klen == klen && !memcmp(e->key, key, klen)) return e;
    return NULL;
}

static struct entry *find_or_add(struct qmem *m, const char *key, size_t klen,
                                 const struct kvg_quota_item *it)
{
    uint64_t h = kvg_hash_fnv1a64(KVG_HASH_FNV1A64_SEED, key, klen);
    struct entry *e = find(m, key, klen, h);
    if (e) return e;
    e = calloc(1, sizeof *e + klen);
    if (!e) return NULL;
    memcpy(e->key, key, klen);
    e->klen = klen;
    e->hash = h;
    e->idx = it->widx;
    e->win = it->kind == KVG_QK_CONCURRENT ? -1 : it->win;
    e->next = m->tab[h & (m->nbuckets - 1)];
    m->tab[h & (m->nbuckets - 1)] = e;
    if (++m->n > m->nbuckets) grow(m);
    return e;
}

/* Moves an entry's counters to window widx: the current window becomes the
 * previous one, or both empty after a gap. A time older than the entry's
 * (another thread's clock a millisecond behind) uses the entry as it is. */
static void roll(struct entry *e, int64_t widx)
{
    if (widx <= e->idx) return;
    e->prev = widx == e->idx + 1 ? e->cur : 0;
    e->cur = 0;
    e->idx = widx;
}

static void sweep(struct qmem *m, uint64_t now_ms)
{
    for (size_t b = 0; b < m->nbuckets; b++) {
        struct entry **pp = &m->tab[b];
        while (*pp) {
            struct entry *e = *pp;
            struct kvg_quota_span sp = {0};
            if (e->win >= 0) kvg_quota_win_span((enum kvg_quota_win)e->win, now_ms, &sp);
            int dead = e->win >= 0 ? sp.idx > e->idx + 1 : e->conc <= 0;
            if (dead) {
                *pp = e->next;
                free(e);
                m->n--;
            } else {
                pp = &e->next;
            }
        }
    }
}

int kvg__qmem_reserve(struct qmem *m, struct kvg_quota_lease *l)
{
    struct entry *ents[KVG_QUOTA_MAX_ITEMS];
    char key[KVG_QUOTA_SCOPE_ID_MAX + 4];
    int ok = 1;
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < l->nitems; i++) {
        struct kvg_quota_item *it = &l->item[i];
        size_t kl = make_key(key, sizeof key, l->scope_id[it->scope], it);
        struct entry *e = find_or_add(m, key, kl, it);
        if (!e) {
            pthread_mutex_unlock(&m->mu);
            return -ENOMEM;
        }
        ents[i] = e;
        if (it->kind == KVG_QK_CONCURRENT) {
            it->cur = e->conc;
            it->prev = 0;
            ok &= e->conc < it->limit;
        } else {
            struct kvg_quota_span sp;
            kvg_quota_win_span((enum kvg_quota_win)it->win, l->now_ms, &sp);
            roll(e, it->widx);
            it->cur = e->cur;
            it->prev = e->prev;
            ok &= kvg__quota_win_admits(e->cur, e->prev, l->now_ms - sp.start_ms, sp.len_ms,
                                        sp.fixed, it->limit, it->cost);
        }
    }
    if (ok)
        for (size_t i = 0; i < l->nitems; i++) {
            if (l->item[i].kind == KVG_QK_CONCURRENT)
                ents[i]->conc++;
            else
                ents[i]->cur += l->item[i].cost;
        }
    if (++m->ops % SWEEP_EVERY == 0) sweep(m, l->now_ms);
    pthread_mutex_unlock(&m->mu);
    return ok;
}

int kvg__qmem_peek(struct qmem *m, struct kvg_quota_lease *l)
{
    char key[KVG_QUOTA_SCOPE_ID_MAX + 4];
    int ok = 1;
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < l->nitems; i++) {
        struct kvg_quota_item *it = &l->item[i];
        size_t kl = make_key(key, sizeof key, l->scope_id[it->scope], it);
        const struct entry *e = find(m, key, kl, kvg_hash_fnv1a64(KVG_HASH_FNV1A64_SEED, key, kl));
        if (it->kind == KVG_QK_CONCURRENT) {
            it->cur = e ? e->conc : 0;
            it->prev = 0;
            ok &= it->cur < it->limit;
            continue;
        }
        /* What roll() would make of the entry, without moving it. */
        it->cur = it->prev = 0;
        if (e && it->widx <= e->idx) {
            it->cur = e->cur;
            it->prev = e->prev;
        } else if (e && it->widx == e->idx + 1) {
            it->prev = e->cur;
        }
        struct kvg_quota_span sp;
        kvg_quota_win_span((enum kvg_quota_win)it->win, l->now_ms, &sp);
        ok &= kvg__quota_win_admits(it->cur, it->prev, l->now_ms - sp.start_ms, sp.len_ms, sp.fixed,
                                    it->limit, it->cost);
    }
    pthread_mutex_unlock(&m->mu);
    return ok;
}

void kvg__qmem_reconcile(struct qmem *m, const struct kvg_quota_lease *l, int64_t actual,
                         uint64_t now_ms)
{
    char key[KVG_QUOTA_SCOPE_ID_MAX + 4];
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < l->nitems; i++) {
        const struct kvg_quota_item *it = &l->item[i];
        if (it->kind == KVG_QK_REQUESTS) continue; /* a request counts once it was admitted */
        size_t kl = make_key(key, sizeof key, l->scope_id[it->scope], it);
        struct entry *e = find(m, key, kl, kvg_hash_fnv1a64(KVG_HASH_FNV1A64_SEED, key, kl));
        if (!e) continue;
        if (it->kind == KVG_QK_CONCURRENT) {
            if (l->reserved && e->conc > 0) e->conc--;
            continue;
        }
        /* The reservation leaves the window it went to, wherever that now
         * sits (a window that left the sliding view is gone), and the actual
         * cost lands in the current window: the tokens were produced now. */
        struct kvg_quota_span sp;
        kvg_quota_win_span((enum kvg_quota_win)it->win, now_ms, &sp);
        roll(e, sp.idx);
        int64_t back = l->reserved ? it->cost : 0;
        if (e->idx == it->widx)
            e->cur -= back;
        else if (e->idx == it->widx + 1)
            e->prev -= back;
        if (e->idx == sp.idx)
            e->cur += actual;
        else if (e->idx == sp.idx + 1)
            e->prev += actual; /* another thread's clock is a little ahead */
    }
    pthread_mutex_unlock(&m->mu);
}
