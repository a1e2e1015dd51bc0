/* Child simulated engines for the embedded default; see spawn.h. */
#include "serve/spawn.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"

/* A port the kernel says is free now (bind to 0, read it, close). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -errno;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int rc =
        bind(fd, (struct sockaddr *)&a, sizeof a) || getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return rc ? -EADDRNOTAVAIL : ntohs(a.sin_port);
}

static void on_exit_cb(uv_process_t *p, int64_t status, int sig)
{
    struct kvg_spawned *s = p->data;
    s->alive--;
    if (sig != SIGTERM && (status || sig))
        KVG_WARN("simulated engine (pid %d) exited: status %lld, signal %d", p->pid,
                 (long long)status, sig);
    uv_close((uv_handle_t *)p, NULL);
}

int kvg_spawn_sims(struct kvg_spawned *s, uv_loop_t *loop, int n, const char *const *extra)
{
    char exe[4096];
    size_t exelen = sizeof exe;
    int rc = uv_exepath(exe, &exelen);
    if (rc) return rc;
    memset(s, 0, sizeof *s);
    if (n > KVG_SPAWN_MAX) n = KVG_SPAWN_MAX;
    for (int i = 0; i < n; i++) {
        int port = free_port(), evport = free_port();
        if (port < 0) return port;
        if (evport < 0) return evport;
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
        uv_stdio_container_t stdio[3] = {{.flags = UV_IGNORE},
                                         {.flags = UV_INHERIT_FD, .data.fd = 2},
                                         {.flags = UV_INHERIT_FD, .data.fd = 2}};
        uv_process_options_t o = {
            .exit_cb = on_exit_cb, .file = exe, .args = args, .stdio_count = 3, .stdio = stdio};
        s->proc[i].data = s;
        if ((rc = uv_spawn(loop, &s->proc[i], &o))) {
            KVG_ERROR("cannot start a simulated engine: %s", uv_strerror(rc));
            return rc;
        }
        snprintf(s->urls[i], sizeof s->urls[i], "http://127.0.0.1:%d", port);
        s->n++;
        s->alive++;
    }
    return 0;
}

void kvg_spawn_stop(struct kvg_spawned *s)
{
    for (int i = 0; i < s->n; i++)
        if (!uv_is_closing((uv_handle_t *)&s->proc[i])) uv_process_kill(&s->proc[i], SIGTERM);
}
