/* `kvgate observe`: what an operator can say of each worker from the serving
 * views of every gateway replica (GET /serving), read from each replica
 * directly within fixed bounds: 2 s per fetch, 14 s for the whole
 * collection, and a view older than 15 s is no view. A worker is Confirmed
 * when a fresh view shows it serving, NotServing when fresh views list it and
 * none shows it serving, Unknown when no fresh view lists it: a stopped or
 * hung replica reads "unknown", never "serving". */
#ifndef KVG_UI_OBSERVE_H
#define KVG_UI_OBSERVE_H

#include <stddef.h>
#include <stdint.h>

#define KVG_UI_FETCH_MS 2000
#define KVG_UI_COLLECT_MS 14000
#define KVG_UI_FRESH_S 15.0
#define KVG_UI_VIEW_MAX_WORKERS 1024 /* workers kept per view, and judged at once */

struct kvg_ui_view_worker {
    char url[512];
    char state[24]; /* "serving", "unhealthy", "circuit_open", "draining" */
};

/* One replica's view as collected. */
struct kvg_ui_view {
    char router[512];
    int fetched;     /* a view came back and parsed */
    int fresh;       /* ... and was taken within KVG_UI_FRESH_S of the collection */
    char error[160]; /* why there is no view, "" when there is */
    double taken_at; /* the view's own clock */
    uint64_t generation;
    struct kvg_ui_view_worker *w; /* owned */
    size_t nw;
};

enum kvg_ui_obs { KVG_UI_CONFIRMED, KVG_UI_NOT_SERVING, KVG_UI_UNKNOWN };
const char *kvg_ui_obs_name(enum kvg_ui_obs o); /* "Confirmed", "NotServing", "Unknown" */

/* Parses a GET /serving body into v (fills fetched, taken_at, generation,
 * workers; fresh from now_s). 0 or KVG_EPARSE with v->error set. */
int kvg_ui_view_parse(struct kvg_ui_view *v, const char *body, size_t len, double now_s);
void kvg_ui_view_free(struct kvg_ui_view *v);
/* The verdict on url from the views. */
enum kvg_ui_obs kvg_ui_observe_worker(const struct kvg_ui_view *v, size_t nv, const char *url);

/* Fetches GET /serving from each v[i].router (set by the caller) within the
 * bounds above, on a loop of its own, and fills each view or its error.
 * Blocks for at most KVG_UI_COLLECT_MS. */
void kvg_ui_observe_collect(struct kvg_ui_view *v, size_t nv);

#endif
