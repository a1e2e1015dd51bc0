/* The admin API's guard against web pages (gateway/guard.h): the Host
 * allowlist, the same-origin test, and what a state-changing call must
 * look like. Pure functions of the request head: no allocation, any thread. */
#include "gateway/guard.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/err.h"
#include "base/util.h"

int kvg_guard_host_name(struct kvg_str host, char *out, size_t cap)
{
    const char *p = host.p;
    size_t n = host.p ? host.len : 0;
    while (n && (*p == ' ' || *p == '\t')) p++, n--;
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
    if (n && p[0] == '[') { /* [v6] or [v6]:port */
        const char *rb = memchr(p, ']', n);
        if (!rb) return -EINVAL;
        n = (size_t)(rb - p - 1);
        p++;
    } else {
        const char *colon = memchr(p, ':', n);
        /* one colon: name:port; more: a bare IPv6 address, kept whole */
        if (colon && !memchr(colon + 1, ':', n - (size_t)(colon + 1 - p))) n = (size_t)(colon - p);
    }
    if (n && p[n - 1] == '.') n--; /* "localhost." is localhost */
    if (!n || n >= cap) return -EINVAL;
    for (size_t i = 0; i < n; i++) out[i] = (char)tolower((unsigned char)p[i]);
    out[n] = 0;
    return 0;
}

static int add_host(struct kvg_guard *g, const char *name, char *err, size_t errlen)
{
    if (!strcmp(name, "*")) {
        g->any_host = 1;
        return 0;
    }
    if (g->nhosts == KVG_GUARD_MAX_HOSTS) {
        snprintf(err, errlen, "--admin-hosts: at most %d names", KVG_GUARD_MAX_HOSTS);
        return KVG_ECONFIG;
    }
    if (kvg_guard_host_name(kvg_str_c(name), g->hosts[g->nhosts], sizeof g->hosts[0])) {
        snprintf(err, errlen, "--admin-hosts: '%.200s' is not a host name", name);
        return KVG_ECONFIG;
    }
    g->nhosts++;
    return 0;
}

int kvg_guard_init(struct kvg_guard *g, const struct kvg_strlist *hosts, const char *listen_host,
                   char *err, size_t errlen)
{
    memset(g, 0, sizeof *g);
    int rc;
    if (hosts && hosts->n) {
        for (size_t i = 0; i < hosts->n; i++)
            if ((rc = add_host(g, hosts->v[i], err, errlen))) return rc;
        return 0;
    }
    static const char *const loopback[] = {"localhost", "127.0.0.1", "::1"};
    for (size_t i = 0; i < KVG_ARRAY_LEN(loopback); i++)
        if ((rc = add_host(g, loopback[i], err, errlen))) return rc;
    /* A wildcard address names no host a client could use. */
    if (listen_host && listen_host[0] && strcmp(listen_host, "0.0.0.0") &&
        strcmp(listen_host, "::") && strcmp(listen_host, "[::]"))
        return add_host(g, listen_host, err, errlen);
    return 0;
}

static int refuse(struct kvg_http_refusal *out, int status, const char *type, const char *code,
                  const char *msg)
{
    memset(out, 0, sizeof *out);
    out->status = status;
    out->type = type;
    out->code = code;
    snprintf(out->message, sizeof out->message, "%s", msg);
    return 1;
}

static int host_allowed(const struct kvg_guard *g, struct kvg_str host)
{
    if (g->any_host) return 1;
    /* No Host at all: HTTP/1.0, never a browser (browsers always send it). */
    if (!host.p) return 1;
    char name[256];
    if (kvg_guard_host_name(host, name, sizeof name)) return 0;
    for (size_t i = 0; i < g->nhosts; i++)
        if (!strcmp(name, g->hosts[i])) return 1;
    return 0;
}

/* Origin "scheme://authority" whose authority is this request's Host. */
static int same_origin(struct kvg_str origin, struct kvg_str host)
{
    const char *sep = origin.p ? memmem(origin.p, origin.len, "://", 3) : NULL;
    if (!sep || !host.p) return 0;
    const char *a = sep + 3;
    size_t an = origin.len - (size_t)(a - origin.p);
    while (host.len && (host.p[host.len - 1] == ' ' || host.p[host.len - 1] == '\t')) host.len--;
    while (host.len && (*host.p == ' ' || *host.p == '\t')) host.p++, host.len--;
    return an == host.len && !strncasecmp(a, host.p, an);
}

static int is_json(struct kvg_str ct)
{
    static const char want[] = "application/json";
    size_t n = sizeof want - 1;
    if (!ct.p || ct.len < n || strncasecmp(ct.p, want, n)) return 0;
    return ct.len == n || ct.p[n] == ';' || ct.p[n] == ' ' || ct.p[n] == '\t';
}

static int is_bearer(struct kvg_str auth)
{
    return auth.p && auth.len > 7 && !strncasecmp(auth.p, "bearer", 6) &&
           (auth.p[6] == ' ' || auth.p[6] == '\t');
}

int kvg_guard_check(const struct kvg_guard *g, enum kvg_guard_kind k, const struct kvg_guard_req *r,
                    struct kvg_http_refusal *out)
{
    struct kvg_str host = r->header(r->hctx, "host");
    if (!host_allowed(g, host))
        return refuse(out, 403, "permission_error", "host_not_allowed",
                      "The admin API answers only for the host names in --admin-hosts "
                      "(loopback names by default).");
    if (k == KVG_GUARD_READ) return 0;
    struct kvg_str origin = r->header(r->hctx, "origin");
    struct kvg_str site = r->header(r->hctx, "sec-fetch-site");
    if ((origin.p && !same_origin(origin, host)) ||
        (site.p && !kvg_str_eq_nocase(site, "same-origin") && !kvg_str_eq_nocase(site, "none")))
        return refuse(out, 403, "permission_error", "cross_site_request",
                      "The admin API refuses requests from another site's page.");
    if (k != KVG_GUARD_WRITE) return 0;
    if (r->keys_on && !is_bearer(r->header(r->hctx, "authorization"))) {
        refuse(out, 401, "authentication_error", "bearer_required",
               "Changing kvgate needs an admin key as Authorization: Bearer <key>; a browser's "
               "Basic login only reads.");
        out->headers[out->nheaders++] =
            (struct kvg_http_header){KVG_STR("www-authenticate"), KVG_STR("Bearer")};
        return 1;
    }
    if (strcmp(r->method, "DELETE") && !is_json(r->header(r->hctx, "content-type")))
        return refuse(out, 415, "invalid_request_error", "unsupported_media_type",
                      "The admin API takes a JSON body: send Content-Type: application/json.");
    if (r->query.len)
        return refuse(out, 400, "invalid_request_error", "query_not_allowed",
                      "The admin API takes no parameters in the query string: put them in the "
                      "JSON body.");
    return 0;
}
