/* Internals shared by the files of src/metrics/: the registry's structures
 * (registry.c builds them, render.c walks them) and small text helpers used
 * by both the renderer and the parser. Not part of the public face: only
 * files in this folder include it. */
#ifndef KVG_METRICS_INTERNAL_H
#define KVG_METRICS_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/utf8.h"
#include "metrics/metrics.h"

struct kvg_metrics_registry {
    pthread_mutex_t lock; /* guards the family list; taken before any family lock */
    struct kvg_metrics_family *head, *tail; /* registration order */
    size_t max_series;
    int allow_colons; /* names like vllm:num_requests_waiting (kvgate sim) */
};

struct kvg_metrics_family {
    struct kvg_metrics_family *next; /* registry list, under registry lock */
    char *name;
    char *help;
    enum kvg_metrics_kind kind;
    size_t nlabels;
    char **label_names;
    size_t nbounds; /* histogram upper bounds, +Inf implicit */
    double *bounds;
    size_t max_series;

    pthread_mutex_t lock;                    /* guards everything below */
    struct kvg_metrics_series *first, *last; /* creation order */
    struct kvg_metrics_series **hash;        /* chained by label-value hash */
    size_t hash_size;                        /* power of two */
    size_t nseries;
    int detached; /* the registry is gone: no new series */

    /* One reference for the registry plus one per series alive (linked or
     * not): a family outlives its registry while handles remain. */
    atomic_size_t refs;
};

struct kvg_metrics_series {
    /* Hot fields first. Counter: a = integer increments, b = bits of the
     * double sum of fractional increments (kept apart so the common +1 is one
     * fetch_add, not a CAS loop). Gauge: a = bits of the double value.
     * Histogram: a = bits of the double _sum; buckets = nbounds+1
     * non-cumulative counts, the last one for +Inf. */
    _Atomic uint64_t a;
    _Atomic uint64_t b;
    _Atomic uint64_t *buckets;
    const double *bounds;
    size_t nbounds;
    enum kvg_metrics_kind kind;
    atomic_int refs; /* one for the family while linked, one per handle */

    struct kvg_metrics_family *fam;
    /* Under fam->lock: */
    int linked;
    uint64_t hash;
    struct kvg_metrics_series *hnext, *prev, *next;
    char **values; /* fam->nlabels NUL-terminated label values */
};

/* 1 if the name matches the label-name grammar [a-zA-Z_][a-zA-Z0-9_]*. */
int kvg__metrics_label_name_ok(const char *p, size_t n);
/* Writes v as the exposition format spells it ("NaN", "+Inf", "-Inf", or the
 * shortest decimal that reads back to the same double) into buf, which must
 * hold 32 bytes; returns the length. */
size_t kvg__metrics_fmt_double(char *buf, double v);

#endif
