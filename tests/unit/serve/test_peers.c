/* A SIGHUP's new peer list (serve/peers.c, kvg__serve_peers_set) on a real
 * loop: a peer that answers comes up and stays up with its counts across a
 * reload that keeps it, a removed one leaves /workers and /metrics, a new
 * one starts unknown, one removed while its address is being resolved
 * goes without a leak, and a process started without peers refuses a
 * first list. --peer-service's found peers change beside the given ones
 * (peers_dns.c). */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "base/proc.h"
#include "metrics/metrics.h"
#include "net/http.h"
#include "serve/peers.h"
#include "serve/serve.h"
#include "support/test.h"

static void answer(struct kvg_http_req *req, void *ud)
{
    (void)ud;
    kvg_http_res_send(req, 200, "application/json", NULL, 0, "{}", 2);
}

/* url's "state" in /workers' peers (cap bytes; "" when it is not listed)
 * and its "sent"; returns the number of peers listed. */
static int peer_info(struct kvg_serve *sv, const char *url, char *state, size_t cap, double *sent)
{
    cJSON *root = cJSON_CreateObject();
    kvg__serve_peers_json(sv, root);
    cJSON *arr = cJSON_GetObjectItem(root, "peers"), *e;
    state[0] = 0;
    *sent = -1;
    cJSON_ArrayForEach(e, arr)
    {
        if (strcmp(cJSON_GetObjectItem(e, "url")->valuestring, url)) continue;
        snprintf(state, cap, "%s", cJSON_GetObjectItem(e, "state")->valuestring);
        *sent = cJSON_GetObjectItem(e, "sent")->valuedouble;
    }
    int n = cJSON_GetArraySize(arr);
    cJSON_Delete(root);
    return n;
}

static int metrics_has(struct kvg_serve *sv, const char *needle)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    CHECK_INT(kvg_metrics_render(sv->metrics.reg, &b), 0);
    CHECK_INT(kvg_buf_append(&b, "", 1), 0);
    int has = strstr(b.data, needle) != NULL;
    kvg_buf_free(&b);
    return has;
}

static struct kvg_serve *serve_new(const char *const *peers, size_t n)
{
    struct kvg_serve *sv = calloc(1, sizeof *sv);
    CHECK(sv != NULL);
    kvg_serve_config_default(&sv->cfg);
    sv->cfg.exchange_ms = 10;
    for (size_t i = 0; i < n; i++) CHECK_INT(kvg_strlist_add(&sv->cfg.peers, peers[i]), 0);
    CHECK_INT(kvg_serve_metrics_init(&sv->metrics, "round_robin", 0), 0);
    char err[256] = "";
    CHECK_INT(kvg__serve_peers_init(sv, err, sizeof err), 0);
    return sv;
}

static void serve_free(struct kvg_serve *sv)
{
    kvg__serve_peers_free(sv);
    kvg_serve_metrics_free(&sv->metrics);
    kvg_serve_config_free(&sv->cfg);
    free(sv);
}

static void list_of(struct kvg_strlist *l, const char *a, const char *b)
{
    kvg_strlist_free(l);
    if (a) CHECK_INT(kvg_strlist_add(l, a), 0);
    if (b) CHECK_INT(kvg_strlist_add(l, b), 0);
}

TEST(a_reload_keeps_removes_and_adds_peers)
{
    char a[64], b[64], c[64], state[16], err[256] = "", needle[160];
    int pa = kvg_proc_free_port(), pb = kvg_proc_free_port(), pc = kvg_proc_free_port();
    CHECK(pa > 0 && pb > 0 && pc > 0);
    snprintf(a, sizeof a, "http://127.0.0.1:%d", pa); /* answers */
    snprintf(b, sizeof b, "http://127.0.0.1:%d", pb); /* refuses: nothing listens */
    snprintf(c, sizeof c, "http://localhost:%d", pc); /* a name: resolved first */
    const char *both[] = {a, b};
    struct kvg_serve *sv = serve_new(both, 2);
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kvg_http_limits lim;
    kvg_http_limits_default(&lim);
    struct kvg_http_server *srv = NULL;
    CHECK_INT(kvg_http_server_start(&loop, "127.0.0.1", pa, KVG_HTTP_BIND_EXCLUSIVE, &lim, answer,
                                    NULL, &srv),
              0);
    CHECK_INT(kvg__serve_peers_start(sv, &loop), 0);
    double sent_a = -1, sent_b;
    char state_b[16] = "";
    for (int i = 0; i < 5000; i++) { /* each turn waits for an event: a 10 ms tick at most */
        uv_run(&loop, UV_RUN_ONCE);
        peer_info(sv, a, state, sizeof state, &sent_a);
        peer_info(sv, b, state_b, sizeof state_b, &sent_b);
        if (!strcmp(state, "up") && !strcmp(state_b, "down")) break;
    }
    CHECK_STR(state, "up");
    CHECK_STR(state_b, "down");
    snprintf(needle, sizeof needle, "kvgate_peer_up{peer=\"%s\"} 0", b);
    CHECK(metrics_has(sv, needle));

    /* b goes, c comes, a stays as it was. */
    struct kvg_strlist next = {0};
    size_t added, removed;
    list_of(&next, a, c);
    CHECK_INT(kvg__serve_peers_set(sv, &next, &added, &removed, err, sizeof err), 0);
    CHECK_INT((int)added, 1);
    CHECK_INT((int)removed, 1);
    double sent_after, sent_c;
    CHECK_INT(peer_info(sv, a, state, sizeof state, &sent_after), 2);
    CHECK_STR(state, "up");
    CHECK(sent_after >= sent_a);
    CHECK_INT(peer_info(sv, b, state, sizeof state, &sent_b), 2);
    CHECK_STR(state, "");
    CHECK(!metrics_has(sv, needle));
    peer_info(sv, c, state, sizeof state, &sent_c);
    CHECK_STR(state, "unknown");
    snprintf(needle, sizeof needle, "kvgate_peer_up{peer=\"%s\"} 0", c);
    CHECK(metrics_has(sv, needle));
    snprintf(needle, sizeof needle, "kvgate_peer_up{peer=\"%s\"} 1", a);
    CHECK(metrics_has(sv, needle));

    /* A turn or two: c's name goes to the resolver; then every peer goes,
     * c while its answer may still be on the way. */
    for (int i = 0; i < 3; i++) uv_run(&loop, UV_RUN_ONCE);
    list_of(&next, NULL, NULL);
    CHECK_INT(kvg__serve_peers_set(sv, &next, &added, &removed, err, sizeof err), 0);
    CHECK_INT((int)removed, 2);
    CHECK_INT(peer_info(sv, a, state, sizeof state, &sent_a), 0);
    CHECK(!metrics_has(sv, needle));
    /* The same list back: fresh peers, counts from zero. */
    list_of(&next, a, NULL);
    CHECK_INT(kvg__serve_peers_set(sv, &next, &added, &removed, err, sizeof err), 0);
    CHECK_INT(peer_info(sv, a, state, sizeof state, &sent_a), 1);
    CHECK_STR(state, "unknown");
    CHECK(sent_a == 0);

    kvg__serve_peers_stop(sv);
    kvg_http_server_close(srv);
    for (int i = 0; i < 1000 && uv_run(&loop, UV_RUN_NOWAIT); i++) uv_run(&loop, UV_RUN_ONCE);
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK_INT(uv_loop_close(&loop), 0);
    kvg_strlist_free(&next);
    serve_free(sv);
}

TEST(a_first_list_needs_a_restart)
{
    struct kvg_serve *sv = serve_new(NULL, 0);
    struct kvg_strlist next = {0};
    size_t added, removed;
    char err[256] = "";
    list_of(&next, "http://127.0.0.1:9", NULL);
    CHECK_INT(kvg__serve_peers_set(sv, &next, &added, &removed, err, sizeof err), KVG_ECONFIG);
    CHECK(strstr(err, "a restart applies them") != NULL);
    kvg_strlist_free(&next);
    serve_free(sv);
}

/* --peer-service's answer as peers: each address once, sorted, IPv6 in
 * brackets, other families skipped. */
TEST(a_names_addresses_are_peer_urls)
{
    struct sockaddr_in a = {.sin_family = AF_INET}, b = {.sin_family = AF_INET};
    struct sockaddr_in6 c = {.sin6_family = AF_INET6};
    struct sockaddr d = {.sa_family = AF_UNIX};
    CHECK_INT(inet_pton(AF_INET, "10.0.0.2", &a.sin_addr), 1);
    CHECK_INT(inet_pton(AF_INET, "10.0.0.1", &b.sin_addr), 1);
    CHECK_INT(inet_pton(AF_INET6, "fd00::7", &c.sin6_addr), 1);
    struct addrinfo ai[5] = {
        {.ai_family = AF_INET, .ai_addr = (struct sockaddr *)&a, .ai_addrlen = sizeof a},
        {.ai_family = AF_INET, .ai_addr = (struct sockaddr *)&b, .ai_addrlen = sizeof b},
        {.ai_family = AF_INET, .ai_addr = (struct sockaddr *)&a, .ai_addrlen = sizeof a},
        {.ai_family = AF_UNIX, .ai_addr = &d, .ai_addrlen = sizeof d},
        {.ai_family = AF_INET6, .ai_addr = (struct sockaddr *)&c, .ai_addrlen = sizeof c},
    };
    for (int i = 0; i < 4; i++) ai[i].ai_next = &ai[i + 1];
    struct kvg_strlist out = {0};
    CHECK_INT(kvg__serve_peers_addr_urls(ai, "8080", &out), 0);
    CHECK_INT((int)out.n, 3);
    CHECK_STR(out.v[0], "http://10.0.0.1:8080");
    CHECK_STR(out.v[1], "http://10.0.0.2:8080");
    CHECK_STR(out.v[2], "http://[fd00::7]:8080");
    kvg_strlist_free(&out);
}

/* A StatefulSet scaled up then down under --peer-service: the found peers
 * change, the given ones stay, a peer both given and found is listed once,
 * and a SIGHUP's new given list keeps the found ones. */
TEST(found_peers_change_beside_the_given_ones)
{
    const char *given[] = {"http://10.0.0.9:8080"};
    struct kvg_serve *sv = serve_new(given, 1);
    struct kvg_strlist found = {0}, next = {0};
    size_t added, removed;
    char err[256] = "", state[16];
    double sent;
    list_of(&found, "http://10.0.0.1:8080", "http://10.0.0.9:8080");
    CHECK_INT(kvg__serve_peers_found(sv, &found, &added, &removed, err, sizeof err), 0);
    CHECK_INT((int)added, 1);
    CHECK_INT(peer_info(sv, "http://10.0.0.1:8080", state, sizeof state, &sent), 2);
    list_of(&found, "http://10.0.0.1:8080", "http://10.0.0.2:8080"); /* scaled up */
    CHECK_INT(kvg__serve_peers_found(sv, &found, &added, &removed, err, sizeof err), 0);
    CHECK_INT((int)added, 1);
    CHECK_INT((int)removed, 0); /* 10.0.0.9 is still given */
    CHECK_INT(peer_info(sv, "http://10.0.0.2:8080", state, sizeof state, &sent), 3);
    CHECK_STR(state, "unknown");
    list_of(&next, "http://10.0.0.8:8080", NULL); /* SIGHUP */
    CHECK_INT(kvg__serve_peers_set(sv, &next, &added, &removed, err, sizeof err), 0);
    CHECK_INT((int)added, 1);
    CHECK_INT((int)removed, 1);
    CHECK_INT(peer_info(sv, "http://10.0.0.1:8080", state, sizeof state, &sent), 3);
    CHECK_STR(state, "unknown");
    list_of(&found, "http://10.0.0.2:8080", NULL); /* scaled down */
    CHECK_INT(kvg__serve_peers_found(sv, &found, &added, &removed, err, sizeof err), 0);
    CHECK_INT((int)removed, 1);
    CHECK_INT(peer_info(sv, "http://10.0.0.1:8080", state, sizeof state, &sent), 2);
    CHECK_STR(state, "");
    kvg_strlist_free(&found);
    kvg_strlist_free(&next);
    serve_free(sv);
}
