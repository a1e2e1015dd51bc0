/* A worker's model list (model_list.h): one pass to size, one to fill, and
 * a sorted index of pointers into the entries. */
#include "router/model_list.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"

/* Whether entry `it` of a /v1/models `data` array is kept; *id its id. */
static int keep(const cJSON *it, size_t kept, const char **id, size_t *len)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(it, "id");
    if (!cJSON_IsString(j)) return -1; /* not a model: neither kept nor dropped */
    *id = j->valuestring;
    *len = strlen(j->valuestring);
    return kept < KVG_MODEL_LIST_MAX && *len <= KVG_MODEL_ID_MAX;
}

static int cmp_entry(const void *a, const void *b)
{
    const struct kvg_model_entry *x = *(const struct kvg_model_entry *const *)a;
    const struct kvg_model_entry *y = *(const struct kvg_model_entry *const *)b;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return memcmp(x->id, y->id, x->len);
}

static void note_drop(struct kvg_model_list_drops *d, const char *id, size_t len)
{
    if (!d->n++) {
        snprintf(d->first, sizeof d->first, "%.*s", (int)(len < 64 ? len : 64), id);
        d->first_bytes = len;
    }
    d->hash = kvg_hash_fnv1a64(d->hash ? d->hash : KVG_HASH_FNV1A64_SEED, id, len + 1);
    if (!d->hash) d->hash = 1;
}

int kvg_model_list_parse(struct kvg_model_list *out, const cJSON *data,
                         struct kvg_model_list_drops *drops)
{
    memset(out, 0, sizeof *out);
    memset(drops, 0, sizeof *drops);
    size_t n = 0, bytes = 0, len;
    const char *id;
    const cJSON *it;
    cJSON_ArrayForEach(it, data)
    {
        int k = keep(it, n, &id, &len);
        if (k > 0) {
            n++;
            bytes += len + 1;
        } else if (k == 0) {
            note_drop(drops, id, len);
        }
    }
    if (!n) return 0;
    out->e = calloc(n, sizeof *out->e);
    out->sorted = malloc(n * sizeof *out->sorted);
    out->ids = malloc(bytes);
    if (!out->e || !out->sorted || !out->ids) {
        kvg_model_list_free(out);
        return -ENOMEM;
    }
    char *p = out->ids;
    cJSON_ArrayForEach(it, data)
    {
        if (keep(it, out->n, &id, &len) <= 0) continue;
        struct kvg_model_entry *e = &out->e[out->n];
        memcpy(p, id, len + 1);
        e->id = p;
        e->len = len;
        p += len + 1;
        /* vLLM and SGLang say their context; the quota reserves it for a
         * request without max_tokens. */
        const cJSON *ml = cJSON_GetObjectItemCaseSensitive(it, "max_model_len");
        e->max_model_len = cJSON_IsNumber(ml) && ml->valuedouble >= 1 && ml->valuedouble < 4e9
                               ? (uint32_t)ml->valuedouble
                               : 0;
        /* vLLM lists each LoRA adapter with its base model as `parent`
         * (null for the base): requests for an adapter are hashed with its
         * name, as the engine seeds the adapter's blocks. */
        const cJSON *parent = cJSON_GetObjectItemCaseSensitive(it, "parent");
        e->adapter =
            cJSON_IsString(parent) && parent->valuestring[0] && strcmp(parent->valuestring, id);
        out->sorted[out->n] = e;
        out->n++;
    }
    qsort(out->sorted, out->n, sizeof *out->sorted, cmp_entry);
    return 0;
}

const struct kvg_model_entry *kvg_model_list_find(const struct kvg_model_list *l, const char *model,
                                                  size_t len)
{
    struct kvg_model_entry key = {.id = model, .len = len};
    const struct kvg_model_entry *kp = &key;
    const struct kvg_model_entry **hit =
        l->n ? bsearch(&kp, l->sorted, l->n, sizeof *l->sorted, cmp_entry) : NULL;
    return hit ? *hit : NULL;
}

void kvg_model_list_free(struct kvg_model_list *l)
{
    free(l->e);
    free(l->sorted);
    free(l->ids);
    memset(l, 0, sizeof *l);
}
