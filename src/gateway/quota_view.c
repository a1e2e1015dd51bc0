/* GET /quota/usage: every scope of the current key set read with
 * kvg_quota_peek (nothing written), then one JSON answer. With the Redis
 * store the peeks go out together on the loop's connection and the answer
 * is built when the last is back (each within the store's timeout, so a
 * view always ends). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "base/util.h"
#include "gateway/quota_view.h"

struct slot {
    struct kvg_gate_quota_view *v;
    enum kvg_keys_scope_kind kind;
    char owner[KVG_KEYS_NAME_MAX + 1];
    struct kvg_quota_req req; /* one scope, est_cost 0 */
    struct kvg_quota_lease lease;
    struct kvg_quota_result res;
    struct kvg_quota_op *op; /* in flight (Redis), else NULL */
    int done;
};

struct kvg_gate_quota_view {
    struct kvg_gate_loop *gl;
    struct kvg_keys_set *ks; /* a reference for the view's life */
    kvg_gate_view_cb cb;
    void *ud;
    struct slot *slots;
    size_t n, cap, total, pending;
    int issuing; /* peeks still being sent: a synchronous answer must not finish the view */
};

static void add_slot(void *ud, const struct kvg_quota_scope *sc, enum kvg_keys_scope_kind kind,
                     const char *owner, const char *pattern)
{
    (void)pattern;
    struct kvg_gate_quota_view *v = ud;
    v->total++;
    if (v->n >= v->cap) return;
    struct slot *s = &v->slots[v->n++]; /* v->cap >= the set's scope count, bounded */
    s->v = v;
    s->kind = kind;
    snprintf(s->owner, sizeof s->owner, "%s", owner);
    s->req.scope[0] = *sc;
    s->req.nscopes = 1;
}

static const char *kind_name(int k)
{
    return k == KVG_QK_TOKENS ? "tokens" : k == KVG_QK_REQUESTS ? "requests" : "concurrent";
}

/* The names of the keys a scope charges: the key itself, or the tenant's. */
static void add_keys(cJSON *o, const struct kvg_keys_set *ks, const struct slot *s)
{
    cJSON *a = cJSON_AddArrayToObject(o, "keys");
    if (!a) return;
    for (size_t i = 0; i < ks->nkeys; i++) {
        const struct kvg_keys_entry *e = &ks->keys[i];
        int mine = s->kind == KVG_KEYS_SCOPE_KEY ? !strcmp(e->name, s->owner)
                                                 : !strcmp(e->tenant, s->owner);
        if (mine) cJSON_AddItemToArray(a, cJSON_CreateString(e->name));
    }
}

static cJSON *slot_json(const struct kvg_gate_quota_view *v, const struct slot *s)
{
    static const char *const kinds[] = {"key", "tenant", "model"};
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "scope", s->req.scope[0].id);
    cJSON_AddStringToObject(o, "kind", kinds[s->kind]);
    add_keys(o, v->ks, s);
    if (s->res.store_error) {
        cJSON_AddStringToObject(o, "error", "the quota store did not answer");
        return o;
    }
    cJSON *lims = cJSON_AddArrayToObject(o, "limits");
    struct kvg_quota_usage u[KVG_QUOTA_MAX_ITEMS];
    size_t nu = kvg_quota_lease_usage(&s->lease, u, KVG_QUOTA_MAX_ITEMS);
    for (size_t i = 0; lims && i < nu; i++) {
        cJSON *l = cJSON_CreateObject();
        if (!l) break;
        cJSON_AddStringToObject(l, "kind", kind_name(u[i].kind));
        if (u[i].win >= 0)
            cJSON_AddStringToObject(l, "window", kvg_quota_win_name((enum kvg_quota_win)u[i].win));
        else
            cJSON_AddNullToObject(l, "window");
        cJSON_AddNumberToObject(l, "limit", (double)u[i].limit);
        cJSON_AddNumberToObject(l, "used", (double)u[i].used);
        cJSON_AddNumberToObject(l, "remaining", (double)u[i].remaining);
        cJSON_AddNumberToObject(l, "reset_ms", (double)u[i].reset_ms);
        cJSON_AddItemToArray(lims, l);
    }
    return o;
}

static void view_free(struct kvg_gate_quota_view *v)
{
    kvg_keys_unref(v->ks);
    free(v->slots);
    free(v);
}

static void finish(struct kvg_gate_quota_view *v)
{
    cJSON *j = cJSON_CreateObject();
    if (j) {
        cJSON_AddStringToObject(j, "store", kvg_quota_store_name(v->gl->g->quota));
        cJSON_AddNumberToObject(j, "at_ms", (double)kvg_wall_ms());
        cJSON *a = cJSON_AddArrayToObject(j, "scopes");
        for (size_t i = 0; a && i < v->n; i++) {
            cJSON *o = slot_json(v, &v->slots[i]);
            if (o) cJSON_AddItemToArray(a, o);
        }
        cJSON_AddBoolToObject(j, "truncated", v->total > v->n);
        cJSON_AddNumberToObject(j, "scopes_total", (double)v->total);
    }
    kvg_gate_view_cb cb = v->cb;
    void *ud = v->ud;
    view_free(v);
    cb(ud, j);
}

static void on_peek(void *ud, const struct kvg_quota_result *res)
{
    struct slot *s = ud;
    struct kvg_gate_quota_view *v = s->v;
    s->res = *res;
    s->op = NULL;
    s->done = 1;
    if (--v->pending == 0 && !v->issuing) finish(v);
}

int kvg_gate_quota_view(struct kvg_gate_loop *gl, kvg_gate_view_cb cb, void *ud,
                        struct kvg_gate_quota_view **out)
{
    *out = NULL;
    struct kvg_gate *g = gl->g;
    if (!g->auth_on || !g->quota) return KVG_ENOTFOUND;
    struct kvg_gate_quota_view *v = calloc(1, sizeof *v);
    if (!v) return -ENOMEM;
    v->gl = gl;
    v->cb = cb;
    v->ud = ud;
    v->ks = kvg_keys_acquire(&g->keys);
    if (!v->ks) {
        free(v);
        return KVG_ENOTFOUND;
    }
    size_t most = v->ks->nkeys;
    for (size_t i = 0; i < v->ks->ntenants; i++) most += 1 + v->ks->tenants[i].nmodels;
    v->cap = most < KVG_GATE_VIEW_MAX_SCOPES ? most : KVG_GATE_VIEW_MAX_SCOPES;
    v->slots = calloc(v->cap ? v->cap : 1, sizeof *v->slots);
    if (!v->slots) {
        view_free(v);
        return -ENOMEM;
    }
    kvg_keys_each_scope(v->ks, add_slot, v);
    v->issuing = 1;
    v->pending = v->n;
    for (size_t i = 0; i < v->n; i++) {
        struct slot *s = &v->slots[i];
        if (kvg_quota_peek(gl->q, &s->req, &s->lease, on_peek, s, &s->op)) {
            s->res.store_error = 1;
            s->done = 1;
            v->pending--;
        }
    }
    v->issuing = 0;
    if (v->pending == 0) {
        finish(v);
        return 0;
    }
    *out = v;
    return 0;
}

void kvg_gate_quota_view_cancel(struct kvg_gate_quota_view *v)
{
    if (!v) return;
    /* A cancelled peek neither calls back nor writes into its lease, so the
     * slots can go now. */
    for (size_t i = 0; i < v->n; i++)
        if (!v->slots[i].done) kvg_quota_cancel(v->slots[i].op);
    view_free(v);
}
