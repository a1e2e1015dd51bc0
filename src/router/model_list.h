/* A worker's model list, from its /v1/models: ids in the engine's order
 * (what kvgate's own /v1/models and /workers show) and a sorted index for
 * the request path's lookup (a pick asks every candidate whether it serves
 * the request's model: O(log n), for engines listing hundreds of LoRA
 * adapters).
 *
 * No small fixed limit: the caps only bound what one engine's answer can
 * make kvgate hold. An entry over them is left out and reported to the
 * caller (router/worker.c logs and counts it). */
#ifndef KVG_ROUTER_MODEL_LIST_H
#define KVG_ROUTER_MODEL_LIST_H

#include <stddef.h>
#include <stdint.h>

#define KVG_MODEL_LIST_MAX 4096 /* entries */
#define KVG_MODEL_ID_MAX 512    /* bytes of an id */

struct cJSON;

struct kvg_model_entry {
    const char *id; /* NUL-terminated, in the list's memory */
    size_t len;
    uint32_t max_model_len; /* its context (vLLM, SGLang say); 0 unknown */
    int adapter;            /* listed with a `parent`: a LoRA adapter */
};

struct kvg_model_list {
    struct kvg_model_entry *e;             /* owned: n entries, the engine's order */
    const struct kvg_model_entry **sorted; /* owned: e by (len, bytes), for lookup */
    char *ids;                             /* owned: every id's bytes */
    size_t n;
};

/* What kvg_model_list_parse left out. */
struct kvg_model_list_drops {
    size_t n;           /* entries over the caps */
    uint64_t hash;      /* of their ids, to tell one list from another; 0 none */
    char first[80];     /* the first one's id (cut), for a log line */
    size_t first_bytes; /* its full length */
};

/* Builds *out (empty on entry, freed by the caller with
 * kvg_model_list_free) from the `data` array of a /v1/models answer
 * (borrowed): each entry with a string `id`, its `max_model_len` and
 * whether its `parent` names another model. Entries past
 * KVG_MODEL_LIST_MAX or with an id over KVG_MODEL_ID_MAX bytes are left out
 * and described in *drops. 0, or -ENOMEM (out stays empty). */
int kvg_model_list_parse(struct kvg_model_list *out, const struct cJSON *data,
                         struct kvg_model_list_drops *drops);
/* The entry named model[len], or NULL. */
const struct kvg_model_entry *kvg_model_list_find(const struct kvg_model_list *l, const char *model,
                                                  size_t len);
void kvg_model_list_free(struct kvg_model_list *l);

#endif
