/* The embedded default: without workers, kvgate serve starts a few local
 * simulated engines (`kvgate sim` child processes of its own binary) on free
 * loopback ports and fronts them, so the quick start needs nothing else.
 *
 * They are started with base/proc.h from the main thread (which lives as
 * long as the process), so they get SIGTERM when kvgate serve dies however
 * it dies; on its way out, on an error path too, kvgate serve stops them by
 * PID (SIGTERM, a bounded wait, SIGKILL). While it runs, a timer on its
 * control loop reaps an engine that exits and logs it. */
#ifndef KVG_SERVE_SPAWN_H
#define KVG_SERVE_SPAWN_H

#include <uv.h>

#include "base/proc.h"

#define KVG_SPAWN_MAX 16
#define KVG_SPAWN_MODEL "kvgate-sim"
#define KVG_SPAWN_GRACE_MS 5000 /* from SIGTERM to SIGKILL when stopping */

struct kvg_spawned {
    struct kvg_proc_set procs;
    int n, watching;
    uv_timer_t reap; /* the watch; closed by kvg_spawn_stop */
    char urls[KVG_SPAWN_MAX][64];
    char kv_endpoints[KVG_SPAWN_MAX][64]; /* each publishes its KV events here */
};

/* Starts n simulated engines, each publishing its KV events on a loopback
 * ZMQ endpoint. extra (NULL-terminated, may be NULL) is appended to each
 * `kvgate sim` command line. Call from the main thread (see above). On
 * failure the engines started are stopped again. 0 or a negative code. */
int kvg_spawn_sims(struct kvg_spawned *s, int n, const char *const *extra);
/* Reaps and logs, on `loop`, an engine that exits while the gateway runs.
 * 0 or a libuv code. */
int kvg_spawn_watch(struct kvg_spawned *s, uv_loop_t *loop);
/* Stops every engine still running (blocks up to KVG_SPAWN_GRACE_MS) and
 * closes the watch; idempotent, a no-op when none were started. */
void kvg_spawn_stop(struct kvg_spawned *s);

#endif
