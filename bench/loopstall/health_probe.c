/* The loop-stall probe: GET /health over one keep-alive connection, back to
 * back with a 1 ms pause, until SIGTERM/SIGINT; then prints how many probes
 * were answered, their worst and p99 latency in milliseconds. A probe still
 * waiting when the signal comes counts with the time it has waited so far, so
 * a loop stalled to the end is not missed.
 *   health_probe HOST PORT
 * Output (one line): "probes N max_ms X p99_ms Y p50_ms Z". */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/stats.h"
#include "base/util.h"

static volatile sig_atomic_t stop;

static void on_sig(int s)
{
    (void)s;
    stop = 1;
}

static int dial(const char *host, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1 ||
        connect(fd, (struct sockaddr *)&sa, sizeof sa)) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Reads one answer (head + Content-Length body). 0, or -1 on error or when
 * interrupted by the stop signal. */
static int read_answer(int fd)
{
    char buf[4096];
    size_t have = 0;
    for (;;) {
        ssize_t r = read(fd, buf + have, sizeof buf - 1 - have);
        if (r < 0 && errno == EINTR) {
            if (stop) return -1;
            continue;
        }
        if (r <= 0) return -1;
        have += (size_t)r;
        buf[have] = 0;
        char *end = strstr(buf, "\r\n\r\n");
        if (!end) {
            if (have >= sizeof buf - 1) return -1;
            continue;
        }
        const char *cl = strcasestr(buf, "content-length:");
        size_t body = cl && cl < end ? (size_t)strtoul(cl + 15, NULL, 10) : 0;
        if ((size_t)(end + 4 - buf) + body <= have) return 0;
        if (have >= sizeof buf - 1) return -1;
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: health_probe HOST PORT\n");
        return 2;
    }
    struct sigaction sa = {.sa_handler = on_sig}; /* no SA_RESTART: a blocked read returns */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    int fd = dial(argv[1], atoi(argv[2]));
    if (fd < 0) {
        perror("connect");
        return 1;
    }
    static const char q[] = "GET /health HTTP/1.1\r\nHost: probe\r\n\r\n";
    size_t cap = 1 << 16, n = 0;
    double *lat = malloc(cap * sizeof *lat);
    if (!lat) return 1;
    while (!stop) {
        double t0 = (double)kvg_now_ns() / 1e6;
        if (write(fd, q, sizeof q - 1) != (ssize_t)(sizeof q - 1)) break;
        int rc = read_answer(fd);
        if (n == cap) {
            double *nl = realloc(lat, 2 * cap * sizeof *lat);
            if (!nl) break;
            lat = nl;
            cap *= 2;
        }
        lat[n++] = (double)kvg_now_ns() / 1e6 - t0; /* an interrupted probe counts what it waited */
        if (rc) break;
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    if (!n) {
        printf("probes 0 max_ms 0 p99_ms 0 p50_ms 0\n");
        return 1;
    }
    kvg_stats_sort(lat, n);
    printf("probes %zu max_ms %.1f p99_ms %.1f p50_ms %.2f\n", n, lat[n - 1],
           kvg_stats_pct_sorted(lat, n, 99), kvg_stats_pct_sorted(lat, n, 50));
    free(lat);
    close(fd);
    return 0;
}
