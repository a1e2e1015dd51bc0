/* Live mode's runner: against --target as it is (one run), or, with
 * --spawn-sims N, for each policy a fresh cluster on 127.0.0.1 (N `kvgate
 * sim` publishing KV events, one `kvgate serve` with that policy in front),
 * the run, and the cluster stopped again. Fresh processes per policy: no
 * policy inherits another's warm caches. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "base/opt.h"
#include "base/proc.h"
#include "net/https.h"
#include "bench/interrupt.h"
#include "bench/routing/live_int.h"

#define MAX_ARGS 200 /* serve with 64 engines takes ~165 */

struct argv_b {
    char *v[MAX_ARGS + 1];
    char store[MAX_ARGS][PATH_MAX > 512 ? 512 : PATH_MAX];
    int n;
};

static void add(struct argv_b *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct argv_b *a, const char *fmt, ...)
{
    if (a->n >= MAX_ARGS) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->store[a->n], sizeof a->store[a->n], fmt, ap);
    va_end(ap);
    a->v[a->n] = a->store[a->n];
    a->v[++a->n] = NULL;
}

static int add_arg(void *ud, const char *arg)
{
    struct argv_b *a = ud;
    if (a->n >= MAX_ARGS || strlen(arg) >= sizeof a->store[0]) return -E2BIG;
    add(a, "%s", arg);
    return 0;
}

/* The engines' tokenizer and chat template, the same for the sims and the
 * gateway (an agent workload's; absent: their byte tokenizer). Paths are
 * made absolute: the children may start elsewhere. */
static void add_tokenizer(const struct kvg_bench_cfg *c, struct argv_b *a)
{
    const char *flag[2] = {"--tokenizer", "--tokenizer-config"};
    const char *path[2] = {c->des.wl.tokenizer, c->des.wl.tokenizer_config};
    for (int i = 0; i < 2; i++) {
        if (!path[i][0]) continue;
        char abs[PATH_MAX];
        add(a, "%s", flag[i]);
        add(a, "%s", realpath(path[i], abs) ? abs : path[i]);
    }
}

/* Starts the engines and the gateway for one policy; fills tg. */
static int start_cluster(const struct kvg_bench_cfg *c, const char *policy, struct kvg_proc_set *P,
                         struct kvg_bench_live_target *tg, char *err, size_t errlen,
                         const char *logdir)
{
    uint32_t n = c->spawn_sims;
    int sim_port[KVG_BENCH_LIVE_MAX_ENGINES], ev_port[KVG_BENCH_LIVE_MAX_ENGINES];
    const struct kvg_sim_profile *p = &c->des.profile;
    char log[600];
    int rc;
    for (uint32_t i = 0; i < n; i++) {
        sim_port[i] = kvg_proc_free_port();
        ev_port[i] = kvg_proc_free_port();
        if (sim_port[i] <= 0 || ev_port[i] <= 0) {
            snprintf(err, errlen, "no free port on 127.0.0.1");
            return -EADDRINUSE;
        }
        struct argv_b a = {0};
        add(&a, "kvgate");
        add(&a, "sim");
        add(&a, "--host");
        add(&a, "127.0.0.1");
        add(&a, "--port");
        add(&a, "%d", sim_port[i]);
        add(&a, "--model");
        add(&a, "%s", c->model);
        add(&a, "--profile");
        add(&a, "%s", p->name);
        add(&a, "--block-size");
        add(&a, "%u", p->block_size);
        add(&a, "--kv-capacity-tokens");
        add(&a, "%llu", (unsigned long long)p->kv_capacity_tokens);
        add(&a, "--max-num-seqs");
        add(&a, "%u", p->max_num_seqs);
        add(&a, "--speed");
        add(&a, "%g", c->speed);
        add(&a, "--seed");
        add(&a, "%llu", (unsigned long long)(c->des.seed * 1000003ull + i));
        add(&a, "--kv-events-endpoint");
        add(&a, "tcp://127.0.0.1:%d", ev_port[i]);
        add(&a, "--log-level");
        add(&a, "warn");
        add_tokenizer(c, &a);
        snprintf(log, sizeof log, "%s/sim-%s-%u.log", logdir, policy, i);
        if ((rc = kvg_proc_spawn(P, c->kvgate_bin, a.v, logdir[0] ? log : "/dev/null", 0))) {
            snprintf(err, errlen, "starting kvgate sim: %s", kvg_strerror(rc));
            return rc;
        }
    }
    for (uint32_t i = 0; i < n; i++)
        if ((rc = kvg_proc_wait_http(sim_port[i], "/v1/models", 200, 20000,
                                     kvg_bench_interrupted))) {
            snprintf(err, errlen, "kvgate sim on port %d did not come up: %s", sim_port[i],
                     kvg_strerror(rc));
            return rc;
        }
    int gw = kvg_proc_free_port();
    if (gw <= 0) {
        snprintf(err, errlen, "no free port on 127.0.0.1");
        return -EADDRINUSE;
    }
    struct argv_b a = {0};
    add(&a, "kvgate");
    add(&a, "serve");
    add(&a, "--host");
    add(&a, "127.0.0.1");
    add(&a, "--port");
    add(&a, "%d", gw);
    add(&a, "--threads");
    add(&a, "1");
    add(&a, "--policy");
    add(&a, "%s", policy);
    add(&a, "--block-size");
    add(&a, "%u", p->block_size);
    /* The policy options the bench was given, those that are not serve's
     * defaults anyway, by the table both parse them with. */
    struct kvg_policy_opts dflt;
    kvg_policy_opts_default(&dflt);
    if ((rc = kvg_opt_emit(kvg_policy_opt_table, &c->des.popts, &dflt, add_arg, &a))) {
        snprintf(err, errlen, "kvgate serve's arguments: %s", kvg_strerror(rc));
        return rc;
    }
    /* Engine load as fresh as llm-d's EPP sees it (50-100 ms of engine time). */
    uint32_t scrape = c->serve_scrape_ms
                          ? c->serve_scrape_ms
                          : (uint32_t)(100.0 / c->speed < 20 ? 20 : 100.0 / c->speed);
    add(&a, "--load-monitor-interval-ms");
    add(&a, "%u", scrape);
    add(&a, "--health-check-interval-secs");
    add(&a, "1");
    add(&a, "--no-access-log");
    add(&a, "--log-level");
    add(&a, "warn");
    add_tokenizer(c, &a);
    add(&a, "--worker-urls");
    for (uint32_t i = 0; i < n; i++) add(&a, "http://127.0.0.1:%d", sim_port[i]);
    add(&a, "--kv-events-endpoints");
    for (uint32_t i = 0; i < n; i++) add(&a, "tcp://127.0.0.1:%d", ev_port[i]);
    snprintf(log, sizeof log, "%s/serve-%s.log", logdir, policy);
    if ((rc = kvg_proc_spawn(P, c->kvgate_bin, a.v, logdir[0] ? log : "/dev/null", 0))) {
        snprintf(err, errlen, "starting kvgate serve: %s", kvg_strerror(rc));
        return rc;
    }
    if ((rc = kvg_proc_wait_http(gw, "/readiness", 200, 20000, kvg_bench_interrupted))) {
        snprintf(err, errlen, "kvgate serve on port %d did not become ready: %s", gw,
                 kvg_strerror(rc));
        return rc;
    }
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", gw);
    if ((rc = kvg_http_target_parse(url, &tg->target))) return rc;
    tg->nengines = (int)n;
    for (uint32_t i = 0; i < n; i++)
        snprintf(tg->engines[i], sizeof tg->engines[i], "http://127.0.0.1:%d", sim_port[i]);
    return 0;
}

/* The gateway's own exactness check after a run (GET /workers): per worker,
 * the answers whose prompt tokens it compared with the engine's usage, those
 * that differed, and its routing mode. Into s; a failure leaves them unread
 * (token_checks -1) and says why on stderr. */
static void read_checks(const struct kvg_bench_live_target *tg, struct kvg_bench_summary *s)
{
    char url[600], err[256] = "";
    struct kvg_https h;
    struct kvg_https_resp r;
    char *body = NULL;
    size_t len = 0;
    s->token_checks = s->token_mismatches = -1;
    snprintf(url, sizeof url, "http://%s", tg->target.hostport);
    int rc = kvg_https_init(&h, url, NULL, NULL, err, sizeof err);
    if (rc) {
        fprintf(stderr, "kvgate bench: %s/workers: %s\n", url, err[0] ? err : kvg_strerror(rc));
        return;
    }
    h.connect_timeout_ms = 2000;
    if (!(rc = kvg_https_get(&h, "/workers", 5000, &r))) {
        if (r.status != 200) rc = KVG_EPARSE;
        if (!rc) rc = kvg_https_resp_body(&r, 16u << 20, &body, &len);
        kvg_https_resp_close(&h, &r);
    }
    kvg_https_free(&h);
    cJSON *j = rc ? NULL : cJSON_ParseWithLength(body, len);
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(j, "workers"), *w;
    if (!cJSON_IsArray(ws)) {
        fprintf(stderr, "kvgate bench: %s/workers: no worker list (%s)\n", url,
                rc ? kvg_strerror(rc) : "not the expected JSON");
    } else {
        s->token_checks = s->token_mismatches = 0;
        cJSON_ArrayForEach(w, ws)
        {
            const cJSON *ch = cJSON_GetObjectItemCaseSensitive(w, "prompt_token_checks");
            const cJSON *mi = cJSON_GetObjectItemCaseSensitive(w, "prompt_token_mismatches");
            const cJSON *mode = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(w, "routing"), "mode");
            s->token_checks += cJSON_IsNumber(ch) ? (int64_t)ch->valuedouble : 0;
            s->token_mismatches += cJSON_IsNumber(mi) ? (int64_t)mi->valuedouble : 0;
            const char *m = cJSON_IsString(mode) ? mode->valuestring : "unknown";
            if (!s->workers++)
                snprintf(s->mode, sizeof s->mode, "%s", m);
            else if (strcmp(s->mode, m))
                snprintf(s->mode, sizeof s->mode, "mixed");
            s->workers_exact += !strcmp(m, "exact");
        }
    }
    cJSON_Delete(j);
    free(body);
}

int kvg_bench_run_live(const struct kvg_bench_cfg *c, struct kvg_bench_summary *out)
{
    kvg_bench_catch_signals();
    struct kvg_bench_live_target *tg = calloc(1, sizeof *tg);
    if (!tg) return -ENOMEM;
    /* Children's logs go to $KVG_BENCH_LOGDIR when set (tests read them). */
    const char *logdir = getenv("KVG_BENCH_LOGDIR");
    if (!logdir) logdir = "";
    int rc = 0;
    size_t runs = c->spawn_sims ? c->npolicies : 1;
    for (size_t i = 0; i < runs && !rc; i++) {
        const char *policy = c->policies[i];
        char err[1024] = "";
        struct kvg_proc_set P = {0};
        memset(tg, 0, sizeof *tg);
        snprintf(tg->path, sizeof tg->path, "%s",
                 c->chat_api ? "/v1/chat/completions" : "/v1/completions");
        snprintf(tg->label, sizeof tg->label, "%s", policy);
        tg->drain_s = c->des.timeout_s > 0 ? c->des.timeout_s * 2 + 60 : 600;
        memset(&out[i], 0, sizeof out[i]);
        snprintf(out[i].policy, sizeof out[i].policy, "%s", policy);
        if (c->spawn_sims) {
            if (c->spawn_sims > KVG_BENCH_LIVE_MAX_ENGINES) {
                snprintf(err, sizeof err, "at most %d engines", KVG_BENCH_LIVE_MAX_ENGINES);
                rc = KVG_ECONFIG;
            } else {
                rc = start_cluster(c, policy, &P, tg, err, sizeof err, logdir);
            }
        } else {
            rc = kvg_http_target_parse(c->target, &tg->target);
            if (rc) snprintf(err, sizeof err, "--target %s: %s", c->target, kvg_strerror(rc));
        }
        if (!rc) rc = kvg__bench_live_run(c, tg, &out[i], err, sizeof err);
        if (!rc && c->spawn_sims) read_checks(tg, &out[i]);
        /* A policy the gateway does not know makes it exit at start: say so
         * and go on with the others, as offline mode does. */
        if (rc && c->spawn_sims && P.n == (int)c->spawn_sims + 1 && !kvg_proc_alive(&P, P.n - 1) &&
            !kvg_bench_interrupted()) {
            out[i].status = KVG_ENOTFOUND;
            snprintf(out[i].note, sizeof out[i].note,
                     "kvgate serve refused policy '%s' (see its --help)", policy);
            fprintf(stderr, "kvgate bench: %s\n", out[i].note);
            rc = 0;
        }
        kvg_proc_stop_all(&P, 5000);
        if (rc) fprintf(stderr, "kvgate bench: %s: %s\n", policy, err);
        if (kvg_bench_interrupted() && !rc) rc = -EINTR;
    }
    for (size_t i = runs; i < c->npolicies; i++) {
        snprintf(out[i].policy, sizeof out[i].policy, "%s", c->policies[i]);
        out[i].status = KVG_ENOTFOUND;
        snprintf(out[i].note, sizeof out[i].note,
                 "live without --spawn-sims measures one endpoint");
    }
    free(tg);
    return rc;
}
