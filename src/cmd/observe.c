/* `kvgate observe --routers URL... [--workers URL...] [--json | --prometheus]`:
 * every gateway replica's serving view (src/ui/observe.h collects and judges
 * them), printed as text, JSON or Prometheus series. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "cmd/cmd.h"
#include "ui/observe.h"

#define MAX_ROUTERS 64

static void usage(FILE *f)
{
    fprintf(f, "usage: kvgate observe --routers URL... [--workers URL...] [--json | --prometheus]\n"
               "Reads GET /serving from every gateway replica (2 s per fetch, 14 s in all; a view\n"
               "older than 15 s is none) and says of each worker: Confirmed (a fresh view shows\n"
               "it serving), NotServing (fresh views list it, none serving) or Unknown (no fresh\n"
               "view lists it). --workers names workers to judge even when no view lists them.\n");
}

/* The workers to judge: those named, then every one a view lists. */
static size_t worker_set(char **named, size_t nnamed, const struct kvg_ui_view *v, size_t nv,
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

int kvg_cmd_observe_main(int argc, char **argv)
{
    char *routers[MAX_ROUTERS], *named[KVG_UI_VIEW_MAX_WORKERS];
    size_t nr = 0, nn = 0;
    int json = 0, prom = 0;
    char **list = NULL; /* where the values after --routers / --workers go */
    size_t *count = NULL, cap = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--routers")) {
            list = routers, count = &nr, cap = MAX_ROUTERS;
        } else if (!strcmp(a, "--workers")) {
            list = named, count = &nn, cap = KVG_UI_VIEW_MAX_WORKERS;
        } else if (!strcmp(a, "--json")) {
            json = 1, list = NULL;
        } else if (!strcmp(a, "--prometheus")) {
            prom = 1, list = NULL;
        } else if (list && strncmp(a, "--", 2)) {
            if (*count >= cap) {
                fprintf(stderr, "kvgate observe: too many values\n");
                return 2;
            }
            list[(*count)++] = argv[i];
        } else {
            fprintf(stderr, "kvgate observe: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!nr || (json && prom)) {
        usage(stderr);
        return 2;
    }
    struct kvg_ui_view *v = calloc(nr, sizeof *v);
    const char **ws = calloc(KVG_UI_VIEW_MAX_WORKERS, sizeof *ws);
    if (!v || !ws) {
        free(v);
        free(ws);
        return 1;
    }
    for (size_t i = 0; i < nr; i++) snprintf(v[i].router, sizeof v[i].router, "%s", routers[i]);
    kvg_ui_observe_collect(v, nr);
    size_t nw = worker_set(named, nn, v, nr, ws, KVG_UI_VIEW_MAX_WORKERS);
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    if (json) {
        kvg_buf_append_str(&b, "{\"routers\":[");
        for (size_t i = 0; i < nr; i++) {
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
                           kvg_ui_obs_name(kvg_ui_observe_worker(v, nr, ws[i])));
        }
        kvg_buf_append_str(&b, "]}\n");
    } else if (prom) {
        kvg_buf_append_str(&b, "# HELP kvgate_observe_router_fresh 1 when the replica's serving "
                               "view was fetched and fresh.\n# TYPE kvgate_observe_router_fresh "
                               "gauge\n");
        for (size_t i = 0; i < nr; i++) {
            kvg_buf_append_str(&b, "kvgate_observe_router_fresh{router=");
            kvg_buf_append_json_str(&b, v[i].router, strlen(v[i].router));
            kvg_buf_printf(&b, "} %d\n", v[i].fresh);
        }
        kvg_buf_append_str(&b, "# HELP kvgate_observe_worker 1 for the worker's observed state.\n"
                               "# TYPE kvgate_observe_worker gauge\n");
        for (size_t i = 0; i < nw; i++) {
            enum kvg_ui_obs o = kvg_ui_observe_worker(v, nr, ws[i]);
            for (int s = KVG_UI_CONFIRMED; s <= KVG_UI_UNKNOWN; s++) {
                kvg_buf_append_str(&b, "kvgate_observe_worker{worker=");
                kvg_buf_append_json_str(&b, ws[i], strlen(ws[i]));
                kvg_buf_printf(&b, ",state=\"%s\"} %d\n", kvg_ui_obs_name(s), (int)o == s);
            }
        }
    } else {
        for (size_t i = 0; i < nr; i++)
            kvg_buf_printf(&b, "router  %-40s %s%s\n", v[i].router,
                           v[i].fresh ? "fresh" : "no view: ", v[i].fresh ? "" : v[i].error);
        for (size_t i = 0; i < nw; i++)
            kvg_buf_printf(&b, "worker  %-40s %s\n", ws[i],
                           kvg_ui_obs_name(kvg_ui_observe_worker(v, nr, ws[i])));
    }
    fwrite(b.data ? b.data : "", 1, b.len, stdout);
    kvg_buf_free(&b);
    for (size_t i = 0; i < nr; i++) kvg_ui_view_free(&v[i]);
    free(v);
    free(ws);
    return 0;
}
