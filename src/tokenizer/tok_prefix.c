/* The exact prefix cache: a text that starts like one encoded before (a
 * shared system prompt, tool definitions, a conversation's earlier turns)
 * reuses the ids of that start and encodes only the rest.
 *
 * Exact by construction. The encoder cuts the raw text around added tokens
 * (<|im_start|>, ...) and encodes each piece on its own (tok_encode.c), so
 * the ids of a text are the ids of its pieces in order. The cache only cuts
 * where a piece ends in an added token: a cut c of this text's split. If an
 * earlier text had the same bytes before c and also a matched added token
 * ending at c, both splits agree before c: the split is leftmost-longest from
 * the start, and a decision before c that looked past c (a longer token, a
 * single_word or rstrip check) would have left the match crossing c or
 * ending elsewhere, so no token would end at c in that text; lstrip never
 * reaches back over the previous match. Pre-tokenizer boundaries are not
 * used as cuts (which boundary a regex guarantees depends on the regex).
 *
 * Storage: one entry per cut, holding the segment from the previous cut
 * (its bytes, to verify, and its ids), keyed by a hash chained over the
 * segments and the cut's offset. A lookup walks this text's cuts from the
 * start while entries match byte for byte, so a hash collision costs a miss,
 * never a wrong id; the segments are what separate requests share, so the
 * memory is linear in what was seen, not quadratic. Entries are evicted least
 * recently used first, by bytes. One mutex: lookups copy ids out under it
 * (a memcpy per hit), so the tokenizer pool threads hold it briefly. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "base/err.h"
#include "base/lock.h"
#include "tokenizer/tok_impl.h"

struct pc_entry {
    uint64_t key;              /* chained hash of the text up to the cut */
    size_t cut;                /* offset of the cut in the text */
    struct pc_entry *hnext;    /* hash chain */
    struct pc_entry *lru_prev; /* toward most recently used */
    struct pc_entry *lru_next; /* toward least recently used */
    uint32_t seg_len, n_ids;   /* segment bytes, its ids */
    uint32_t *ids;             /* points into the same allocation */
    char seg[];                /* the segment's bytes, then the ids (aligned) */
};

struct kvg_tok_pcache {
    const struct kvg_tok *tok;
    pthread_mutex_t mu;
    struct pc_entry **buckets;
    size_t nbuckets, nentries;
    size_t bytes, max_bytes;
    struct pc_entry *lru_head, *lru_tail;
    uint64_t hits, misses, reused_tokens, evictions;
    _Atomic uint64_t busy; /* nowait encodes that found the mutex taken */
};

#define PC_OVERHEAD (sizeof(struct pc_entry) + 2 * sizeof(void *))

int kvg_tok_pcache_new(const struct kvg_tok *tok, size_t max_bytes, struct kvg_tok_pcache **out)
{
    *out = NULL;
    struct kvg_tok_pcache *c = calloc(1, sizeof *c);
    if (!c) return -ENOMEM;
    c->tok = tok;
    c->max_bytes = max_bytes;
    c->nbuckets = 1024;
    if (!(c->buckets = calloc(c->nbuckets, sizeof *c->buckets))) {
        free(c);
        return -ENOMEM;
    }
    int rc = pthread_mutex_init(&c->mu, NULL);
    if (rc) {
        free(c->buckets);
        free(c);
        return -rc;
    }
    *out = c;
    return 0;
}

void kvg_tok_pcache_free(struct kvg_tok_pcache *c)
{
    if (!c) return;
    for (struct pc_entry *e = c->lru_head, *n; e; e = n) {
        n = e->lru_next;
        free(e);
    }
    pthread_mutex_destroy(&c->mu);
    free(c->buckets);
    free(c);
}

void kvg_tok_pcache_stats(struct kvg_tok_pcache *c, struct kvg_tok_pcache_stats *st)
{
    memset(st, 0, sizeof *st);
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    st->hits = c->hits;
    st->misses = c->misses;
    st->reused_tokens = c->reused_tokens;
    st->evictions = c->evictions;
    st->busy = atomic_load_explicit(&c->busy, memory_order_relaxed);
    st->entries = c->nentries;
    st->bytes = c->bytes;
    st->max_bytes = c->max_bytes;
    pthread_mutex_unlock(&c->mu);
}

static size_t entry_bytes(const struct pc_entry *e)
{
    return PC_OVERHEAD + e->seg_len + e->n_ids * sizeof(uint32_t);
}

static struct pc_entry *find(struct kvg_tok_pcache *c, uint64_t key, size_t cut)
{
    for (struct pc_entry *e = c->buckets[key & (c->nbuckets - 1)]; e; e = e->hnext)
        if (e->key == key && e->cut == cut) return e;
    return NULL;
}

static void lru_unlink(struct kvg_tok_pcache *c, struct pc_entry *e)
{
    if (e->lru_prev)
        e->lru_prev->lru_next = e->lru_next;
    else
        c->lru_head = e->lru_next;
    if (e->lru_next)
        e->lru_next->lru_prev = e->lru_prev;
    else
        c->lru_tail = e->lru_prev;
    e->lru_prev = e->lru_next = NULL;
}

static void lru_front(struct kvg_tok_pcache *c, struct pc_entry *e)
{
    e->lru_next = c->lru_head;
    e->lru_prev = NULL;
    if (c->lru_head) c->lru_head->lru_prev = e;
    c->lru_head = e;
    if (!c->lru_tail) c->lru_tail = e;
}

static void evict_one(struct kvg_tok_pcache *c)
{
    struct pc_entry *e = c->lru_tail;
    struct pc_entry **pp = &c->buckets[e->key & (c->nbuckets - 1)];
    while (*pp != e) pp = &(*pp)->hnext;
    *pp = e->hnext;
    lru_unlink(c, e);
    c->bytes -= entry_bytes(e);
    c->nentries--;
    c->evictions++;
    free(e);
}

/* Doubles the bucket array when entries outnumber buckets (kept on failure:
 * chains only get longer). */
static void maybe_grow(struct kvg_tok_pcache *c)
{
    if (c->nentries < c->nbuckets) return;
    size_t nb = c->nbuckets * 2;
    struct pc_entry **b = calloc(nb, sizeof *b);
    if (!b) return;
    for (size_t i = 0; i < c->nbuckets; i++)
        for (struct pc_entry *e = c->buckets[i], *n; e; e = n) {
            n = e->hnext;
            e->hnext = b[e->key & (nb - 1)];
            b[e->key & (nb - 1)] = e;
        }
    free(c->buckets);
    c->buckets = b;
    c->nbuckets = nb;
}

/* Inserts a segment (copied) unless an entry for the cut is there already;
 * a segment larger than the whole cache is not kept. */
static void insert(struct kvg_tok_pcache *c, uint64_t key, size_t cut, const char *seg,
                   size_t seg_len, const uint32_t *ids, size_t n_ids)
{
    if (seg_len > UINT32_MAX || n_ids > UINT32_MAX) return;
    size_t ids_off = (seg_len + 3) & ~(size_t)3;
    size_t need = PC_OVERHEAD + seg_len + n_ids * sizeof *ids;
    if (need > c->max_bytes || find(c, key, cut)) return;
    struct pc_entry *e = malloc(sizeof *e + ids_off + n_ids * sizeof *ids);
    if (!e) return;
    e->key = key;
    e->cut = cut;
    e->seg_len = (uint32_t)seg_len;
    e->n_ids = (uint32_t)n_ids;
    e->ids = (uint32_t *)(void *)(e->seg + ids_off);
    memcpy(e->seg, seg, seg_len);
    memcpy(e->ids, ids, n_ids * sizeof *ids);
    while (c->lru_tail && c->bytes + need > c->max_bytes) evict_one(c);
    maybe_grow(c);
    struct pc_entry **b = &c->buckets[key & (c->nbuckets - 1)];
    e->hnext = *b;
    *b = e;
    lru_front(c, e);
    c->bytes += need;
    c->nentries++;
}

/* The chained key of the text up to cut, from the key up to the previous
 * cut (the offset is in the seed so equal segments at different places differ
 * even before the bytes are compared). */
static uint64_t chain_key(uint64_t prev, const char *seg, size_t len, size_t cut)
{
    return XXH3_64bits_withSeed(seg, len, prev ^ ((uint64_t)cut * 0x9E3779B97F4A7C15ull));
}

struct pc_call {
    struct kvg_tok_pcache *c;
    size_t reused; /* ids taken from the cache */
    int nowait;    /* an event loop's: the mutex is tried, never waited for */
};

/* 0 with the mutex held. A caller that must not wait (an event loop: the
 * holder may be a work thread at a lower priority, preempted) only tries
 * it (base/lock.h), and goes without the cache when it is taken: the ids
 * are the same. */
static int pc_lock(struct kvg_tok_pcache *c, int nowait)
{
    if (!nowait) return pthread_mutex_lock(&c->mu);
    return kvg_mutex_try_for(&c->mu, KVG_LOCK_TRY_NS);
}

static int cached_text(const struct kvg_tok *tok, struct kvg_tok_scratch *s, const char *text,
                       size_t len, void *ud)
{
    struct pc_call *call = ud;
    struct kvg_tok_pcache *c = call->c;
    struct kvg_tok_spans *raw = &s->spans[KVG_TOK_MAX_PRE];
    int rc = kvg_tok_added_split(tok, &tok->trie_raw, text, len, raw);
    if (rc) return rc;
    /* The cuts: ends of the added-token spans. Their keys and span indexes
     * go into a small array (a text has as many as it has added tokens). */
    size_t ncut = 0;
    for (size_t i = 0; i < raw->n; i++) ncut += raw->v[i].id >= 0;
    uint64_t *keys = ncut ? malloc(ncut * sizeof *keys) : NULL;
    size_t *span_end = ncut ? malloc(ncut * sizeof *span_end) : NULL;
    if (ncut && (!keys || !span_end)) {
        free(keys);
        free(span_end);
        return -ENOMEM;
    }
    uint64_t key = 0;
    size_t prev = 0, k = 0;
    for (size_t i = 0; i < raw->n; i++) {
        if (raw->v[i].id < 0) continue;
        size_t cut = raw->v[i].b;
        key = keys[k] = chain_key(key, text + prev, cut - prev, cut);
        span_end[k++] = i + 1;
        prev = cut;
    }
    /* The longest run of cached cuts from the start, verified byte for byte. */
    size_t hit = 0, first_span = 0, text_start = s->out->n;
    int locked = pc_lock(c, call->nowait) == 0;
    prev = 0;
    for (; locked && hit < ncut; hit++) {
        size_t cut = raw->v[span_end[hit] - 1].b;
        struct pc_entry *e = find(c, keys[hit], cut);
        if (!e || e->seg_len != cut - prev || memcmp(e->seg, text + prev, e->seg_len)) break;
        if ((rc = kvg_tok_ids_grow(s->out, e->n_ids))) break;
        memcpy(s->out->v + s->out->n, e->ids, e->n_ids * sizeof *e->ids);
        s->out->n += e->n_ids;
        lru_unlink(c, e);
        lru_front(c, e);
        prev = cut;
    }
    if (!locked) {
        atomic_fetch_add_explicit(&c->busy, 1, memory_order_relaxed);
    } else if (hit) {
        c->hits++;
        c->reused_tokens += s->out->n - text_start;
        first_span = span_end[hit - 1];
    } else {
        c->misses++;
    }
    if (locked) pthread_mutex_unlock(&c->mu);
    call->reused = s->out->n - text_start;
    /* The rest, piece by piece; each new cut's segment is kept. */
    size_t seg_ids = s->out->n, seg_start = prev, cut_ix = hit;
    for (size_t i = first_span; i < raw->n && !rc; i++) {
        rc = kvg_tok_encode_piece(tok, s, text, &raw->v[i]);
        if (rc || raw->v[i].id < 0) continue;
        size_t cut = raw->v[i].b;
        if (pc_lock(c, call->nowait) == 0) { /* a loop that finds it taken keeps no segment */
            insert(c, keys[cut_ix], cut, text + seg_start, cut - seg_start, s->out->v + seg_ids,
                   s->out->n - seg_ids);
            pthread_mutex_unlock(&c->mu);
        }
        cut_ix++;
        seg_start = cut;
        seg_ids = s->out->n;
    }
    free(keys);
    free(span_end);
    return rc;
}

int kvg_tok_encode_cached(const struct kvg_tok *tok, struct kvg_tok_pcache *c, const char *text,
                          size_t len, int add_special, uint32_t **ids, size_t *n, size_t *reused,
                          int nowait)
{
    if (reused) *reused = 0;
    if (!c || c->tok != tok || !c->max_bytes || tok->trie_raw.nodes <= 1)
        return kvg_tok_encode(tok, text, len, add_special, ids, n);
    struct pc_call call = {.c = c, .nowait = nowait};
    int rc = kvg_tok_encode_run(tok, text, len, add_special, ids, n, cached_text, &call);
    if (!rc && reused) *reused = call.reused;
    return rc;
}
