/* A day's arrivals as JSONL (`kvgate bench --scenario diurnal|diurnal-pd
 * --arrivals-out FILE`), for a live replay of the same day against `kvgate
 * serve --autoscale` (bench/autoscale/agree_replay.py). The requests come from the
 * day's one generator (scale_wl.c, kvg__scale_wl_next) with the run's
 * options, so the replay sends what the offline run served. The first
 * line says how to set the live side up alike: the SLO, the engine
 * profile, the planners' profile (an autoscale pool's keys, named as in
 * docs/autoscale.md: the PD day's per role, measured), the clocks and the
 * start-ups. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "bench/scale/scale_int.h"

/* An autoscale pool's keys (autoscale/config.c) for the planner options a
 * into j, its profile pr. */
static void pool_keys(cJSON *j, const struct kvg_autoscale_opts *a,
                      const struct kvg_autoscale_profile *pr)
{
    cJSON_AddNumberToObject(j, "min_replicas", a->min_replicas);
    cJSON_AddNumberToObject(j, "max_replicas", a->max_replicas);
    cJSON_AddNumberToObject(j, "ttft_secs", a->ttft_target_s);
    cJSON_AddNumberToObject(j, "itl_secs", a->itl_target_s);
    cJSON_AddNumberToObject(j, "forecast_window_secs", a->window_s);
    cJSON_AddNumberToObject(j, "down_hold_secs", a->down_hold_s);
    cJSON_AddNumberToObject(j, "headroom", a->headroom);
    cJSON_AddNumberToObject(j, "prefill_tokens_per_sec", pr->prefill_tps);
    cJSON_AddNumberToObject(j, "decode_tokens_per_sec", pr->decode_tps);
    cJSON_AddNumberToObject(j, "ttft_idle_secs", pr->ttft_idle_s);
    cJSON_AddNumberToObject(j, "itl_idle_secs", pr->itl_idle_s);
    cJSON_AddNumberToObject(j, "itl_per_seq_secs", pr->itl_per_seq_s);
}

/* The PD day's two pools, as scale_pd.c's setup() makes them: "pools", a
 * prefill and a decode pool with their role, the replicas each starts
 * with ready and its keys. 0 or -ENOMEM. */
static int pd_pools(cJSON *j, const struct kvg_bench_scale_opts *o, const struct scale_wl *w)
{
    cJSON *arr = cJSON_AddArrayToObject(j, "pools");
    if (!arr) return -ENOMEM;
    for (int pi = 0; pi < 2; pi++) {
        enum kvg_autoscale_role role = pi ? KVG_AUTOSCALE_DECODE : KVG_AUTOSCALE_PREFILL;
        struct kvg_autoscale_opts a;
        kvg__scale_pd_pool_opts(o, role, NULL, &a);
        if (o->pd_headroom[pi] >= 0) a.headroom = o->pd_headroom[pi];
        uint32_t first = kvg__scale_pd_first(o, &a, w);
        if (first < a.min_replicas) first = a.min_replicas;
        if (first < 1) first = 1;
        cJSON *p = cJSON_CreateObject();
        if (!p || !cJSON_AddItemToArray(arr, p)) {
            cJSON_Delete(p);
            return -ENOMEM;
        }
        cJSON_AddStringToObject(p, "name", kvg_autoscale_role_name(role));
        cJSON_AddStringToObject(p, "role", kvg_autoscale_role_name(role));
        cJSON_AddNumberToObject(p, "first_replicas", first);
        pool_keys(p, &a, &a.prof);
    }
    return 0;
}

/* The header line's object (owned by the caller), or NULL on ENOMEM. */
static cJSON *header(const struct kvg_bench_scale_opts *o, int pd, const struct scale_wl *w,
                     uint64_t requests)
{
    const struct kvg_autoscale_opts *a = &o->aopts;
    cJSON *j = cJSON_CreateObject(), *day = cJSON_AddObjectToObject(j, "day");
    if (!day) {
        cJSON_Delete(j);
        return NULL;
    }
    cJSON_AddStringToObject(day, "scenario", pd ? "diurnal-pd" : "diurnal");
    cJSON_AddNumberToObject(day, "seed", (double)o->seed);
    cJSON_AddNumberToObject(day, "day_secs", o->day_s);
    cJSON_AddNumberToObject(day, "mean_rate", o->mean_rate);
    cJSON_AddBoolToObject(day, "stress", o->stress);
    cJSON_AddNumberToObject(day, "requests", (double)requests);
    cJSON_AddNumberToObject(day, "groups", o->groups);
    cJSON_AddNumberToObject(day, "prefix_tokens", o->prefix_len);
    cJSON_AddStringToObject(day, "profile", o->profile.name);
    cJSON_AddNumberToObject(day, "tick_secs", o->tick_s);
    cJSON_AddNumberToObject(day, "scrape_secs", o->scrape_s);
    cJSON_AddNumberToObject(day, "drain_secs", o->drain_s);
    cJSON_AddNumberToObject(day, "timeout_secs", o->timeout_s);
    cJSON_AddNumberToObject(day, "startup_secs", o->startup_fixed_s);
    cJSON_AddNumberToObject(day, "startup_scale", o->startup_scale > 0 ? o->startup_scale : 1);
    cJSON_AddStringToObject(day, "startup_model", o->startup_model);
    cJSON_AddNumberToObject(day, "cold_share", o->cold_share);
    cJSON_AddNumberToObject(day, "fetch_share", o->fetch_share);
    if (pd) {
        if (pd_pools(j, o, w)) {
            cJSON_Delete(j);
            return NULL;
        }
        return j;
    }
    struct kvg_autoscale_profile pr;
    kvg__scale_derive_profile(o, o->knee_rps, &pr);
    cJSON_AddNumberToObject(day, "knee_rps", o->knee_rps);
    /* The replicas the day starts with, ready (scale_des.c's setup). */
    cJSON_AddNumberToObject(day, "first_replicas", kvg__scale_first_replicas(o, w, a->headroom));
    cJSON *pool = cJSON_AddObjectToObject(j, "pool");
    if (!pool) {
        cJSON_Delete(j);
        return NULL;
    }
    pool_keys(pool, a, &pr);
    return j;
}

/* One request's line into f: 0 or -EIO. */
static int line(const struct kvg_bench_scale_opts *o, const struct scale_req *r, FILE *f)
{
    uint32_t shared = o->prefix_len < r->prompt_len ? o->prefix_len : r->prompt_len;
    int n = fprintf(f,
                    "{\"t\":%.6f,\"prompt_tokens\":%u,\"output_tokens\":%u,\"prefix\":%u,"
                    "\"prefix_tokens\":%u,\"client\":%d,\"class\":\"interactive\"}\n",
                    r->arrival, r->prompt_len, r->max_tokens, r->group, shared, r->client);
    return n < 0 ? -EIO : 0;
}

/* Either day's export (pd: the PD day's pools). */
static int arrivals(const struct kvg_bench_scale_opts *o, int pd, FILE *f)
{
    /* Twice over the generator: the header carries the count. */
    struct scale_wl w;
    struct scale_req r;
    int rc = kvg__scale_wl_init(&w, o);
    if (rc) return rc;
    uint64_t n = 0;
    while (!kvg__scale_wl_next(&w, &r)) n++;
    cJSON *h = header(o, pd, &w, n);
    kvg__scale_wl_free(&w);
    char *s = h ? cJSON_PrintUnformatted(h) : NULL;
    cJSON_Delete(h);
    if (!s) return -ENOMEM;
    rc = fprintf(f, "%s\n", s) < 0 ? -EIO : 0;
    cJSON_free(s);
    if (rc || (rc = kvg__scale_wl_init(&w, o))) return rc;
    while (!rc && !kvg__scale_wl_next(&w, &r)) rc = line(o, &r, f);
    kvg__scale_wl_free(&w);
    return rc;
}

int kvg_bench_scale_arrivals(const struct kvg_bench_scale_opts *o, FILE *f)
{
    return o->batch_share > 0 ? KVG_EUNSUPP : arrivals(o, 0, f);
}

int kvg_bench_scale_pd_arrivals(const struct kvg_bench_scale_opts *o, FILE *f)
{
    /* The bench's own experiments are no pool's options a gateway has. */
    if (o->batch_share > 0 || !(o->pd_prefill_tps > 0) || !(o->pd_decode_tps > 0) ||
        o->pd_headroom_from_s > 0 || o->pd_local_wait_s > 0 || o->pd_decode_batched_tokens)
        return KVG_EUNSUPP;
    return arrivals(o, 1, f);
}
