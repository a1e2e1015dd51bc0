/* Speed benchmark of the simulated engine model: 8 engines of the
 * qwen3-32b-h100-tp2 profile serve the llm-d "KV-cache wins you can see"
 * workload (llm-d.ai/blog/kvcache-wins-you-can-see) in virtual time, routed
 * at random, and the program reports the wall and CPU time that took. The
 * target is under 30 s on one core for the ~17,000 requests x 1,000 output
 * tokens, with KV events recorded and msgpack-encoded as a `kvgate sim` or
 * the offline benchmark would (--no-events to leave them out).
 *
 * Workload: 150 groups x 5 prompts; a prompt is its group's 6,000 random
 * token ids followed by its own 1,200; the 750 prompts are shuffled once
 * and issued cyclically; max_tokens 1,000 with ignore_eos; Poisson arrivals
 * in the report's 17 stages (warm-up 15 QPS x 50 s, then 3 .. 60 QPS).
 *
 * It also prints what the simulated cluster did (TTFT, ITL, throughput,
 * hit rate) so profiles can be compared with the report's random-routing
 * row; those figures are the model's, not a measurement of anything real.
 *
 *   llmd_8x [--profile NAME] [--engines N] [--seed S] [--output N] [--no-events]
 * (--output changes the 1,000 output tokens per request, for calibration.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "base/util.h"
#include "sim/kv_events.h"
#include "sim/sim.h"

#define NGROUPS 150
#define NUSERS 5
#define PREFIX 6000
#define QUESTION 1200
#define PROMPT (PREFIX + QUESTION)
#define VOCAB 151936
#define MAX_ENGINES 64

static const struct {
    double qps, secs;
} g_stages[] = {{15, 50}, {3, 20},  {10, 20}, {15, 20}, {20, 38}, {22, 34},
                {25, 30}, {30, 25}, {35, 21}, {40, 38}, {43, 36}, {46, 33},
                {49, 30}, {52, 29}, {55, 27}, {57, 26}, {60, 25}};

struct req {
    double arrival, last_tok, ttft;
    uint32_t prompt;
};

struct eng {
    struct kvg_sim *e;
    double busy_until; /* < 0: idle, no step in flight */
};

struct bench {
    struct req *reqs;
    size_t nreq;
    uint32_t *prompts; /* 750 x PROMPT */
    struct eng eng[MAX_ENGINES];
    int neng, events;
    uint32_t output;
    double itl_sum, last_finish;
    uint64_t itl_n, out_tokens, done, event_bytes, nevents;
};

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

static int make_workload(struct bench *b, uint64_t seed)
{
    struct kvg_rng rng;
    kvg_rng_seed(&rng, seed);
    b->prompts = malloc((size_t)NGROUPS * NUSERS * PROMPT * sizeof *b->prompts);
    uint32_t order[NGROUPS * NUSERS];
    if (!b->prompts) return -1;
    for (int g = 0; g < NGROUPS; g++) {
        uint32_t *first = b->prompts + (size_t)g * NUSERS * PROMPT;
        for (int i = 0; i < PREFIX; i++) first[i] = (uint32_t)kvg_rng_below(&rng, VOCAB);
        for (int u = 0; u < NUSERS; u++) {
            uint32_t *p = first + (size_t)u * PROMPT;
            if (u) memcpy(p, first, PREFIX * sizeof *p);
            for (int i = 0; i < QUESTION; i++) p[PREFIX + i] = (uint32_t)kvg_rng_below(&rng, VOCAB);
        }
    }
    for (uint32_t i = 0; i < NGROUPS * NUSERS; i++) order[i] = i;
    for (uint32_t i = NGROUPS * NUSERS - 1; i > 0; i--) {
        uint32_t j = (uint32_t)kvg_rng_below(&rng, i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    size_t cap = 20000;
    b->reqs = calloc(cap, sizeof *b->reqs);
    if (!b->reqs) return -1;
    double t0 = 0;
    for (size_t s = 0; s < sizeof g_stages / sizeof g_stages[0]; s++) {
        double t = t0, end = t0 + g_stages[s].secs;
        for (;;) {
            t += -log1p(-kvg_rng_double(&rng)) / g_stages[s].qps;
            if (t >= end) break;
            if (b->nreq == cap) return -1;
            b->reqs[b->nreq].arrival = t;
            b->reqs[b->nreq].prompt = order[b->nreq % (NGROUPS * NUSERS)];
            b->nreq++;
        }
        t0 = end;
    }
    return 0;
}

static int start_step(struct bench *b, struct eng *g, double t)
{
    struct kvg_sim_step st;
    if (kvg_sim_step(g->e, t, &st)) return -1;
    double end = t + st.duration;
    for (size_t i = 0; i < st.n_updates; i++) {
        const struct kvg_sim_update *u = &st.updates[i];
        struct req *r = &b->reqs[u->id];
        if (!(u->flags & KVG_SIM_UP_TOKEN)) continue;
        b->out_tokens++;
        if (u->flags & KVG_SIM_UP_FIRST) {
            r->ttft = end - r->arrival;
        } else {
            b->itl_sum += end - r->last_tok;
            b->itl_n++;
        }
        r->last_tok = end;
        if (u->flags & KVG_SIM_UP_FINISHED) {
            b->done++;
            b->last_finish = end;
        }
    }
    if (b->events && st.n_events) {
        struct kvg_sim_events ev;
        kvg_sim_events(g->e, &ev);
        void *buf;
        size_t len;
        if (kvg_sim_kv_encode(ev.ev, ev.n, end, 0, KVG_SIM_KV_ARRAY, &buf, &len)) return -1;
        b->event_bytes += len;
        b->nevents += ev.n;
        free(buf);
        kvg_sim_events_clear(g->e);
    }
    g->busy_until = end;
    return 0;
}

/* The discrete-event loop: the next event is either an arrival or the end
 * of some engine's step; an engine steps again at once while it has work. */
static int simulate(struct bench *b, uint64_t seed)
{
    struct kvg_rng route;
    kvg_rng_seed(&route, seed ^ 0x5eed);
    size_t next = 0;
    for (;;) {
        int k = -1;
        for (int i = 0; i < b->neng; i++)
            if (b->eng[i].busy_until >= 0 && (k < 0 || b->eng[i].busy_until < b->eng[k].busy_until))
                k = i;
        double te = k >= 0 ? b->eng[k].busy_until : 1e300;
        if (next < b->nreq && b->reqs[next].arrival <= te) {
            struct req *r = &b->reqs[next];
            struct eng *g = &b->eng[kvg_rng_below(&route, (uint64_t)b->neng)];
            struct kvg_sim_request q = {.id = next,
                                        .prompt = b->prompts + (size_t)r->prompt * PROMPT,
                                        .prompt_len = PROMPT,
                                        .max_tokens = b->output,
                                        .ignore_eos = 1,
                                        .arrival = r->arrival};
            if (kvg_sim_submit(g->e, &q)) return -1;
            next++;
            if (g->busy_until < 0 && start_step(b, g, r->arrival)) return -1;
            continue;
        }
        if (k < 0) return 0; /* no arrivals left, every engine idle */
        struct eng *g = &b->eng[k];
        if (kvg_sim_idle(g->e))
            g->busy_until = -1;
        else if (start_step(b, g, te))
            return -1;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const char *profile = "qwen3-32b-h100-tp2";
    uint64_t seed = 1, neng = 8;
    struct bench b;
    memset(&b, 0, sizeof b);
    b.events = 1;
    b.output = 1000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--no-events"))
            b.events = 0;
        else if (!strcmp(argv[i], "--profile") && i + 1 < argc)
            profile = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            kvg_parse_u64(argv[++i], &seed);
        else if (!strcmp(argv[i], "--engines") && i + 1 < argc)
            kvg_parse_u64(argv[++i], &neng);
        else if (!strcmp(argv[i], "--output") && i + 1 < argc) {
            uint64_t o = 0;
            if (kvg_parse_u64(argv[++i], &o) || o < 1 || o > 30000) return 2;
            b.output = (uint32_t)o;
        } else {
            fprintf(stderr, "usage: llmd_8x [--profile NAME] [--engines N] [--seed S] [--output N] "
                            "[--no-events]\n");
            return 2;
        }
    }
    const struct kvg_sim_profile *p = kvg_sim_profile_find(profile);
    if (!p || neng < 1 || neng > MAX_ENGINES) {
        fprintf(stderr, "llmd_8x: unknown profile or bad engine count\n");
        return 2;
    }
    if (make_workload(&b, seed)) {
        fprintf(stderr, "llmd_8x: out of memory\n");
        return 1;
    }
    b.neng = (int)neng;
    for (int i = 0; i < b.neng; i++) {
        struct kvg_sim_config c;
        kvg_sim_config_init(&c, p);
        c.seed = seed + (uint64_t)i;
        c.emit_events = b.events;
        if (kvg_sim_create(&c, &b.eng[i].e)) return 1;
        b.eng[i].busy_until = -1;
    }
    uint64_t w0 = kvg_now_ns();
    double c0 = cpu_seconds();
    if (simulate(&b, seed)) {
        fprintf(stderr, "llmd_8x: simulation failed\n");
        return 1;
    }
    double wall = (double)(kvg_now_ns() - w0) * 1e-9, cpu = cpu_seconds() - c0;

    uint64_t steps = 0, pre = 0, q = 0, h = 0;
    for (int i = 0; i < b.neng; i++) {
        struct kvg_sim_metrics m;
        kvg_sim_get_metrics(b.eng[i].e, &m);
        steps += m.steps;
        pre += m.num_preemptions;
        q += m.prefix_cache_queries;
        h += m.prefix_cache_hits;
        kvg_sim_free(b.eng[i].e);
    }
    double *tt = malloc(b.nreq * sizeof *tt), sum = 0;
    size_t warm = 0; /* requests of the warm-up stage, left out as the report does */
    while (warm < b.nreq && b.reqs[warm].arrival < g_stages[0].secs) warm++;
    size_t n = 0;
    for (size_t i = warm; i < b.nreq && tt; i++) sum += tt[n++] = b.reqs[i].ttft;
    if (!tt || !n) return 1;
    qsort(tt, n, sizeof *tt, cmp_double);
    printf("profile %s, %d engines, %zu requests (%zu after warm-up), %llu tokens out%s\n", profile,
           b.neng, b.nreq, n, (unsigned long long)b.out_tokens,
           b.events ? ", KV events encoded" : "");
    printf("wall %.2f s, cpu %.2f s, %llu steps, %.2f us per step\n", wall, cpu,
           (unsigned long long)steps, wall * 1e6 / (double)steps);
    if (b.events)
        printf("events %llu, %.1f MB of msgpack\n", (unsigned long long)b.nevents,
               (double)b.event_bytes / 1e6);
    printf("simulated: TTFT mean %.3f s, p50 %.3f s, p90 %.3f s; ITL mean %.4f s; "
           "output %.0f tok/s over %.0f s; prefix hit %.1f%%; preemptions %llu; done %llu\n",
           sum / (double)n, tt[n / 2], tt[(size_t)(n * 0.9)], b.itl_sum / (double)b.itl_n,
           (double)b.out_tokens / b.last_finish, b.last_finish,
           q ? 100.0 * (double)h / (double)q : 0, (unsigned long long)pre,
           (unsigned long long)b.done);
    free(tt);
    free(b.reqs);
    free(b.prompts);
    return b.done == b.nreq ? 0 : 1;
}
