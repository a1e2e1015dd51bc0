/* Child processes started and stopped by PID; see proc.h. */
#include "base/proc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "base/util.h"

/* fd becomes the child's descriptor `to`; dup2 onto itself would keep
 * O_CLOEXEC, so that case clears the flag instead. */
static void child_fd(int fd, int to)
{
    if (fd == to)
        fcntl(to, F_SETFD, 0);
    else
        dup2(fd, to);
}

/* Between fork and exec: only async-signal-safe calls (the parent may
 * have other threads, whose locks the child inherits held). */
static void child(pid_t parent, const char *file, char *const *argv, char *const *envp, int out,
                  int in, unsigned flags)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++) sigaction(sig, &dfl, NULL); /* some refuse: fine */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    /* The parent may have died between fork and prctl: then nothing will
     * ever send the signal. */
    if (getppid() != parent) _exit(127);
    if (in >= 0) child_fd(in, 0);
    if (out >= 0) {
        child_fd(out, 1);
        child_fd(out, 2);
    } else if (flags & KVG_PROC_OUT_TO_ERR) {
        dup2(2, 1);
    }
    if (flags & KVG_PROC_PATH)
        execvpe(file, argv, envp);
    else
        execve(file, argv, envp);
    _exit(127);
}

int kvg_proc_start(const char *file, char *const *argv, const char *log, unsigned flags, pid_t *pid)
{
    return kvg_proc_start_env(file, argv, NULL, log, flags, pid);
}

/* The parent's environment with env_add's entries added (one of the same
 * name replaced): a new array of borrowed strings (the caller frees the
 * array), made before forking (the child may not allocate). */
static char **merged_env(const char *const *env_add)
{
    extern char **environ;
    size_t n = 0, k = 0;
    while (environ[n]) n++;
    while (env_add && env_add[k]) k++;
    char **e = malloc((n + k + 1) * sizeof *e);
    if (!e) return NULL;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int replaced = 0;
        for (size_t j = 0; j < k && !replaced; j++) {
            const char *eq = strchr(env_add[j], '=');
            size_t nl = eq ? (size_t)(eq - env_add[j]) + 1 : strlen(env_add[j]);
            replaced = !strncmp(environ[i], env_add[j], nl);
        }
        if (!replaced) e[m++] = environ[i];
    }
    for (size_t j = 0; j < k; j++) e[m++] = (char *)env_add[j];
    e[m] = NULL;
    return e;
}

int kvg_proc_start_env(const char *file, char *const *argv, const char *const *env_add,
                       const char *log, unsigned flags, pid_t *pid)
{
    /* Files are opened before forking: the child only dup2s and execs. */
    int out = -1, in = -1, rc;
    char **envp = merged_env(env_add);
    if (!envp) return -ENOMEM;
    if (log && (out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) < 0)
        return -errno;
    if ((flags & KVG_PROC_STDIN_NULL) && (in = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
        rc = -errno;
        goto out;
    }
    pid_t parent = getpid();
    pid_t p = fork();
    if (p < 0) {
        rc = -errno;
        goto out;
    }
    if (p == 0) child(parent, file, argv, envp, out, in, flags);
    *pid = p;
    rc = 0;
out:
    if (out >= 0) close(out);
    if (in >= 0) close(in);
    free(envp);
    return rc;
}

int kvg_proc_reap(pid_t pid, int *wstatus)
{
    int st = 0;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r < 0) return -errno;
    if (r == 0) return 0;
    if (wstatus) *wstatus = st;
    return 1;
}

int kvg_proc_spawn(struct kvg_proc_set *s, const char *file, char *const *argv, const char *log,
                   unsigned flags)
{
    if (s->n == KVG_PROC_MAX) return -ENOSPC;
    pid_t pid;
    int rc = kvg_proc_start(file, argv, log, flags, &pid);
    if (rc) return rc;
    s->status[s->n] = 0;
    s->pid[s->n++] = pid;
    return 0;
}

int kvg_proc_alive(struct kvg_proc_set *s, int i)
{
    if (i < 0 || i >= s->n || s->pid[i] <= 0) return 0;
    int rc = kvg_proc_reap(s->pid[i], &s->status[i]);
    if (rc == 0) return 1;
    s->pid[i] = -s->pid[i];
    return 0;
}

void kvg_proc_stop_all(struct kvg_proc_set *s, int grace_ms)
{
    for (int i = 0; i < s->n; i++)
        if (s->pid[i] > 0) kill(s->pid[i], SIGTERM);
    uint64_t until = kvg_now_ms() + (uint64_t)(grace_ms > 0 ? grace_ms : 0);
    struct timespec ts = {0, 20 * 1000 * 1000};
    for (;;) {
        int left = 0;
        for (int i = 0; i < s->n; i++) left += kvg_proc_alive(s, i);
        if (!left || kvg_now_ms() >= until) break;
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < s->n; i++)
        if (s->pid[i] > 0) {
            kill(s->pid[i], SIGKILL);
            waitpid(s->pid[i], NULL, 0);
        }
    s->n = 0;
}

/* The kernel's ephemeral range's first port (outgoing connections take their
 * local ports from that range), 32768 when unreadable. */
static int ephemeral_low(void)
{
    int lo = 32768, hi = 0;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");
    if (f) {
        if (fscanf(f, "%d %d", &lo, &hi) != 2 || lo < 1024 || lo > 65535) lo = 32768;
        fclose(f);
    }
    return lo;
}

/* 1 when nothing is bound to 127.0.0.1:port. No SO_REUSEADDR: a port that
 * still has a connection in TIME_WAIT counts as taken. */
static int port_free(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

/* A random port below the ephemeral range rather than bind(port 0): port 0
 * hands out a port from that range, which any outgoing connect() may take
 * before the caller's child binds it (a CI failure of
 * tests/integration/pd_body_exact.sh). The last ports handed out are
 * remembered so that one process never gets the same port twice. */
int kvg_proc_free_port(void)
{
    static _Atomic unsigned recent_n;
    static _Atomic int recent[64];
    int hi = ephemeral_low(), lo = hi - 16384;
    if (lo < 1024) lo = 1024;
    if (hi - lo < 1024) lo = 1024, hi = 65535; /* an odd range: anywhere not ephemeral is unknown */
    /* Test suites run side by side (tests/run.sh) give each running test a
     * slot and a share of the range, so that two never pick the same port. */
    const char *slot_s = getenv("KVG_PORT_SLOT"), *slots_s = getenv("KVG_PORT_SLOTS");
    int64_t slot, slots;
    if (slot_s && slots_s && !kvg_parse_i64(slot_s, &slot) && !kvg_parse_i64(slots_s, &slots) &&
        slots > 1 && slots <= 16 && slot >= 0 && slot < slots) {
        int share = (hi - lo) / (int)slots;
        lo += share * (int)slot;
        hi = lo + share;
    }
    struct kvg_rng *rng = kvg_rand_thread();
    for (int tries = 0; tries < 200; tries++) {
        int port = lo + (int)kvg_rng_below(rng, (uint64_t)(hi - lo));
        int seen = 0;
        for (int i = 0; i < 64; i++) seen |= recent[i] == port;
        if (seen || !port_free(port)) continue;
        recent[atomic_fetch_add(&recent_n, 1) % 64] = port;
        return port;
    }
    return -EADDRNOTAVAIL;
}

/* One GET with a 1 s budget; the status code or -1. */
static int get_status(int port, const char *path)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct timeval tv = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int status = -1;
    char req[512], resp[64];
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
    if (!connect(fd, (struct sockaddr *)&a, sizeof a) && n > 0 && n < (int)sizeof req &&
        write(fd, req, (size_t)n) == n) {
        ssize_t got = read(fd, resp, sizeof resp - 1);
        if (got > 12) {
            resp[got] = 0;
            if (!strncmp(resp, "HTTP/1.", 7)) status = atoi(resp + 9);
        }
    }
    close(fd);
    return status;
}

int kvg_proc_wait_http(int port, const char *path, int status, int timeout_ms, int (*stop)(void))
{
    uint64_t until = kvg_now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
    struct timespec ts = {0, 50 * 1000 * 1000};
    for (;;) {
        if (stop && stop()) return -EINTR;
        if (get_status(port, path) == status) return 0;
        if (kvg_now_ms() >= until) return KVG_ETIMEOUT;
        nanosleep(&ts, NULL);
    }
}
