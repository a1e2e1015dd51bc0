/* kvgate serve's configuration through its option table: the YAML workers:
 * list and its errors, flags over the file, the SIGHUP comparison. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "cmd/cmd.h"
#include "serve/config.h"
#include "support/test.h"

/* Writes text to a fresh file (path, 64 bytes); the caller unlinks it. */
static void write_tmp(char *path, size_t cap, const char *text)
{
    snprintf(path, cap, "/tmp/kvg-test-config-XXXXXX");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* The file's configuration into a fresh *c (the caller frees both). */
static int load(const char *text, char *path, struct kvg_serve_config **c, char *err, size_t errlen)
{
    write_tmp(path, 64, text);
    *c = calloc(1, sizeof **c);
    CHECK(*c != NULL);
    return kvg_serve_config_load_file(path, *c, err, errlen);
}

TEST(workers_row_key_typo_is_an_error)
{
    /* It used to be ignored: the worker silently had no KV events. */
    char path[64], err[512] = "", want[256];
    struct kvg_serve_config *c;
    CHECK_INT(load("port: 9000\n"
                   "workers:\n"
                   "  - url: http://127.0.0.1:8001\n"
                   "    kv_events_endpoint: tcp://127.0.0.1:5557\n"
                   "  - url: http://127.0.0.1:8002\n"
                   "    kv_event_endpoint: tcp://127.0.0.1:5558\n",
                   path, &c, err, sizeof err),
              KVG_ECONFIG);
    snprintf(want, sizeof want,
             "%s:6: workers[1].kv_event_endpoint: unknown key (did you mean "
             "kv_events_endpoint?)",
             path);
    CHECK_STR(err, want);
    unlink(path);
    free(c);
}

TEST(workers_rows_fill_the_lists)
{
    char path[64], err[512] = "";
    struct kvg_serve_config *c;
    CHECK_INT(load("workers:\n"
                   "  - url: http://127.0.0.1:8001\n"
                   "    kv_events_endpoint: tcp://127.0.0.1:5557\n"
                   "    role: prefill\n"
                   "    bootstrap_port: 8998\n"
                   "  - http://127.0.0.1:8002\n",
                   path, &c, err, sizeof err),
              0);
    CHECK_INT(c->workers.n, 2);
    CHECK_STR(c->workers.v[1], "http://127.0.0.1:8002");
    CHECK_INT(c->kv_endpoints.n, 2);
    CHECK_STR(c->kv_endpoints.v[0], "tcp://127.0.0.1:5557");
    CHECK_STR(c->kv_endpoints.v[1], "none");
    CHECK_INT(c->replay_endpoints.n, 0); /* no worker names one */
    CHECK_STR(c->worker_roles.v[1], "none");
    CHECK_STR(c->worker_bootstrap.v[0], "8998");
    kvg_serve_config_free(c);
    unlink(path);
    free(c);
}

TEST(flags_override_the_file_and_diff)
{
    char path[64], err[512] = "", arg[80], changed[256];
    write_tmp(path, sizeof path,
              "port: 9000\npolicy: round_robin\nworker_urls: [http://127.0.0.1:8001]\n"
              "cache-aware-miss: smallest_tree\n");
    snprintf(arg, sizeof arg, "%s", path);
    char *argv[] = {"serve", "--config", arg, "--port", "9001", "--threads", "2"};
    struct kvg_serve_config *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    CHECK(a && b);
    kvg_serve_config_default(a);
    CHECK_INT(kvg_cmd_serve_parse(a, 7, argv, err, sizeof err), 0);
    CHECK_INT(a->port, 9001);
    CHECK_STR(a->policy, "round_robin");
    CHECK_INT(a->policy_opts.miss_to_smallest_tree, 1);
    CHECK_INT(a->workers.n, 1);
    CHECK_INT(kvg_serve_config_load_file(path, b, err, sizeof err), 0);
    /* The worker list reloads; the port and the threads need a restart. */
    CHECK_INT(kvg_strlist_add(&b->workers, "http://127.0.0.1:8002"), 0);
    b->threads = a->threads;
    CHECK_INT(kvg_serve_config_diff_restart(a, b, changed, sizeof changed), 1);
    CHECK_STR(changed, "port");
    b->policy_opts.temperature = 0.5;
    CHECK_INT(kvg_serve_config_diff_restart(a, b, changed, sizeof changed), 2);
    CHECK_STR(changed, "port, router-temperature");
    kvg_serve_config_free(a);
    kvg_serve_config_free(b);
    unlink(path);
    free(a);
    free(b);
}

TEST(flag_errors_say_what_is_expected)
{
    char err[512] = "";
    char *bad_port[] = {"serve", "--port", "abc"};
    char *typo[] = {"serve", "--polcy", "random"};
    struct kvg_serve_config *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    kvg_serve_config_default(c);
    CHECK_INT(kvg_cmd_serve_parse(c, 3, bad_port, err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "--port: expects an integer 0..65535, got 'abc'");
    CHECK_INT(kvg_cmd_serve_parse(c, 3, typo, err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "unknown flag '--polcy' (did you mean --policy?)");
    kvg_serve_config_free(c);
    free(c);
}

/* A request's outcome against the SLO needs both targets: one alone is
 * refused, not counted against a made-up other. */
TEST(slo_targets_go_together)
{
    char err[512] = "";
    char *half[] = {"serve", "--worker-urls", "http://127.0.0.1:9", "--slo-ttft-secs", "1"};
    char *both[] = {"serve",          "--worker-urls", "http://127.0.0.1:9", "--slo-ttft-secs", "1",
                    "--slo-itl-secs", "0.05"};
    struct kvg_serve_config *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    kvg_serve_config_default(c);
    CHECK_INT(kvg_cmd_serve_parse(c, 5, half, err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "--slo-ttft-secs and --slo-itl-secs go together");
    kvg_serve_config_free(c);
    kvg_serve_config_default(c);
    CHECK_INT(kvg_cmd_serve_parse(c, 7, both, err, sizeof err), 0);
    kvg_serve_config_free(c);
    free(c);
}

struct argv_acc {
    char *v[80];
    int n;
};

static int acc_add(void *ud, const char *arg)
{
    struct argv_acc *a = ud;
    if (a->n == 80) return -1;
    if (!(a->v[a->n] = strdup(arg))) return -1;
    a->n++;
    return 0;
}

/* What the bench's live mode does: the policy options it was given, emitted
 * by the shared table, are what the spawned kvgate serve ends up with. */
TEST(policy_options_emitted_are_serves)
{
    struct kvg_policy_opts want, dflt;
    kvg_policy_opts_default(&dflt);
    want = dflt;
    want.lora_max_workers = 5;
    want.lora_load_cost = 3.25;
    want.affinity_min_match = 0.7;
    want.approx_ttl_ms = 1234;
    want.max_idle_ms = 1;
    want.assignment_min_load = 1;
    want.miss_to_smallest_tree = 1;
    snprintf(want.session_header, sizeof want.session_header, "x-user");
    struct argv_acc a = {.v = {"serve"}, .n = 1};
    CHECK_INT(kvg_opt_emit(kvg_policy_opt_table, &want, &dflt, acc_add, &a), 0);
    CHECK_INT(a.n, 1 + 8); /* --name=value, one per changed option */
    struct kvg_serve_config *c = calloc(1, sizeof *c);
    char err[512] = "";
    CHECK(c != NULL);
    kvg_serve_config_default(c);
    CHECK_INT(kvg_cmd_serve_parse(c, a.n, a.v, err, sizeof err), 0);
    CHECK_STR(err, "");
    char diff[256];
    CHECK_INT(
        kvg_opt_diff(kvg_policy_opt_table, &want, &c->policy_opts, NULL, NULL, diff, sizeof diff),
        0);
    CHECK_STR(diff, "");
    kvg_serve_config_free(c);
    free(c);
    for (int i = 1; i < a.n; i++) free(a.v[i]);
}

TEST(peers_are_checked_where_they_are_written)
{
    char path[64], err[512] = "", want[256];
    struct kvg_serve_config *c;
    /* One value may be a comma-separated list (an environment variable in
     * a manifest); a trailing '/' goes, so the same peer is one name. */
    CHECK_INT(load("peers:\n"
                   "  - http://kvgate-0.kvgate-peers:8080/, http://kvgate-1.kvgate-peers:8080\n"
                   "  - http://10.0.0.7:8080\n",
                   path, &c, err, sizeof err),
              0);
    CHECK_INT(c->peers.n, 3);
    CHECK_STR(c->peers.v[0], "http://kvgate-0.kvgate-peers:8080");
    CHECK_STR(c->peers.v[1], "http://kvgate-1.kvgate-peers:8080");
    CHECK_STR(c->peers.v[2], "http://10.0.0.7:8080");
    kvg_serve_config_free(c);
    unlink(path);
    free(c);
    /* A bad one names the file and the line: a SIGHUP refuses the file. */
    CHECK_INT(load("port: 9000\n"
                   "peers:\n"
                   "  - http://a:8080\n"
                   "  - ftp://b:21\n",
                   path, &c, err, sizeof err),
              KVG_ECONFIG);
    snprintf(want, sizeof want, "%s:4: peers[1]: 'ftp://b:21' is not an http://host:port URL",
             path);
    CHECK_STR(err, want);
    unlink(path);
    free(c);
    CHECK_INT(load("peers: http://a:8080,http://a:8080/\n", path, &c, err, sizeof err),
              KVG_ECONFIG);
    snprintf(want, sizeof want, "%s:1: peers: 'http://a:8080' twice", path);
    CHECK_STR(err, want);
    unlink(path);
    free(c);
}

TEST(peers_flag_replaces_the_file_and_diff_reloads_them)
{
    char path[64], err[512] = "", arg[80], changed[256];
    write_tmp(path, sizeof path, "peers: [http://a:8080, http://b:8080]\n");
    snprintf(arg, sizeof arg, "%s", path);
    char *argv[] = {"serve", "--config", arg, "--peers", "http://c:8080", "http://d:8080/"};
    struct kvg_serve_config *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    CHECK(a && b);
    kvg_serve_config_default(a);
    CHECK_INT(kvg_cmd_serve_parse(a, 6, argv, err, sizeof err), 0);
    CHECK_INT(a->peers.n, 2);
    CHECK_STR(a->peers.v[0], "http://c:8080");
    CHECK_STR(a->peers.v[1], "http://d:8080");
    /* A changed list is SIGHUP's to apply, not a restart's. */
    CHECK_INT(kvg_serve_config_load_file(path, b, err, sizeof err), 0);
    CHECK_INT(b->peers.n, 2);
    b->threads = a->threads;
    CHECK_INT(kvg_serve_config_diff_restart(a, b, changed, sizeof changed), 0);
    char *bad[] = {"serve", "--peers", "http://c:8080", "https://c:8443"};
    kvg_serve_config_free(b);
    kvg_serve_config_default(b);
    CHECK_INT(kvg_cmd_serve_parse(b, 4, bad, err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "--peers: 'https://c:8443' is not an http://host:port URL");
    kvg_serve_config_free(a);
    kvg_serve_config_free(b);
    unlink(path);
    free(a);
    free(b);
}
