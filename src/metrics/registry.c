/* The metrics registry: families registered once, series found or created
 * under a family lock, and the lock-free update paths the request hot path
 * uses. Rendering lives in render.c; the contracts are in metrics.h.
 *
 * Lifetime in short: a series carries a reference count (one for being
 * linked into its family, one per handle handed out) and a reference on its
 * family, so removing a series or freeing the registry never frees memory a
 * thread may still be writing to; the last release does. */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/hash.h"
#include "metrics/internal.h"

/* Series are allocated on their own cache lines so that two hot counters
 * updated by different threads do not share one. */
#define SERIES_ALIGN 64

static uint64_t d2u(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static double u2d(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static void atomic_add_double(_Atomic uint64_t *a, double v)
{
    uint64_t old = atomic_load_explicit(a, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(a, &old, d2u(u2d(old) + v), memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
}

/* FNV-1a over the values, each followed by 0xff: a byte UTF-8 never
 * contains, so ("ab","c") and ("a","bc") hash apart. */
static uint64_t hash_values(const char *const *values, size_t n)
{
    uint64_t h = KVG_HASH_FNV1A64_SEED;
    for (size_t i = 0; i < n; i++) {
        h = kvg_hash_fnv1a64_str(h, values[i]);
        h = kvg_hash_fnv1a64(h, "\xff", 1);
    }
    return h;
}

/* ---- families ---------------------------------------------------------- */

static void family_destroy(struct kvg_metrics_family *f)
{
    for (size_t i = 0; i < f->nlabels; i++) free(f->label_names[i]);
    free(f->label_names);
    free(f->bounds);
    free(f->hash);
    free(f->name);
    free(f->help);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

static void family_unref(struct kvg_metrics_family *f)
{
    if (atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) == 1) family_destroy(f);
}

static void series_free(struct kvg_metrics_series *s)
{
    struct kvg_metrics_family *f = s->fam;
    free(s);
    family_unref(f);
}

void kvg_metrics_series_release(struct kvg_metrics_series *s)
{
    if (!s) return;
    if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1) series_free(s);
}

/* Unlinks s from its family (fam->lock held) and chains it on *gone through
 * hnext, so the caller drops the family's reference after unlocking: the
 * last release frees the series, which must not happen under the lock of a
 * family it may be the last reference to. */
static void unlink_locked(struct kvg_metrics_series *s, struct kvg_metrics_series **gone)
{
    struct kvg_metrics_family *f = s->fam;
    struct kvg_metrics_series **pp = &f->hash[s->hash & (f->hash_size - 1)];
    while (*pp != s) pp = &(*pp)->hnext;
    *pp = s->hnext;
    if (s->prev)
        s->prev->next = s->next;
    else
        f->first = s->next;
    if (s->next)
        s->next->prev = s->prev;
    else
        f->last = s->prev;
    s->prev = s->next = NULL;
    s->linked = 0;
    f->nseries--;
    s->hnext = *gone;
    *gone = s;
}

static void release_chain(struct kvg_metrics_series *gone)
{
    while (gone) {
        struct kvg_metrics_series *next = gone->hnext;
        kvg_metrics_series_release(gone);
        gone = next;
    }
}

int kvg_metrics_registry_new(size_t max_series, struct kvg_metrics_registry **out)
{
    struct kvg_metrics_registry *r = calloc(1, sizeof *r);
    if (!r) return -ENOMEM;
    if (pthread_mutex_init(&r->lock, NULL)) {
        free(r);
        return -ENOMEM;
    }
    r->max_series = max_series ? max_series : KVG_METRICS_DEFAULT_MAX_SERIES;
    *out = r;
    return 0;
}

void kvg_metrics_registry_free(struct kvg_metrics_registry *r)
{
    if (!r) return;
    struct kvg_metrics_family *f = r->head;
    while (f) {
        struct kvg_metrics_family *next = f->next;
        struct kvg_metrics_series *gone = NULL;
        pthread_mutex_lock(&f->lock);
        f->detached = 1;
        while (f->first) unlink_locked(f->first, &gone);
        pthread_mutex_unlock(&f->lock);
        release_chain(gone);
        family_unref(f);
        f = next;
    }
    pthread_mutex_destroy(&r->lock);
    free(r);
}

static int strings_ok_and_utf8(const char *s)
{
    return s && kvg_utf8_valid(s, strlen(s));
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !memcmp(s + n - m, suffix, m);
}

/* 1 if `a` is `hist` followed by one of a histogram's sample suffixes. */
static int is_hist_child(const char *a, const char *hist)
{
    static const char *const sfx[] = {"_bucket", "_sum", "_count"};
    size_t n = strlen(hist);
    if (strncmp(a, hist, n)) return 0;
    for (size_t i = 0; i < 3; i++)
        if (!strcmp(a + n, sfx[i])) return 1;
    return 0;
}

static int same_definition(const struct kvg_metrics_family *f, enum kvg_metrics_kind kind,
                           const char *help, const char *const *labels, size_t nlabels,
                           const double *bounds, size_t nbounds)
{
    if (f->kind != kind || strcmp(f->help, help) || f->nlabels != nlabels) return 0;
    for (size_t i = 0; i < nlabels; i++)
        if (strcmp(f->label_names[i], labels[i])) return 0;
    if (f->nbounds != nbounds) return 0;
    for (size_t i = 0; i < nbounds; i++)
        if (f->bounds[i] != bounds[i]) return 0;
    return 1;
}

/* Our own names are held to what `promtool check metrics` lints for, not
 * just to what the format allows: snake_case without colons (those are for
 * recording rules), "_total" on counters and only on counters, and a HELP
 * text. Engines' names (vllm:...) are the parser's business, not ours. */
static int own_name_ok(const char *name, int allow_colons)
{
    if (!*name || (*name >= '0' && *name <= '9')) return 0;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' ||
              (*p == ':' && allow_colons)))
            return 0;
    return 1;
}

static int validate_definition(enum kvg_metrics_kind kind, const char *name, const char *help,
                               const char *const *labels, size_t nlabels, int allow_colons)
{
    if (!name || !help || (nlabels && !labels)) return -EINVAL;
    if (!own_name_ok(name, allow_colons)) return -EINVAL;
    if ((kind == KVG_METRICS_COUNTER) != ends_with(name, "_total")) return -EINVAL;
    if (!*help) return -EINVAL;
    if (!kvg_utf8_valid(help, strlen(help))) return KVG_EUTF8;
    if (nlabels > KVG_METRICS_MAX_LABEL_NAMES) return -EINVAL;
    for (size_t i = 0; i < nlabels; i++) {
        const char *l = labels[i];
        if (!l || !kvg__metrics_label_name_ok(l, strlen(l))) return -EINVAL;
        if (!strncmp(l, "__", 2)) return -EINVAL; /* reserved for Prometheus itself */
        if (kind == KVG_METRICS_HISTOGRAM && !strcmp(l, "le")) return -EINVAL;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(labels[j], l)) return -EINVAL;
    }
    return 0;
}

static int family_new(struct kvg_metrics_registry *r, enum kvg_metrics_kind kind, const char *name,
                      const char *help, const char *const *labels, size_t nlabels,
                      const double *bounds, size_t nbounds, struct kvg_metrics_family **out)
{
    int rc = validate_definition(kind, name, help, labels, nlabels, r->allow_colons);
    if (rc) return rc;

    pthread_mutex_lock(&r->lock);
    for (struct kvg_metrics_family *e = r->head; e; e = e->next) {
        if (!strcmp(e->name, name)) {
            rc = same_definition(e, kind, help, labels, nlabels, bounds, nbounds) ? 0 : -EEXIST;
            if (!rc) *out = e;
            pthread_mutex_unlock(&r->lock);
            return rc;
        }
        if ((e->kind == KVG_METRICS_HISTOGRAM && is_hist_child(name, e->name)) ||
            (kind == KVG_METRICS_HISTOGRAM && is_hist_child(e->name, name))) {
            pthread_mutex_unlock(&r->lock);
            return -EEXIST;
        }
    }

    rc = -ENOMEM;
    struct kvg_metrics_family *f = calloc(1, sizeof *f);
    if (!f) goto unlock;
    if (pthread_mutex_init(&f->lock, NULL)) {
        free(f);
        goto unlock;
    }
    f->kind = kind;
    f->max_series = r->max_series;
    f->name = strdup(name);
    f->help = strdup(help);
    f->label_names = calloc(nlabels ? nlabels : 1, sizeof *f->label_names);
    f->bounds = malloc((nbounds ? nbounds : 1) * sizeof *f->bounds);
    f->hash_size = 8;
    f->hash = calloc(f->hash_size, sizeof *f->hash);
    if (!f->name || !f->help || !f->label_names || !f->bounds || !f->hash) goto fail;
    for (size_t i = 0; i < nlabels; i++) {
        f->label_names[i] = strdup(labels[i]);
        if (!f->label_names[i]) goto fail;
        f->nlabels = i + 1;
    }
    if (nbounds) memcpy(f->bounds, bounds, nbounds * sizeof *bounds);
    f->nbounds = nbounds;
    atomic_init(&f->refs, 1); /* the registry's */

    if (r->tail)
        r->tail->next = f;
    else
        r->head = f;
    r->tail = f;
    *out = f;
    pthread_mutex_unlock(&r->lock);
    return 0;

fail:
    family_destroy(f);
unlock:
    pthread_mutex_unlock(&r->lock);
    return rc;
}

int kvg_metrics_counter(struct kvg_metrics_registry *r, const char *name, const char *help,
                        const char *const *label_names, size_t nlabels,
                        struct kvg_metrics_family **out)
{
    return family_new(r, KVG_METRICS_COUNTER, name, help, label_names, nlabels, NULL, 0, out);
}

int kvg_metrics_gauge(struct kvg_metrics_registry *r, const char *name, const char *help,
                      const char *const *label_names, size_t nlabels,
                      struct kvg_metrics_family **out)
{
    return family_new(r, KVG_METRICS_GAUGE, name, help, label_names, nlabels, NULL, 0, out);
}

int kvg_metrics_histogram(struct kvg_metrics_registry *r, const char *name, const char *help,
                          const char *const *label_names, size_t nlabels, const double *bounds,
                          size_t nbounds, struct kvg_metrics_family **out)
{
    if (!bounds) return -EINVAL;
    if (nbounds && isinf(bounds[nbounds - 1]) && bounds[nbounds - 1] > 0) nbounds--;
    if (nbounds == 0 || nbounds > KVG_METRICS_MAX_BUCKETS) return -EINVAL;
    for (size_t i = 0; i < nbounds; i++) {
        if (!isfinite(bounds[i])) return -EINVAL;
        if (i && !(bounds[i] > bounds[i - 1])) return -EINVAL;
    }
    return family_new(r, KVG_METRICS_HISTOGRAM, name, help, label_names, nlabels, bounds, nbounds,
                      out);
}

int kvg_metrics_buckets_exp(double start, double factor, size_t n, double *bounds)
{
    if (!(start > 0) || !(factor > 1) || n == 0 || n > KVG_METRICS_MAX_BUCKETS) return -EINVAL;
    double b = start;
    for (size_t i = 0; i < n; i++, b *= factor) {
        if (!isfinite(b)) return -ERANGE;
        bounds[i] = b;
    }
    return 0;
}

/* ---- series ------------------------------------------------------------ */

static struct kvg_metrics_series *find_locked(struct kvg_metrics_family *f, uint64_t h,
                                              const char *const *values)
{
    for (struct kvg_metrics_series *s = f->hash[h & (f->hash_size - 1)]; s; s = s->hnext) {
        if (s->hash != h) continue;
        size_t i = 0;
        while (i < f->nlabels && !strcmp(s->values[i], values[i])) i++;
        if (i == f->nlabels) return s;
    }
    return NULL;
}

/* Doubles the hash table when it gets as full as it is wide; on ENOMEM the
 * old table keeps working, just with longer chains. */
static void grow_locked(struct kvg_metrics_family *f)
{
    size_t n = f->hash_size * 2;
    struct kvg_metrics_series **t = calloc(n, sizeof *t);
    if (!t) return;
    for (struct kvg_metrics_series *s = f->first; s; s = s->next) {
        s->hnext = t[s->hash & (n - 1)];
        t[s->hash & (n - 1)] = s;
    }
    free(f->hash);
    f->hash = t;
    f->hash_size = n;
}

static struct kvg_metrics_series *series_alloc(struct kvg_metrics_family *f,
                                               const char *const *values)
{
    size_t nb = f->kind == KVG_METRICS_HISTOGRAM ? f->nbounds + 1 : 0;
    size_t size = sizeof(struct kvg_metrics_series) + nb * sizeof(uint64_t);
    size_t ptrs = size;
    size += f->nlabels * sizeof(char *);
    size_t strs = size;
    for (size_t i = 0; i < f->nlabels; i++) size += strlen(values[i]) + 1;
    size = (size + SERIES_ALIGN - 1) / SERIES_ALIGN * SERIES_ALIGN;

    char *mem = aligned_alloc(SERIES_ALIGN, size);
    if (!mem) return NULL;
    memset(mem, 0, size);
    struct kvg_metrics_series *s = (struct kvg_metrics_series *)mem;
    atomic_init(&s->a, 0);
    atomic_init(&s->b, 0);
    s->buckets = nb ? (_Atomic uint64_t *)(mem + sizeof *s) : NULL;
    for (size_t i = 0; i < nb; i++) atomic_init(&s->buckets[i], 0);
    s->bounds = f->bounds;
    s->nbounds = f->nbounds;
    s->kind = f->kind;
    s->fam = f;
    s->values = (char **)(mem + ptrs);
    char *p = mem + strs;
    for (size_t i = 0; i < f->nlabels; i++) {
        size_t n = strlen(values[i]) + 1;
        memcpy(p, values[i], n);
        s->values[i] = p;
        p += n;
    }
    return s;
}

int kvg_metrics_series(struct kvg_metrics_family *f, const char *const *values, size_t nvalues,
                       struct kvg_metrics_series **out)
{
    if (!f || !out || nvalues != f->nlabels || (nvalues && !values)) return -EINVAL;
    for (size_t i = 0; i < nvalues; i++) {
        if (!values[i]) return -EINVAL;
        if (!strings_ok_and_utf8(values[i])) return KVG_EUTF8;
    }
    uint64_t h = hash_values(values, nvalues);

    int rc = 0;
    pthread_mutex_lock(&f->lock);
    struct kvg_metrics_series *s = f->detached ? NULL : find_locked(f, h, values);
    if (s) {
        atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    } else if (f->detached) {
        rc = KVG_ECLOSED;
    } else if (f->nseries >= f->max_series) {
        rc = KVG_ETOOBIG;
    } else if (!(s = series_alloc(f, values))) {
        rc = -ENOMEM;
    } else {
        atomic_init(&s->refs, 2); /* the family's link + the caller's handle */
        atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
        s->hash = h;
        s->linked = 1;
        s->prev = f->last;
        if (f->last)
            f->last->next = s;
        else
            f->first = s;
        f->last = s;
        s->hnext = f->hash[h & (f->hash_size - 1)];
        f->hash[h & (f->hash_size - 1)] = s;
        if (++f->nseries > f->hash_size) grow_locked(f);
    }
    pthread_mutex_unlock(&f->lock);
    if (!rc) *out = s;
    return rc;
}

void kvg_metrics_series_remove(struct kvg_metrics_series *s)
{
    if (!s) return;
    struct kvg_metrics_family *f = s->fam; /* alive: s holds a reference on it */
    struct kvg_metrics_series *gone = NULL;
    pthread_mutex_lock(&f->lock);
    if (s->linked) unlink_locked(s, &gone);
    pthread_mutex_unlock(&f->lock);
    release_chain(gone);
}

int kvg_metrics_family_remove(struct kvg_metrics_family *f, const char *const *values,
                              size_t nvalues)
{
    if (!f || nvalues != f->nlabels || (nvalues && !values)) return -EINVAL;
    for (size_t i = 0; i < nvalues; i++)
        if (!values[i]) return -EINVAL;
    uint64_t h = hash_values(values, nvalues);
    struct kvg_metrics_series *gone = NULL;
    pthread_mutex_lock(&f->lock);
    struct kvg_metrics_series *s = find_locked(f, h, values);
    if (s) unlink_locked(s, &gone);
    pthread_mutex_unlock(&f->lock);
    release_chain(gone);
    return gone ? 0 : KVG_ENOTFOUND;
}

int kvg_metrics_remove_label(struct kvg_metrics_registry *r, const char *label_name,
                             const char *value)
{
    if (!r || !label_name || !value) return -EINVAL;
    int removed = 0;
    struct kvg_metrics_series *gone = NULL;
    pthread_mutex_lock(&r->lock);
    for (struct kvg_metrics_family *f = r->head; f; f = f->next) {
        size_t li = 0;
        while (li < f->nlabels && strcmp(f->label_names[li], label_name)) li++;
        if (li == f->nlabels) continue;
        pthread_mutex_lock(&f->lock);
        struct kvg_metrics_series *s = f->first;
        while (s) {
            struct kvg_metrics_series *next = s->next;
            if (!strcmp(s->values[li], value)) {
                unlink_locked(s, &gone);
                removed++;
            }
            s = next;
        }
        pthread_mutex_unlock(&f->lock);
    }
    pthread_mutex_unlock(&r->lock);
    /* Released after both locks: the registry keeps every family alive, so
     * no release here can free a family, but it does call free(). */
    release_chain(gone);
    return removed;
}

int kvg_metrics_family_remove_other(struct kvg_metrics_family *f, const char *label,
                                    const char *value, const char *other, const char *keep)
{
    if (!f || !label || !value || !other || !keep) return -EINVAL;
    size_t li = SIZE_MAX, oi = SIZE_MAX;
    for (size_t i = 0; i < f->nlabels; i++) {
        if (!strcmp(f->label_names[i], label)) li = i;
        if (!strcmp(f->label_names[i], other)) oi = i;
    }
    if (li == SIZE_MAX || oi == SIZE_MAX) return -EINVAL;
    int removed = 0;
    struct kvg_metrics_series *gone = NULL;
    pthread_mutex_lock(&f->lock);
    for (struct kvg_metrics_series *s = f->first, *next; s; s = next) {
        next = s->next;
        if (!strcmp(s->values[li], value) && strcmp(s->values[oi], keep)) {
            unlink_locked(s, &gone);
            removed++;
        }
    }
    pthread_mutex_unlock(&f->lock);
    release_chain(gone);
    return removed;
}

/* ---- hot path ---------------------------------------------------------- */

void kvg_metrics_inc(struct kvg_metrics_series *s)
{
    if (s->kind == KVG_METRICS_COUNTER)
        atomic_fetch_add_explicit(&s->a, 1, memory_order_relaxed);
    else if (s->kind == KVG_METRICS_GAUGE)
        atomic_add_double(&s->a, 1.0);
    else
        assert(!"kvg_metrics_inc on a histogram");
}

void kvg_metrics_dec(struct kvg_metrics_series *s)
{
    assert(s->kind == KVG_METRICS_GAUGE);
    if (s->kind == KVG_METRICS_GAUGE) atomic_add_double(&s->a, -1.0);
}

void kvg_metrics_add(struct kvg_metrics_series *s, double v)
{
    if (s->kind == KVG_METRICS_COUNTER) {
        if (!(v >= 0)) return; /* negative or NaN */
        /* Whole increments below 2^53 are exact in both representations;
         * they take the wait-free integer path. */
        if (v < 9007199254740992.0 && v == (double)(uint64_t)v)
            atomic_fetch_add_explicit(&s->a, (uint64_t)v, memory_order_relaxed);
        else
            atomic_add_double(&s->b, v);
    } else if (s->kind == KVG_METRICS_GAUGE) {
        atomic_add_double(&s->a, v);
    } else {
        assert(!"kvg_metrics_add on a histogram");
    }
}

void kvg_metrics_set(struct kvg_metrics_series *s, double v)
{
    assert(s->kind == KVG_METRICS_GAUGE);
    if (s->kind == KVG_METRICS_GAUGE) atomic_store_explicit(&s->a, d2u(v), memory_order_relaxed);
}

void kvg_metrics_counter_mirror(struct kvg_metrics_series *s, uint64_t total)
{
    assert(s->kind == KVG_METRICS_COUNTER);
    if (s->kind != KVG_METRICS_COUNTER) return;
    uint64_t cur = atomic_load_explicit(&s->a, memory_order_relaxed);
    /* Two scrapes may mirror at once: the larger total wins, never a step back. */
    while (cur < total && !atomic_compare_exchange_weak_explicit(
                              &s->a, &cur, total, memory_order_relaxed, memory_order_relaxed))
        ;
}

void kvg_metrics_observe(struct kvg_metrics_series *s, double v)
{
    assert(s->kind == KVG_METRICS_HISTOGRAM);
    if (s->kind != KVG_METRICS_HISTOGRAM || isnan(v)) return;
    /* First bound >= v (Prometheus buckets are "less than or equal"). */
    size_t lo = 0, hi = s->nbounds;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v <= s->bounds[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    atomic_fetch_add_explicit(&s->buckets[lo], 1, memory_order_relaxed);
    atomic_add_double(&s->a, v);
}

double kvg_metrics_value(const struct kvg_metrics_series *s)
{
    /* The atomics are read-only here; the casts drop const for C11's
     * atomic_load, whose parameter is not const-qualified in every libc. */
    _Atomic uint64_t *a = (_Atomic uint64_t *)&s->a;
    _Atomic uint64_t *b = (_Atomic uint64_t *)&s->b;
    if (s->kind == KVG_METRICS_COUNTER)
        return (double)atomic_load_explicit(a, memory_order_relaxed) +
               u2d(atomic_load_explicit(b, memory_order_relaxed));
    if (s->kind == KVG_METRICS_GAUGE) return u2d(atomic_load_explicit(a, memory_order_relaxed));
    return NAN;
}

uint64_t kvg_metrics_hist_count(const struct kvg_metrics_series *s)
{
    uint64_t n = 0;
    if (s->kind != KVG_METRICS_HISTOGRAM) return 0;
    for (size_t i = 0; i <= s->nbounds; i++)
        n += atomic_load_explicit(&s->buckets[i], memory_order_relaxed);
    return n;
}

double kvg_metrics_hist_sum(const struct kvg_metrics_series *s)
{
    if (s->kind != KVG_METRICS_HISTOGRAM) return NAN;
    return u2d(atomic_load_explicit((_Atomic uint64_t *)&s->a, memory_order_relaxed));
}

size_t kvg_metrics_hist_read(const struct kvg_metrics_series *s, uint64_t *counts, size_t max,
                             const double **bounds)
{
    if (s->kind != KVG_METRICS_HISTOGRAM) return 0;
    for (size_t i = 0; i <= s->nbounds && i < max; i++)
        counts[i] = atomic_load_explicit(&s->buckets[i], memory_order_relaxed);
    if (bounds) *bounds = s->bounds;
    return s->nbounds + 1;
}

double kvg_metrics_family_sum(struct kvg_metrics_family *f, const char *label, const char *value)
{
    double sum = 0;
    size_t li = SIZE_MAX;
    for (size_t i = 0; label && i < f->nlabels; i++)
        if (!strcmp(f->label_names[i], label)) li = i;
    if (label && li == SIZE_MAX) return 0;
    pthread_mutex_lock(&f->lock);
    for (const struct kvg_metrics_series *s = f->first; s; s = s->next)
        if (!label || !strcmp(s->values[li], value))
            sum +=
                s->kind == KVG_METRICS_HISTOGRAM ? kvg_metrics_hist_sum(s) : kvg_metrics_value(s);
    pthread_mutex_unlock(&f->lock);
    return sum;
}

size_t kvg_metrics_family_hist_read(struct kvg_metrics_family *f, uint64_t *counts, size_t max,
                                    const double **bounds)
{
    if (f->kind != KVG_METRICS_HISTOGRAM) return 0;
    size_t n = f->nbounds + 1;
    for (size_t i = 0; i < n && i < max; i++) counts[i] = 0;
    if (bounds) *bounds = f->bounds;
    pthread_mutex_lock(&f->lock);
    for (const struct kvg_metrics_series *s = f->first; s; s = s->next)
        for (size_t i = 0; i < n && i < max; i++)
            counts[i] += atomic_load_explicit(&s->buckets[i], memory_order_relaxed);
    pthread_mutex_unlock(&f->lock);
    return n;
}

double kvg_metrics_quantile(const uint64_t *counts, const double *bounds, size_t nbuckets, double q)
{
    uint64_t total = 0;
    for (size_t i = 0; i < nbuckets; i++) total += counts[i];
    if (!total || nbuckets < 2) return NAN;
    double rank = q * (double)total, below = 0;
    for (size_t i = 0; i < nbuckets; i++) {
        if (below + (double)counts[i] >= rank && counts[i]) {
            if (i == nbuckets - 1) return bounds[nbuckets - 2];
            double lo = i ? bounds[i - 1] : 0, hi = bounds[i];
            return lo + (hi - lo) * (rank - below) / (double)counts[i];
        }
        below += (double)counts[i];
    }
    return bounds[nbuckets - 2];
}

void kvg_metrics_registry_allow_colons(struct kvg_metrics_registry *r)
{
    r->allow_colons = 1;
}
