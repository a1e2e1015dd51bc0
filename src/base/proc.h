/* Child processes: started with fork/exec, tied to their parent's life,
 * stopped by PID (never by name).
 *
 * Every child gets PR_SET_PDEATHSIG(SIGTERM): the kernel sends it SIGTERM
 * when its parent goes, however it goes (a return from main on an error
 * path, a crash, SIGKILL), so no engine is left holding its port. The
 * kernel ties the signal to the *thread* that forked, not to the process:
 * a child forked from a thread that then exits gets SIGTERM at that moment
 * although the process lives on. So fork only from a thread that lives as
 * long as the process: the main thread (kvgate serve's control loop, which
 * also runs the local actuator's ticks; the bench's main thread).
 *
 * The child starts with default signal dispositions and an empty signal
 * mask whatever the parent had (kvgate serve ignores SIGPIPE, libuv blocks
 * signals for moments): an ignored or blocked SIGTERM would make both the
 * death signal and kvg_proc_stop_all's first step ineffective. */
#ifndef KVG_BASE_PROC_H
#define KVG_BASE_PROC_H

#include <sys/types.h>

/* kvg_proc_start flags. */
#define KVG_PROC_PATH 1u       /* file without '/' is looked up in $PATH (execvp) */
#define KVG_PROC_STDIN_NULL 2u /* stdin from /dev/null instead of the parent's */
#define KVG_PROC_OUT_TO_ERR 4u /* without a log: stdout goes to the parent's stderr */

/* Starts file with argv (argv[0] included, NULL-terminated). log NULL:
 * stdout and stderr are the parent's (see KVG_PROC_OUT_TO_ERR); else both
 * are appended to that file (created 0644). The child's PID goes to *pid;
 * the caller reaps it (kvg_proc_reap, or a set below). An exec that fails
 * shows as exit status 127. 0 or -errno. */
int kvg_proc_start(const char *file, char *const *argv, const char *log, unsigned flags,
                   pid_t *pid);
/* Non-blocking: 1 once pid exited and is reaped (its wait status in
 * *wstatus when not NULL), 0 while it runs, -errno (-ECHILD: not a child
 * of this process, or reaped already). */
int kvg_proc_reap(pid_t pid, int *wstatus);

/* A record of children by PID, for callers that stop them all together. */
#define KVG_PROC_MAX 72

struct kvg_proc_set {
    pid_t pid[KVG_PROC_MAX];  /* negated once reaped: ours, never signalled again */
    int status[KVG_PROC_MAX]; /* wait status, once reaped */
    int n;
};

/* kvg_proc_start with env_add's "NAME=value" entries (NULL-terminated, may
 * be NULL) in the child's environment beside the parent's (replacing one of
 * the same name); the parent's own environment is not touched. */
int kvg_proc_start_env(const char *file, char *const *argv, const char *const *env_add,
                       const char *log, unsigned flags, pid_t *pid);

/* kvg_proc_start, the PID recorded in s. 0, -ENOSPC when s is full, or
 * -errno. */
int kvg_proc_spawn(struct kvg_proc_set *s, const char *file, char *const *argv, const char *log,
                   unsigned flags);
/* 1 while the i-th child runs, 0 once it exited (reaped; its wait status in
 * s->status[i]). */
int kvg_proc_alive(struct kvg_proc_set *s, int i);
/* Stops every recorded child still running: SIGTERM, up to grace_ms for
 * all of them together, then SIGKILL; each is reaped. s is empty after. */
void kvg_proc_stop_all(struct kvg_proc_set *s, int grace_ms);

/* A TCP port on 127.0.0.1 that was free a moment ago, below the kernel's
 * ephemeral range so that no outgoing connection takes it before the
 * caller's child binds it (another listener still may); never one this
 * process was handed among its last 64. A negative code when none is found. */
int kvg_proc_free_port(void);
/* Blocks until GET http://127.0.0.1:port/path answers `status`, up to
 * timeout_ms (each try up to 1 s more). stop (may be NULL) is asked between
 * tries: nonzero gives up with -EINTR. 0, KVG_ETIMEOUT or -EINTR. */
int kvg_proc_wait_http(int port, const char *path, int status, int timeout_ms, int (*stop)(void));

#endif
