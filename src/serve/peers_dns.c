/* --peer-service (docs/replicas.md): a name whose every address is a peer
 * replica, as a Kubernetes headless Service has one per pod. It is
 * resolved at start and every RESOLVE_MS on libuv's thread pool (never on
 * a loop), so that a scaled StatefulSet's new replica becomes a peer
 * within one period (plus the DNS cache's time to live) and a gone one
 * leaves. Each address is the peer http://ADDR:PORT; the list changes the
 * way a SIGHUP changes it (kvg__serve_peers_found): a peer that stays
 * keeps its state and counts. A failed or empty answer changes nothing,
 * so that a DNS outage removes no peer. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "net/http_client.h"
#include "serve/peers.h"
#include "serve/serve.h"

#define RESOLVE_MS 10000

struct kvg_serve_peers_dns {
    struct kvg_serve *sv;
    char host[256], port[16];
    uv_loop_t *loop;
    uv_timer_t timer;
    uv_getaddrinfo_t req;
    int timer_on, resolving, stopping, failing;
};

static int by_text(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int kvg__serve_peers_addr_urls(const struct addrinfo *ai, const char *port, struct kvg_strlist *out)
{
    for (; ai; ai = ai->ai_next) {
        char addr[INET6_ADDRSTRLEN], url[128];
        const void *a;
        if (ai->ai_family == AF_INET)
            a = &((const struct sockaddr_in *)(const void *)ai->ai_addr)->sin_addr;
        else if (ai->ai_family == AF_INET6)
            a = &((const struct sockaddr_in6 *)(const void *)ai->ai_addr)->sin6_addr;
        else
            continue;
        if (!inet_ntop(ai->ai_family, a, addr, sizeof addr)) continue;
        snprintf(url, sizeof url, ai->ai_family == AF_INET6 ? "http://[%s]:%s" : "http://%s:%s",
                 addr, port);
        size_t i = 0;
        while (i < out->n && strcmp(out->v[i], url)) i++;
        if (i < out->n) continue;
        int rc = kvg_strlist_add(out, url);
        if (rc) return rc;
    }
    qsort(out->v, out->n, sizeof out->v[0], by_text);
    return 0;
}

static void resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    struct kvg_serve_peers_dns *d = req->data;
    d->resolving = 0;
    struct kvg_strlist found = {0};
    int rc = d->stopping ? 0
             : status    ? KVG_ENOTFOUND
                         : kvg__serve_peers_addr_urls(res, d->port, &found);
    uv_freeaddrinfo(res);
    if (d->stopping) return;
    if (rc || !found.n) {
        if (!d->failing)
            KVG_WARN("peers: --peer-service %s:%s: %s; keeping the peers it gave", d->host, d->port,
                     rc ? kvg_strerror(rc) : "no address");
        d->failing = 1;
        kvg_strlist_free(&found);
        return;
    }
    if (d->failing) KVG_INFO("peers: --peer-service %s:%s resolves again", d->host, d->port);
    d->failing = 0;
    char err[256];
    size_t added, removed;
    if ((rc = kvg__serve_peers_found(d->sv, &found, &added, &removed, err, sizeof err)))
        KVG_WARN("peers: --peer-service %s: %s", d->host, err);
    else if (added || removed)
        KVG_INFO("peers: --peer-service %s: %zu address%s (%zu new, %zu gone)", d->host, found.n,
                 found.n == 1 ? "" : "es", added, removed);
    kvg_strlist_free(&found);
}

static void tick(uv_timer_t *t)
{
    struct kvg_serve_peers_dns *d = t->data;
    if (d->resolving || d->stopping) return;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    d->req.data = d;
    int rc = uv_getaddrinfo(d->loop, &d->req, resolved, d->host, d->port, &hints);
    if (rc)
        KVG_WARN("peers: --peer-service %s: cannot resolve: %s", d->host, kvg_strerror(rc));
    else
        d->resolving = 1;
}

int kvg__serve_peers_dns_start(struct kvg_serve *sv, uv_loop_t *loop)
{
    const char *url = sv->cfg.peer_service;
    if (!url[0] || !sv->peers) return 0;
    struct kvg_serve_peers_dns *d = calloc(1, sizeof *d);
    if (!d) return -ENOMEM;
    sv->peers_dns = d;
    d->sv = sv;
    d->loop = loop;
    struct kvg_http_target t;
    int rc = kvg_http_target_split(url, &t, d->host, d->port); /* checked with the config */
    if (rc) return rc;
    uv_timer_init(loop, &d->timer);
    d->timer.data = d;
    d->timer_on = 1;
    return uv_timer_start(&d->timer, tick, 0, RESOLVE_MS);
}

void kvg__serve_peers_dns_stop(struct kvg_serve *sv)
{
    struct kvg_serve_peers_dns *d = sv->peers_dns;
    if (!d) return;
    d->stopping = 1;
    if (d->timer_on) {
        uv_timer_stop(&d->timer);
        uv_close((uv_handle_t *)&d->timer, NULL);
        d->timer_on = 0;
    }
    if (d->resolving) uv_cancel((uv_req_t *)&d->req); /* resolved() still runs, and does nothing */
}

void kvg__serve_peers_dns_free(struct kvg_serve *sv)
{
    free(sv->peers_dns);
    sv->peers_dns = NULL;
}
