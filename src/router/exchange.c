/* The replicas' exchange of routing history: the outbox, the batch encoding
 * and its decoder (router/exchange.h). */
#include "router/exchange.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/bytes.h"
#include "base/err.h"
#include "base/hash.h"
#include "router/exchange_int.h"
#include "router/pool.h"

/* A queued record: its strings and hashes follow it in one allocation. */
struct rec {
    struct rec *next;
    uint32_t block_size, ntokens, nblocks, tlen;
    uint16_t wlen, mlen;
    size_t bytes; /* what it adds to a batch at most: its strings included */
    char *worker, *model, *text;
    uint64_t hashes[];
};

struct kvg_exchange {
    pthread_mutex_t mu; /* guards everything below */
    struct rec *head, *tail;
    size_t n, bytes, max_bytes;
    uint64_t published, dropped, batches, records_sent;
    struct kvg_pool *loads; /* NULL: batches carry no in-flight counts */
};

/* The head's bytes, and each record's and each string's fixed part. */
#define HEAD_BYTES (4 + 1 + 1 + 2 + 8 + 8 + 2 + 4)
#define REC_BYTES (2 + 2 + 4 + 4 + 4)
#define TEXT_LEN_BYTES 4 /* version 2's text_len */
#define STR_BYTES 2
#define NLOAD_BYTES 2 /* version 3's load section: its count, */
#define LOAD_BYTES 6  /* and each load's (worker, in_flight) */
/* Distinct strings of one batch at most (workers and models). */
#define MAX_STRS 4096

int kvg_exchange_new(size_t max_bytes, struct kvg_exchange **out)
{
    if (!max_bytes) max_bytes = KVG_EXCHANGE_DEFAULT_BYTES;
    if (max_bytes < 4096) return -EINVAL;
    struct kvg_exchange *x = calloc(1, sizeof *x);
    if (!x) return -ENOMEM;
    if (pthread_mutex_init(&x->mu, NULL)) {
        free(x);
        return -ENOMEM;
    }
    x->max_bytes = max_bytes;
    *out = x;
    return 0;
}

static void free_list(struct rec *r)
{
    for (struct rec *next; r; r = next) {
        next = r->next;
        free(r);
    }
}

void kvg_exchange_free(struct kvg_exchange *x)
{
    if (!x) return;
    free_list(x->head);
    pthread_mutex_destroy(&x->mu);
    free(x);
}

/* Printable ASCII, as URLs and model names are: a record naming anything
 * else is not one kvgate made. */
static int printable(const char *s, size_t n)
{
    if (!n || n > KVG_EXCHANGE_MAX_STR) return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e) return 0;
    return 1;
}

int kvg_exchange_publish(struct kvg_exchange *x, const char *worker, struct kvg_str model,
                         uint32_t block_size, uint32_t ntokens, const uint64_t *hashes, size_t n,
                         struct kvg_str text)
{
    size_t wlen = worker ? strlen(worker) : 0;
    if (!hashes) n = 0;
    if ((!n && !text.len) || !block_size || block_size > KVG_EXCHANGE_MAX_BLOCK_SIZE ||
        !printable(worker, wlen) || (model.len && !printable(model.p, model.len)))
        return 0;
    if (n > KVG_EXCHANGE_MAX_BLOCKS) n = KVG_EXCHANGE_MAX_BLOCKS; /* the leading blocks */
    /* Full blocks only: the decoder's check, whatever the caller counted. */
    uint64_t full = (uint64_t)n * block_size;
    if (ntokens < full || ntokens - full >= block_size) ntokens = (uint32_t)full;
    /* Every record is counted with version 2's text length: a bound. */
    size_t bytes = REC_BYTES + TEXT_LEN_BYTES + n * 8 + 2 * STR_BYTES + wlen + model.len;
    if (HEAD_BYTES + bytes > x->max_bytes) return 0;
    /* The text's first bytes, within half a batch: one long prompt does not
     * push every other record out of the outbox. */
    size_t tlen = KVG_MIN(text.len, (size_t)KVG_EXCHANGE_MAX_TEXT);
    size_t room = x->max_bytes / 2 > HEAD_BYTES + bytes ? x->max_bytes / 2 - HEAD_BYTES - bytes : 0;
    tlen = KVG_MIN(tlen, room);
    if (!n && !tlen) return 0;
    bytes += tlen;
    struct rec *r = malloc(sizeof *r + n * 8 + wlen + model.len + tlen + 2);
    if (!r) return -ENOMEM;
    *r = (struct rec){.block_size = block_size,
                      .ntokens = ntokens,
                      .nblocks = (uint32_t)n,
                      .tlen = (uint32_t)tlen,
                      .wlen = (uint16_t)wlen,
                      .mlen = (uint16_t)model.len,
                      .bytes = bytes};
    if (n) memcpy(r->hashes, hashes, n * 8);
    r->worker = (char *)(r->hashes + n);
    memcpy(r->worker, worker, wlen + 1);
    r->model = r->worker + wlen + 1;
    if (model.len) memcpy(r->model, model.p, model.len);
    r->model[model.len] = 0;
    r->text = r->model + model.len + 1;
    if (tlen) memcpy(r->text, text.p, tlen);
    struct rec *gone = NULL, **gtail = &gone;
    pthread_mutex_lock(&x->mu);
    /* Over the cap the oldest go first: a late record is worth the least. */
    while (x->head && HEAD_BYTES + x->bytes + bytes > x->max_bytes) {
        struct rec *o = x->head;
        x->head = o->next;
        if (!x->head) x->tail = NULL;
        x->bytes -= o->bytes;
        x->n--;
        x->dropped++;
        o->next = NULL;
        *gtail = o;
        gtail = &o->next;
    }
    if (x->tail)
        x->tail->next = r;
    else
        x->head = r;
    x->tail = r;
    x->n++;
    x->bytes += bytes;
    x->published++;
    pthread_mutex_unlock(&x->mu);
    free_list(gone);
    return 1;
}

void kvg_exchange_on_pick(void *ud, struct kvg_worker *w, const struct kvg_policy *policy,
                          const struct kvg_route_ctx *ctx)
{
    if (ctx->dry_run) return;
    /* The text only where the policy's history is text: the others' records
     * stay what they were (version 1), and no prompt leaves for nothing. */
    struct kvg_str text = KVG_STR_NULL;
    char key[KVG_POLICY_RECORD_TEXT_MAX];
    if (policy && policy->ops->record_text) {
        size_t kl = policy->ops->record_text(policy, ctx, key, sizeof key);
        if (kl) text = (struct kvg_str){key, kl};
    } else if (policy && policy->ops->places_text && policy->ops->places_text(policy) &&
               ctx->text) {
        text = (struct kvg_str){ctx->text, ctx->text_len};
    }
    size_t n = ctx->block_hashes ? ctx->nblocks : 0;
    if (!n && !text.len) return;
    kvg_exchange_publish(ud, w->url, ctx->model, ctx->block_size ? ctx->block_size : 16,
                         n ? (uint32_t)ctx->ntokens : 0, ctx->block_hashes, n, text);
}

void kvg_exchange_set_loads(struct kvg_exchange *x, struct kvg_pool *p)
{
    pthread_mutex_lock(&x->mu);
    x->loads = p;
    pthread_mutex_unlock(&x->mu);
}

/* A batch's string table: its strings in order and an open-addressed set
 * of their indexes (slot: index + 1, 0 empty), so that naming 1,024
 * workers is not a million comparisons (a linear search cost a batch
 * 0.7-1.5 ms at 1,024 workers: bench/router/exchange_peers.c). */
#define STR_SLOTS (2 * MAX_STRS)
_Static_assert((STR_SLOTS & (STR_SLOTS - 1)) == 0, "STR_SLOTS is a power of two");
struct strtab {
    const char **strs;
    uint16_t *lens, *slot;
    size_t n;
};

static size_t str_slot(const struct strtab *t, const char *s, size_t len)
{
    size_t i = (size_t)kvg_hash_fnv1a64(KVG_HASH_FNV1A64_SEED, s, len) & (STR_SLOTS - 1);
    for (;; i = (i + 1) & (STR_SLOTS - 1)) {
        uint16_t e = t->slot[i];
        if (!e || (t->lens[e - 1] == len && !memcmp(t->strs[e - 1], s, len))) return i;
    }
}

/* The index of s in the table, added if new; -1 when full. */
static int str_index(struct strtab *t, const char *s, size_t len)
{
    size_t i = str_slot(t, s, len);
    if (t->slot[i]) return t->slot[i] - 1;
    if (t->n >= MAX_STRS) return -1;
    t->strs[t->n] = s;
    t->lens[t->n] = (uint16_t)len;
    t->slot[i] = (uint16_t)(t->n + 1);
    return (int)t->n++;
}

/* Takes back the strings added since the table held n: the newest, so no
 * older string's probe passes their slots. */
static void str_truncate(struct strtab *t, size_t n)
{
    while (t->n > n) {
        t->n--;
        t->slot[str_slot(t, t->strs[t->n], t->lens[t->n])] = 0;
    }
}

int kvg_exchange_flush(struct kvg_exchange *x, uint64_t sender, uint64_t seq, const char *from,
                       struct kvg_buf *out)
{
    pthread_mutex_lock(&x->mu);
    struct rec *list = x->head;
    size_t n = x->n, max_bytes = x->max_bytes;
    struct kvg_pool *lp = x->loads;
    x->head = x->tail = NULL;
    x->n = x->bytes = 0;
    pthread_mutex_unlock(&x->mu);
    struct strtab st = {malloc(MAX_STRS * sizeof *st.strs), malloc(MAX_STRS * sizeof *st.lens),
                        calloc(STR_SLOTS, sizeof *st.slot), 0};
    uint16_t *idx = malloc((2 * n + 1) * sizeof *idx);
    /* The load section's (string index, count) pairs: the pool's workers'
     * URLs stay in the string table's views, so its read lock is held until
     * the batch is written. */
    uint16_t *lidx = lp ? malloc(KVG_POOL_MAX_WORKERS * sizeof *lidx) : NULL;
    uint32_t *lval = lp ? malloc(KVG_POOL_MAX_WORKERS * sizeof *lval) : NULL;
    int rc = st.strs && st.lens && st.slot && idx && (!lp || (lidx && lval)) ? 0 : -ENOMEM;
    size_t size = HEAD_BYTES, nrec = 0, nload = 0;
    int fidx = -1, v2 = 0, v3 = lp != NULL;
    for (struct rec *r = list; r; r = r->next) v2 |= r->tlen > 0;
    size_t rec_bytes = REC_BYTES + (v2 || v3 ? TEXT_LEN_BYTES : 0);
    if (!rc && from && printable(from, strlen(from))) fidx = str_index(&st, from, strlen(from));
    /* The counts take at most half the batch (their URLs included), as a
     * text does; the workers past it go unreported this time. */
    size_t lbytes = v3 ? NLOAD_BYTES : 0;
    if (lp) pthread_rwlock_rdlock(&lp->lock);
    for (size_t i = 0; !rc && lp && i < lp->n; i++) {
        const struct kvg_worker *w = lp->w[i];
        size_t ul = strlen(w->url), before = st.n;
        int wi = printable(w->url, ul) ? str_index(&st, w->url, ul) : -1;
        if (wi < 0) continue;
        size_t add = LOAD_BYTES + (st.n > before ? STR_BYTES + ul : 0);
        if (HEAD_BYTES + lbytes + add > max_bytes / 2) {
            str_truncate(&st, before);
            break;
        }
        lbytes += add;
        uint32_t c = atomic_load_explicit(&w->in_flight, memory_order_relaxed);
        lidx[nload] = (uint16_t)wi;
        lval[nload++] = c < KVG_EXCHANGE_MAX_INFLIGHT ? c : KVG_EXCHANGE_MAX_INFLIGHT;
    }
    if (v3) size += NLOAD_BYTES + nload * LOAD_BYTES;
    /* With the counts the records keep within the rest of the cap: the
     * oldest go (counted dropped), each weighed with its own strings as the
     * outbox weighs it, which bounds what it adds. */
    size_t skip = 0, total = 0;
    for (struct rec *r = list; r; r = r->next) total += r->bytes;
    for (struct rec *r = list; r && HEAD_BYTES + lbytes + total > max_bytes; r = r->next) {
        total -= r->bytes;
        skip++;
    }
    /* The string table first: records whose strings no longer fit are left
     * out (a batch names at most MAX_STRS). */
    for (struct rec *r = list; !rc && r; r = r->next) {
        if (nrec < skip) {
            idx[2 * nrec++] = KVG_EXCHANGE_NONE;
            continue;
        }
        size_t before = st.n;
        int wi = str_index(&st, r->worker, r->wlen);
        int mi = r->mlen ? str_index(&st, r->model, r->mlen) : (int)KVG_EXCHANGE_NONE;
        if (wi < 0 || mi < 0) {
            str_truncate(&st, before);
            idx[2 * nrec] = KVG_EXCHANGE_NONE; /* marks it left out */
        } else {
            idx[2 * nrec] = (uint16_t)wi;
            idx[2 * nrec + 1] = (uint16_t)mi;
            size += rec_bytes + (size_t)r->nblocks * 8 + r->tlen;
        }
        nrec++;
    }
    for (size_t i = 0; !rc && i < st.n; i++) size += STR_BYTES + st.lens[i];
    size_t start = out->len;
    if (!rc) rc = kvg_buf_reserve(out, size);
    size_t kept = 0;
    if (!rc) {
        uint8_t *p = (uint8_t *)out->data + out->len;
        memcpy(p, "KVGX", 4);
        p[4] = v3 ? 3 : v2 ? 2 : 1;
        p[5] = 0;
        kvg_put_le16(p + 6, (uint16_t)st.n);
        kvg_put_le64(p + 8, sender);
        kvg_put_le64(p + 16, seq);
        kvg_put_le16(p + 24, fidx < 0 ? KVG_EXCHANGE_NONE : (uint16_t)fidx);
        uint8_t *nrec_at = p + 26;
        p += HEAD_BYTES;
        for (size_t i = 0; i < st.n; i++) {
            kvg_put_le16(p, st.lens[i]);
            memcpy(p + 2, st.strs[i], st.lens[i]);
            p += STR_BYTES + st.lens[i];
        }
        if (v3) {
            kvg_put_le16(p, (uint16_t)nload);
            p += NLOAD_BYTES;
            for (size_t l = 0; l < nload; l++, p += LOAD_BYTES) {
                kvg_put_le16(p, lidx[l]);
                kvg_put_le32(p + 2, lval[l]);
            }
        }
        size_t i = 0;
        for (struct rec *r = list; r; r = r->next, i++) {
            if (idx[2 * i] == KVG_EXCHANGE_NONE) continue;
            kvg_put_le16(p, idx[2 * i]);
            kvg_put_le16(p + 2, idx[2 * i + 1]);
            kvg_put_le32(p + 4, r->block_size);
            kvg_put_le32(p + 8, r->ntokens);
            kvg_put_le32(p + 12, r->nblocks);
            if (v2 || v3) kvg_put_le32(p + REC_BYTES, r->tlen);
            p += rec_bytes;
            for (uint32_t b = 0; b < r->nblocks; b++, p += 8) kvg_put_le64(p, r->hashes[b]);
            if (r->tlen) memcpy(p, r->text, r->tlen);
            p += r->tlen;
            kept++;
        }
        kvg_put_le32(nrec_at, (uint32_t)kept);
        out->len = start + size;
    }
    if (lp) pthread_rwlock_unlock(&lp->lock);
    free(st.strs);
    free(st.lens);
    free(st.slot);
    free(idx);
    free(lidx);
    free(lval);
    free_list(list);
    pthread_mutex_lock(&x->mu);
    if (rc) {
        x->dropped += n;
    } else {
        x->dropped += n - kept;
        x->batches++;
        x->records_sent += kept;
    }
    pthread_mutex_unlock(&x->mu);
    return rc ? rc : (int)kept;
}

void kvg_exchange_stats(struct kvg_exchange *x, struct kvg_exchange_stats *st)
{
    pthread_mutex_lock(&x->mu);
    *st = (struct kvg_exchange_stats){.published = x->published,
                                      .dropped = x->dropped,
                                      .batches = x->batches,
                                      .records_sent = x->records_sent,
                                      .queued = x->n,
                                      .queued_bytes = x->bytes};
    pthread_mutex_unlock(&x->mu);
}

/* ---- Decoding. */

struct reader {
    const uint8_t *p, *end;
};

static int need(const struct reader *r, size_t n)
{
    return (size_t)(r->end - r->p) >= n;
}

/* Walks the batch; with each NULL it only checks. */
static int walk(const uint8_t *data, size_t len, struct kvg_exchange_head *h,
                int (*each)(void *ud, const struct kvg_exchange_rec *r),
                int (*load)(void *ud, struct kvg_str worker, uint32_t in_flight), void *ud,
                const char **why, uint64_t *scratch, const uint8_t **strs)
{
    struct reader rd = {data, data + len};
#define BAD(msg)                                                                                   \
    do {                                                                                           \
        if (why) *why = msg;                                                                       \
        return KVG_EPARSE;                                                                         \
    } while (0)
    if (!need(&rd, HEAD_BYTES) || memcmp(data, "KVGX", 4)) BAD("not an exchange batch");
    uint8_t version = data[4];
    if (version < 1 || version > 3) BAD("unknown version");
    int texts = version >= 2;
    size_t rec_bytes = REC_BYTES + (texts ? TEXT_LEN_BYTES : 0);
    if (data[5]) BAD("reserved byte set");
    uint16_t nstr = kvg_get_le16(data + 6), from = kvg_get_le16(data + 24);
    uint32_t nrec = kvg_get_le32(data + 26);
    if (nstr > MAX_STRS) BAD("too many strings");
    rd.p += HEAD_BYTES;
    struct kvg_str fromv = KVG_STR_NULL;
    for (uint16_t i = 0; i < nstr; i++) {
        if (!need(&rd, STR_BYTES)) BAD("truncated string table");
        if (strs) strs[i] = rd.p; /* where each string's length is */
        uint16_t l = kvg_get_le16(rd.p);
        rd.p += STR_BYTES;
        if (!need(&rd, l) || !printable((const char *)rd.p, l)) BAD("bad string");
        if (i == from) fromv = (struct kvg_str){(const char *)rd.p, l};
        rd.p += l;
    }
    if (from != KVG_EXCHANGE_NONE && from >= nstr) BAD("sender name out of range");
    if (h)
        *h = (struct kvg_exchange_head){.version = version,
                                        .sender = kvg_get_le64(data + 8),
                                        .seq = kvg_get_le64(data + 16),
                                        .from = fromv,
                                        .nrec = nrec};
    int walked = 0;
    if (version == 3) {
        if (!need(&rd, NLOAD_BYTES)) BAD("truncated load section");
        uint16_t nload = kvg_get_le16(rd.p);
        rd.p += NLOAD_BYTES;
        if (!need(&rd, (size_t)nload * LOAD_BYTES)) BAD("truncated load section");
        for (uint16_t i = 0; i < nload; i++, rd.p += LOAD_BYTES) {
            uint16_t wi = kvg_get_le16(rd.p);
            uint32_t c = kvg_get_le32(rd.p + 2);
            if (wi >= nstr) BAD("load's worker out of range");
            if (c > KVG_EXCHANGE_MAX_INFLIGHT) BAD("load over the bound");
            if (load) {
                int rc = load(
                    ud,
                    (struct kvg_str){(const char *)strs[wi] + STR_BYTES, kvg_get_le16(strs[wi])},
                    c);
                if (rc) return rc;
                walked++;
            }
        }
    }
    /* Each record's least bytes (a block, or one byte of text) bound nrec
     * before anything is walked. */
    if (nrec > (size_t)(rd.end - rd.p) / (rec_bytes + (texts ? 1 : 8)))
        BAD("more records than bytes");
    for (uint32_t i = 0; i < nrec; i++) {
        if (!need(&rd, rec_bytes)) BAD("truncated record");
        uint16_t wi = kvg_get_le16(rd.p), mi = kvg_get_le16(rd.p + 2);
        uint32_t bs = kvg_get_le32(rd.p + 4), nt = kvg_get_le32(rd.p + 8),
                 nb = kvg_get_le32(rd.p + 12);
        uint32_t tl = texts ? kvg_get_le32(rd.p + REC_BYTES) : 0;
        rd.p += rec_bytes;
        if (wi >= nstr) BAD("worker out of range");
        if (mi != KVG_EXCHANGE_NONE && mi >= nstr) BAD("model out of range");
        if (!bs || bs > KVG_EXCHANGE_MAX_BLOCK_SIZE) BAD("bad block size");
        if ((!nb && !tl) || nb > KVG_EXCHANGE_MAX_BLOCKS) BAD("bad block count");
        if (nt / bs != nb) BAD("token count does not match the blocks");
        if (tl > KVG_EXCHANGE_MAX_TEXT) BAD("text too long");
        if (!need(&rd, (size_t)nb * 8)) BAD("truncated hashes");
        if (!need(&rd, (size_t)nb * 8 + tl)) BAD("truncated text");
        if (each && !load) {
            struct kvg_exchange_rec r = {.block_size = bs, .ntokens = nt, .nblocks = nb};
            r.worker = (struct kvg_str){(const char *)strs[wi] + STR_BYTES, kvg_get_le16(strs[wi])};
            if (mi != KVG_EXCHANGE_NONE)
                r.model =
                    (struct kvg_str){(const char *)strs[mi] + STR_BYTES, kvg_get_le16(strs[mi])};
            for (uint32_t b = 0; b < nb; b++) scratch[b] = kvg_get_le64(rd.p + 8 * (size_t)b);
            r.hashes = nb ? scratch : NULL;
            if (tl) r.text = (struct kvg_str){(const char *)rd.p + (size_t)nb * 8, tl};
            int rc = each(ud, &r);
            if (rc) return rc;
            walked++;
        }
        rd.p += (size_t)nb * 8 + tl;
    }
    if (rd.p != rd.end) BAD("trailing bytes");
#undef BAD
    return walked;
}

int kvg_exchange_decode(const void *data, size_t len, size_t max_bytes, struct kvg_exchange_head *h,
                        int (*each)(void *ud, const struct kvg_exchange_rec *r), void *ud,
                        const char **why)
{
    if (why) *why = "";
    if (len > max_bytes) {
        if (why) *why = "batch over the byte cap";
        return KVG_ETOOBIG;
    }
    struct kvg_exchange_head head;
    int rc = walk(data, len, &head, NULL, NULL, NULL, why, NULL, NULL);
    if (h && rc >= 0) *h = head;
    if (rc < 0 || !each) return rc < 0 ? rc : (int)head.nrec;
    uint64_t *scratch = malloc(KVG_EXCHANGE_MAX_BLOCKS * sizeof *scratch);
    const uint8_t **strs = malloc(MAX_STRS * sizeof *strs);
    rc = scratch && strs ? walk(data, len, NULL, each, NULL, ud, why, scratch, strs) : -ENOMEM;
    free(scratch);
    free(strs);
    return rc;
}

int kvg__exchange_walk_loads(const void *data, size_t len,
                             int (*load)(void *ud, struct kvg_str worker, uint32_t in_flight),
                             void *ud)
{
    const uint8_t **strs = malloc(MAX_STRS * sizeof *strs);
    if (!strs) return -ENOMEM;
    const char *why;
    int rc = walk(data, len, NULL, NULL, load, ud, &why, NULL, strs);
    free(strs);
    return rc;
}

int kvg_exchange_apply(struct kvg_pool *p, struct kvg_policy *policy,
                       const struct kvg_exchange_rec *r, uint64_t now_ms, int nowait)
{
    struct kvg_policy *pol = policy ? policy : p->policy;
    char url[KVG_EXCHANGE_MAX_STR + 1];
    memcpy(url, r->worker.p, r->worker.len);
    url[r->worker.len] = 0;
    /* A pick of the worker, whatever the policy keeps of it: its load until
     * the engine's next sample counts it. */
    if (kvg_pool_peer_pick(p, url)) return KVG_ENOTFOUND;
    if (!r->nblocks && !(pol->ops->places_text && pol->ops->places_text(pol))) return 0;
    struct kvg_route_ctx ctx = {.model = r->model,
                                .text = r->text.p,
                                .text_len = r->text.len,
                                .block_hashes = r->hashes,
                                .nblocks = r->nblocks,
                                .block_size = r->block_size,
                                .ntokens = r->ntokens,
                                .rng = kvg_rand_thread(),
                                .now_ms = now_ms,
                                .nowait = nowait,
                                .policy = policy};
    return kvg_pool_place(p, url, &ctx);
}
