/* Processes the live bench starts (`kvgate sim`, `kvgate serve`) and stops.
 *
 * Every child is recorded by PID and stopped by PID (SIGTERM, a bounded
 * wait, then SIGKILL), never by name. Children also get PR_SET_PDEATHSIG, so
 * they do not outlive a bench that is killed outright. SIGINT and SIGTERM
 * set a flag (kvg_bench_interrupted) instead of killing the bench, so that it
 * can stop its children first; every wait here checks it. */
#ifndef KVG_BENCH_PROCS_H
#define KVG_BENCH_PROCS_H

#include <sys/types.h>

#define KVG_BENCH_MAX_PROCS 72

struct kvg_bench_procs {
    pid_t pid[KVG_BENCH_MAX_PROCS];
    int n;
};

/* Installs the SIGINT/SIGTERM flag handler (idempotent). */
void kvg_bench_catch_signals(void);
/* Nonzero once SIGINT or SIGTERM arrived. */
int kvg_bench_interrupted(void);

/* Starts bin with argv (argv[0] included, NULL-terminated), stdout and
 * stderr appended to log (NULL: /dev/null). The PID is recorded in p.
 * 0, -ENOSPC when p is full, or -errno. */
int kvg_bench_spawn(struct kvg_bench_procs *p, const char *bin, char *const *argv, const char *log);
/* 1 while the i-th child runs, 0 once it exited (it is reaped). */
int kvg_bench_proc_alive(struct kvg_bench_procs *p, int i);
/* Stops every recorded child (SIGTERM, up to grace_ms, then SIGKILL) and
 * reaps it; p is empty afterwards. */
void kvg_bench_procs_stop(struct kvg_bench_procs *p, int grace_ms);

/* A TCP port on 127.0.0.1 that was free a moment ago (0 on failure). */
int kvg_bench_free_port(void);
/* Blocks until GET http://127.0.0.1:port/path answers `status`, up to
 * timeout_ms. 0, KVG_ETIMEOUT, or -EINTR when interrupted. */
int kvg_bench_wait_http(int port, const char *path, int status, int timeout_ms);

#endif
