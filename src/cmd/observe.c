/* `kvgate observe --routers URL... [--workers URL...] [--json | --prometheus]`:
 * every gateway replica's serving view (src/ui/observe.h collects and judges
 * them), printed as text, JSON or Prometheus series. The exit status is 1
 * when no replica's view could be read (the output is printed all the same),
 * 2 for bad usage. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/opt.h"
#include "cmd/cmd.h"
#include "ui/observe.h"

#define MAX_ROUTERS 64

static const struct kvg_opt flags[] = {
    {"routers", NULL, KVG_OPT_LIST_APPEND, offsetof(struct kvg_cmd_observe_opts, routers),
     .meta = "URL...", .help = "the gateway replicas to read (required; at most 64)",
     .section = "options"},
    {"workers", NULL, KVG_OPT_LIST_APPEND, offsetof(struct kvg_cmd_observe_opts, workers),
     .meta = "URL...", .help = "workers to judge even when no view lists them"},
    {"json", NULL, KVG_OPT_BOOL, offsetof(struct kvg_cmd_observe_opts, json), .help = "print JSON"},
    {"prometheus", NULL, KVG_OPT_BOOL, offsetof(struct kvg_cmd_observe_opts, prometheus),
     .help = "print Prometheus series (not with --json)"},
    KVG_OPT_END,
};

void kvg_cmd_observe_usage(FILE *f)
{
    fprintf(f, "usage: kvgate observe --routers URL... [--workers URL...] [--json | --prometheus]\n"
               "Reads GET /serving from every gateway replica (2 s per fetch, 14 s in all; a view\n"
               "older than 15 s is none) and says of each worker: Confirmed (a fresh view shows\n"
               "it serving), NotServing (fresh views list it, none serving) or Unknown (no fresh\n"
               "view lists it). --workers names workers to judge even when no view lists them.\n"
               "Exits 1 when no replica's view could be read.\n\n");
    kvg_opt_help(flags, NULL, f);
}

void kvg_cmd_observe_free(struct kvg_cmd_observe_opts *o)
{
    kvg_opt_free(flags, o);
}

int kvg_cmd_observe_parse(struct kvg_cmd_observe_opts *o, int argc, char **argv, char *err,
                          size_t errlen)
{
    memset(o, 0, sizeof *o);
    int rc = kvg_opt_parse_argv(flags, o, argc, argv, 1, err, errlen);
    if (rc) return rc;
    if (!o->routers.n) return kvg_err_set(err, errlen, KVG_ECONFIG, "--routers URL... is required");
    if (o->routers.n > MAX_ROUTERS)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "--routers: at most %d values", MAX_ROUTERS);
    if (o->workers.n > KVG_UI_VIEW_MAX_WORKERS)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "--workers: at most %d values",
                           (int)KVG_UI_VIEW_MAX_WORKERS);
    if (o->json && o->prometheus)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "--json and --prometheus are exclusive");
    return 0;
}

/* The workers to judge: those named, then every one a view lists. */
static size_t worker_set(char *const *named, size_t nnamed, const struct kvg_ui_view *v, size_t nv,
                         const char **out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < nnamed && n < max; i++) out[n++] = named[i];
    for (size_t i = 0; i < nv; i++)
        for (size_t k = 0; k < v[i].nw && n < max; k++) {
            int dup = 0;
            for (size_t j = 0; j < n && !dup; j++) dup = !strcmp(out[j], v[i].w[k].url);
            if (!dup) out[n++] = v[i].w[k].url;
        }
    return n;
}

/* Collects the views and prints them; the exit status. */
static int observe(const struct kvg_cmd_observe_opts *o)
{
    struct kvg_ui_view *v = calloc(o->routers.n, sizeof *v);
    const char **ws = calloc(KVG_UI_VIEW_MAX_WORKERS, sizeof *ws);
    if (!v || !ws) {
        free(v);
        free(ws);
        return 1;
    }
    for (size_t i = 0; i < o->routers.n; i++)
        snprintf(v[i].router, sizeof v[i].router, "%s", o->routers.v[i]);
    kvg_ui_observe_collect(v, o->routers.n);
    size_t nw =
        worker_set(o->workers.v, o->workers.n, v, o->routers.n, ws, KVG_UI_VIEW_MAX_WORKERS);
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    if (o->json) {
        kvg_buf_append_str(&b, "{\"routers\":[");
        for (size_t i = 0; i < o->routers.n; i++) {
            kvg_buf_append_str(&b, i ? ",{\"url\":" : "{\"url\":");
            kvg_buf_append_json_str(&b, v[i].router, strlen(v[i].router));
            kvg_buf_printf(&b, ",\"fresh\":%s,\"generation\":", v[i].fresh ? "true" : "false");
            if (v[i].fetched)
                kvg_buf_printf(&b, "%llu", (unsigned long long)v[i].generation);
            else
                kvg_buf_append_str(&b, "null");
            kvg_buf_append_str(&b, ",\"error\":");
            kvg_buf_append_json_str(&b, v[i].error, strlen(v[i].error));
            kvg_buf_append_str(&b, "}");
        }
        kvg_buf_append_str(&b, "],\"workers\":[");
        for (size_t i = 0; i < nw; i++) {
            kvg_buf_append_str(&b, i ? ",{\"url\":" : "{\"url\":");
            kvg_buf_append_json_str(&b, ws[i], strlen(ws[i]));
            kvg_buf_printf(&b, ",\"state\":\"%s\"}",
                           kvg_ui_obs_name(kvg_ui_observe_worker(v, o->routers.n, ws[i])));
        }
        kvg_buf_append_str(&b, "]}\n");
    } else if (o->prometheus) {
        kvg_buf_append_str(&b, "# HELP kvgate_observe_router_fresh 1 when the replica's serving "
                               "view was fetched and fresh.\n# TYPE kvgate_observe_router_fresh "
                               "gauge\n");
        for (size_t i = 0; i < o->routers.n; i++) {
            kvg_buf_append_str(&b, "kvgate_observe_router_fresh{router=");
            kvg_buf_append_json_str(&b, v[i].router, strlen(v[i].router));
            kvg_buf_printf(&b, "} %d\n", v[i].fresh);
        }
        kvg_buf_append_str(&b, "# HELP kvgate_observe_worker 1 for the worker's observed state.\n"
                               "# TYPE kvgate_observe_worker gauge\n");
        for (size_t i = 0; i < nw; i++) {
            enum kvg_ui_obs st = kvg_ui_observe_worker(v, o->routers.n, ws[i]);
            for (int s = KVG_UI_CONFIRMED; s <= KVG_UI_UNKNOWN; s++) {
                kvg_buf_append_str(&b, "kvgate_observe_worker{worker=");
                kvg_buf_append_json_str(&b, ws[i], strlen(ws[i]));
                kvg_buf_printf(&b, ",state=\"%s\"} %d\n", kvg_ui_obs_name(s), (int)st == s);
            }
        }
    } else {
        for (size_t i = 0; i < o->routers.n; i++)
            kvg_buf_printf(&b, "router  %-40s %s%s\n", v[i].router,
                           v[i].fresh ? "fresh" : "no view: ", v[i].fresh ? "" : v[i].error);
        for (size_t i = 0; i < nw; i++)
            kvg_buf_printf(&b, "worker  %-40s %s\n", ws[i],
                           kvg_ui_obs_name(kvg_ui_observe_worker(v, o->routers.n, ws[i])));
    }
    fwrite(b.data ? b.data : "", 1, b.len, stdout);
    kvg_buf_free(&b);
    size_t read = 0;
    for (size_t i = 0; i < o->routers.n; i++) {
        read += v[i].fetched != 0;
        kvg_ui_view_free(&v[i]);
    }
    free(v);
    free(ws);
    return read ? 0 : 1; /* the output stands either way; no view is a failure */
}

int kvg_cmd_observe_main(int argc, char **argv)
{
    struct kvg_cmd_observe_opts o;
    char err[600];
    int rc = kvg_cmd_observe_parse(&o, argc, argv, err, sizeof err);
    if ((rc = kvg__cmd_parsed(rc, "observe", err, kvg_cmd_observe_usage)) < 0) rc = observe(&o);
    kvg_cmd_observe_free(&o);
    return rc;
}
