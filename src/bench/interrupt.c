/* Child processes of the live bench; see procs.h. */
#include "bench/procs.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
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

static volatile sig_atomic_t g_interrupted;

static void on_signal(int sig)
{
    (void)sig;
    g_interrupted = 1;
}

void kvg_bench_catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int kvg_bench_interrupted(void)
{
    return g_interrupted;
}

int kvg_bench_spawn(struct kvg_bench_procs *p, const char *bin, char *const *argv, const char *log)
{
    if (p->n == KVG_BENCH_MAX_PROCS) return -ENOSPC;
    /* Open the log before forking: the child only dup2s and execs. */
    int fd = open(log ? log : "/dev/null", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return -errno;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    if (pid == 0) {
        /* Die with the bench even if it is SIGKILLed; the parent may have
         * died between fork and prctl, hence the check. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(127);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(bin, argv);
        _exit(127);
    }
    close(fd);
    p->pid[p->n++] = pid;
    return 0;
}

int kvg_bench_proc_alive(struct kvg_bench_procs *p, int i)
{
    if (i < 0 || i >= p->n || p->pid[i] <= 0) return 0;
    int st;
    pid_t r = waitpid(p->pid[i], &st, WNOHANG);
    if (r == p->pid[i] || (r < 0 && errno == ECHILD)) {
        p->pid[i] = -p->pid[i]; /* reaped: remember it was ours, never signal it again */
        return 0;
    }
    return 1;
}

void kvg_bench_procs_stop(struct kvg_bench_procs *p, int grace_ms)
{
    for (int i = 0; i < p->n; i++)
        if (p->pid[i] > 0) kill(p->pid[i], SIGTERM);
    uint64_t until = kvg_now_ms() + (uint64_t)(grace_ms > 0 ? grace_ms : 0);
    struct timespec ts = {0, 20 * 1000 * 1000};
    for (;;) {
        int left = 0;
        for (int i = 0; i < p->n; i++) left += kvg_bench_proc_alive(p, i);
        if (!left || kvg_now_ms() >= until) break;
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < p->n; i++)
        if (p->pid[i] > 0) {
            kill(p->pid[i], SIGKILL);
            waitpid(p->pid[i], NULL, 0);
        }
    p->n = 0;
}

int kvg_bench_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = 0;
    if (!bind(fd, (struct sockaddr *)&a, sizeof a) && !getsockname(fd, (struct sockaddr *)&a, &len))
        port = ntohs(a.sin_port);
    close(fd);
    return port;
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
    if (!connect(fd, (struct sockaddr *)&a, sizeof a) && n > 0 && write(fd, req, (size_t)n) == n) {
        ssize_t got = read(fd, resp, sizeof resp - 1);
        if (got > 12) {
            resp[got] = 0;
            if (!strncmp(resp, "HTTP/1.", 7)) status = atoi(resp + 9);
        }
    }
    close(fd);
    return status;
}

int kvg_bench_wait_http(int port, const char *path, int status, int timeout_ms)
{
    uint64_t until = kvg_now_ms() + (uint64_t)timeout_ms;
    struct timespec ts = {0, 50 * 1000 * 1000};
    for (;;) {
        if (g_interrupted) return -EINTR;
        if (get_status(port, path) == status) return 0;
        if (kvg_now_ms() >= until) return KVG_ETIMEOUT;
        nanosleep(&ts, NULL);
    }
}
