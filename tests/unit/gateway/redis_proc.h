/* A private redis-server for a test: started on a free 127.0.0.1 port with
 * no persistence, waited for with a bounded loop, stopped by its PID. Header
 * only (static functions) so each test program that needs one includes it. */
#ifndef KVG_TEST_REDIS_PROC_H
#define KVG_TEST_REDIS_PROC_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/proc.h"

#define REDIS_BIN "/usr/bin/redis-server"

struct redis_proc {
    pid_t pid;
    int port;
};

/* The one free-port rule of the tree (below the ephemeral range). */
static int redis_free_port(void)
{
    return kvg_proc_free_port();
}

static void redis_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A synchronous connection for checks (not the code under test). */
static redisContext *redis_sync(int port)
{
    struct timeval tv = {1, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (c && c->err) {
        redisFree(c);
        return NULL;
    }
    if (c) redisSetTimeout(c, tv);
    return c;
}

/* Starts redis-server on `port` (0: a free one). Waits up to 5 s for PONG. */
static int redis_start(struct redis_proc *r, int port)
{
    r->port = port ? port : redis_free_port();
    if (r->port <= 0) return -1;
    char ports[16];
    snprintf(ports, sizeof ports, "%d", r->port);
    r->pid = fork();
    if (r->pid < 0) return -1;
    if (r->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a crashed test */
        int nul = open("/dev/null", O_RDWR);
        dup2(nul, 1);
        dup2(nul, 2);
        execl(REDIS_BIN, REDIS_BIN, "--port", ports, "--bind", "127.0.0.1", "--save", "",
              "--appendonly", "no", "--daemonize", "no", "--dir", "/tmp", "--dbfilename",
              "kvg-test-unused.rdb", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 250; i++) {
        redisContext *c = redis_sync(r->port);
        if (c) {
            redisReply *rep = redisCommand(c, "PING");
            int ok = rep && rep->type == REDIS_REPLY_STATUS;
            if (rep) freeReplyObject(rep);
            redisFree(c);
            if (ok) return 0;
        }
        int st;
        if (waitpid(r->pid, &st, WNOHANG) == r->pid) {
            r->pid = 0;
            return -1;
        }
        redis_sleep_ms(20);
    }
    return -1;
}

static void redis_stop(struct redis_proc *r)
{
    if (r->pid <= 0) return;
    kill(r->pid, SIGCONT); /* in case a test left it stopped */
    kill(r->pid, SIGKILL);
    waitpid(r->pid, NULL, 0);
    r->pid = 0;
}

/* One command on a fresh synchronous connection; returns its integer
 * reply, or -999 on any failure. */
static long long redis_int(int port, const char *fmt, const char *arg)
{
    redisContext *c = redis_sync(port);
    if (!c) return -999;
    redisReply *rep = redisCommand(c, fmt, arg);
    long long v = -999;
    if (rep && rep->type == REDIS_REPLY_INTEGER) v = rep->integer;
    if (rep && rep->type == REDIS_REPLY_STRING) v = atoll(rep->str);
    if (rep && rep->type == REDIS_REPLY_NIL) v = 0;
    if (rep && rep->type == REDIS_REPLY_STATUS) v = 1;
    if (rep) freeReplyObject(rep);
    redisFree(c);
    return v;
}

#endif
