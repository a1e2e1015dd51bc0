/* kvgate's own Prometheus metrics: a registry of counters, gauges and
 * histograms, and its rendering as text exposition format 0.0.4.
 *
 * Threading contract. A registry is shared by every event-loop thread.
 *  - Registering a family (kvg_metrics_counter/gauge/histogram), obtaining a
 *    series (kvg_metrics_series), removing series and rendering take mutexes:
 *    do them at start-up, when a worker joins or leaves, or per scrape.
 *  - Updating a series (kvg_metrics_inc/add/set/observe) takes no lock: it is
 *    a handful of relaxed atomic operations on memory owned by the series, so
 *    the hot path obtains its series once and keeps the pointer.
 *  - kvg_metrics_registry_free must not race with anything else on the same
 *    registry; series handles still held stay valid (see below).
 *
 * Ownership. The registry owns its families; a family pointer is valid for
 * as long as the registry or any series of it lives. kvg_metrics_series hands
 * out a counted reference: the caller releases it with
 * kvg_metrics_series_release. Removing a series (by handle, by label values,
 * or by one label value across the registry) makes it vanish from the output
 * at once, but its memory stays until the last reference is released, so a
 * thread that still updates a removed series writes to a detached object
 * instead of freed memory. Asking again for the same label values after a
 * removal creates a fresh series starting from zero.
 *
 * Output. Families are rendered in registration order, series in creation
 * order, so the text is deterministic. Names and help are held to what
 * `promtool check metrics` lints (see kvg_metrics_counter); promtool's unit
 * lint (seconds, bytes: base units) is the caller's to follow. Families with
 * no series are left out, as the Go client does: a label-less metric that
 * must appear from the start obtains its series at start-up. A histogram's
 * _count and +Inf bucket are computed from the same bucket counts, so they
 * always agree; its _sum is a separate atomic and may lag by the
 * observations in flight during a scrape.
 */
#ifndef KVG_METRICS_METRICS_H
#define KVG_METRICS_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define KVG_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Most label names a family may have (histograms add "le" on top). */
#define KVG_METRICS_MAX_LABEL_NAMES 16
/* Most upper bounds a histogram may have, +Inf not counted. */
#define KVG_METRICS_MAX_BUCKETS 64
/* Default cap on series per family; cardinality explosions fail cleanly. */
#define KVG_METRICS_DEFAULT_MAX_SERIES 10000

enum kvg_metrics_kind {
    KVG_METRICS_COUNTER,
    KVG_METRICS_GAUGE,
    KVG_METRICS_HISTOGRAM,
};

struct kvg_metrics_registry;
struct kvg_metrics_family;
struct kvg_metrics_series;

/* Creates an empty registry; the caller frees it with kvg_metrics_registry_free.
 * max_series caps the series of each family (0 = KVG_METRICS_DEFAULT_MAX_SERIES).
 * -ENOMEM. */
int kvg_metrics_registry_new(size_t max_series, struct kvg_metrics_registry **out);
/* Frees the registry and every family and series nobody else references.
 * Series handles still held stay valid (detached, no longer rendered) until
 * released. NULL is a no-op. */
void kvg_metrics_registry_free(struct kvg_metrics_registry *r);
/* Lets names contain colons: only for imitating an engine whose metrics use
 * them (kvgate sim exports vLLM's vllm:* names, which promtool lints exactly
 * as it lints vLLM's own). Call before registering anything. */
void kvg_metrics_registry_allow_colons(struct kvg_metrics_registry *r);

/* Registers a family. name: snake_case [a-z_][a-z0-9_]* (no colons, which
 * promtool lints as reserved for recording rules), ending in "_total" if and
 * only if it is a counter; help: non-empty UTF-8 text (promtool lints a
 * missing one); label names: [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__",
 * distinct, and not "le" for histograms. All strings are copied. Registering
 * the same name again with the same definition returns the existing family;
 * a different definition, or a name that collides with a histogram's
 * _bucket/_sum/_count, is -EEXIST. Invalid names or help -EINVAL, invalid
 * UTF-8 KVG_EUTF8, -ENOMEM. *out is owned by the registry. */
int kvg_metrics_counter(struct kvg_metrics_registry *r, const char *name, const char *help,
                        const char *const *label_names, size_t nlabels,
                        struct kvg_metrics_family **out);
int kvg_metrics_gauge(struct kvg_metrics_registry *r, const char *name, const char *help,
                      const char *const *label_names, size_t nlabels,
                      struct kvg_metrics_family **out);
/* bounds: finite upper bounds, strictly increasing, 1..KVG_METRICS_MAX_BUCKETS of
 * them; a trailing +Inf is accepted and dropped (it is always rendered).
 * Copied. */
int kvg_metrics_histogram(struct kvg_metrics_registry *r, const char *name, const char *help,
                          const char *const *label_names, size_t nlabels, const double *bounds,
                          size_t nbounds, struct kvg_metrics_family **out);

/* Fills bounds[0..n) with start, start*factor, ... (start > 0, factor > 1). */
int kvg_metrics_buckets_exp(double start, double factor, size_t n, double *bounds);

/* Returns the series for one combination of label values (nvalues must equal
 * the family's label count; values must be UTF-8), creating it at zero if it
 * does not exist. The caller owns one reference and drops it with
 * kvg_metrics_series_release. Takes the family's lock. -EINVAL, KVG_EUTF8,
 * KVG_ETOOBIG (family at its series cap), KVG_ECLOSED (the registry was
 * freed; only reachable through a family pointer kept past it), -ENOMEM. */
int kvg_metrics_series(struct kvg_metrics_family *f, const char *const *values, size_t nvalues,
                       struct kvg_metrics_series **out);
/* Drops one reference; the last one frees the series. NULL is a no-op. */
void kvg_metrics_series_release(struct kvg_metrics_series *s);
/* Removes the series from the output now (idempotent). The handle stays
 * valid until released. */
void kvg_metrics_series_remove(struct kvg_metrics_series *s);
/* Removes the series with these label values; KVG_ENOTFOUND if none. */
int kvg_metrics_family_remove(struct kvg_metrics_family *f, const char *const *values,
                              size_t nvalues);
/* Removes each series of f whose label `label` is `value` and whose label
 * `other` is not `keep` (a worker's series under the model it served
 * before). Returns the number removed, -EINVAL for a label f lacks. */
int kvg_metrics_family_remove_other(struct kvg_metrics_family *f, const char *label,
                                    const char *value, const char *other, const char *keep);
/* Removes, across every family, each series whose label `label_name` equals
 * `value` (e.g. worker="http://10.0.0.7:8000" when that worker leaves the
 * pool). Returns the number removed. */
int kvg_metrics_remove_label(struct kvg_metrics_registry *r, const char *label_name,
                             const char *value);

/* Hot path: lock-free, never fail. A call that does not fit the series' kind
 * (set on a counter, observe on a gauge) is a programming error and asserts.
 * Counters ignore negative and NaN increments (counters only go up);
 * histograms ignore NaN observations (they would poison _sum for good). */
void kvg_metrics_inc(struct kvg_metrics_series *s);               /* counter, gauge */
void kvg_metrics_dec(struct kvg_metrics_series *s);               /* gauge */
void kvg_metrics_add(struct kvg_metrics_series *s, double v);     /* counter, gauge */
void kvg_metrics_set(struct kvg_metrics_series *s, double v);     /* gauge */
void kvg_metrics_observe(struct kvg_metrics_series *s, double v); /* histogram */
/* A counter that mirrors a total counted elsewhere (a store's or a queue's
 * own statistics, read at scrape time): it takes total unless it already
 * shows more, so it never goes down. */
void kvg_metrics_counter_mirror(struct kvg_metrics_series *s, uint64_t total);

/* Reads a series (relaxed; a value some update made visible). */
double kvg_metrics_value(const struct kvg_metrics_series *s); /* counter, gauge */
uint64_t kvg_metrics_hist_count(const struct kvg_metrics_series *s);
double kvg_metrics_hist_sum(const struct kvg_metrics_series *s);
/* A histogram's non-cumulative bucket counts (the last for +Inf) into
 * counts[0..max); returns how many buckets it has (its bounds + 1), 0 for
 * another kind. *bounds, when not NULL, gets its upper bounds (nbuckets - 1
 * of them, alive as long as the series). */
size_t kvg_metrics_hist_read(const struct kvg_metrics_series *s, uint64_t *counts, size_t max,
                             const double **bounds);
/* Over every series of family f (a labelled family read as one whole, as a
 * status page adds up per-model series): the sum of a counter's or gauge's
 * values (a histogram's: of its observations' sums) whose label `label` is
 * `value` (label NULL: every series), and a histogram's bucket counts added
 * up as kvg_metrics_hist_read gives one series' (0 when f holds none or is
 * no histogram). */
double kvg_metrics_family_sum(struct kvg_metrics_family *f, const char *label, const char *value);
size_t kvg_metrics_family_hist_read(struct kvg_metrics_family *f, uint64_t *counts, size_t max,
                                    const double **bounds);
/* The q-quantile (0..1) of non-cumulative counts over bounds, interpolated
 * linearly inside its bucket as Prometheus's histogram_quantile does; the
 * +Inf bucket answers the highest bound. NAN when there is no observation. */
double kvg_metrics_quantile(const uint64_t *counts, const double *bounds, size_t nbuckets,
                            double q);

/* Appends the whole registry as text exposition format 0.0.4 to out. On
 * failure (KVG_ETOOBIG at out's cap, -ENOMEM) out is restored to its previous
 * length. Takes the registry lock, then each family's lock in turn; updates
 * carry on meanwhile. */
int kvg_metrics_render(struct kvg_metrics_registry *r, struct kvg_buf *out);

#endif
