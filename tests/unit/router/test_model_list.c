/* A worker's model list (router/model_list.h): no small fixed limit, a
 * lookup for every entry of a long list, and what is over the caps left
 * out, counted once per list and reported. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "router/model_list.h"
#include "router/worker.h"
#include "support/test.h"

/* A /v1/models data array: n adapters "lora-<i>" of base "base", then the
 * extra ids (a NULL-terminated list). The caller deletes it. */
static cJSON *listing(int n, const char *const *extra)
{
    cJSON *a = cJSON_CreateArray();
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "id", "base");
    cJSON_AddNumberToObject(b, "max_model_len", 8192);
    cJSON_AddItemToArray(a, b);
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "lora-%d", i);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", id);
        cJSON_AddStringToObject(o, "parent", "base");
        cJSON_AddItemToArray(a, o);
    }
    for (size_t i = 0; extra && extra[i]; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", extra[i]);
        cJSON_AddStringToObject(o, "parent", "base");
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

/* An id of n bytes into buf[n + 1], ending in its length. */
static const char *id_of(char *buf, size_t n)
{
    memset(buf, 'a', n);
    buf[n] = 0;
    char tail[8];
    int k = snprintf(tail, sizeof tail, "%zu", n);
    memcpy(buf + n - (size_t)k, tail, (size_t)k);
    return buf;
}

TEST(many_adapters_and_long_ids_are_kept_and_found)
{
    char id200[201], id512[KVG_MODEL_ID_MAX + 1];
    id_of(id200, 200);
    id_of(id512, KVG_MODEL_ID_MAX);
    const char *extra[] = {id200, id512, NULL};
    cJSON *a = listing(300, extra);
    struct kvg_model_list l;
    struct kvg_model_list_drops d;
    CHECK_INT(kvg_model_list_parse(&l, a, &d), 0);
    CHECK_INT(l.n, 303);
    CHECK_INT(d.n, 0);
    CHECK_INT(d.hash, 0);
    /* The engine's order is kept (what /v1/models shows). */
    CHECK_STR(l.e[0].id, "base");
    CHECK_STR(l.e[20].id, "lora-19");
    CHECK_STR(l.e[301].id, id200);
    /* Every entry is found, with its own fields. */
    int found = 0;
    for (size_t i = 0; i < l.n; i++) {
        const struct kvg_model_entry *e = kvg_model_list_find(&l, l.e[i].id, l.e[i].len);
        found += e == &l.e[i];
    }
    CHECK_INT(found, 303);
    const struct kvg_model_entry *e = kvg_model_list_find(&l, "base", 4);
    CHECK(e && e->max_model_len == 8192 && !e->adapter);
    e = kvg_model_list_find(&l, id200, 200);
    CHECK(e && e->adapter);
    CHECK(kvg_model_list_find(&l, "lora-300", 8) == NULL);
    CHECK(kvg_model_list_find(&l, "lora-1", 5) == NULL); /* a prefix is not a match */
    CHECK(kvg_model_list_find(&l, id200, 199) == NULL);
    kvg_model_list_free(&l);
    cJSON_Delete(a);
}

TEST(over_the_caps_is_left_out_and_described)
{
    char over[KVG_MODEL_ID_MAX + 2];
    id_of(over, KVG_MODEL_ID_MAX + 1);
    const char *extra[] = {over, NULL};
    /* base + 4095 adapters = the cap; the long id and one more past it drop. */
    cJSON *a = listing(KVG_MODEL_LIST_MAX - 1, extra);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", "one-too-many");
    cJSON_AddItemToArray(a, o);
    cJSON_AddItemToArray(a, cJSON_CreateString("not a model")); /* neither kept nor counted */
    struct kvg_model_list l;
    struct kvg_model_list_drops d;
    CHECK_INT(kvg_model_list_parse(&l, a, &d), 0);
    CHECK_INT(l.n, KVG_MODEL_LIST_MAX);
    CHECK_INT(d.n, 2);
    CHECK(d.hash != 0);
    CHECK_INT(d.first_bytes, KVG_MODEL_ID_MAX + 1);
    CHECK(!strncmp(d.first, "aaaa", 4));
    CHECK(kvg_model_list_find(&l, "lora-4094", 9) != NULL);
    CHECK(kvg_model_list_find(&l, "one-too-many", 12) == NULL);
    CHECK(kvg_model_list_find(&l, over, strlen(over)) == NULL);
    kvg_model_list_free(&l);

    /* On a worker: counted once per distinct list, requests routed by it. */
    struct kvg_worker *w;
    CHECK_INT(kvg_worker_new("http://127.0.0.1:9", &w), 0);
    kvg_worker_set_models(w, a);
    kvg_worker_set_models(w, a); /* the same list read again */
    CHECK_INT(atomic_load(&w->models_dropped), 2);
    CHECK(kvg_worker_serves(w, "lora-4094", 9));
    CHECK(!kvg_worker_serves(w, "one-too-many", 12));
    CHECK_INT(kvg_worker_model_is_adapter(w, "lora-7", 6), 1);
    CHECK_INT(kvg_worker_max_model_len(w, "base", 4), 8192);
    cJSON_Delete(a);
    const char *none[] = {NULL};
    a = listing(20, none);
    kvg_worker_set_models(w, a); /* nothing over: nothing counted */
    CHECK_INT(atomic_load(&w->models_dropped), 2);
    CHECK_INT(w->models.n, 21);
    cJSON_Delete(a);
    a = listing(KVG_MODEL_LIST_MAX, none); /* another list over the cap: counted */
    kvg_worker_set_models(w, a);
    CHECK_INT(atomic_load(&w->models_dropped), 3);
    cJSON_Delete(a);
    kvg_worker_unref(w);
}
