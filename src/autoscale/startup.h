/* The start-up model: how long a new replica takes to become useful, per
 * (model, node state), as a distribution the planners read their lead time
 * from (its p90) and the offline benchmark draws start-ups from.
 *
 * Node states (measured with vLLM on Modal H100s, Qwen2.5-7B on one GPU and
 * 32B on two; the table is in startup.c):
 *   warm  — the node has served the model and the compile caches are kept
 *           (image and weights local): measured as a second start with
 *           the caches kept;
 *   cold  — image and weights local but vLLM's compile caches lost with the
 *           pod (the default): measured as a start in a fresh container;
 *   fetch — image and weights to fetch first: cold plus the image pull and
 *           extract BentoML measured (5-6 + 3-4 min) and the weights download
 *           (the 32B took 143 s from Hugging Face for 65.5 GB).
 * Start classes beyond a new process (each default's source is in
 * startup.c's table; docs/autoscale.md lists them):
 *   asleep1 — a parked engine woken from vLLM's sleep level 1 (weights in
 *             host memory, the process and its GPU kept): the wake call;
 *   asleep2 — from level 2 (weights reloaded, process kept);
 *   restore — restored from a checkpoint (CRIU + cuda-checkpoint, Dynamo
 *             Snapshot): no GPU held while parked.
 * Each default is a median with a low and high (the range over four runs,
 * or the published range),
 * read as a split log-normal: median m, p10 = low, p90 = high.
 *
 * Learning: every observed actuation (the scale request to the engine's
 * /health 200, and optionally on to its cache hit rate recovering) is kept,
 * the last KVG_AUTOSCALE_STARTUP_KEEP per key. Until min_samples are seen the
 * model stays conservative: p90 = max(default p90, slowest sample); from then
 * on it is the samples' own p90 (nearest rank). Pure: no clock, no I/O. */
#ifndef KVG_AUTOSCALE_STARTUP_H
#define KVG_AUTOSCALE_STARTUP_H

#include <stddef.h>
#include <stdint.h>

#include "base/util.h"

enum kvg_autoscale_node {
    KVG_AUTOSCALE_WARM,
    KVG_AUTOSCALE_COLD,
    KVG_AUTOSCALE_FETCH,
    KVG_AUTOSCALE_ASLEEP1,
    KVG_AUTOSCALE_ASLEEP2,
    KVG_AUTOSCALE_RESTORE,
};
#define KVG_AUTOSCALE_NODE_STATES 6
#define KVG_AUTOSCALE_STARTUP_KEEP 32
#define KVG_AUTOSCALE_STARTUP_MODELS 16

/* One default distribution: seconds to /health 200. */
struct kvg_autoscale_startup_dist {
    double median, lo, hi;
};

struct kvg_autoscale_startup_key {
    char model[64];
    struct kvg_autoscale_startup_dist dflt[KVG_AUTOSCALE_NODE_STATES];
    double health[KVG_AUTOSCALE_NODE_STATES][KVG_AUTOSCALE_STARTUP_KEEP]; /* ring */
    uint32_t nhealth[KVG_AUTOSCALE_NODE_STATES];                          /* ever seen */
    double warm[KVG_AUTOSCALE_NODE_STATES][KVG_AUTOSCALE_STARTUP_KEEP];   /* health -> hit rate */
    uint32_t nwarm[KVG_AUTOSCALE_NODE_STATES];
};

/* A value type: no allocation, copy freely. */
struct kvg_autoscale_startup {
    struct kvg_autoscale_startup_key keys[KVG_AUTOSCALE_STARTUP_MODELS];
    size_t n;
    uint32_t min_samples; /* 5 */
    /* A share of the nodes whose new replicas come back from a parked state
     * (fast_class: a checkpoint restore or a sleeping engine) instead of a
     * new process: kvg_autoscale_startup_lead_mix counts fast_class at this
     * share and the shares it is given as those of the other nodes. 0 by
     * default (a live pool names its one node state); the offline
     * benchmark's --fast-share sets it. */
    double fast_share;
    enum kvg_autoscale_node fast_class;
};

/* Loads the measured defaults (startup.c): "qwen2.5-7b", "qwen2.5-32b"; any
 * other model name gets the 32B's figures (the larger, so lead times err
 * long). */
void kvg_autoscale_startup_init(struct kvg_autoscale_startup *m);

/* Sets a model's default for one node state (adds the model if new).
 * 0, KVG_ECONFIG for an inconsistent dist (lo <= median <= hi, lo > 0),
 * KVG_ETOOBIG when the table is full. */
int kvg_autoscale_startup_set(struct kvg_autoscale_startup *m, const char *model,
                              enum kvg_autoscale_node st, struct kvg_autoscale_startup_dist d);

/* Multiplies every default distribution by f > 0 (a miniature's compressed
 * clock: its replicas start in seconds, and the planners must read the same
 * clock from the model as the replicas are drawn from). Learned samples are
 * not touched. */
void kvg_autoscale_startup_scale(struct kvg_autoscale_startup *m, double f);

/* Records one actuation: seconds from the scale request to /health 200, and
 * from /health to the cache hit rate recovering (< 0: not measured). */
void kvg_autoscale_startup_observe(struct kvg_autoscale_startup *m, const char *model,
                                   enum kvg_autoscale_node st, double health_s, double warm_s);

/* p-quantile (0..1) of time to /health for (model, state): learned or default. */
double kvg_autoscale_startup_pct(const struct kvg_autoscale_startup *m, const char *model,
                                 enum kvg_autoscale_node st, double p);
/* The lead time planners use: p90 to /health plus p90 warm-up (0 until seen). */
double kvg_autoscale_startup_lead(const struct kvg_autoscale_startup *m, const char *model,
                                  enum kvg_autoscale_node st);
/* The lead time for where new replicas land when a cold_share of nodes is
 * cold, a fetch_share must fetch the image and weights and the rest start
 * as `rest` (warm, or a pool whose replicas all wake or restore; of the
 * nodes beside m's fast_share): the longest kvg_autoscale_startup_lead
 * among the node states with at least 5% of the nodes (a mixture's p90 is
 * at most that). */
double kvg_autoscale_startup_lead_mix(const struct kvg_autoscale_startup *m, const char *model,
                                      double cold_share, double fetch_share,
                                      enum kvg_autoscale_node rest);
/* The prior alone (the default distribution's p-quantile), and the
 * samples' own (nearest rank; NAN before any): what GET /autoscale shows
 * side by side with the lead in use. */
double kvg_autoscale_startup_prior(const struct kvg_autoscale_startup *m, const char *model,
                                   enum kvg_autoscale_node st, double p);
double kvg_autoscale_startup_learned(const struct kvg_autoscale_startup *m, const char *model,
                                     enum kvg_autoscale_node st, double p);
/* Samples seen for (model, state). */
uint32_t kvg_autoscale_startup_samples(const struct kvg_autoscale_startup *m, const char *model,
                                       enum kvg_autoscale_node st);
/* Draws a start-up time from the default distribution (the benchmark's
 * replicas), deterministic for the rng's state. */
double kvg_autoscale_startup_draw(const struct kvg_autoscale_startup *m, const char *model,
                                  enum kvg_autoscale_node st, struct kvg_rng *rng);

/* "warm", "cold", "fetch", "asleep1", "asleep2", "restore"; parse returns
 * -1 for anything else. */
const char *kvg_autoscale_node_name(enum kvg_autoscale_node st);
int kvg_autoscale_node_parse(const char *s);

#endif
