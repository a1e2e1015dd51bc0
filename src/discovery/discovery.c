/* The discovery thread: list, watch, reconcile; see discovery.h.
 *
 * State lives on the thread alone: the slices seen (their endpoints), the
 * labels of the pods they point at, and the workers discovery added. Only the
 * pool (its own lock) and the stats (atomics) are shared. */
#include "discovery/discovery.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "base/log.h"
#include "base/util.h"
#include "net/https.h"

#define LIST_CAP (64u << 20) /* a list or pod body larger than this is refused */
#define LINE_CAP (16u << 20) /* one watch event */

struct slice {
    char key[320]; /* namespace/name */
    struct kvg_discovery_endpoint *ep;
    size_t n;
};

struct pod {
    char uid[64];
    cJSON *labels;  /* owned; NULL: the pod had none */
    int unlabelled; /* its lack of the model label was logged */
};

struct member {
    char url[128];
    char uid[64];
    int role, rank;
    char model[256]; /* its model label's value ("" without a model label) */
};

struct kvg_discovery {
    struct kvg_discovery_rules rules;
    char model_label[128]; /* "" none */
    int (*model_known)(void *ud, const char *model);
    char ns[64];
    uint32_t watch_timeout_s, resync_s;
    void (*on_change)(void *ud);
    void *ud;
    struct kvg_pool *pool;
    struct kvg_https api;
    pthread_t thread;
    int started;
    pthread_mutex_t mu; /* guards stop, for the backoff's timed wait */
    pthread_cond_t cv;
    int stop;
    struct slice *slices;
    size_t nslices;
    struct pod *pods;
    size_t npods;
    struct member *members;
    size_t nmembers;
    char rv[128]; /* resourceVersion to watch from; "" relists */
    uint64_t listed_ms;
    char *line; /* LINE_CAP bytes for watch events */
    struct kvg_discovery_stats st;
};

static int stopping(struct kvg_discovery *d)
{
    pthread_mutex_lock(&d->mu);
    int s = d->stop;
    pthread_mutex_unlock(&d->mu);
    return s;
}

/* Waits ms unless stopped first; on the monotonic clock (d->cv uses it), so
 * a step of the wall clock does not stretch or cut the wait. */
static void nap(struct kvg_discovery *d, uint32_t ms)
{
    struct timespec ts = kvg_deadline_after(CLOCK_MONOTONIC, (uint64_t)ms * 1000000u);
    pthread_mutex_lock(&d->mu);
    while (!d->stop && pthread_cond_timedwait(&d->cv, &d->mu, &ts) != ETIMEDOUT) {
    }
    pthread_mutex_unlock(&d->mu);
}

static void pods_clear(struct kvg_discovery *d)
{
    for (size_t i = 0; i < d->npods; i++) cJSON_Delete(d->pods[i].labels);
    free(d->pods);
    d->pods = NULL;
    d->npods = 0;
}

static void pod_forget(struct kvg_discovery *d, const char *uid)
{
    for (size_t i = 0; i < d->npods; i++)
        if (!strcmp(d->pods[i].uid, uid)) {
            cJSON_Delete(d->pods[i].labels);
            d->pods[i] = d->pods[--d->npods];
            return;
        }
}

static void slices_clear(struct kvg_discovery *d)
{
    for (size_t i = 0; i < d->nslices; i++) free(d->slices[i].ep);
    free(d->slices);
    d->slices = NULL;
    d->nslices = 0;
}

static int slice_find(struct kvg_discovery *d, const char *key)
{
    for (size_t i = 0; i < d->nslices; i++)
        if (!strcmp(d->slices[i].key, key)) return (int)i;
    return -1;
}

/* The pods of a slice that changed are read again: their labels may have. */
static void slice_forget_pods(struct kvg_discovery *d, const struct slice *s)
{
    for (size_t i = 0; i < s->n; i++) pod_forget(d, s->ep[i].pod_uid);
}

/* Inserts or replaces a slice from its JSON; deleted removes it. */
static int slice_apply(struct kvg_discovery *d, const cJSON *obj, int deleted)
{
    char key[320];
    if (kvg_discovery_slice_key(obj, key, sizeof key)) return KVG_EPARSE;
    int i = slice_find(d, key);
    if (i >= 0) {
        slice_forget_pods(d, &d->slices[i]);
        free(d->slices[i].ep);
        d->slices[i] = d->slices[--d->nslices];
    }
    if (deleted) return 0;
    struct slice s = {0};
    snprintf(s.key, sizeof s.key, "%s", key);
    int rc = kvg_discovery_slice_endpoints(obj, &s.ep, &s.n);
    if (rc) return rc;
    struct slice *ns = realloc(d->slices, (d->nslices + 1) * sizeof *ns);
    if (!ns) {
        free(s.ep);
        return -ENOMEM;
    }
    d->slices = ns;
    slice_forget_pods(d, &s);
    d->slices[d->nslices++] = s;
    return 0;
}

static void url_escape(const char *in, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t k = 0;
    for (; *in && k + 4 < cap; in++) {
        unsigned char c = (unsigned char)*in;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~') {
            out[k++] = (char)c;
        } else {
            out[k++] = '%';
            out[k++] = hex[c >> 4];
            out[k++] = hex[c & 15];
        }
    }
    out[k] = 0;
}

/* GET path and its whole JSON body: 0 with *json (caller deletes) and
 * *status, or a transport/parse error. */
static int get_json(struct kvg_discovery *d, const char *path, int *status, cJSON **json)
{
    struct kvg_https_resp *r = malloc(sizeof *r);
    if (!r) return -ENOMEM;
    *json = NULL;
    int rc = kvg_https_get(&d->api, path, 30000, r);
    char *body = NULL;
    size_t len = 0;
    if (!rc) rc = kvg_https_resp_body(r, LIST_CAP, &body, &len);
    *status = r->status;
    kvg_https_resp_close(&d->api, r);
    free(r);
    if (rc) return rc;
    *json = cJSON_ParseWithLength(body, len);
    free(body);
    return *json ? 0 : KVG_EPARSE;
}

/* The pod's labels: 1 with *out (owned by the cache; its labels may be
 * NULL), 0 when the pod is gone (or is another incarnation), < 0 on error. */
static int pod_labels(struct kvg_discovery *d, const struct kvg_discovery_endpoint *e,
                      struct pod **out)
{
    for (size_t i = 0; i < d->npods; i++)
        if (!strcmp(d->pods[i].uid, e->pod_uid)) {
            *out = &d->pods[i];
            return 1;
        }
    char ns[200], name[800], path[1100];
    url_escape(e->pod_ns, ns, sizeof ns);
    url_escape(e->pod_name, name, sizeof name);
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, name);
    int status;
    cJSON *pod;
    int rc = get_json(d, path, &status, &pod);
    if (rc && status != 404) {
        KVG_WARN("discovery: reading pod %s/%s: %s", e->pod_ns, e->pod_name, kvg_strerror(rc));
        return rc;
    }
    if (status == 404) {
        cJSON_Delete(pod);
        return 0;
    }
    if (status != 200) {
        KVG_WARN("discovery: reading pod %s/%s: HTTP %d", e->pod_ns, e->pod_name, status);
        cJSON_Delete(pod);
        return KVG_EUPSTREAM;
    }
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(pod, "metadata");
    const cJSON *uid = cJSON_GetObjectItemCaseSensitive(meta, "uid");
    if (cJSON_IsString(uid) && strcmp(uid->valuestring, e->pod_uid) && e->pod_uid[0] &&
        strcmp(e->pod_uid, e->pod_name)) {
        cJSON_Delete(pod); /* the slice names an incarnation that is gone */
        return 0;
    }
    struct pod *np = realloc(d->pods, (d->npods + 1) * sizeof *np);
    if (!np) {
        cJSON_Delete(pod);
        return -ENOMEM;
    }
    d->pods = np;
    struct pod *p = &d->pods[d->npods++];
    memset(p, 0, sizeof *p);
    snprintf(p->uid, sizeof p->uid, "%s", e->pod_uid);
    p->labels = cJSON_DetachItemFromObjectCaseSensitive(meta, "labels");
    cJSON_Delete(pod);
    *out = p;
    return 1;
}

/* A candidate's model (d's model label's value) into m->model: 1 when it
 * has one (or no model label is in use), 0 when its pod lacks the label
 * (logged once per pod incarnation: it is left out). */
static int member_model(struct kvg_discovery *d, const struct kvg_discovery_endpoint *e,
                        struct pod *p, struct member *m)
{
    if (!d->model_label[0]) return 1;
    const char *v = kvg_discovery_label(p->labels, d->model_label);
    if (v && v[0] && strlen(v) < sizeof m->model) {
        snprintf(m->model, sizeof m->model, "%s", v);
        return 1;
    }
    if (!p->unlabelled)
        KVG_WARN("discovery: pod %s/%s matches a selector but has no usable label %s (the model "
                 "it serves): not used",
                 e->pod_ns, e->pod_name, d->model_label);
    p->unlabelled = 1;
    return 0;
}

/* Where a pod stands across every slice listing it. */
static void pod_state(struct kvg_discovery *d, const char *uid, int *seen, int *ready)
{
    *seen = 0;
    *ready = 1;
    for (size_t i = 0; i < d->nslices; i++)
        for (size_t j = 0; j < d->slices[i].n; j++)
            if (!strcmp(d->slices[i].ep[j].pod_uid, uid)) {
                *seen = 1;
                /* A headless Service publishing not-ready addresses says
                 * ready for every pod: any slice saying not ready wins. */
                *ready &= d->slices[i].ep[j].ready;
            }
}

static int members_find(const struct member *m, size_t n, const char *url)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(m[i].url, url)) return (int)i;
    return -1;
}

/* Makes the pool hold the candidates of the slices seen now. */
static void reconcile(struct kvg_discovery *d)
{
    size_t total = 0;
    for (size_t i = 0; i < d->nslices; i++) total += d->slices[i].n;
    struct member *want = calloc(total + d->nmembers + 1, sizeof *want);
    if (!want) return;
    size_t nw = 0;
    for (size_t i = 0; i < d->nslices; i++)
        for (size_t j = 0; j < d->slices[i].n; j++) {
            const struct kvg_discovery_endpoint *e = &d->slices[i].ep[j];
            int seen, ready;
            pod_state(d, e->pod_uid, &seen, &ready);
            if (!ready) continue;
            struct member m = {0};
            int port = d->rules.port ? d->rules.port : e->port;
            if (!port || kvg_discovery_worker_url(e->address, port, m.url, sizeof m.url) ||
                members_find(want, nw, m.url) >= 0)
                continue;
            struct pod *p = NULL;
            int rc = pod_labels(d, e, &p);
            if (rc < 0) {
                atomic_fetch_add(&d->st.errors, 1);
                int k = members_find(d->members, d->nmembers, m.url);
                if (k >= 0) want[nw++] = d->members[k]; /* an API error is no reason to leave */
                continue;
            }
            if (rc == 0) continue;
            if (kvg_discovery_classify(&d->rules, p->labels, &m.role, &m.rank) !=
                    KVG_DISCOVERY_CANDIDATE ||
                !member_model(d, e, p, &m))
                continue;
            snprintf(m.uid, sizeof m.uid, "%s", e->pod_uid);
            want[nw++] = m;
        }
    for (size_t i = d->nmembers; i-- > 0;) {
        struct member *m = &d->members[i];
        int k = members_find(want, nw, m->url);
        /* A pod whose model changed leaves its model and joins the new one
         * (below): requests in flight on it finish as the old model's. */
        if (k >= 0 && !strcmp(want[k].model, m->model)) continue;
        int seen, ready;
        pod_state(d, m->uid, &seen, &ready);
        int reason = kvg_discovery_removal_reason(seen, ready);
        int rc = kvg_pool_remove(d->pool, m->url);
        if (rc && rc != KVG_ENOTFOUND)
            KVG_WARN("discovery: removing %s: %s", m->url, kvg_strerror(rc));
        atomic_fetch_add(&d->st.deregistrations[reason], 1);
        KVG_INFO("discovery: %s left (%s)", m->url, kvg_discovery_reason_name(reason));
        d->members[i] = d->members[--d->nmembers];
    }
    int joined = 0;
    for (size_t i = 0; i < nw; i++) {
        struct member *m = &want[i];
        int k = members_find(d->members, d->nmembers, m->url);
        if (k >= 0) {
            if (d->members[k].role != m->role || d->members[k].rank != m->rank)
                kvg_pool_set_role(d->pool, m->url, m->role, m->rank);
            d->members[k] = *m;
            continue;
        }
        int rc = kvg_pool_add(d->pool, m->url);
        if (rc == -EEXIST) {
            /* Configured by hand (--worker-urls, POST /workers): not ours. */
            KVG_DEBUG("discovery: %s is in the pool already, not managed by discovery", m->url);
            continue;
        }
        if (rc) {
            KVG_WARN("discovery: adding %s: %s", m->url, kvg_strerror(rc));
            continue;
        }
        kvg_pool_set_role(d->pool, m->url, m->role, m->rank);
        if (m->model[0]) kvg_pool_set_model_label(d->pool, m->url, m->model);
        struct member *nm = realloc(d->members, (d->nmembers + 1) * sizeof *nm);
        if (!nm) {
            kvg_pool_remove(d->pool, m->url);
            continue;
        }
        d->members = nm;
        d->members[d->nmembers++] = *m;
        atomic_fetch_add(&d->st.registrations, 1);
        KVG_INFO("discovery: %s joined (%s%s%s%s)", m->url, kvg_worker_role_name(m->role),
                 m->rank >= 0 ? ", DP rank" : "", m->model[0] ? ", model " : "", m->model);
        if (m->model[0] && d->model_known && !d->model_known(d->ud, m->model))
            KVG_WARN("discovery: %s: its pod's label %s names '%s', which is no model of "
                     "models: (a split or an unknown name): it serves nothing until a reload "
                     "names it",
                     m->url, d->model_label, m->model);
        joined = 1;
    }
    free(want);
    atomic_store(&d->st.workers, d->nmembers);
    if (joined && d->on_change) d->on_change(d->ud);
}

static void base_path(struct kvg_discovery *d, char *out, size_t cap)
{
    if (d->ns[0])
        snprintf(out, cap, "/apis/discovery.k8s.io/v1/namespaces/%s/endpointslices", d->ns);
    else
        snprintf(out, cap, "/apis/discovery.k8s.io/v1/endpointslices");
}

static void set_rv(struct kvg_discovery *d, const cJSON *obj)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *rv = cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion");
    if (cJSON_IsString(rv) && strlen(rv->valuestring) < sizeof d->rv)
        memcpy(d->rv, rv->valuestring, strlen(rv->valuestring) + 1);
}

/* Lists every slice (page by page) and replaces what was known. */
static int do_list(struct kvg_discovery *d)
{
    char base[200], path[4096], cont[2048] = "";
    base_path(d, base, sizeof base);
    slices_clear(d);
    pods_clear(d); /* a relist re-reads every label */
    for (int page = 0; page < 10000; page++) {
        char esc[3000];
        url_escape(cont, esc, sizeof esc);
        snprintf(path, sizeof path, "%s?limit=500%s%s", base, cont[0] ? "&continue=" : "", esc);
        int status;
        cJSON *list;
        int rc = get_json(d, path, &status, &list);
        if (!rc && status != 200) rc = status == 410 ? KVG_ECLOSED : KVG_EUPSTREAM;
        if (rc) {
            KVG_WARN("discovery: listing EndpointSlices: %s%s%d", kvg_strerror(rc),
                     status ? ", HTTP " : "", status);
            cJSON_Delete(list);
            return rc;
        }
        const cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(list, "items"))
        {
            if ((rc = slice_apply(d, it, 0)))
                KVG_WARN("discovery: a listed EndpointSlice: %s", kvg_strerror(rc));
        }
        set_rv(d, list);
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(list, "metadata");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(meta, "continue");
        int more = cJSON_IsString(c) && c->valuestring[0] && strlen(c->valuestring) < sizeof cont;
        if (more) memcpy(cont, c->valuestring, strlen(c->valuestring) + 1);
        cJSON_Delete(list);
        if (!more) break;
    }
    d->listed_ms = kvg_now_ms();
    if (!atomic_load(&d->st.synced))
        KVG_INFO("discovery: listed %zu EndpointSlices%s%s", d->nslices, d->ns[0] ? " in " : "",
                 d->ns);
    atomic_store(&d->st.synced, 1);
    reconcile(d);
    return 0;
}

/* One watch from d->rv: 0 when the server ended it (or it dropped), KVG_ECLOSED
 * on 410 Gone (relist), another negative code on failure. */
static int do_watch(struct kvg_discovery *d)
{
    char base[200], path[600];
    base_path(d, base, sizeof base);
    snprintf(path, sizeof path,
             "%s?watch=1&allowWatchBookmarks=true&resourceVersion=%s"
             "&timeoutSeconds=%u",
             base, d->rv, d->watch_timeout_s);
    struct kvg_https_resp *r = malloc(sizeof *r);
    if (!r) return -ENOMEM;
    /* Bookmarks come about once a minute; a silence much longer is a dead
     * connection. */
    int rc = kvg_https_get(&d->api, path, (d->watch_timeout_s + 60) * 1000, r);
    if (!rc && r->status != 200) {
        rc = r->status == 410 ? KVG_ECLOSED : KVG_EUPSTREAM;
        if (rc != KVG_ECLOSED) KVG_WARN("discovery: watch answered HTTP %d", r->status);
    }
    int events = 0;
    while (!rc && !stopping(d)) {
        int n = kvg_https_resp_line(r, d->line, LINE_CAP);
        if (n == KVG_ECLOSED) break; /* ended or dropped: resume from rv */
        if (n < 0) {
            rc = n;
            break;
        }
        if (n == 0) continue;
        cJSON *ev = cJSON_ParseWithLength(d->line, (size_t)n);
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(ev, "type");
        const cJSON *obj = cJSON_GetObjectItemCaseSensitive(ev, "object");
        if (!cJSON_IsString(type) || !cJSON_IsObject(obj)) {
            cJSON_Delete(ev);
            rc = KVG_EPARSE;
            break;
        }
        const char *t = type->valuestring;
        if (!strcmp(t, "ERROR")) {
            const cJSON *code = cJSON_GetObjectItemCaseSensitive(obj, "code");
            rc = cJSON_IsNumber(code) && code->valueint == 410 ? KVG_ECLOSED : KVG_EUPSTREAM;
            if (rc != KVG_ECLOSED)
                KVG_WARN("discovery: watch error event, code %d",
                         cJSON_IsNumber(code) ? code->valueint : 0);
        } else if (!strcmp(t, "ADDED") || !strcmp(t, "MODIFIED") || !strcmp(t, "DELETED")) {
            int e = slice_apply(d, obj, !strcmp(t, "DELETED"));
            if (e) KVG_WARN("discovery: a %s EndpointSlice: %s", t, kvg_strerror(e));
            set_rv(d, obj);
            reconcile(d);
            events++;
        } else if (!strcmp(t, "BOOKMARK")) {
            set_rv(d, obj);
        }
        cJSON_Delete(ev);
    }
    kvg_https_resp_close(&d->api, r);
    free(r);
    KVG_DEBUG("discovery: watch ended after %d events: %s", events, rc ? kvg_strerror(rc) : "ok");
    return rc;
}

static void *run(void *arg)
{
    struct kvg_discovery *d = arg;
    uint32_t backoff = 500;
    while (!stopping(d)) {
        if (d->rv[0] && d->resync_s && kvg_now_ms() - d->listed_ms > d->resync_s * 1000ull)
            d->rv[0] = 0;
        int rc = d->rv[0] ? do_watch(d) : do_list(d);
        if (stopping(d)) break;
        if (rc == KVG_ECLOSED) {
            /* 410 Gone: the resourceVersion is too old; start over. */
            KVG_INFO("discovery: resourceVersion %s expired (410 Gone): listing again", d->rv);
            atomic_fetch_add(&d->st.relists, 1);
            d->rv[0] = 0;
            continue;
        }
        if (rc) {
            atomic_fetch_add(&d->st.errors, 1);
            KVG_WARN("discovery: %s; retrying in %u ms", kvg_strerror(rc), backoff);
            nap(d, backoff);
            backoff = backoff * 2 > 30000 ? 30000 : backoff * 2;
            continue;
        }
        backoff = 500;
    }
    return NULL;
}

static int read_file_line(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f) return -errno;
    size_t n = fread(out, 1, cap - 1, f);
    fclose(f);
    while (n && (out[n - 1] == '\n' || out[n - 1] == ' ')) n--;
    out[n] = 0;
    return 0;
}

int kvg_discovery_start(const struct kvg_discovery_opts *o, struct kvg_pool *pool,
                        struct kvg_discovery **out, char *err, size_t errlen)
{
    struct kvg_discovery *d = calloc(1, sizeof *d);
    if (!d || !(d->line = malloc(LINE_CAP))) {
        free(d);
        return -ENOMEM;
    }
    d->rules = o->rules;
    snprintf(d->model_label, sizeof d->model_label, "%s", o->model_label ? o->model_label : "");
    d->model_known = o->model_known;
    d->pool = pool;
    d->watch_timeout_s = o->watch_timeout_s ? o->watch_timeout_s : 300;
    d->resync_s = o->resync_s;
    d->on_change = o->on_change;
    d->ud = o->ud;
    snprintf(d->ns, sizeof d->ns, "%s", o->namespace_ ? o->namespace_ : "");
    char url[300];
    if (o->api_url && o->api_url[0]) {
        snprintf(url, sizeof url, "%s", o->api_url);
    } else {
        const char *h = getenv("KUBERNETES_SERVICE_HOST"), *p = getenv("KUBERNETES_SERVICE_PORT");
        if (!h || !h[0]) {
            free(d->line);
            free(d);
            return kvg_err_set(err, errlen, KVG_ECONFIG,
                               "--service-discovery: not in a cluster (KUBERNETES_SERVICE_HOST "
                               "unset) and no --service-discovery-api-url");
        }
        int v6 = strchr(h, ':') != NULL;
        snprintf(url, sizeof url, "https://%s%s%s:%s", v6 ? "[" : "", h, v6 ? "]" : "",
                 p && p[0] ? p : "443");
    }
    int rc =
        kvg_https_init(&d->api, url, o->ca_file ? o->ca_file : KVG_DISCOVERY_SA_DIR "/ca.crt",
                       o->token_file ? o->token_file : KVG_DISCOVERY_SA_DIR "/token", err, errlen);
    if (rc) {
        free(d->line);
        free(d);
        return rc;
    }
    /* The pod's own namespace when none is named would surprise sglang's
     * users (unset means every namespace there): only log it. */
    char own[64];
    if (!d->ns[0] && !read_file_line(KVG_DISCOVERY_SA_DIR "/namespace", own, sizeof own))
        KVG_INFO("discovery: watching every namespace (this pod is in %s)", own);
    pthread_mutex_init(&d->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* nap()'s deadlines */
    pthread_cond_init(&d->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&d->thread, NULL, run, d)) {
        kvg_discovery_free(d);
        return -EAGAIN;
    }
    d->started = 1;
    KVG_INFO("discovery: watching EndpointSlices at %s", url);
    *out = d;
    return 0;
}

void kvg_discovery_stop(struct kvg_discovery *d)
{
    if (!d || !d->started) return;
    pthread_mutex_lock(&d->mu);
    d->stop = 1;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    kvg_https_abort(&d->api);
    pthread_join(d->thread, NULL);
    d->started = 0;
}

void kvg_discovery_free(struct kvg_discovery *d)
{
    if (!d) return;
    kvg_discovery_stop(d);
    slices_clear(d);
    pods_clear(d);
    free(d->members);
    kvg_https_free(&d->api);
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
    free(d->line);
    free(d);
}

const struct kvg_discovery_stats *kvg_discovery_stats(const struct kvg_discovery *d)
{
    return &d->st;
}
