/* Offline mode's runner: every (policy, seed) simulation on a few threads
 * (runs share nothing, so they parallelise perfectly and each stays
 * deterministic), a progress line on stderr while they run, and with
 * --repeat the per-policy medians over the seeds. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "bench/routing/routing.h"

#define MAX_RUNS (KVG_BENCH_MAX_POLICIES * KVG_BENCH_MAX_SEEDS)

struct job {
    const struct kvg_bench_cfg *c;
    size_t nruns;
    struct kvg_bench_summary *res; /* nruns: run i is policy i / repeat, seed i % repeat */
    struct kvg_bench_progress prog[MAX_RUNS];
    int rc[MAX_RUNS];
    char err[MAX_RUNS][256];
    _Atomic size_t next;
    double horizon; /* the load's end, for a percentage */
};

static uint64_t run_seed(const struct kvg_bench_cfg *c, size_t i)
{
    return c->des.seed + i % c->repeat;
}

static void *worker(void *arg)
{
    struct job *j = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&j->next, 1);
        if (i >= j->nruns) return NULL;
        struct kvg_bench_des_opts o = j->c->des;
        snprintf(o.policy, sizeof o.policy, "%s", j->c->policies[i / j->c->repeat]);
        o.seed = run_seed(j->c, i);
        o.wl.seed = o.seed;
        o.progress = &j->prog[i];
        j->rc[i] = kvg_bench_des_run(&o, &j->res[i], j->err[i], sizeof j->err[i]);
        atomic_store(&j->prog[i].state, 2);
    }
}

static void show(struct job *j, int final, int tty)
{
    char line[2048];
    size_t n = 0, done = 0;
    n += (size_t)snprintf(line + n, sizeof line - n, "bench offline:");
    for (size_t i = 0; i < j->nruns; i++) {
        struct kvg_bench_progress *p = &j->prog[i];
        int st = atomic_load(&p->state);
        done += st == 2;
        if (st != 1 || n > sizeof line - 120) continue;
        n += (size_t)snprintf(
            line + n, sizeof line - n, " %s/seed %llu t=%.0fs (%.0f%%) %llu reqs;",
            j->c->policies[i / j->c->repeat], (unsigned long long)run_seed(j->c, i),
            atomic_load(&p->vt_ms) / 1000.0, 100.0 * (atomic_load(&p->vt_ms) / 1000.0) / j->horizon,
            (unsigned long long)atomic_load(&p->issued));
    }
    if (n < sizeof line - 40)
        snprintf(line + n, sizeof line - n, " %zu/%zu runs done", done, j->nruns);
    if (tty)
        fprintf(stderr, "\r\033[K%s%s", line, final ? "\n" : "");
    else
        fprintf(stderr, "%s\n", line);
    fflush(stderr);
}

int kvg_bench_run_offline(const struct kvg_bench_cfg *c, struct kvg_bench_summary *out)
{
    struct job *j = calloc(1, sizeof *j);
    if (!j) return -ENOMEM;
    j->c = c;
    j->nruns = c->npolicies * c->repeat;
    j->res = calloc(j->nruns, sizeof *j->res);
    if (!j->res || j->nruns > MAX_RUNS) {
        free(j->res);
        free(j);
        return -ENOMEM;
    }
    double h = 0;
    for (size_t i = 0; i < c->des.wl.nstages; i++) h += c->des.wl.stage[i].secs;
    j->horizon = h > 0 ? h : 1;
    int nt = c->jobs > 0 ? c->jobs : 1;
    if ((size_t)nt > j->nruns) nt = (int)j->nruns;
    pthread_t th[256];
    int started = 0;
    for (int i = 0; i < nt; i++) {
        if (pthread_create(&th[i], NULL, worker, j)) break;
        started++;
    }
    if (!started) worker(j);
    int tty = isatty(2);
    /* Progress: every half second on a terminal, every 10 s into a log. */
    struct timespec ts = {0, 500 * 1000 * 1000};
    for (int tick = 0; started; tick++) {
        int all = 1;
        for (size_t i = 0; i < j->nruns; i++) all &= atomic_load(&j->prog[i].state) == 2;
        if (all) break;
        nanosleep(&ts, NULL);
        if (!c->quiet && (tty || tick % 20 == 19)) show(j, 0, tty);
    }
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    if (!c->quiet) show(j, 1, tty);
    int rc = 0;
    for (size_t i = 0; i < j->nruns; i++)
        if (j->rc[i]) {
            fprintf(stderr, "kvgate bench: %s (seed %llu): %s\n", c->policies[i / c->repeat],
                    (unsigned long long)run_seed(c, i), j->err[i]);
            if (!rc) rc = j->rc[i];
        }
    for (size_t p = 0; p < c->npolicies && !rc; p++) {
        const struct kvg_bench_summary *runs = &j->res[p * c->repeat];
        if (runs[0].status) { /* not in this build: every seed says the same */
            out[p] = runs[0];
            fprintf(stderr, "kvgate bench: %s\n", out[p].note);
            continue;
        }
        uint64_t seeds[KVG_BENCH_MAX_SEEDS];
        for (size_t k = 0; k < c->repeat; k++) seeds[k] = run_seed(c, p * c->repeat + k);
        kvg_bench_summary_median(runs, seeds, c->repeat, &out[p]);
    }
    free(j->res);
    free(j);
    return rc;
}
