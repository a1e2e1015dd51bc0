/* The one builder of a pool's observed signals (struct kvg_autoscale_signals
 * in planner.h): kvgate serve --autoscale feeds it from the proxy's
 * per-request observations, kvgate autoscale's gateway reading and the
 * offline benchmark (src/bench/scale/) from their own, so a planner is
 * graded offline on the inputs it gets in production.
 *
 * A windowed accumulator: per-tick sums in a ring of buckets (the caller
 * closes the filling one with kvg_autoscale_obs_next once per tick) and
 * TTFT / ITL samples stamped with the caller's clock. The window's signals
 * are the sums of the last closed buckets and the samples of the last
 * window seconds. A signal nothing in the window measured stays < 0
 * (unknown): never a made-up value. The engine snapshot (replicas,
 * waiting, running, KV usage, gateway queue, in-flight prompt tokens) is
 * the caller's to set in the same struct.
 *
 * kvg_autoscale_feed is the cheap front for many threads: each thread adds
 * to its own shard (a mutex nobody else takes but the fold), and the tick
 * folds every shard into a builder.
 *
 * Not thread-safe itself: one owner (the bench's run, serve's main loop). */
#ifndef KVG_AUTOSCALE_SIGNALS_H
#define KVG_AUTOSCALE_SIGNALS_H

#include <pthread.h>
#include <stddef.h>

#include "autoscale/planner.h"

/* One tick's sums. Prompt lengths are known at arrival (a tokenized
 * request, the bench) or only from the engine's usage at the finish; the
 * window's ISL takes the arrivals' when every arrival said its own. */
struct kvg_autoscale_obs_sums {
    double arrivals;      /* requests arrived (queued ones included) */
    double sized;         /* of them, with their prompt length known */
    double prompt_tokens; /* the sized arrivals' prompt tokens */
    double out_tokens;    /* output tokens emitted */
    double cached;        /* prompt tokens found in a prefix cache ... */
    double prefilled;     /* ... of these prompt tokens prefilled */
    double finished;      /* requests ended (served or failed) */
    double missed;        /* of them, over the TTFT or ITL target, or failed */
    double missed_ttft;   /* of them, over the TTFT target, or failed */
    double missed_itl;    /* of them, over the ITL target, or failed */
    double legged;        /* of them, PD requests with a timed prefill leg ... */
    double missed_pre;    /* ... missed on the prefill leg (KVG_AUTOSCALE_MISS_PREFILL) */
    double missed_dec;    /* ... missed on the decode leg (KVG_AUTOSCALE_MISS_DECODE) */
    double done_n;        /* finished requests whose lengths the engine said */
    double done_prompt;   /* their prompt tokens */
    double done_out;      /* their output tokens */
};

struct kvg_autoscale_obs;

/* A builder of nbuckets ticks (at least 2; a window covers nbuckets - 1)
 * and nsamples TTFT and nsamples ITL samples (the newest kept). *out is the
 * caller's: kvg_autoscale_obs_free. 0 or -ENOMEM / -EINVAL. */
int kvg_autoscale_obs_new(size_t nbuckets, size_t nsamples, struct kvg_autoscale_obs **out);
void kvg_autoscale_obs_free(struct kvg_autoscale_obs *o);

/* Observations into the filling bucket. */
/* A request arrived: its prompt tokens (< 0 unknown). */
void kvg_autoscale_obs_arrive(struct kvg_autoscale_obs *o, double prompt_tokens);
/* n output tokens emitted. */
void kvg_autoscale_obs_tokens(struct kvg_autoscale_obs *o, double n);
/* A prefill found cached of its prompt tokens in a prefix cache. */
void kvg_autoscale_obs_cached(struct kvg_autoscale_obs *o, double cached, double prompt);
/* A first token at t (the caller's clock) after ttft seconds. */
void kvg_autoscale_obs_first(struct kvg_autoscale_obs *o, double t, double ttft);
/* Which targets a finished request missed: a failed one missed both. A
 * prefill pool answers for TTFT, a decode pool for ITL (planner_kvgate.c),
 * so the window keeps each share besides the share over either. */
#define KVG_AUTOSCALE_MISS_TTFT 1u
#define KVG_AUTOSCALE_MISS_ITL 2u
#define KVG_AUTOSCALE_MISS_FAILED (KVG_AUTOSCALE_MISS_TTFT | KVG_AUTOSCALE_MISS_ITL)
/* A PD request's misses by leg, beside the targets. A request waits for a
 * decode replica before its first token, so a TTFT miss is not the prefill
 * pool's alone: it is the prefill leg's when the prefill leg alone (from
 * arrival to its end, queue included) passed the TTFT target or took the
 * larger part of the TTFT, else the decode leg's (the transfer and the wait
 * for and on a decode replica). By the first rule alone, the first misses
 * of a prefill queue (a leg just under the target, then the usual transfer
 * and first step) went to the decode pool, and the prefill pool's
 * correction missed them (bench/results/autoscale-realistic.md). An ITL
 * miss is the decode leg's; a failure the leg it had not passed. LEG: not a
 * miss, the request had a timed prefill leg (its misses are split). */
#define KVG_AUTOSCALE_MISS_PREFILL 4u
#define KVG_AUTOSCALE_MISS_DECODE 8u
#define KVG_AUTOSCALE_LEG 16u

/* The targets a request missed (KVG_AUTOSCALE_MISS_*): failed, or its TTFT
 * / mean ITL (< 0 not seen) over ttft_target / itl_target; and for a PD
 * request (prefill_s >= 0: the seconds from its arrival to its prefill
 * leg's end, 0 when it had none on a prefill replica, INFINITY when the
 * leg never ended) which leg each miss is (KVG_AUTOSCALE_MISS_PREFILL,
 * _DECODE, with KVG_AUTOSCALE_LEG). prefill_s < 0: one leg, no split. A
 * request missed a target iff (miss & KVG_AUTOSCALE_MISS_FAILED) != 0. */
unsigned kvg_autoscale_obs_judge(int failed, double ttft, double itl, double prefill_s,
                                 double ttft_target, double itl_target);

/* A request ended at t: its mean inter-token latency itl (< 0 none: it
 * failed or had one token), the targets it missed (KVG_AUTOSCALE_MISS_*,
 * 0 none), and the prompt / output tokens the engine said (< 0 unknown). */
void kvg_autoscale_obs_finish(struct kvg_autoscale_obs *o, double t, double itl, unsigned miss,
                              double prompt_tokens, double out_tokens);
/* Adds a shard's sums into the filling bucket. */
void kvg_autoscale_obs_add(struct kvg_autoscale_obs *o, const struct kvg_autoscale_obs_sums *s);
/* The tick is over: the filling bucket closes, the next starts empty. */
void kvg_autoscale_obs_next(struct kvg_autoscale_obs *o);

/* The window's observed fields of s, at s->now: the sums of the last
 * ceil(window / tick_s) closed buckets (fewer at the start: only those
 * from the first that observed a request on, so that idle ticks before
 * any traffic are no zero signal; s->unseen until a closed bucket saw a
 * request finish: the lengths, and so the load, are not known before;
 * without any request, only for the first window) and the TTFT
 * and ITL samples stamped after s->now - that span. Rates are per second
 * over the span (0 when no bucket closed yet); isl / osl, the token rates
 * they stand for, cache_hit, slo_miss (and its split, slo_miss_ttft and
 * slo_miss_itl) and the latencies are < 0 when nothing in the window
 * measured them; slo_miss_prefill / slo_miss_decode (shares of all the
 * window's finished requests) are < 0 unless a finished request of the
 * window had a timed prefill leg. A feeder that adds finished sums itself
 * (kvg_autoscale_obs_add) adds missed_ttft and missed_itl with them, or
 * the split reads 0. ISL: the arrivals' prompt tokens
 * when each arrival's was known, else the finished requests' usage; OSL:
 * the finished requests' output tokens. s->partial: fewer closed buckets
 * than the window asks (the first ticks). The rest of s is untouched. */
void kvg_autoscale_obs_window(struct kvg_autoscale_obs *o, double tick_s, double window,
                              struct kvg_autoscale_signals *s);

/* The span a planner's signals cover: window_s when > 0, else its interval
 * (interval_s when > 0, else sla's 180 s and the others' 30 s), at least
 * 30 s. */
double kvg_autoscale_obs_span(const char *planner, double interval_s, double window_s);

/* ---- The feed: many threads record, the tick folds. */
#define KVG_AUTOSCALE_FEED_SHARDS 16
/* TTFT samples and finishes a shard keeps between folds: past that a TTFT
 * is dropped and a finish counted without its latencies. */
#define KVG_AUTOSCALE_FEED_SAMPLES 1024

/* A finished request as the feed keeps it until the fold, which judges it
 * against each pool's own targets. */
struct kvg_autoscale_feed_done {
    double ttft, itl; /* seconds, < 0 not seen */
    double prefill_s; /* its prefill leg (kvg_autoscale_obs_judge), < 0 one leg */
    int failed;       /* the gateway or engine failed it */
};

struct kvg_autoscale_feed_shard {
    pthread_mutex_t mu;
    struct kvg_autoscale_obs_sums sums; /* finished / missed are judged at the fold */
    double ttft[KVG_AUTOSCALE_FEED_SAMPLES];
    size_t nttft;
    struct kvg_autoscale_feed_done done[KVG_AUTOSCALE_FEED_SAMPLES];
    size_t ndone;
};

struct kvg_autoscale_feed {
    struct kvg_autoscale_feed_shard shard[KVG_AUTOSCALE_FEED_SHARDS];
};

/* 0 or a pthread code. kvg_autoscale_feed_destroy after. */
int kvg_autoscale_feed_init(struct kvg_autoscale_feed *f);
void kvg_autoscale_feed_destroy(struct kvg_autoscale_feed *f);
/* From any thread (each thread keeps to one shard). Arguments as the
 * builder's: prompt_tokens / out_tokens / cached < 0 unknown. */
void kvg_autoscale_feed_arrive(struct kvg_autoscale_feed *f, double prompt_tokens);
void kvg_autoscale_feed_first(struct kvg_autoscale_feed *f, double ttft);
/* A request ended: failed, its TTFT and mean ITL (< 0 not seen), its
 * prefill leg (prefill_s as kvg_autoscale_obs_judge's) and the engine's
 * usage (< 0 unknown); output tokens count as emitted now. */
void kvg_autoscale_feed_finish(struct kvg_autoscale_feed *f, int failed, double ttft, double itl,
                               double prefill_s, double prompt_tokens, double out_tokens,
                               double cached);

/* What one fold took out of a feed. */
struct kvg_autoscale_feed_take {
    struct kvg_autoscale_obs_sums sums;
    double *ttft; /* owned by the take: kvg_autoscale_feed_take_free */
    size_t nttft;
    struct kvg_autoscale_feed_done *done;
    size_t ndone;
};

/* Empties every shard into *t. 0 or -ENOMEM (the feed untouched). */
int kvg_autoscale_feed_take(struct kvg_autoscale_feed *f, struct kvg_autoscale_feed_take *t);
void kvg_autoscale_feed_take_free(struct kvg_autoscale_feed_take *t);
/* Adds a take into o's filling bucket, its samples stamped at t: each
 * finish judged by kvg_autoscale_obs_judge against ttft_target /
 * itl_target. The samples happened during the tick the bucket covers: t
 * is best its middle (the tick's end - tick / 2), so that a window of
 * whole ticks takes exactly its buckets' samples, as with samples stamped
 * when they happened (the benchmark), whatever the timer's jitter. */
void kvg_autoscale_obs_fold(struct kvg_autoscale_obs *o, const struct kvg_autoscale_feed_take *tk,
                            double t, double ttft_target, double itl_target);

#endif
