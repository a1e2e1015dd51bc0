/* Normalises an engine's /metrics body into struct kvg_metrics_load; the
 * aggregation rules are documented in load.h.
 *
 * One pass over the samples: each sample whose name is in the rule table
 * below is folded into an accumulator slot keyed by (rule, label group),
 * where the group is the sample's labels minus the replica labels. Then,
 * per field, the newest metric name that appeared is picked and its groups
 * are combined. A bad value (NaN, negative, a usage above 1, a config label
 * that is not a number) poisons its slot: the field becomes unknown rather
 * than being computed from the engines that happened to look fine. */
#include <math.h>
#include <string.h>

#include "base/err.h"
#include "base/hash.h"
#include "metrics/load.h"
#include "metrics/parse.h"

enum field {
    F_WAITING,
    F_RUNNING,
    F_KV,
    F_QUERIES,
    F_HITS,
    F_HIT_RATE,
    F_CAPACITY,
    F_CONFIG, /* an *_info gauge whose labels carry block size and count */
    NFIELDS,
};

/* Slots: a config rule feeds two (block size, block count); others one. */
enum { SUB_BLOCK = 0, SUB_NBLOCKS = 1 };

struct rule {
    const char *name;
    enum kvg_metrics_flavor flavor;
    enum field field;
    int variant; /* 0 = current name; higher = older names, used only if no newer one appears */
};

#define VLLM KVG_METRICS_FLAVOR_VLLM
#define SGL KVG_METRICS_FLAVOR_SGLANG
#define LCPP KVG_METRICS_FLAVOR_LLAMACPP

static const struct rule rules[] = {
    {"vllm:num_requests_waiting", VLLM, F_WAITING, 0},
    {"vllm:num_requests_running", VLLM, F_RUNNING, 0},
    {"vllm:kv_cache_usage_perc", VLLM, F_KV, 0},
    {"vllm:gpu_cache_usage_perc", VLLM, F_KV, 1},
    {"vllm:prefix_cache_queries_total", VLLM, F_QUERIES, 0},
    {"vllm:prefix_cache_queries", VLLM, F_QUERIES, 1},
    {"vllm:gpu_prefix_cache_queries_total", VLLM, F_QUERIES, 2},
    {"vllm:gpu_prefix_cache_queries", VLLM, F_QUERIES, 3},
    {"vllm:prefix_cache_hits_total", VLLM, F_HITS, 0},
    {"vllm:prefix_cache_hits", VLLM, F_HITS, 1},
    {"vllm:gpu_prefix_cache_hits_total", VLLM, F_HITS, 2},
    {"vllm:gpu_prefix_cache_hits", VLLM, F_HITS, 3},
    {"vllm:cache_config_info", VLLM, F_CONFIG, 0},
    {"sglang:num_queue_reqs", SGL, F_WAITING, 0},
    {"sglang:num_running_reqs", SGL, F_RUNNING, 0},
    {"sglang:token_usage", SGL, F_KV, 0},
    {"sglang:cache_hit_rate", SGL, F_HIT_RATE, 0},
    {"sglang:max_total_num_tokens", SGL, F_CAPACITY, 0},
    {"sglang:cache_config_info", SGL, F_CONFIG, 0},
    {"llamacpp:requests_deferred", LCPP, F_WAITING, 0},
    {"llamacpp:requests_processing", LCPP, F_RUNNING, 0},
    {"llamacpp:kv_cache_usage_ratio", LCPP, F_KV, 0},
};
#define NRULES (sizeof rules / sizeof rules[0])
#define NSLOTS (NRULES * 2)

/* Labels naming ranks that mirror one scheduler's state rather than
 * separate engines; see load.h. */
static const char *const replica_labels[] = {"tp_rank", "pp_rank", "moe_ep_rank", "attn_tp_rank"};

/* Groups per endpoint we are willing to track for one metric name; more
 * marks that slot unknown (no real endpoint runs 64 engines). The cap is per
 * slot so one runaway metric cannot starve the others of table space. The
 * table lives on the stack of whichever thread parses (about 18 KB). */
#define MAX_GROUPS 64
#define MAX_ENTRIES 768

struct entry {
    unsigned slot;
    uint64_t key;
    double v;
};

struct acc {
    struct entry e[MAX_ENTRIES];
    size_t n;
    unsigned char seen[NSLOTS];
    unsigned char poisoned[NSLOTS];
    unsigned char groups[NSLOTS];
};

static uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

static int str_is(struct kvg_str s, const char *lit)
{
    size_t n = strlen(lit);
    return s.len == n && !memcmp(s.p, lit, n);
}

/* Order-independent key of a sample's labels without replica labels: the
 * XOR of one strong hash per name=value pair (the parser rejects duplicate
 * names, so no pair cancels itself). */
static uint64_t group_key(const struct kvg_metrics_sample *s)
{
    uint64_t key = 0;
    for (size_t i = 0; i < s->nlabels; i++) {
        int replica = 0;
        for (size_t r = 0; r < sizeof replica_labels / sizeof *replica_labels; r++)
            replica |= str_is(s->labels[i].name, replica_labels[r]);
        if (replica) continue;
        uint64_t h =
            kvg_hash_fnv1a64(KVG_HASH_FNV1A64_SEED, s->labels[i].name.p, s->labels[i].name.len);
        h = kvg_hash_fnv1a64(h, "\xff", 1); /* 0xff: never in a name, splits name from value */
        h = kvg_hash_fnv1a64(h, s->labels[i].value.p, s->labels[i].value.len);
        key ^= mix(h);
    }
    return key;
}

static int has_prefix(struct kvg_str s, const char *prefix)
{
    size_t n = strlen(prefix);
    return s.len > n && !memcmp(s.p, prefix, n);
}

static int find_rule(struct kvg_str name)
{
    /* Most of a vLLM body is histogram buckets of metrics we skip; the
     * prefix test avoids comparing each against every rule. */
    if (!has_prefix(name, "vllm:") && !has_prefix(name, "sglang:") &&
        !has_prefix(name, "llamacpp:"))
        return -1;
    for (size_t i = 0; i < NRULES; i++)
        if (str_is(name, rules[i].name)) return (int)i;
    return -1;
}

/* Folds v into the slot's entry for this group: replicas of one group
 * collapse by max. */
static void fold(struct acc *a, unsigned slot, uint64_t key, double v)
{
    a->seen[slot] = 1;
    for (size_t i = 0; i < a->n; i++) {
        if (a->e[i].slot == slot && a->e[i].key == key) {
            if (v > a->e[i].v) a->e[i].v = v;
            return;
        }
    }
    if (a->n == MAX_ENTRIES || a->groups[slot] == MAX_GROUPS) {
        a->poisoned[slot] = 1;
        return;
    }
    a->groups[slot]++;
    a->e[a->n++] = (struct entry){slot, key, v};
}

/* A config label: a positive integer, or absent / "None" (vLLM prints
 * Python's None for unset values) meaning not reported. Returns 1 with *out,
 * 0 for not reported, -1 for garbage. */
static int config_label(const struct kvg_metrics_sample *s, const char *name, double *out)
{
    const struct kvg_str *v = kvg_metrics_sample_label(s, name);
    if (!v || str_is(*v, "None")) return 0;
    if (v->len == 0 || v->len > 15) return -1; /* 15 digits: exact in a double */
    double x = 0;
    for (size_t i = 0; i < v->len; i++) {
        if (v->p[i] < '0' || v->p[i] > '9') return -1;
        x = x * 10 + (v->p[i] - '0');
    }
    if (x <= 0) return -1;
    *out = x;
    return 1;
}

static void take_config(struct acc *a, int r, const struct kvg_metrics_sample *s, uint64_t key)
{
    int vllm = rules[r].flavor == KVG_METRICS_FLAVOR_VLLM;
    const char *names[2] = {vllm ? "block_size" : "page_size",
                            vllm ? "num_gpu_blocks" : "num_pages"};
    for (unsigned sub = 0; sub < 2; sub++) {
        double x;
        int rc = config_label(s, names[sub], &x);
        unsigned slot = (unsigned)r * 2 + sub;
        if (rc < 0)
            a->poisoned[slot] = 1;
        else if (rc > 0)
            fold(a, slot, key, x);
    }
}

static void take(struct acc *a, int r, const struct kvg_metrics_sample *s)
{
    uint64_t key = group_key(s);
    if (rules[r].field == F_CONFIG) {
        take_config(a, r, s, key);
        return;
    }
    unsigned slot = (unsigned)r * 2;
    double v = s->value;
    int ok = isfinite(v) && v >= 0;
    if (ok && (rules[r].field == F_KV || rules[r].field == F_HIT_RATE)) {
        /* A ratio; allow float noise just above 1, reject a percentage. */
        if (v > 1 + 1e-6) ok = 0;
        if (v > 1) v = 1;
    }
    if (!ok)
        a->poisoned[slot] = 1;
    else
        fold(a, slot, key, v);
}

enum combine { SUM, MAX, MEAN, AGREE };

/* Combines the groups of one slot; returns 0 if they do not agree (AGREE). */
static int combine(const struct acc *a, unsigned slot, enum combine how, double *out,
                   unsigned *ngroups)
{
    double r = 0;
    unsigned n = 0;
    for (size_t i = 0; i < a->n; i++) {
        if (a->e[i].slot != slot) continue;
        double v = a->e[i].v;
        if (how == AGREE && n && v != r) return 0;
        if (how == MAX)
            r = n && r > v ? r : v;
        else if (how == AGREE)
            r = v;
        else
            r += v;
        n++;
    }
    if (how == MEAN && n) r /= n;
    *out = r;
    if (ngroups) *ngroups = n;
    return 1;
}

/* The slot of the newest name for (flavor, field, sub) that appeared, or -1. */
static int pick_slot(const struct acc *a, enum kvg_metrics_flavor fl, enum field f, unsigned sub)
{
    int best = -1, best_variant = 0;
    for (size_t r = 0; r < NRULES; r++) {
        unsigned slot = (unsigned)r * 2 + sub;
        if (rules[r].flavor != fl || rules[r].field != f) continue;
        if (!a->seen[slot] && !a->poisoned[slot]) continue;
        if (best < 0 || rules[r].variant < best_variant)
            best = (int)slot, best_variant = rules[r].variant;
    }
    return best;
}

/* Resolves one field: 1 with *out, 0 unknown. */
static int resolve(const struct acc *a, enum kvg_metrics_flavor fl, enum field f, unsigned sub,
                   enum combine how, double *out, unsigned *ngroups)
{
    int slot = pick_slot(a, fl, f, sub);
    if (slot < 0 || a->poisoned[slot]) return 0;
    return combine(a, (unsigned)slot, how, out, ngroups);
}

static enum kvg_metrics_flavor pick_flavor(const struct acc *a)
{
    static const enum kvg_metrics_flavor order[] = {VLLM, SGL, LCPP};
    enum kvg_metrics_flavor best = KVG_METRICS_FLAVOR_UNKNOWN;
    unsigned best_fields = 0;
    for (size_t k = 0; k < 3; k++) {
        unsigned fields = 0;
        for (int f = 0; f < NFIELDS; f++)
            fields += pick_slot(a, order[k], (enum field)f, 0) >= 0 ||
                      pick_slot(a, order[k], (enum field)f, 1) >= 0;
        if (fields > best_fields) best = order[k], best_fields = fields;
    }
    return best;
}

void kvg_metrics_load_init(struct kvg_metrics_load *l)
{
    memset(l, 0, sizeof *l);
    l->flavor = KVG_METRICS_FLAVOR_UNKNOWN;
    l->waiting = l->running = l->kv_usage = NAN;
    l->prefix_queries = l->prefix_hits = l->cache_hit_rate = NAN;
}

static void finish(const struct acc *a, struct kvg_metrics_load *l)
{
    enum kvg_metrics_flavor fl = pick_flavor(a);
    l->flavor = fl;
    if (fl == KVG_METRICS_FLAVOR_UNKNOWN) return;
    double v;
    unsigned groups = 0;
    if (resolve(a, fl, F_WAITING, 0, SUM, &v, &groups))
        l->waiting = v, l->known |= KVG_METRICS_HAS_WAITING, l->engines = groups;
    if (resolve(a, fl, F_RUNNING, 0, SUM, &v, &groups)) {
        l->running = v, l->known |= KVG_METRICS_HAS_RUNNING;
        if (groups > l->engines) l->engines = groups;
    }
    if (resolve(a, fl, F_KV, 0, MAX, &v, NULL))
        l->kv_usage = v, l->known |= KVG_METRICS_HAS_KV_USAGE;
    if (resolve(a, fl, F_QUERIES, 0, SUM, &v, NULL))
        l->prefix_queries = v, l->known |= KVG_METRICS_HAS_PREFIX_QUERIES;
    if (resolve(a, fl, F_HITS, 0, SUM, &v, NULL))
        l->prefix_hits = v, l->known |= KVG_METRICS_HAS_PREFIX_HITS;
    if (resolve(a, fl, F_HIT_RATE, 0, MEAN, &v, NULL))
        l->cache_hit_rate = v, l->known |= KVG_METRICS_HAS_CACHE_HIT_RATE;
    if (resolve(a, fl, F_CONFIG, SUB_BLOCK, AGREE, &v, NULL))
        l->block_size = (uint64_t)v, l->known |= KVG_METRICS_HAS_BLOCK_SIZE;
    if (resolve(a, fl, F_CONFIG, SUB_NBLOCKS, SUM, &v, NULL))
        l->num_gpu_blocks = (uint64_t)v, l->known |= KVG_METRICS_HAS_NUM_GPU_BLOCKS;
    if (resolve(a, fl, F_CAPACITY, 0, SUM, &v, NULL) && v >= 1)
        l->kv_capacity_tokens = (uint64_t)v, l->known |= KVG_METRICS_HAS_KV_CAPACITY;
    else if ((l->known & KVG_METRICS_HAS_BLOCK_SIZE) && (l->known & KVG_METRICS_HAS_NUM_GPU_BLOCKS))
        l->kv_capacity_tokens = l->block_size * l->num_gpu_blocks,
        l->known |= KVG_METRICS_HAS_KV_CAPACITY;
}

/* Appends the comma-separated names of v to out (cap bytes), whole names
 * only, skipping empty items. */
static void lora_append(char *out, size_t cap, struct kvg_str v)
{
    size_t n = strlen(out);
    for (size_t i = 0; i < v.len;) {
        size_t j = i;
        while (j < v.len && v.p[j] != ',') j++;
        size_t a = i, b = j;
        while (a < b && v.p[a] == ' ') a++;
        while (b > a && v.p[b - 1] == ' ') b--;
        if (b > a && n + (n ? 1 : 0) + (b - a) < cap) {
            if (n) out[n++] = ',';
            memcpy(out + n, v.p + a, b - a);
            n += b - a;
            out[n] = 0;
        }
        i = j + 1;
    }
}

/* vllm:lora_requests_info: the newest sample (largest value, a timestamp)
 * says which adapters are active now. */
static void take_lora(const struct kvg_metrics_sample *s, double *newest,
                      struct kvg_metrics_load *out)
{
    if (!isfinite(s->value) || ((out->known & KVG_METRICS_HAS_LORA) && s->value < *newest)) return;
    *newest = s->value;
    out->known |= KVG_METRICS_HAS_LORA;
    out->lora_active[0] = 0;
    static const char *const lists[] = {"running_lora_adapters", "waiting_lora_adapters"};
    for (size_t i = 0; i < 2; i++) {
        const struct kvg_str *v = kvg_metrics_sample_label(s, lists[i]);
        if (v) lora_append(out->lora_active, sizeof out->lora_active, *v);
    }
    double mx;
    out->lora_max = config_label(s, "max_lora", &mx) > 0 && mx < 1e6 ? (unsigned)mx : 0;
}

int kvg_metrics_load_parse(const char *text, size_t len, struct kvg_metrics_load *out)
{
    kvg_metrics_load_init(out);
    /* Both are a few KB: static would make this non-reentrant across the
     * threads that scrape, the heap would add a failure mode. */
    struct acc a;
    struct kvg_metrics_parser ps;
    struct kvg_metrics_sample s;
    a.n = 0;
    memset(a.seen, 0, sizeof a.seen);
    memset(a.poisoned, 0, sizeof a.poisoned);
    memset(a.groups, 0, sizeof a.groups);
    kvg_metrics_parser_init(&ps, text, len);
    int rc;
    double lora_newest = 0;
    while ((rc = kvg_metrics_parser_next(&ps, &s)) > 0) {
        int r = find_rule(s.name);
        if (r >= 0)
            take(&a, r, &s);
        else if (str_is(s.name, "vllm:lora_requests_info"))
            take_lora(&s, &lora_newest, out);
    }
    if (rc < 0) {
        kvg_metrics_load_init(out);
        return rc;
    }
    unsigned lora = out->known & KVG_METRICS_HAS_LORA;
    finish(&a, out);
    out->known |= lora;
    return 0;
}

const char *kvg_metrics_flavor_name(enum kvg_metrics_flavor f)
{
    switch (f) {
    case KVG_METRICS_FLAVOR_VLLM:
        return "vllm";
    case KVG_METRICS_FLAVOR_SGLANG:
        return "sglang";
    case KVG_METRICS_FLAVOR_LLAMACPP:
        return "llamacpp";
    default:
        return "unknown";
    }
}
