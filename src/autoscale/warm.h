/* Cache-aware replica choices: which prefixes to replay to a new replica
 * (prewarm) and which replica to remove (scale-down), from kvgate's own
 * routing history.
 *
 * The history is a small table of prompt prefixes, each with a heat (its
 * request count, decayed with a half-life) and the replicas it was routed to
 * (a bitmask of router worker slots 0..63: those are the replicas holding it
 * in their prefix cache). Each entry keeps what kvgate needs to build a
 * prefill of that prefix itself (kvg_autoscale_hot_prompt): the model name
 * and the prompt as kvgate rendered it, its token ids when it tokenized it,
 * else its text (capped). Never a client's body: a prewarm sends nothing a
 * client chose but the model and the prompt.
 *
 * The choices are pure functions over plain arrays; the table adds a mutex
 * (routing threads record, the autoscaler's thread reads) and no clock: the
 * caller passes `now` in seconds. */
#ifndef KVG_AUTOSCALE_WARM_H
#define KVG_AUTOSCALE_WARM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define KVG_AUTOSCALE_HOT_MAX 256
#define KVG_AUTOSCALE_HOT_TEXT 8192 /* bytes of prompt text */
#define KVG_AUTOSCALE_HOT_IDS 2048  /* token ids */

/* A hot prefix's prompt, what a prewarm replays: len 0 none. */
struct kvg_autoscale_hot_prompt {
    char model[256]; /* NUL-terminated */
    int is_ids;      /* ids[len], else text[len] */
    union {
        char text[KVG_AUTOSCALE_HOT_TEXT];
        uint32_t ids[KVG_AUTOSCALE_HOT_IDS];
    } u;
    size_t len;
};

struct kvg_autoscale_hot_entry {
    uint64_t key;     /* hash of the prompt's prefix, 0 free */
    double heat;      /* decayed request count as of `at` */
    double at;        /* last update, seconds */
    uint64_t holders; /* worker slots it was routed to (bit i: slot i) */
    struct kvg_autoscale_hot_prompt p;
};

struct kvg_autoscale_hot {
    pthread_mutex_t mu;
    double half_life_s; /* 120 */
    struct kvg_autoscale_hot_entry e[KVG_AUTOSCALE_HOT_MAX];
};

void kvg_autoscale_hot_init(struct kvg_autoscale_hot *h, double half_life_s);
void kvg_autoscale_hot_destroy(struct kvg_autoscale_hot *h);
/* A request of prefix `key` was routed to worker `slot` at now; p (its
 * prompt, copied; p->len 0 or NULL: none) replaces the entry's when given.
 * A full table evicts its coldest entry. */
void kvg_autoscale_hot_record(struct kvg_autoscale_hot *h, uint64_t key, int slot, double now,
                              const struct kvg_autoscale_hot_prompt *p);
/* Forgets a worker slot (its replica left: its cache is gone). */
void kvg_autoscale_hot_forget(struct kvg_autoscale_hot *h, int slot);
/* Copies the prompts of the k hottest entries that have one at now
 * (hottest first), of model's requests only (NULL: any model's), into
 * out[k]; returns how many. */
size_t kvg_autoscale_hot_top(struct kvg_autoscale_hot *h, double now, const char *model, size_t k,
                             struct kvg_autoscale_hot_prompt *out);
/* The scale-down choice over the table at now (see kvg_autoscale_pick_victim). */
int kvg_autoscale_hot_victim(struct kvg_autoscale_hot *h, double now, const int *slots,
                             const uint32_t *in_flight, size_t ncand);

/* Heat decayed from `at` to `now` with the half-life. */
double kvg_autoscale_heat_at(double heat, double at, double now, double half_life_s);
/* Indices of the k largest heats, largest first (ties: lower index first);
 * returns min(k, n). Pure. */
size_t kvg_autoscale_pick_hottest(const double *heat, size_t n, size_t k, size_t *out);
/* Scale-down: the candidate (slots[ncand]) whose cached prefixes are least
 * unique and least hot. A candidate's value is the sum over the prefixes
 * it holds of heat / holders: a prefix only it holds counts whole (removing
 * it loses that cache), one every replica holds counts little. The least
 * valuable is chosen; ties go to the fewest requests in flight (in_flight
 * may be NULL), then the last candidate (the newest, by the caller's
 * order). Returns its index in slots, -1 when ncand is 0. Pure. */
int kvg_autoscale_pick_victim(const double *heat, const uint64_t *holders, size_t n,
                              const int *slots, const uint32_t *in_flight, size_t ncand);

#endif
