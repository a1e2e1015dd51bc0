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
 * (a memcpy per hit), so the tokenizer pool threads hold it briefly.
 *
 * Admission on second sight: copying every segment of a prompt that never
 * comes again (and evicting for it) cost unique prompts 4-5% of their speed.
 * A new segment is kept only when its cut's key was seen before, which a
 * Bloom filter of keys remembers (two generations: the older is dropped
 * when the current one has taken its capacity, so it forgets). A shared
 * system prompt is kept on its second request. A conversation's next turn
 * resends the previous one and goes on from where it ended: a text whose
 * known start (cached, or in the filter) ends at the last cut of an earlier
 * text (marked in the filter and on the entry) is kept at once, so the turn
 * after it reuses it. Lookups are as before; the filter is under the mutex.
 *
 * Block hashes (kvg_tok_encode_blocks): an entry also keeps, per tag (the
 * caller's hash parameters, block size, ids before the text), the hashes of
 * the blocks that end in its segment's ids: an attachment. A block's hash
 * depends on every id before it, so an attachment is only as good as the
 * chain it was computed on: each one has a serial and names the serial of
 * the attachment on the previous cut's entry that it followed. A lookup
 * takes attachments from the start while each names the one taken before
 * it, on entries whose bytes it verified: by induction the ids before each
 * are this text's, so the hashes are the ones the caller's function gives.
 * Entries get serials too (an evicted entry's successor under the same key
 * is another entry), so a chain stored after the lookup's mutex was let go
 * only goes on through the entries it verified. */
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
    int ends_text;             /* a text's last cut: the next turn may go on here */
    uint64_t serial;           /* names this entry (never reused) */
    struct pc_att *att;        /* block hashes per tag, newest first */
    size_t att_bytes;
    unsigned natt;
    uint32_t *ids; /* points into the same allocation */
    char seg[];    /* the segment's bytes, then the ids (aligned) */
};

/* The hashes of blocks [first, first + n) of a segment's chain under one
 * tag; prev_serial is the previous cut's attachment it followed (0 at the
 * first cut). */
struct pc_att {
    struct pc_att *next;
    uint64_t tag[2];
    uint32_t block_size;
    size_t text_start; /* ids before the text: blocks align to the whole id array */
    uint64_t serial, prev_serial;
    size_t n;
    uint64_t h[];
};

/* Attachments kept per entry: one per tag in use (an adapter, a salt); the
 * oldest goes beyond this. */
#define PC_MAX_ATT 4

struct kvg_tok_pcache {
    const struct kvg_tok *tok;
    pthread_mutex_t mu;
    struct pc_entry **buckets;
    size_t nbuckets, nentries;
    size_t bytes, max_bytes;
    struct pc_entry *lru_head, *lru_tail;
    uint64_t hits, misses, reused_tokens, evictions, not_admitted, reused_blocks;
    uint64_t serial;       /* the last serial given to an entry or attachment */
    uint64_t key_mask;     /* all ones; tests narrow it to make keys collide */
    _Atomic uint64_t busy; /* nowait encodes that found the mutex taken */
    /* The seen-once filter: two generations of nwords 64-bit words each. */
    uint64_t *gen[2]; /* gen[cur] takes insertions, both answer */
    size_t nwords, gen_added, gen_cap;
    int cur;
};

#define PC_OVERHEAD (sizeof(struct pc_entry) + 2 * sizeof(void *))

/* The filter's bytes for a cache of max_bytes: 1/256 of it, so its own
 * memory stays small beside the cache, within [1 KiB, 2 MiB]. */
static size_t filter_bytes(size_t max_bytes)
{
    size_t b = max_bytes / 256;
    return b < 1024 ? 1024 : b > (2u << 20) ? (2u << 20) : b;
}

/* A key's word and its 4 bits (the key is an XXH3 hash: its bits are
 * uniform). One word per key: one cache line touched per test. */
static uint64_t *filter_word(const struct kvg_tok_pcache *c, int g, uint64_t key, uint64_t *mask)
{
    *mask = (1ull << (key & 63)) | (1ull << ((key >> 6) & 63)) | (1ull << ((key >> 12) & 63)) |
            (1ull << ((key >> 18) & 63));
    return &c->gen[g][(size_t)(((key >> 32) * (uint64_t)c->nwords) >> 32)];
}

static int filter_has(const struct kvg_tok_pcache *c, uint64_t key)
{
    uint64_t m;
    for (int g = 0; g < 2; g++)
        if ((*filter_word(c, g, key, &m) & m) == m) return 1;
    return 0;
}

/* Adds key to the current generation; one that has taken its capacity (8
 * bits a key: a few percent false positives) becomes the older, and the
 * older one is emptied to be the current. */
static void filter_add(struct kvg_tok_pcache *c, uint64_t key)
{
    if (c->gen_added >= c->gen_cap) {
        c->cur ^= 1;
        memset(c->gen[c->cur], 0, c->nwords * sizeof(uint64_t));
        c->gen_added = 0;
    }
    uint64_t m, *w = filter_word(c, c->cur, key, &m);
    c->gen_added += (*w & m) != m;
    *w |= m;
}

/* The filter's key for "a text ended at the cut of key" (apart from the
 * cut's own key). */
static uint64_t end_key(uint64_t key)
{
    key ^= 0xD6E8FEB86659FD93ull;
    key *= 0x9E3779B97F4A7C15ull;
    return key ^ (key >> 29);
}

int kvg_tok_pcache_new(const struct kvg_tok *tok, size_t max_bytes, struct kvg_tok_pcache **out)
{
    *out = NULL;
    struct kvg_tok_pcache *c = calloc(1, sizeof *c);
    if (!c) return -ENOMEM;
    c->tok = tok;
    c->max_bytes = max_bytes;
    c->key_mask = ~0ull;
    c->nbuckets = 1024;
    c->nwords = filter_bytes(max_bytes) / 2 / sizeof(uint64_t);
    c->gen_cap = c->nwords * 64 / 8;
    c->buckets = calloc(c->nbuckets, sizeof *c->buckets);
    c->gen[0] = calloc(c->nwords, sizeof(uint64_t));
    c->gen[1] = calloc(c->nwords, sizeof(uint64_t));
    int rc = c->buckets && c->gen[0] && c->gen[1] ? pthread_mutex_init(&c->mu, NULL) : ENOMEM;
    if (rc) {
        free(c->gen[0]);
        free(c->gen[1]);
        free(c->buckets);
        free(c);
        return -rc;
    }
    *out = c;
    return 0;
}

static void entry_free(struct pc_entry *e)
{
    for (struct pc_att *a = e->att, *n; a; a = n) {
        n = a->next;
        free(a);
    }
    free(e);
}

void kvg_tok_pcache_free(struct kvg_tok_pcache *c)
{
    if (!c) return;
    for (struct pc_entry *e = c->lru_head, *n; e; e = n) {
        n = e->lru_next;
        entry_free(e);
    }
    pthread_mutex_destroy(&c->mu);
    free(c->gen[0]);
    free(c->gen[1]);
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
    st->not_admitted = c->not_admitted;
    st->reused_blocks = c->reused_blocks;
    st->filter_bytes = 2 * c->nwords * sizeof(uint64_t);
    st->busy = atomic_load_explicit(&c->busy, memory_order_relaxed);
    st->entries = c->nentries;
    st->bytes = c->bytes;
    st->max_bytes = c->max_bytes;
    pthread_mutex_unlock(&c->mu);
}

static size_t entry_bytes(const struct pc_entry *e)
{
    return PC_OVERHEAD + e->seg_len + e->n_ids * sizeof(uint32_t) + e->att_bytes;
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
    entry_free(e);
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

/* Inserts a segment (copied) unless an entry for the cut is there already
 * (then returns that); a segment larger than the whole cache is not kept
 * (NULL). */
static struct pc_entry *insert(struct kvg_tok_pcache *c, uint64_t key, size_t cut, const char *seg,
                               size_t seg_len, const uint32_t *ids, size_t n_ids)
{
    if (seg_len > UINT32_MAX || n_ids > UINT32_MAX) return NULL;
    size_t ids_off = (seg_len + 3) & ~(size_t)3;
    size_t need = PC_OVERHEAD + seg_len + n_ids * sizeof *ids;
    if (need > c->max_bytes) return NULL;
    struct pc_entry *e = find(c, key, cut);
    if (e) return e;
    if (!(e = malloc(sizeof *e + ids_off + n_ids * sizeof *ids))) return NULL;
    e->key = key;
    e->ends_text = 0;
    e->serial = ++c->serial;
    e->att = NULL;
    e->att_bytes = 0;
    e->natt = 0;
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
    return e;
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
    size_t reused;            /* ids taken from the cache */
    int nowait;               /* an event loop's: the mutex is tried, never waited for */
    struct kvg_tok_blocks *b; /* NULL: ids only */
    uint64_t *h;              /* the hashes so far: blocks [0, nh) */
    size_t nh, cap, hreused;  /* hreused: of them from the cache */
};

/* One cut of a text: its chained key, the span after it, the ids (of the
 * whole id array) up to it, the entry a lookup verified there, and whether
 * its segment is to be kept. */
struct pc_cut {
    uint64_t key;
    size_t span_end;
    size_t id_end;
    uint64_t serial;
    int admit;
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

static int hashes_room(struct pc_call *call, size_t upto)
{
    if (upto <= call->cap) return 0;
    size_t cap = call->cap * 2 > upto ? call->cap * 2 : upto;
    uint64_t *h = realloc(call->h, cap * sizeof *h);
    if (!h) return -ENOMEM;
    call->h = h;
    call->cap = cap;
    return 0;
}

/* Hashes blocks [nh, upto) of ids with the caller's function. */
static int hashes_to(struct pc_call *call, const uint32_t *ids, size_t upto)
{
    if (upto <= call->nh) return 0;
    int rc = hashes_room(call, upto);
    if (rc) return rc;
    call->b->hash(call->b->ud, ids, call->b->block_size, call->nh, upto, call->h);
    call->nh = upto;
    return 0;
}

/* The link holding e's attachment for this call's tag, or the list's end. */
static struct pc_att **att_slot(struct pc_entry *e, const struct kvg_tok_blocks *b,
                                size_t text_start)
{
    struct pc_att **pp = &e->att;
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->tag[0] == b->tag[0] && (*pp)->tag[1] == b->tag[1] &&
            (*pp)->block_size == b->block_size && (*pp)->text_start == text_start)
            break;
    return pp;
}

/* Takes the hashes of the blocks ending in ids (from_id, to_id] from e's
 * attachment when it follows the attachment *serial; 0 when it does not
 * (the chain of reuse ends). Under the mutex. */
static int reuse_hashes(struct pc_call *call, struct pc_entry *e, size_t text_start, size_t from_id,
                        size_t to_id, uint64_t *serial)
{
    struct kvg_tok_blocks *b = call->b;
    size_t from = from_id / b->block_size, to = to_id / b->block_size;
    const struct pc_att *a = *att_slot(e, b, text_start);
    if (!a || a->prev_serial != *serial || a->n != to - from || from != call->nh ||
        hashes_room(call, to))
        return 0;
    if (a->n) memcpy(call->h + from, a->h, a->n * sizeof *a->h);
    call->nh = to;
    call->hreused += a->n;
    call->c->reused_blocks += a->n;
    *serial = a->serial;
    return 1;
}

static void att_drop(struct kvg_tok_pcache *c, struct pc_entry *e, struct pc_att **pp)
{
    struct pc_att *a = *pp;
    size_t sz = sizeof *a + a->n * sizeof *a->h;
    *pp = a->next;
    e->att_bytes -= sz;
    c->bytes -= sz;
    e->natt--;
    free(a);
}

/* Gives e the attachment for blocks ending in ids (from_id, to_id] that
 * follows *serial (keeps the one it has when it does already); *serial
 * becomes its serial. 0 when it cannot be kept (the chain ends here). Under
 * the mutex. */
static int attach(struct kvg_tok_pcache *c, struct pc_call *call, struct pc_entry *e,
                  size_t text_start, size_t from_id, size_t to_id, uint64_t *serial)
{
    struct kvg_tok_blocks *b = call->b;
    size_t from = from_id / b->block_size, to = to_id / b->block_size;
    struct pc_att **pp = att_slot(e, b, text_start);
    if (*pp && (*pp)->prev_serial == *serial && (*pp)->n == to - from) {
        *serial = (*pp)->serial;
        return 1;
    }
    size_t sz = sizeof(struct pc_att) + (to - from) * sizeof(uint64_t);
    if (to > call->nh || entry_bytes(e) + sz > c->max_bytes) return 0;
    struct pc_att *a = malloc(sz);
    if (!a) return 0;
    if (*pp)
        att_drop(c, e, pp);
    else if (e->natt == PC_MAX_ATT) {
        for (pp = &e->att; (*pp)->next; pp = &(*pp)->next) continue;
        att_drop(c, e, pp);
    }
    a->tag[0] = b->tag[0];
    a->tag[1] = b->tag[1];
    a->block_size = b->block_size;
    a->text_start = text_start;
    a->serial = ++c->serial;
    a->prev_serial = *serial;
    a->n = to - from;
    if (a->n) memcpy(a->h, call->h + from, a->n * sizeof *a->h);
    a->next = e->att;
    e->att = a;
    e->natt++;
    e->att_bytes += sz;
    c->bytes += sz;
    lru_unlink(c, e);
    lru_front(c, e);
    while (c->bytes > c->max_bytes && c->lru_tail != e) evict_one(c);
    *serial = a->serial;
    return 1;
}

/* After the text is encoded: keeps the admitted segments and gives the
 * chain of entries from the start the hashes they lack. One mutex hold; a
 * loop that finds it taken keeps nothing. */
static void store(struct pc_call *call, const char *text, const struct kvg_tok_spans *raw,
                  const struct pc_cut *cuts, size_t ncut, size_t hit, const uint32_t *ids,
                  size_t text_start)
{
    struct kvg_tok_pcache *c = call->c;
    if (pc_lock(c, call->nowait)) return;
    uint64_t serial = 0;
    int chain = call->b != NULL;
    size_t prev = 0, prev_id = text_start;
    for (size_t k = 0; k < ncut; k++) {
        size_t cut = raw->v[cuts[k].span_end - 1].b;
        struct pc_entry *e = NULL;
        if (k < hit) {
            e = find(c, cuts[k].key, cut);
            if (e && e->serial != cuts[k].serial) e = NULL; /* evicted since: another entry */
        } else if (cuts[k].admit) {
            e = insert(c, cuts[k].key, cut, text + prev, cut - prev, ids + prev_id,
                       cuts[k].id_end - prev_id);
            if (e && k == ncut - 1) e->ends_text = 1;
            /* an entry there already holds these bytes, or a colliding key's */
            if (e && (e->seg_len != cut - prev || memcmp(e->seg, text + prev, e->seg_len)))
                e = NULL;
        }
        if (chain)
            chain = e && attach(c, call, e, text_start, k ? cuts[k - 1].id_end : 0, cuts[k].id_end,
                                &serial);
        prev = cut;
        prev_id = cuts[k].id_end;
    }
    pthread_mutex_unlock(&c->mu);
}

static int cached_text(const struct kvg_tok *tok, struct kvg_tok_scratch *s, const char *text,
                       size_t len, void *ud)
{
    struct pc_call *call = ud;
    struct kvg_tok_pcache *c = call->c;
    struct kvg_tok_spans *raw = &s->spans[KVG_TOK_MAX_PRE];
    int rc = kvg__tok_added_split(tok, &tok->trie_raw, text, len, raw);
    if (rc) return rc;
    /* The cuts: ends of the added-token spans (a text has as many as it has
     * added tokens). */
    size_t ncut = 0;
    for (size_t i = 0; i < raw->n; i++) ncut += raw->v[i].id >= 0;
    struct pc_cut *cuts = ncut ? calloc(ncut, sizeof *cuts) : NULL;
    if (ncut && !cuts) return -ENOMEM;
    uint64_t key = 0;
    size_t prev = 0, k = 0;
    for (size_t i = 0; i < raw->n; i++) {
        if (raw->v[i].id < 0) continue;
        size_t cut = raw->v[i].b;
        key = cuts[k].key = chain_key(key, text + prev, cut - prev, cut) & c->key_mask;
        cuts[k++].span_end = i + 1;
        prev = cut;
    }
    /* The longest run of cached cuts from the start, verified byte for byte,
     * and the hashes of their blocks while their attachments chain. */
    size_t hit = 0, first_span = 0, text_start = s->out->n;
    struct pc_entry *last = NULL;
    int locked = pc_lock(c, call->nowait) == 0, chain = call->b != NULL;
    uint64_t serial = 0;
    prev = 0;
    for (; locked && hit < ncut; hit++) {
        size_t cut = raw->v[cuts[hit].span_end - 1].b;
        struct pc_entry *e = find(c, cuts[hit].key, cut);
        if (!e || e->seg_len != cut - prev || memcmp(e->seg, text + prev, e->seg_len)) break;
        if ((rc = kvg__tok_ids_grow(s->out, e->n_ids))) break;
        memcpy(s->out->v + s->out->n, e->ids, e->n_ids * sizeof *e->ids);
        s->out->n += e->n_ids;
        cuts[hit].id_end = s->out->n;
        cuts[hit].serial = e->serial;
        if (chain)
            chain = reuse_hashes(call, e, text_start, hit ? cuts[hit - 1].id_end : 0, s->out->n,
                                 &serial);
        lru_unlink(c, e);
        lru_front(c, e);
        last = e;
        prev = cut;
    }
    int todo = call->b && call->hreused < (hit ? cuts[hit - 1].id_end : 0) / call->b->block_size;
    if (!locked) {
        atomic_fetch_add_explicit(&c->busy, 1, memory_order_relaxed);
    } else {
        if (hit) {
            c->hits++;
            c->reused_tokens += s->out->n - text_start;
            first_span = cuts[hit - 1].span_end;
        } else {
            c->misses++;
        }
        /* Which new segments to keep: those seen before, or all when the
         * known start ends where an earlier text ended (a conversation's
         * next turn). Two known cuts at least: one would be the lone
         * <|im_start|> every chat prompt starts with. */
        size_t known = hit;
        while (known < ncut && filter_has(c, cuts[known].key)) known++;
        int goes_on = known >= 2 && ((known == hit && last->ends_text) ||
                                     filter_has(c, end_key(cuts[known - 1].key)));
        for (size_t j = hit; j < ncut; j++) {
            cuts[j].admit = goes_on || j < known;
            todo |= cuts[j].admit;
            if (cuts[j].admit) continue;
            filter_add(c, cuts[j].key);
            c->not_admitted++;
        }
        if (ncut) filter_add(c, end_key(cuts[ncut - 1].key));
        if (hit && hit == ncut) last->ends_text = 1;
        pthread_mutex_unlock(&c->mu);
    }
    call->reused = s->out->n - text_start;
    /* The rest, piece by piece. */
    size_t cut_ix = hit;
    for (size_t i = first_span; i < raw->n && !rc; i++) {
        rc = kvg__tok_encode_piece(tok, s, text, &raw->v[i]);
        if (!rc && raw->v[i].id >= 0) cuts[cut_ix++].id_end = s->out->n;
    }
    /* The hashes of the text's blocks, then what is to be kept. */
    if (!rc && call->b) rc = hashes_to(call, s->out->v, s->out->n / call->b->block_size);
    if (!rc && locked && todo) store(call, text, raw, cuts, ncut, hit, s->out->v, text_start);
    free(cuts);
    return rc;
}

void kvg__tok_pcache_test_key_mask(struct kvg_tok_pcache *c, uint64_t mask)
{
    c->key_mask = mask;
}

int kvg_tok_encode_blocks(const struct kvg_tok *tok, struct kvg_tok_pcache *c, const char *text,
                          size_t len, int add_special, uint32_t **ids, size_t *n, size_t *reused,
                          int nowait, struct kvg_tok_blocks *b)
{
    if (reused) *reused = 0;
    if (b) {
        b->hashes = NULL;
        b->nhashes = b->reused = 0;
        if (!b->block_size || !b->hash) return -EINVAL;
    }
    struct pc_call call = {.c = c, .nowait = nowait, .b = b};
    int rc;
    if (!c || c->tok != tok || !c->max_bytes || tok->trie_raw.nodes <= 1) {
        rc = kvg_tok_encode(tok, text, len, add_special, ids, n);
    } else {
        rc = kvg__tok_encode_run(tok, text, len, add_special, ids, n, cached_text, &call);
        if (!rc && reused) *reused = call.reused;
    }
    /* The blocks the post-processor's ids end (or all, uncached). */
    if (!rc && b && (rc = hashes_to(&call, *ids, *n / b->block_size))) {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    if (rc) {
        free(call.h);
        return rc;
    }
    if (b) {
        b->hashes = call.h;
        b->nhashes = call.nh;
        b->reused = call.hreused;
    }
    return 0;
}

int kvg_tok_encode_cached(const struct kvg_tok *tok, struct kvg_tok_pcache *c, const char *text,
                          size_t len, int add_special, uint32_t **ids, size_t *n, size_t *reused,
                          int nowait)
{
    return kvg_tok_encode_blocks(tok, c, text, len, add_special, ids, n, reused, nowait, NULL);
}
