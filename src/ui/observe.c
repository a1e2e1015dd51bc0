/* The serving views of gateway replicas; see observe.h. The fetches run at once on one libuv
 * loop, each cancelled by its own 2 s timer, all by the 14 s budget. */
#include "ui/observe.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/util.h"
#include "net/http_client.h"

const char *kvg_ui_obs_name(enum kvg_ui_obs o)
{
    return o == KVG_UI_CONFIRMED ? "Confirmed" : o == KVG_UI_NOT_SERVING ? "NotServing" : "Unknown";
}

void kvg_ui_view_free(struct kvg_ui_view *v)
{
    free(v->w);
    v->w = NULL;
    v->nw = 0;
}

int kvg_ui_view_parse(struct kvg_ui_view *v, const char *body, size_t len, double now_s)
{
    cJSON *j = cJSON_ParseWithLength(body, len);
    cJSON *t = j ? cJSON_GetObjectItemCaseSensitive(j, "taken_at") : NULL;
    cJSON *g = j ? cJSON_GetObjectItemCaseSensitive(j, "generation") : NULL;
    cJSON *ws = j ? cJSON_GetObjectItemCaseSensitive(j, "workers") : NULL;
    if (!cJSON_IsNumber(t) || !cJSON_IsNumber(g) || !cJSON_IsArray(ws)) {
        snprintf(v->error, sizeof v->error, "not a serving view");
        cJSON_Delete(j);
        return KVG_EPARSE;
    }
    size_t n = (size_t)cJSON_GetArraySize(ws);
    if (n > KVG_UI_VIEW_MAX_WORKERS) n = KVG_UI_VIEW_MAX_WORKERS;
    v->w = calloc(n ? n : 1, sizeof *v->w);
    if (!v->w) {
        snprintf(v->error, sizeof v->error, "out of memory");
        cJSON_Delete(j);
        return -ENOMEM;
    }
    v->nw = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, ws)
    {
        if (v->nw >= n) break;
        cJSON *u = cJSON_GetObjectItemCaseSensitive(it, "url");
        cJSON *s = cJSON_GetObjectItemCaseSensitive(it, "state");
        if (!cJSON_IsString(u) || !cJSON_IsString(s)) continue;
        snprintf(v->w[v->nw].url, sizeof v->w[v->nw].url, "%s", u->valuestring);
        snprintf(v->w[v->nw].state, sizeof v->w[v->nw].state, "%s", s->valuestring);
        v->nw++;
    }
    v->taken_at = t->valuedouble;
    v->generation = g->valuedouble >= 0 && g->valuedouble < 1.8e19 ? (uint64_t)g->valuedouble : 0;
    v->fetched = 1;
    /* A view from the future (clock skew) counts as taken now. */
    v->fresh = now_s - v->taken_at <= KVG_UI_FRESH_S;
    if (!v->fresh)
        snprintf(v->error, sizeof v->error, "view taken %.0f s ago", now_s - v->taken_at);
    cJSON_Delete(j);
    return 0;
}

enum kvg_ui_obs kvg_ui_observe_worker(const struct kvg_ui_view *v, size_t nv, const char *url)
{
    int listed = 0;
    for (size_t i = 0; i < nv; i++) {
        if (!v[i].fresh) continue;
        for (size_t k = 0; k < v[i].nw; k++) {
            if (strcmp(v[i].w[k].url, url)) continue;
            if (!strcmp(v[i].w[k].state, "serving")) return KVG_UI_CONFIRMED;
            listed = 1;
        }
    }
    return listed ? KVG_UI_NOT_SERVING : KVG_UI_UNKNOWN;
}

/* ------------------------------------------------------------ collecting */

struct fetch {
    struct kvg_ui_view *v;
    struct kvg_http_call *call;
    uv_timer_t timer;
    struct kvg_buf body;
    int status, done;
    unsigned *pending;
};

static void fetch_end(struct fetch *f, const char *err)
{
    if (f->done) return;
    f->done = 1;
    uv_timer_stop(&f->timer);
    if (err) {
        snprintf(f->v->error, sizeof f->v->error, "%s", err);
    } else if (f->status != 200) {
        snprintf(f->v->error, sizeof f->v->error, "HTTP %d", f->status);
    } else {
        kvg_ui_view_parse(f->v, f->body.data ? f->body.data : "", f->body.len, kvg_wall_s());
    }
    (*f->pending)--;
}

static void on_head(void *ud, int status, const struct kvg_http_header *h, size_t n)
{
    ((struct fetch *)ud)->status = status;
}

static void on_body(void *ud, const char *p, size_t n)
{
    struct fetch *f = ud;
    if (kvg_buf_append(&f->body, p, n)) {
        kvg_http_call_cancel(f->call);
        f->call = NULL;
        fetch_end(f, "view too large");
    }
}

static void on_done(void *ud, int err)
{
    struct fetch *f = ud;
    f->call = NULL;
    fetch_end(f, err == KVG_ETIMEOUT ? "no answer within 2 s" : err ? kvg_strerror(err) : NULL);
}

static void on_fetch_timeout(uv_timer_t *t)
{
    struct fetch *f = t->data;
    if (f->call) kvg_http_call_cancel(f->call);
    f->call = NULL;
    fetch_end(f, "no answer within 2 s");
}

static void on_budget(uv_timer_t *t)
{
    uv_stop(t->loop);
}

static void on_check(uv_check_t *c)
{
    if (*(unsigned *)c->data == 0) uv_stop(c->loop);
}

void kvg_ui_observe_collect(struct kvg_ui_view *v, size_t nv)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kvg_http_client *cl = NULL;
    struct fetch *fs = calloc(nv, sizeof *fs);
    if (!fs || kvg_http_client_new(&loop, NULL, &cl)) {
        for (size_t i = 0; i < nv; i++) snprintf(v[i].error, sizeof v[i].error, "out of memory");
        free(fs);
        uv_loop_close(&loop);
        return;
    }
    unsigned pending = 0;
    static const struct kvg_http_call_cbs cbs = {on_head, on_body, on_done};
    struct kvg_http_call_opts o = {.connect_timeout_ms = KVG_UI_FETCH_MS,
                                   .first_byte_timeout_ms = KVG_UI_FETCH_MS,
                                   .idle_timeout_ms = KVG_UI_FETCH_MS};
    for (size_t i = 0; i < nv; i++) {
        struct fetch *f = &fs[i];
        f->v = &v[i];
        f->pending = &pending;
        kvg_buf_init(&f->body, 16u << 20);
        uv_timer_init(&loop, &f->timer);
        f->timer.data = f;
        struct kvg_http_target t;
        int rc = kvg_http_target_parse(v[i].router, &t);
        if (!rc)
            rc = kvg_http_call_start(cl, &t, "GET", KVG_STR("/serving"), NULL, 0, NULL, 0, &o, &cbs,
                                     f, &f->call);
        pending++;
        if (rc) {
            f->call = NULL;
            fetch_end(f, kvg_strerror(rc));
            continue;
        }
        uv_timer_start(&f->timer, on_fetch_timeout, KVG_UI_FETCH_MS, 0);
    }
    uv_timer_t budget;
    uv_timer_init(&loop, &budget);
    uv_timer_start(&budget, on_budget, KVG_UI_COLLECT_MS, 0);
    uv_check_t check;
    uv_check_init(&loop, &check);
    check.data = &pending;
    uv_check_start(&check, on_check);
    if (pending) uv_run(&loop, UV_RUN_DEFAULT);
    for (size_t i = 0; i < nv; i++) {
        if (fs[i].call) kvg_http_call_cancel(fs[i].call);
        fs[i].call = NULL;
        fetch_end(&fs[i], "collection budget (14 s) spent");
        uv_close((uv_handle_t *)&fs[i].timer, NULL);
    }
    uv_close((uv_handle_t *)&budget, NULL);
    uv_close((uv_handle_t *)&check, NULL);
    kvg_http_client_close(cl);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    for (size_t i = 0; i < nv; i++) kvg_buf_free(&fs[i].body);
    free(fs);
}
