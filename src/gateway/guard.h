/* The admin API's guard against requests a web page makes: the operator's
 * browser is a loopback client and may hold the status page's Basic login,
 * so a page it opens could otherwise reach the admin API. After the key (or
 * loopback) check has passed, every admin request must
 *   - name an allowed host in Host (DNS rebinding: a foreign name that
 *     resolves to 127.0.0.1 reaches the API with the page's origin);
 * and a request that is not a plain read (any method but GET/HEAD) must
 *   - not come from another site (Origin other than the Host's own, or
 *     Sec-Fetch-Site other than same-origin/none);
 * and a request that changes state must also
 *   - carry Content-Type application/json (unless DELETE: a web page cannot
 *     send either without the CORS preflight kvgate never answers),
 *   - take nothing from the query string,
 *   - with keys, authenticate with Authorization: Bearer (the browser's
 *     cached Basic login is for reading the page only).
 * Refusals are OpenAI-shaped: 403 (host, cross site), 415, 400, 401. */
#ifndef KVG_GATEWAY_GUARD_H
#define KVG_GATEWAY_GUARD_H

#include <stddef.h>

#include "base/buf.h"
#include "base/opt.h"
#include "net/http.h"

#define KVG_GUARD_MAX_HOSTS 32

/* The host names the admin API answers for, normalized (lower case, no
 * port, no brackets, no trailing dot). */
struct kvg_guard {
    char hosts[KVG_GUARD_MAX_HOSTS][256];
    size_t nhosts;
    int any_host; /* "*" was given: no Host check */
};

/* hosts: the operator's list (NULL or empty: localhost, 127.0.0.1, ::1 and
 * listen_host unless it is a wildcard address); "*" allows any host. A name
 * may carry a port, which is ignored. KVG_ECONFIG with a message in err for
 * a name too long or too many names. Nothing is allocated. */
int kvg_guard_init(struct kvg_guard *g, const struct kvg_strlist *hosts, const char *listen_host,
                   char *err, size_t errlen);

enum kvg_guard_kind {
    KVG_GUARD_READ,  /* GET/HEAD of an admin endpoint */
    KVG_GUARD_QUERY, /* a read sent as POST (/debug/route) */
    KVG_GUARD_WRITE, /* changes state (POST /workers, DELETE /workers/{url}) */
};

/* A request's header by lower-case name (a NULL view when absent). */
typedef struct kvg_str (*kvg_guard_header_fn)(const void *ctx, const char *name);

struct kvg_guard_req {
    const char *method;
    struct kvg_str query; /* after '?', empty when none */
    kvg_guard_header_fn header;
    const void *hctx;
    int keys_on; /* the gateway authenticates with keys */
};

/* 0: the request may go on; 1: refused, out filled (its strings static). */
int kvg_guard_check(const struct kvg_guard *g, enum kvg_guard_kind k, const struct kvg_guard_req *r,
                    struct kvg_http_refusal *out);

/* host (a Host header value, or a name with or without port) normalized
 * into out as kvg_guard keeps its names. -EINVAL when it is empty or does
 * not fit. */
int kvg_guard_host_name(struct kvg_str host, char *out, size_t cap);

#endif
