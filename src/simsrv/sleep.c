/* kvgate sim's sleep mode: vLLM's dev endpoints POST /sleep?level=1|2
 * [&mode=abort|wait], POST /wake_up[?tags=weights&tags=kv_cache] and GET
 * /is_sleeping (only with VLLM_SERVER_DEV_MODE=1, as vLLM attaches them;
 * --enable-sleep-mode as vLLM's flag), and SGLang's
 * /release_memory_occupation and /resume_memory_occupation (JSON body with
 * optional "tags"; --enable-sleep-mode stands for SGLang's
 * --enable-memory-saver). docs/engines-api.md has the shapes as read in the
 * engines' code.
 *
 * What a sleep does, as vLLM's engine core: the scheduler pauses (requests
 * that arrive are queued, not refused, and run after the wake), mode abort
 * (the default) ends the running ones with finish_reason "abort", mode wait
 * answers once they have finished; then the prefix cache is dropped (level
 * 1 and 2 discard the KV cache), so the engine publishes AllBlocksCleared
 * and is cold after waking. A wake takes the profile's wake time for the
 * level (engine seconds, divided by --speed like every engine time) and is
 * answered when it is done; waking "weights" pays it, "kv_cache" only
 * re-allocates (no time); the engine runs again once no tag sleeps. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "simsrv/simsrv.h"

#define MAX_WAKES 8

struct wake {
    struct kvg_http_req *req; /* NULL: free slot, or its client left */
    int used;
    unsigned tags;
    double due; /* kvg_now_s() when it is done */
};

struct kvg_simsrv_sleep {
    struct kvg_simsrv_server *s;
    uv_timer_t timer;
    int level;                          /* 0 awake; 1 or 2 while any tag sleeps */
    unsigned asleep;                    /* KVG_SIMSRV_TAG_* still asleep */
    int paused;                         /* the scheduler holds new work */
    double busy_until;                  /* the last queued wake is done then (kvg_now_s) */
    double wake_s[2];                   /* engine seconds per level */
    struct kvg_http_req *waiting_sleep; /* mode wait: answered when idle */
    int waiting_level;
    struct wake w[MAX_WAKES];
    uint64_t sleeps, wakes;
};

int kvg_simsrv_sleep_query(const char *q, size_t n, struct kvg_simsrv_sleep_args *out, char *err,
                           size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->level = 1; /* vLLM's defaults: level 1, mode abort */
    out->mode = KVG_SIMSRV_SLEEP_ABORT;
    size_t i = 0;
    while (i < n) {
        size_t e = i;
        while (e < n && q[e] != '&') e++;
        const char *k = q + i, *eq = memchr(k, '=', e - i);
        size_t kl = eq ? (size_t)(eq - k) : e - i;
        const char *v = eq ? eq + 1 : q + e;
        size_t vl = (size_t)(q + e - v);
#define KEY(s) (kl == sizeof(s) - 1 && !memcmp(k, s, kl))
#define VAL(s) (vl == sizeof(s) - 1 && !memcmp(v, s, vl))
        if (KEY("level")) {
            out->level = VAL("1") ? 1 : VAL("2") ? 2 : -1;
            if (out->level < 0) {
                snprintf(err, errlen, "level must be 1 or 2, not '%.*s'", (int)(vl < 32 ? vl : 32),
                         v);
                return -1;
            }
        } else if (KEY("mode")) {
            if (VAL("abort"))
                out->mode = KVG_SIMSRV_SLEEP_ABORT;
            else if (VAL("wait"))
                out->mode = KVG_SIMSRV_SLEEP_WAIT;
            else {
                snprintf(err, errlen,
                         "mode must be abort or wait (keep is not simulated), not '%.*s'",
                         (int)(vl < 32 ? vl : 32), v);
                return -1;
            }
        } else if (KEY("tags")) {
            if (VAL("weights"))
                out->tags |= KVG_SIMSRV_TAG_WEIGHTS;
            else if (VAL("kv_cache"))
                out->tags |= KVG_SIMSRV_TAG_KV_CACHE;
            else {
                snprintf(err, errlen, "unknown tag '%.*s' (weights, kv_cache)",
                         (int)(vl < 32 ? vl : 32), v);
                return -1;
            }
        }
#undef KEY
#undef VAL
        i = e + 1;
    }
    return 0;
}

int kvg_simsrv_sleep_tags_json(const char *body, size_t len, unsigned *tags, char *err,
                               size_t errlen)
{
    *tags = 0;
    if (!len) return 0; /* no body: every tag */
    cJSON *j = cJSON_ParseWithLength(body, len);
    int rc = 0;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "tags");
    if (!cJSON_IsObject(j)) {
        snprintf(err, errlen, "the request body is not a JSON object");
        rc = -1;
    } else if (t && !cJSON_IsNull(t) && !cJSON_IsArray(t)) {
        snprintf(err, errlen, "tags must be a list of strings");
        rc = -1;
    }
    const cJSON *e, *list = rc ? NULL : t;
    cJSON_ArrayForEach(e, list)
    {
        const char *v = cJSON_IsString(e) ? e->valuestring : "";
        if (!strcmp(v, "weights"))
            *tags |= KVG_SIMSRV_TAG_WEIGHTS;
        else if (!strcmp(v, "kv_cache"))
            *tags |= KVG_SIMSRV_TAG_KV_CACHE;
        else if (!strcmp(v, "cuda_graph"))
            *tags |= KVG_SIMSRV_TAG_CUDA_GRAPH;
        else {
            snprintf(err, errlen, "unknown tag (weights, kv_cache, cuda_graph)");
            rc = -1;
            break;
        }
    }
    cJSON_Delete(j);
    return rc;
}

int kvg_simsrv_paused(const struct kvg_simsrv_server *s)
{
    return s->sleep && s->sleep->paused;
}

static int all_idle(const struct kvg_simsrv_server *s)
{
    for (int i = 0; i < s->ndp; i++)
        if (!kvg_sim_idle(s->ranks[i].engine)) return 0;
    return 1;
}

/* Level 1 and 2 discard the KV cache: the prefix cache goes with it, and
 * the KV event subscribers hear AllBlocksCleared (vLLM resets it). */
static void fall_asleep(struct kvg_simsrv_sleep *sl, int level)
{
    struct kvg_simsrv_server *s = sl->s;
    for (int i = 0; i < s->ndp; i++) {
        int rc = kvg_sim_reset_prefix_cache(s->ranks[i].engine);
        if (rc) KVG_WARN("kvgate sim: sleep: rank %d cache not cleared: %s", i, kvg_strerror(rc));
        kvg__simsrv_publish_events(&s->ranks[i]);
    }
    sl->level = level;
    sl->asleep = KVG_SIMSRV_TAG_WEIGHTS | KVG_SIMSRV_TAG_KV_CACHE;
    sl->sleeps++;
    KVG_INFO("kvgate sim: asleep at level %d", level);
}

static void arm(struct kvg_simsrv_sleep *sl);

static void wake_done(struct kvg_simsrv_sleep *sl, struct wake *w)
{
    struct kvg_simsrv_server *s = sl->s;
    sl->asleep &= ~w->tags;
    if (!sl->asleep && sl->level) {
        sl->level = 0;
        sl->paused = 0;
        sl->wakes++;
        KVG_INFO("kvgate sim: awake");
        for (int i = 0; i < s->ndp; i++) kvg__simsrv_step(&s->ranks[i]);
    }
    if (w->req) {
        w->req->on_abort = NULL;
        if (s->o.flavor == KVG_SIMSRV_FLAVOR_SGLANG)
            kvg_http_res_send(w->req, 200, "application/json", NULL, 0, "null", 4);
        else
            kvg_http_res_send(w->req, 200, NULL, NULL, 0, NULL, 0);
    }
    memset(w, 0, sizeof *w);
}

static void on_timer(uv_timer_t *t)
{
    struct kvg_simsrv_sleep *sl = t->data;
    double now = kvg_now_s();
    for (int i = 0; i < MAX_WAKES; i++)
        if (sl->w[i].used && sl->w[i].due <= now + 1e-4) wake_done(sl, &sl->w[i]);
    if (sl->waiting_sleep && all_idle(sl->s)) {
        struct kvg_http_req *req = sl->waiting_sleep;
        sl->waiting_sleep = NULL;
        req->on_abort = NULL;
        sl->paused = 1;
        fall_asleep(sl, sl->waiting_level);
        kvg_http_res_send(req, 200, NULL, NULL, 0, NULL, 0);
    }
    arm(sl);
}

/* The timer for the next due wake, or a short poll while a mode=wait
 * sleep waits for the running requests. */
static void arm(struct kvg_simsrv_sleep *sl)
{
    int any = 0;
    double next = 0;
    for (int i = 0; i < MAX_WAKES; i++)
        if (sl->w[i].used && (!any++ || sl->w[i].due < next)) next = sl->w[i].due;
    double ms = any ? (next - kvg_now_s()) * 1000 : 5;
    if (!any && !sl->waiting_sleep) {
        uv_timer_stop(&sl->timer);
        return;
    }
    if (sl->waiting_sleep && ms > 5) ms = 5;
    uv_timer_start(&sl->timer, on_timer, ms < 0.5 ? 0 : (uint64_t)(ms + 0.5), 0);
}

static void wake_left(struct kvg_http_req *req, void *ud)
{
    (void)req;
    struct wake *w = ud;
    w->req = NULL; /* the wake still happens: the engine was told */
}

static void sleep_left(struct kvg_http_req *req, void *ud)
{
    (void)req;
    struct kvg_simsrv_sleep *sl = ud;
    /* The client left, the sleep stands (vLLM's engine core was told):
     * it happens now, the requests still running aborted. */
    sl->waiting_sleep = NULL;
    kvg__simsrv_abort_all(sl->s, "the engine was put to sleep");
    sl->paused = 1;
    fall_asleep(sl, sl->waiting_level);
}

/* A wake of tags (0: all): queued behind any wake in progress, done after
 * the level's wake time for the weights. */
static void start_wake(struct kvg_simsrv_sleep *sl, struct kvg_http_req *req, unsigned tags)
{
    struct kvg_simsrv_server *s = sl->s;
    const unsigned all = KVG_SIMSRV_TAG_WEIGHTS | KVG_SIMSRV_TAG_KV_CACHE;
    tags = tags ? tags & all : all;
    struct wake *w = NULL;
    for (int i = 0; i < MAX_WAKES && !w; i++)
        if (!sl->w[i].used) w = &sl->w[i];
    if (!w) {
        if (s->o.flavor == KVG_SIMSRV_FLAVOR_SGLANG)
            kvg__simsrv_error_sglang(req, 400, "too many wakes in progress");
        else
            kvg__simsrv_error_detail(req, 503, "too many wakes in progress");
        return;
    }
    double now = kvg_now_s();
    double cost = 0;
    if (sl->level && (tags & sl->asleep & KVG_SIMSRV_TAG_WEIGHTS))
        cost = sl->wake_s[sl->level - 1] / s->o.speed;
    double start = sl->busy_until > now ? sl->busy_until : now;
    sl->busy_until = start + cost;
    w->used = 1;
    w->req = req;
    w->tags = tags;
    w->due = sl->busy_until;
    req->ud = w;
    req->on_abort = wake_left;
    arm(sl);
}

static void do_sleep(struct kvg_simsrv_sleep *sl, struct kvg_http_req *req, int level, int mode)
{
    struct kvg_simsrv_server *s = sl->s;
    if (sl->level || sl->waiting_sleep) { /* already asleep: vLLM answers 200 again */
        kvg_http_res_send(req, 200, NULL, NULL, 0, NULL, 0);
        return;
    }
    if (mode == KVG_SIMSRV_SLEEP_WAIT && !all_idle(s)) {
        sl->waiting_sleep = req;
        sl->waiting_level = level;
        req->ud = sl;
        req->on_abort = sleep_left;
        arm(sl);
        return;
    }
    kvg__simsrv_abort_all(s, "the engine was put to sleep");
    sl->paused = 1;
    fall_asleep(sl, level);
    kvg_http_res_send(req, 200, NULL, NULL, 0, NULL, 0);
}

static void is_sleeping(struct kvg_simsrv_sleep *sl, struct kvg_http_req *req)
{
    const char *b = sl->level ? "{\"is_sleeping\":true}" : "{\"is_sleeping\":false}";
    kvg_http_res_send(req, 200, "application/json", NULL, 0, b, strlen(b));
}

/* vLLM: the three dev routes. */
static int vllm_route(struct kvg_simsrv_sleep *sl, struct kvg_http_req *req)
{
    int post = !strcmp(req->method_name, "POST");
    int get = !strcmp(req->method_name, "GET");
    int sleep = kvg_str_eq(req->path, "/sleep"), wake = kvg_str_eq(req->path, "/wake_up");
    int ask = kvg_str_eq(req->path, "/is_sleeping");
    if (!sleep && !wake && !ask) return 0;
    if ((ask && !get) || (!ask && !post)) {
        kvg__simsrv_not_allowed(sl->s, req, ask ? "GET" : "POST");
        return 1;
    }
    if (ask) {
        is_sleeping(sl, req);
        return 1;
    }
    struct kvg_simsrv_sleep_args a;
    char err[160];
    if (kvg_simsrv_sleep_query(req->query.p, req->query.len, &a, err, sizeof err)) {
        kvg__simsrv_error_detail(req, 400, err);
        return 1;
    }
    if (sleep)
        do_sleep(sl, req, a.level, a.mode);
    else
        start_wake(sl, req, a.tags);
    return 1;
}

/* SGLang: release (level 1 semantics: the weights kept on the host, as
 * torch_memory_saver with CPU backup) and resume, by tags. A release while
 * requests run is refused (SGLang asserts an idle scheduler). */
static int sglang_route(struct kvg_simsrv_sleep *sl, struct kvg_http_req *req)
{
    int rel = kvg_str_eq(req->path, "/release_memory_occupation");
    int res = kvg_str_eq(req->path, "/resume_memory_occupation");
    if (!rel && !res) return 0;
    if (strcmp(req->method_name, "POST") && strcmp(req->method_name, "GET")) {
        kvg__simsrv_not_allowed(sl->s, req, "GET, POST");
        return 1;
    }
    unsigned tags;
    char err[160];
    if (kvg_simsrv_sleep_tags_json(req->body.data, req->body.len, &tags, err, sizeof err)) {
        kvg__simsrv_error_sglang(req, 400, err);
        return 1;
    }
    if (res) {
        start_wake(sl, req, tags);
        return 1;
    }
    if (!sl->level && !all_idle(sl->s)) {
        kvg__simsrv_error_sglang(req, 400, "release_memory_occupation needs an idle engine");
        return 1;
    }
    if (!sl->level) {
        sl->paused = 1;
        fall_asleep(sl, 1);
    }
    kvg_http_res_send(req, 200, "application/json", NULL, 0, "null", 4);
    return 1;
}

int kvg_simsrv_sleep_route(struct kvg_simsrv_server *s, struct kvg_http_req *req)
{
    struct kvg_simsrv_sleep *sl = s->sleep;
    if (s->o.flavor == KVG_SIMSRV_FLAVOR_SGLANG) return sl ? sglang_route(sl, req) : 0;
    if (s->o.flavor != KVG_SIMSRV_FLAVOR_VLLM || !s->o.dev_mode) return 0; /* vLLM: 404 */
    if (!sl) {
        int known = kvg_str_eq(req->path, "/sleep") || kvg_str_eq(req->path, "/wake_up") ||
                    kvg_str_eq(req->path, "/is_sleeping");
        /* Dev mode attaches the routes; without sleep mode the engine refuses. */
        if (known) kvg_simsrv_error(req, 500, "InternalServerError", "Sleep mode is not enabled");
        return known;
    }
    return vllm_route(sl, req);
}

int kvg_simsrv_sleep_start(struct kvg_simsrv_server *s, double wake_l1_s, double wake_l2_s)
{
    if (!s->o.enable_sleep_mode) return 0;
    struct kvg_simsrv_sleep *sl = calloc(1, sizeof *sl);
    if (!sl) return -ENOMEM;
    sl->s = s;
    sl->wake_s[0] = wake_l1_s;
    sl->wake_s[1] = wake_l2_s;
    uv_timer_init(s->loop, &sl->timer);
    sl->timer.data = sl;
    s->sleep = sl;
    return 0;
}

static void closed(uv_handle_t *h)
{
    free(h->data);
}

void kvg_simsrv_sleep_stop(struct kvg_simsrv_server *s)
{
    if (!s->sleep) return;
    uv_close((uv_handle_t *)&s->sleep->timer, closed);
    s->sleep = NULL;
}

int kvg_simsrv_sleep_level(const struct kvg_simsrv_server *s)
{
    return s->sleep ? s->sleep->level : 0;
}
