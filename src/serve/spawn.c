/* Child simulated engines for the embedded default; see spawn.h. */
#include "serve/spawn.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "base/err.h"
#include "base/log.h"

int kvg_spawn_sims(struct kvg_spawned *s, int n, const char *const *extra)
{
    char exe[4096];
    size_t exelen = sizeof exe;
    memset(s, 0, sizeof *s);
    int rc = uv_exepath(exe, &exelen);
    if (rc) return rc;
    if (n > KVG_SPAWN_MAX) n = KVG_SPAWN_MAX;
    for (int i = 0; i < n; i++) {
        int port = kvg_proc_free_port(), evport = kvg_proc_free_port();
        if ((rc = port < 0 ? port : evport < 0 ? evport : 0)) goto fail;
        char ports[16], seed[16];
        snprintf(ports, sizeof ports, "%d", port);
        snprintf(seed, sizeof seed, "%d", i + 1);
        snprintf(s->kv_endpoints[i], sizeof s->kv_endpoints[i], "tcp://127.0.0.1:%d", evport);
        char *args[40] = {exe,
                          "sim",
                          "--port",
                          ports,
                          "--model",
                          KVG_SPAWN_MODEL,
                          "--seed",
                          seed,
                          "--log-level",
                          "warn",
                          "--kv-events-endpoint",
                          s->kv_endpoints[i]};
        int k = 12;
        for (int e = 0; extra && extra[e] && k < 39; e++) args[k++] = (char *)extra[e];
        args[k] = NULL;
        /* The engines' lines go to the gateway's stderr; its stdout stays
         * for its own "ready" banner. */
        if ((rc = kvg_proc_spawn(&s->procs, exe, args, NULL,
                                 KVG_PROC_STDIN_NULL | KVG_PROC_OUT_TO_ERR))) {
            KVG_ERROR("cannot start a simulated engine: %s", kvg_strerror(rc));
            goto fail;
        }
        snprintf(s->urls[i], sizeof s->urls[i], "http://127.0.0.1:%d", port);
        s->n++;
    }
    return 0;
fail:
    kvg_spawn_stop(s);
    return rc;
}

/* An engine that exits while the gateway runs is reaped here; one that did
 * not go by SIGTERM (the stop's, or a parent-death one) is worth a line. */
static void on_reap(uv_timer_t *t)
{
    struct kvg_spawned *s = t->data;
    for (int i = 0; i < s->procs.n; i++) {
        pid_t pid = s->procs.pid[i];
        if (pid <= 0 || kvg_proc_alive(&s->procs, i)) continue;
        int st = s->procs.status[i];
        int status = WIFEXITED(st) ? WEXITSTATUS(st) : 0, sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
        if (sig != SIGTERM && (status || sig))
            KVG_WARN("simulated engine (pid %d) exited: status %d, signal %d", (int)pid, status,
                     sig);
    }
}

int kvg_spawn_watch(struct kvg_spawned *s, uv_loop_t *loop)
{
    if (!s->n) return 0;
    int rc = uv_timer_init(loop, &s->reap);
    if (rc) return rc;
    s->reap.data = s;
    s->watching = 1;
    uv_unref((uv_handle_t *)&s->reap); /* never what keeps the loop running */
    return uv_timer_start(&s->reap, on_reap, 1000, 1000);
}

void kvg_spawn_stop(struct kvg_spawned *s)
{
    if (s->watching) {
        uv_close((uv_handle_t *)&s->reap, NULL);
        s->watching = 0;
    }
    kvg_proc_stop_all(&s->procs, KVG_SPAWN_GRACE_MS);
}
