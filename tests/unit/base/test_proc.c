/* Unit tests for base/proc.h: a child's exit status, its log, a failed
 * exec, the stop (SIGTERM, then SIGKILL for a child that ignores SIGTERM),
 * a clean signal state in the child, the parent-death signal, a free port
 * and the HTTP wait's bounds. Real child processes, every wait bounded. */
#include "support/test.h"

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
#include "base/proc.h"

/* Polls the i-th child up to ~10 s; 1 once it exited. */
static int exited(struct kvg_proc_set *s, int i)
{
    struct timespec ts = {0, 20 * 1000 * 1000};
    for (int k = 0; k < 500; k++) {
        if (!kvg_proc_alive(s, i)) return 1;
        nanosleep(&ts, NULL);
    }
    return 0;
}

/* A pipe whose write end a child can take as its log: the test reads the
 * child's "ready" line, printed once the child runs its program, that is
 * once base/proc.c's setup (signals, parent-death signal) is done. */
struct ready {
    int fd[2];
    char log[32];
};

static int ready_open(struct ready *r)
{
    if (pipe(r->fd)) return -1;
    snprintf(r->log, sizeof r->log, "/dev/fd/%d", r->fd[1]);
    return 0;
}

/* Closes our write end and blocks until the line (or EOF: the child died). */
static int ready_wait(struct ready *r)
{
    char buf[8] = "";
    close(r->fd[1]);
    ssize_t n = read(r->fd[0], buf, 6);
    close(r->fd[0]);
    return n == 6 && !memcmp(buf, "ready\n", 6);
}

TEST(exit_status_is_kept)
{
    struct kvg_proc_set s = {0};
    char *argv[] = {"/bin/sh", "-c", "exit 3", NULL};
    CHECK_INT(kvg_proc_spawn(&s, "/bin/sh", argv, "/dev/null", 0), 0);
    CHECK_INT(s.n, 1);
    CHECK(s.pid[0] > 0);
    CHECK(exited(&s, 0));
    CHECK(WIFEXITED(s.status[0]));
    CHECK_INT(WEXITSTATUS(s.status[0]), 3);
    CHECK_INT(kvg_proc_alive(&s, 0), 0); /* reaped once, stays gone */
    kvg_proc_stop_all(&s, 0);
    CHECK_INT(s.n, 0);
}

/* The child sees the added entries (one replacing the parent's of the
 * same name) and the parent's others; the parent's own are unchanged. */
TEST(start_env_adds_to_the_childs_only)
{
    CHECK_INT(setenv("KVG_TEST_KEEP", "kept", 1), 0);
    CHECK_INT(setenv("KVG_TEST_SWAP", "parent", 1), 0);
    const char *add[] = {"KVG_TEST_NEW=1", "KVG_TEST_SWAP=child", NULL};
    char *argv[] = {"/bin/sh", "-c",
                    "test \"$KVG_TEST_NEW\" = 1 && test \"$KVG_TEST_SWAP\" = child && "
                    "test \"$KVG_TEST_KEEP\" = kept",
                    NULL};
    pid_t pid;
    int st = -1;
    CHECK_INT(kvg_proc_start_env("/bin/sh", argv, add, "/dev/null", 0, &pid), 0);
    CHECK_INT(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(getenv("KVG_TEST_NEW") == NULL);
    CHECK_STR(getenv("KVG_TEST_SWAP"), "parent");
}

TEST(failed_exec_is_127)
{
    struct kvg_proc_set s = {0};
    char *argv[] = {"no-such-program-kvg", NULL};
    CHECK_INT(kvg_proc_spawn(&s, "/nonexistent/no-such-program-kvg", argv, "/dev/null", 0), 0);
    CHECK(exited(&s, 0));
    CHECK(WIFEXITED(s.status[0]));
    CHECK_INT(WEXITSTATUS(s.status[0]), 127);
}

TEST(log_gets_stdout_and_stderr)
{
    char path[] = "/tmp/kvg_test_proc_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    struct kvg_proc_set s = {0};
    char *argv[] = {"sh", "-c", "echo out; echo err >&2", NULL};
    CHECK_INT(kvg_proc_spawn(&s, "sh", argv, path, KVG_PROC_PATH | KVG_PROC_STDIN_NULL), 0);
    CHECK(exited(&s, 0));
    CHECK_INT(WEXITSTATUS(s.status[0]), 0);
    char buf[64] = "";
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    unlink(path);
    buf[n] = 0;
    CHECK_STR(buf, "out\nerr\n");
}

TEST(stop_terminates_then_kills)
{
    struct kvg_proc_set s = {0};
    char *polite[] = {"/bin/sh", "-c", "exec sleep 30", NULL};
    /* SIG_IGN survives exec: this sleep ignores SIGTERM, only SIGKILL ends it. */
    char *deaf[] = {"/bin/sh", "-c", "trap '' TERM; echo ready; exec sleep 30", NULL};
    struct ready r;
    CHECK_INT(ready_open(&r), 0);
    CHECK_INT(kvg_proc_spawn(&s, "/bin/sh", polite, "/dev/null", 0), 0);
    CHECK_INT(kvg_proc_spawn(&s, "/bin/sh", deaf, r.log, 0), 0);
    int up = ready_wait(&r);
    pid_t a = s.pid[0], b = s.pid[1];
    int alive = kvg_proc_alive(&s, 0) + kvg_proc_alive(&s, 1);
    kvg_proc_stop_all(&s, 300);
    CHECK(up);
    CHECK_INT(alive, 2);
    CHECK_INT(s.n, 0);
    /* Both reaped: neither PID is a child of ours any more. */
    CHECK_INT(waitpid(a, NULL, WNOHANG), -1);
    CHECK_INT(waitpid(b, NULL, WNOHANG), -1);
}

TEST(child_takes_sigterm_though_parent_ignores_it)
{
    struct sigaction ign = {.sa_handler = SIG_IGN}, old;
    sigemptyset(&ign.sa_mask);
    struct ready r;
    CHECK_INT(ready_open(&r), 0);
    CHECK_INT(sigaction(SIGTERM, &ign, &old), 0);
    struct kvg_proc_set s = {0};
    char *argv[] = {"sh", "-c", "echo ready; exec sleep 30", NULL};
    int rc = kvg_proc_spawn(&s, "sh", argv, r.log, KVG_PROC_PATH);
    sigaction(SIGTERM, &old, NULL);
    int up = ready_wait(&r);
    int gone = 0;
    if (!rc && kill(s.pid[0], SIGTERM) == 0) gone = exited(&s, 0);
    kvg_proc_stop_all(&s, 0);
    CHECK_INT(rc, 0);
    CHECK(up);
    CHECK(gone);
    CHECK(WIFSIGNALED(s.status[0]));
    CHECK_INT(WTERMSIG(s.status[0]), SIGTERM);
}

TEST(child_dies_with_its_parent)
{
    /* An intermediate process starts `sleep 30`, waits until it runs, and
     * exits; as the subreaper we inherit the sleep and see what ended it. */
    CHECK_INT(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    int p[2];
    CHECK_INT(pipe(p), 0);
    pid_t mid = fork();
    CHECK(mid >= 0);
    if (mid == 0) {
        close(p[0]);
        struct ready r;
        char *argv[] = {"/bin/sh", "-c", "echo ready; exec sleep 30", NULL};
        pid_t c = 0;
        if (ready_open(&r) || kvg_proc_start("/bin/sh", argv, r.log, 0, &c)) _exit(1);
        if (!ready_wait(&r)) _exit(1);
        if (write(p[1], &c, sizeof c) != (ssize_t)sizeof c) _exit(1);
        _exit(0);
    }
    close(p[1]);
    pid_t c = 0;
    ssize_t got = read(p[0], &c, sizeof c);
    close(p[0]);
    int st = 0;
    waitpid(mid, &st, 0);
    int mid_ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    struct timespec ts = {0, 20 * 1000 * 1000};
    pid_t r = 0;
    for (int k = 0; k < 500 && r == 0 && got == (ssize_t)sizeof c; k++) {
        r = waitpid(c, &st, WNOHANG);
        if (r == 0) nanosleep(&ts, NULL);
    }
    if (got == (ssize_t)sizeof c && r == 0) { /* never signalled: do not leave it behind */
        kill(c, SIGKILL);
        waitpid(c, NULL, 0);
    }
    prctl(PR_SET_CHILD_SUBREAPER, 0);
    CHECK_INT(got, (ssize_t)sizeof c);
    CHECK(mid_ok);
    CHECK_INT(r, c);
    CHECK(WIFSIGNALED(st));
    CHECK_INT(WTERMSIG(st), SIGTERM);
}

TEST(spawn_refuses_a_full_set)
{
    struct kvg_proc_set s = {0};
    s.n = KVG_PROC_MAX;
    char *argv[] = {"/bin/true", NULL};
    CHECK_INT(kvg_proc_spawn(&s, "/bin/true", argv, NULL, 0), -ENOSPC);
}

TEST(free_port_is_bindable)
{
    int port = kvg_proc_free_port();
    CHECK(port > 0 && port < 65536);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc = bind(fd, (struct sockaddr *)&a, sizeof a);
    close(fd);
    CHECK_INT(rc, 0);
}

static int always(void)
{
    return 1;
}

TEST(wait_http_gives_up)
{
    int port = kvg_proc_free_port(); /* nothing listens there */
    CHECK(port > 0);
    CHECK_INT(kvg_proc_wait_http(port, "/health", 200, 0, NULL), KVG_ETIMEOUT);
    CHECK_INT(kvg_proc_wait_http(port, "/health", 200, 60000, always), -EINTR);
}
