/* The simulated engine's stored responses (vLLM's response store, with
 * VLLM_ENABLE_RESPONSES_API_STORE): a response's id maps to its Response
 * object (GET /v1/responses/{id}), the chat messages it was rendered from
 * and its output text (what previous_response_id prepends). vLLM's store
 * grows without end; this one keeps at most `max` responses and
 * STORE_MAX_BYTES of them, evicting the oldest first, so a client cannot
 * grow the sim's memory without bound. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/hash.h"
#include "simsrv/simsrv.h"

#define STORE_MAX_BYTES (256u << 20)

struct entry {
    struct entry *next; /* hash chain */
    struct entry *older, *newer;
    char *id;
    char *resp, *msgs, *out;
    size_t idlen, rlen, mlen, olen;
};

struct kvg_simsrv_store {
    uint32_t max, n;
    size_t bytes;
    struct entry **buckets;
    size_t nb; /* a power of two */
    struct entry *oldest, *newest;
};

int kvg__simsrv_store_new(uint32_t max, struct kvg_simsrv_store **out)
{
    struct kvg_simsrv_store *st = calloc(1, sizeof *st);
    if (!st) return -ENOMEM;
    st->max = max ? max : 1;
    st->nb = 64;
    while (st->nb < (size_t)st->max * 2 && st->nb < (1u << 20)) st->nb <<= 1;
    if (!(st->buckets = calloc(st->nb, sizeof *st->buckets))) {
        free(st);
        return -ENOMEM;
    }
    *out = st;
    return 0;
}

static struct entry **slot(const struct kvg_simsrv_store *st, const char *id, size_t idlen)
{
    uint64_t h = kvg_hash_fnv1a64(KVG_HASH_FNV1A64_SEED, id, idlen);
    struct entry **p = &st->buckets[h & (st->nb - 1)];
    while (*p && ((*p)->idlen != idlen || memcmp((*p)->id, id, idlen))) p = &(*p)->next;
    return p;
}

static void entry_free(struct entry *e)
{
    free(e->id);
    free(e->resp);
    free(e->msgs);
    free(e->out);
    free(e);
}

/* Unlinks e (found at *p in its chain) from the chain and the age list. */
static void unlink_entry(struct kvg_simsrv_store *st, struct entry **p)
{
    struct entry *e = *p;
    *p = e->next;
    if (e->older)
        e->older->newer = e->newer;
    else
        st->oldest = e->newer;
    if (e->newer)
        e->newer->older = e->older;
    else
        st->newest = e->older;
    st->n--;
    st->bytes -= e->idlen + e->rlen + e->mlen + e->olen;
    entry_free(e);
}

void kvg__simsrv_store_free(struct kvg_simsrv_store *st)
{
    if (!st) return;
    while (st->oldest) unlink_entry(st, slot(st, st->oldest->id, st->oldest->idlen));
    free(st->buckets);
    free(st);
}

static char *dup_bytes(const char *p, size_t n)
{
    char *d = malloc(n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, p, n);
    d[n] = 0;
    return d;
}

int kvg__simsrv_store_put(struct kvg_simsrv_store *st, const char *id, const char *response,
                          size_t rlen, const char *messages, size_t mlen, const char *output,
                          size_t olen)
{
    size_t idlen = strlen(id), size = idlen + rlen + mlen + olen;
    if (size > STORE_MAX_BYTES) return KVG_ETOOBIG;
    struct entry *e = calloc(1, sizeof *e);
    if (!e || !(e->id = dup_bytes(id, idlen)) || !(e->resp = dup_bytes(response, rlen)) ||
        !(e->msgs = dup_bytes(messages, mlen)) || !(e->out = dup_bytes(output, olen))) {
        if (e) entry_free(e);
        return -ENOMEM;
    }
    e->idlen = idlen, e->rlen = rlen, e->mlen = mlen, e->olen = olen;
    struct entry **p = slot(st, id, idlen);
    if (*p) unlink_entry(st, p);
    while (st->oldest && (st->n >= st->max || st->bytes + size > STORE_MAX_BYTES))
        unlink_entry(st, slot(st, st->oldest->id, st->oldest->idlen));
    p = slot(st, id, idlen);
    *p = e;
    e->older = st->newest;
    if (st->newest)
        st->newest->newer = e;
    else
        st->oldest = e;
    st->newest = e;
    st->n++;
    st->bytes += size;
    return 0;
}

int kvg__simsrv_store_get(const struct kvg_simsrv_store *st, const char *id, size_t idlen,
                          struct kvg_simsrv_stored *out)
{
    struct entry *e = st ? *slot(st, id, idlen) : NULL;
    if (!e) return KVG_ENOTFOUND;
    *out = (struct kvg_simsrv_stored){.response = e->resp,
                                      .rlen = e->rlen,
                                      .messages = e->msgs,
                                      .mlen = e->mlen,
                                      .output = e->out,
                                      .olen = e->olen};
    return 0;
}

int kvg__simsrv_store_del(struct kvg_simsrv_store *st, const char *id, size_t idlen)
{
    if (!st) return KVG_ENOTFOUND;
    struct entry **p = slot(st, id, idlen);
    if (!*p) return KVG_ENOTFOUND;
    unlink_entry(st, p);
    return 0;
}
