/* The embedded default: without workers, kvgate serve starts a few local
 * simulated engines (`kvgate sim` child processes of its own binary) on free
 * loopback ports and fronts them, so the quick start needs nothing else. The
 * children are stopped (SIGTERM, then waited for) when the gateway stops. */
#ifndef KVG_SERVE_SPAWN_H
#define KVG_SERVE_SPAWN_H

#include <uv.h>

#define KVG_SPAWN_MAX 16
#define KVG_SPAWN_MODEL "kvgate-sim"

struct kvg_spawned {
    uv_process_t proc[KVG_SPAWN_MAX];
    int n, alive;
    char urls[KVG_SPAWN_MAX][64];
    char kv_endpoints[KVG_SPAWN_MAX][64]; /* each publishes its KV events here */
};

/* Starts n simulated engines on `loop`, each publishing its KV events on a
 * loopback ZMQ endpoint. extra (NULL-terminated, may be NULL) is appended
 * to each `kvgate sim` command line. 0 or a negative code. */
int kvg_spawn_sims(struct kvg_spawned *s, uv_loop_t *loop, int n, const char *const *extra);
/* Sends SIGTERM to every child still running; their exit callbacks close the
 * handles. */
void kvg_spawn_stop(struct kvg_spawned *s);

#endif
