/* The admin API's guard against web pages (gateway/guard.h): host names as
 * a Host header writes them, the default and given allowlists, and each
 * refusal with its status and code. */
#include <string.h>

#include "gateway/guard.h"
#include "support/test.h"

/* A request head: name/value pairs, NULL-terminated. */
struct head {
    const char *kv[16];
};

static struct kvg_str get(const void *ctx, const char *name)
{
    const struct head *h = ctx;
    for (size_t i = 0; h->kv[i]; i += 2)
        if (!strcmp(h->kv[i], name)) return kvg_str_c(h->kv[i + 1]);
    return (struct kvg_str){NULL, 0};
}

static int run(const struct kvg_guard *g, enum kvg_guard_kind k, const char *method,
               const char *query, int keys_on, const struct head *h, struct kvg_http_refusal *out)
{
    struct kvg_guard_req r = {
        .method = method, .query = kvg_str_c(query), .header = get, .hctx = h, .keys_on = keys_on};
    memset(out, 0, sizeof *out);
    return kvg_guard_check(g, k, &r, out);
}

/* 1 when the request is refused with this status and code. */
static int refused_as(const struct kvg_guard *g, enum kvg_guard_kind k, const char *method,
                      const char *query, int keys_on, const struct head *h, int status,
                      const char *code)
{
    struct kvg_http_refusal out;
    return run(g, k, method, query, keys_on, h, &out) == 1 && out.status == status && out.code &&
           !strcmp(out.code, code);
}

/* The default list, listening on a loopback address (NULL: cannot be made). */
static const struct kvg_guard *loopback_guard(void)
{
    static struct kvg_guard g;
    char err[256];
    return kvg_guard_init(&g, NULL, "127.0.0.1", err, sizeof err) ? NULL : &g;
}

static const char *name_of(const char *host)
{
    static char out[64];
    if (kvg_guard_host_name(kvg_str_c(host), out, sizeof out)) return "(invalid)";
    return out;
}

TEST(host_names)
{
    CHECK_STR(name_of("localhost"), "localhost");
    CHECK_STR(name_of("LocalHost:8080"), "localhost");
    CHECK_STR(name_of("localhost.:80"), "localhost");
    CHECK_STR(name_of("127.0.0.1:9"), "127.0.0.1");
    CHECK_STR(name_of("[::1]:8080"), "::1");
    CHECK_STR(name_of("[::1]"), "::1");
    CHECK_STR(name_of("::1"), "::1");
    CHECK_STR(name_of(" gw.internal "), "gw.internal");
    CHECK_STR(name_of(""), "(invalid)");
    CHECK_STR(name_of(":80"), "(invalid)");
    CHECK_STR(name_of("[::1"), "(invalid)");
}

TEST(default_hosts)
{
    struct kvg_guard g;
    char err[256];
    struct kvg_http_refusal out;
    CHECK_INT(kvg_guard_init(&g, NULL, "0.0.0.0", err, sizeof err), 0);
    CHECK_INT((int)g.nhosts, 3); /* a wildcard listen address adds nothing */
    const char *ok[] = {"localhost:8080", "127.0.0.1:8080", "[::1]:8080", "LOCALHOST"};
    for (size_t i = 0; i < 4; i++) {
        struct head h = {{"host", ok[i], NULL}};
        CHECK_INT(run(&g, KVG_GUARD_READ, "GET", "", 0, &h, &out), 0);
    }
    struct head evil = {{"host", "evil.example:8080", NULL}};
    CHECK(refused_as(&g, KVG_GUARD_READ, "GET", "", 0, &evil, 403, "host_not_allowed"));
    struct head none = {{NULL}}; /* HTTP/1.0 without Host: no browser */
    CHECK_INT(run(&g, KVG_GUARD_READ, "GET", "", 0, &none, &out), 0);
    CHECK_INT(kvg_guard_init(&g, NULL, "10.1.2.3", err, sizeof err), 0);
    struct head own = {{"host", "10.1.2.3:8080", NULL}};
    CHECK_INT(run(&g, KVG_GUARD_READ, "GET", "", 0, &own, &out), 0);
}

TEST(given_hosts)
{
    struct kvg_guard g;
    char err[256];
    struct kvg_http_refusal out;
    struct kvg_strlist l = {0};
    CHECK_INT(kvg_strlist_add(&l, "gw.internal:8080"), 0);
    CHECK_INT(kvg_guard_init(&g, &l, "127.0.0.1", err, sizeof err), 0);
    struct head named = {{"host", "gw.internal:9999", NULL}};
    CHECK_INT(run(&g, KVG_GUARD_READ, "GET", "", 0, &named, &out), 0);
    struct head loop = {{"host", "127.0.0.1:8080", NULL}}; /* the list replaces the default */
    CHECK_INT(run(&g, KVG_GUARD_READ, "GET", "", 0, &loop, &out), 1);
    CHECK_INT(kvg_strlist_add(&l, "*"), 0);
    CHECK_INT(kvg_guard_init(&g, &l, "127.0.0.1", err, sizeof err), 0);
    struct head evil = {{"host", "evil.example", NULL}};
    CHECK_INT(run(&g, KVG_GUARD_READ, "GET", "", 0, &evil, &out), 0);
    kvg_strlist_free(&l);
    CHECK_INT(kvg_strlist_add(&l, ""), 0);
    CHECK(kvg_guard_init(&g, &l, NULL, err, sizeof err) != 0);
    CHECK(strstr(err, "--admin-hosts") != NULL);
    kvg_strlist_free(&l);
}

TEST(cross_site)
{
    const struct kvg_guard *g = loopback_guard();
    struct kvg_http_refusal out;
    CHECK(g != NULL);
    struct head evil = {{"host", "127.0.0.1:8080", "origin", "http://evil.example", "content-type",
                         "application/json", NULL}};
    CHECK(refused_as(g, KVG_GUARD_WRITE, "POST", "", 0, &evil, 403, "cross_site_request"));
    CHECK_INT(run(g, KVG_GUARD_QUERY, "POST", "", 0, &evil, &out), 1);
    CHECK_INT(run(g, KVG_GUARD_READ, "GET", "", 0, &evil, &out), 0); /* unreadable to the page */
    struct head null_origin = {{"host", "127.0.0.1:8080", "origin", "null", NULL}};
    CHECK_INT(run(g, KVG_GUARD_QUERY, "POST", "", 0, &null_origin, &out), 1);
    struct head other_port = {{"host", "127.0.0.1:8080", "origin", "http://127.0.0.1:8081", NULL}};
    CHECK_INT(run(g, KVG_GUARD_QUERY, "POST", "", 0, &other_port, &out), 1);
    struct head site = {{"host", "127.0.0.1:8080", "sec-fetch-site", "same-site", NULL}};
    CHECK_INT(run(g, KVG_GUARD_QUERY, "POST", "", 0, &site, &out), 1);
    struct head same = {{"host", "127.0.0.1:8080", "origin", "http://127.0.0.1:8080",
                         "sec-fetch-site", "same-origin", "content-type",
                         "application/json; charset=utf-8", NULL}};
    CHECK_INT(run(g, KVG_GUARD_QUERY, "POST", "", 0, &same, &out), 0);
    CHECK_INT(run(g, KVG_GUARD_WRITE, "POST", "", 0, &same, &out), 0);
    struct head typed = {{"host", "127.0.0.1:8080", "sec-fetch-site", "none", NULL}};
    CHECK_INT(run(g, KVG_GUARD_QUERY, "POST", "", 0, &typed, &out), 0);
}

TEST(write_shape)
{
    const struct kvg_guard *g = loopback_guard();
    struct kvg_http_refusal out;
    CHECK(g != NULL);
    struct head form = {
        {"host", "localhost", "content-type", "application/x-www-form-urlencoded", NULL}};
    CHECK(refused_as(g, KVG_GUARD_WRITE, "POST", "", 0, &form, 415, "unsupported_media_type"));
    struct head text = {{"host", "localhost", "content-type", "text/plain", NULL}};
    CHECK_INT(run(g, KVG_GUARD_WRITE, "POST", "", 0, &text, &out), 1);
    struct head jsonish = {{"host", "localhost", "content-type", "application/jsonx", NULL}};
    CHECK_INT(run(g, KVG_GUARD_WRITE, "POST", "", 0, &jsonish, &out), 1);
    struct head untyped = {{"host", "localhost", NULL}};
    CHECK_INT(run(g, KVG_GUARD_WRITE, "POST", "", 0, &untyped, &out), 1);
    CHECK_INT(run(g, KVG_GUARD_WRITE, "DELETE", "", 0, &untyped, &out), 0);
    CHECK_INT(run(g, KVG_GUARD_QUERY, "POST", "", 0, &form, &out), 0); /* a read: any type */
    struct head json = {{"host", "localhost", "content-type", "Application/JSON", NULL}};
    CHECK_INT(run(g, KVG_GUARD_WRITE, "POST", "", 0, &json, &out), 0);
    CHECK(refused_as(g, KVG_GUARD_WRITE, "POST", "url=http%3A%2F%2Fx%3A1", 0, &json, 400,
                     "query_not_allowed"));
    CHECK_INT(run(g, KVG_GUARD_WRITE, "DELETE", "x", 0, &untyped, &out), 1);
    CHECK_INT(out.status, 400);
}

TEST(bearer_with_keys)
{
    const struct kvg_guard *g = loopback_guard();
    struct kvg_http_refusal out;
    CHECK(g != NULL);
    struct head basic = {{"host", "localhost", "content-type", "application/json", "authorization",
                          "Basic b3BzOnNrLWFkbWlu", NULL}};
    CHECK_INT(run(g, KVG_GUARD_WRITE, "POST", "", 1, &basic, &out), 1);
    CHECK_INT((int)out.nheaders, 1); /* the scheme to use */
    CHECK(kvg_str_eq(out.headers[0].value, "Bearer"));
    CHECK(refused_as(g, KVG_GUARD_WRITE, "POST", "", 1, &basic, 401, "bearer_required"));
    CHECK_INT(run(g, KVG_GUARD_WRITE, "POST", "", 0, &basic, &out), 0); /* no keys: not asked */
    CHECK_INT(run(g, KVG_GUARD_READ, "GET", "", 1, &basic, &out), 0);   /* reading the page */
    CHECK_INT(run(g, KVG_GUARD_QUERY, "POST", "", 1, &basic, &out), 0); /* its route form */
    struct head bearer = {{"host", "localhost", "content-type", "application/json", "authorization",
                           "bearer sk-admin", NULL}};
    CHECK_INT(run(g, KVG_GUARD_WRITE, "POST", "", 1, &bearer, &out), 0);
    struct head del = {{"host", "localhost", "authorization", "Basic b3BzOnNrLWFkbWlu", NULL}};
    CHECK_INT(run(g, KVG_GUARD_WRITE, "DELETE", "", 1, &del, &out), 1);
    CHECK_INT(out.status, 401);
}
