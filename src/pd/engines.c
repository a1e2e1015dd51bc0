/* Detection of a restarted prefill engine, from the router's side.
 *
 * A vLLM prefill names its engine in every answer (kv_transfer_params'
 * remote_engine_id, a new one at every start; under data parallelism
 * "{base}_dp{rank}", one per URL@rank worker). The decode pulls the blocks
 * from that engine; a restarted engine holds none of the old one's and the
 * pull fails (vLLM's default kv_load_failure_policy "fail": a 500). So the
 * router remembers each prefill worker's last engine id, and a decode about
 * to be sent again (a retry after a decode failure) whose prefill ran on an
 * engine the worker no longer runs is not sent to pull from the dead one:
 * its prefill is run again (kvg_pd_decode_recheck). The table is small (one
 * entry per prefill worker seen, bounded) and shared by the loop threads
 * under a mutex. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "pd/pd_int.h"

#define MAX_ENGINES 1024

struct engine {
    char url[512];
    char id[64];
};

struct kvg_pd_engines {
    pthread_mutex_t mu;
    size_t n, next; /* next: the entry a full table overwrites */
    struct engine e[MAX_ENGINES];
};

int kvg__pd_engines_new(struct kvg_pd *pd)
{
    struct kvg_pd_engines *t = calloc(1, sizeof *t);
    if (!t) return -ENOMEM;
    pthread_mutex_init(&t->mu, NULL);
    pd->engines = t;
    return 0;
}

void kvg__pd_engines_free(struct kvg_pd *pd)
{
    struct kvg_pd_engines *t = pd->engines;
    if (!t) return;
    pthread_mutex_destroy(&t->mu);
    free(t);
    pd->engines = NULL;
}

/* Under t->mu: url's entry, or NULL. */
static struct engine *find(struct kvg_pd_engines *t, const char *url)
{
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->e[i].url, url)) return &t->e[i];
    return NULL;
}

void kvg__pd_engine_seen(struct kvg_pd *pd, struct kvg_pd_req *r)
{
    const char *url = r->prefill_url, *engine_id = r->engine_id;
    struct kvg_pd_engines *t = pd->engines;
    if (!t || !engine_id[0]) return;
    char old[64] = "";
    pthread_mutex_lock(&t->mu);
    struct engine *e = find(t, url);
    if (!e) {
        e = t->n < MAX_ENGINES ? &t->e[t->n++] : &t->e[t->next++ % MAX_ENGINES];
        snprintf(e->url, sizeof e->url, "%s", url);
        e->id[0] = 0;
    }
    if (strcmp(e->id, engine_id)) {
        snprintf(old, sizeof old, "%s", e->id);
        snprintf(e->id, sizeof e->id, "%s", engine_id);
    }
    pthread_mutex_unlock(&t->mu);
    if (!old[0]) return;                         /* first seen, or unchanged */
    kvg_pd_series_inc(r->ms, KVG_PD_S_RESTARTS); /* the model of the request that saw it */
    KVG_WARN("pd: prefill %s restarted (engine id %s, was %s): the blocks it held are gone; "
             "decodes waiting on them get their prefill run again",
             url, engine_id, old);
}

int kvg_pd_engine_id(struct kvg_pd *pd, const char *url, char *out, size_t cap)
{
    struct kvg_pd_engines *t = pd->engines;
    if (cap) out[0] = 0;
    if (!t) return 0;
    pthread_mutex_lock(&t->mu);
    struct engine *e = find(t, url);
    if (e) snprintf(out, cap, "%s", e->id);
    pthread_mutex_unlock(&t->mu);
    return e != NULL;
}

int kvg_pd_decode_recheck(struct kvg_pd *pd, struct kvg_pd_req *r)
{
    if (r->state != KVG_PD_DECODE || r->decision != KVG_PD_PREFILL_DECODE || r->concurrent ||
        !r->engine_id[0])
        return 0;
    char now[64];
    if (!kvg_pd_engine_id(pd, r->prefill_url, now, sizeof now) || !strcmp(now, r->engine_id))
        return 0;
    KVG_INFO("pd: the decode's blocks were on %s's engine %s, which restarted (now %s): its "
             "prefill runs again",
             r->prefill_url, r->engine_id, now);
    kvg_pd_series_inc(r->ms, KVG_PD_S_RERUNS);
    kvg_pd_req_free(r); /* kvg_pd_begin starts the buffers afresh */
    r->engine_id[0] = 0;
    r->state = KVG_PD_DECIDE;
    return 1;
}
