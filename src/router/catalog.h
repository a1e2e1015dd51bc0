/* The models behind one kvgate (issue 34): each served model with its own
 * workers, tokenizer and chat template, block size and routing policy, and
 * the names clients may ask for instead: aliases, weighted splits for
 * canaries, fallbacks. Built from the config's `models:` entries (specs,
 * below), or from the single-model flags of old as one model that answers
 * to any name; checked whole before it is used: two entries claiming one
 * name, an alias chain that loops or ends nowhere, a split whose weights
 * do not sum to 100 or that names an unknown model or another split, a
 * fallback chain that loops, a worker listed twice, an entry that serves
 * nothing are errors naming the config's file:line.
 *
 * Resolution, per request: the name asked for -> (alias)* -> a served model,
 * or a split -> one of its models, picked by hashing the request's session
 * key (the same key always lands on the same side, and a side keeps its
 * keys when its weight grows; no key: a uniform draw). The served model's
 * fallbacks (its own in order, then theirs, breadth first) are for the
 * host to try when it cannot serve.
 *
 * Immutable once built, thread-safe to read; resolving allocates nothing.
 * A reload builds a new one and swaps it into the process's holder (struct
 * kvg_catalog_holder): each request holds a reference to the catalog it
 * was resolved in, so the old one lives until its last request ends. No sockets,
 * no pool: the host keeps its per-model state in each model's `host`. */
#ifndef KVG_ROUTER_CATALOG_H
#define KVG_ROUTER_CATALOG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/holder.h"
#include "base/opt.h"
#include "router/policy.h"

#define KVG_CATALOG_MAX_MODELS 256   /* models: entries */
#define KVG_CATALOG_MAX_WORKERS 1024 /* in all models (the pool's bound) */
#define KVG_CATALOG_MAX_SPLIT 16     /* models one split names */
#define KVG_CATALOG_MAX_FALLBACKS 8  /* fallbacks one entry lists */
#define KVG_CATALOG_NAME_MAX 256     /* a name's bytes, its NUL included */
#define KVG_CATALOG_PATH_MAX 512

/* One worker of a model, as its entry lists it ("" or 0: not given). */
struct kvg_catalog_worker {
    char url[512];
    char kv_events_endpoint[512];
    char replay_endpoint[512];
    char upstream_api_key[256];
    char role[16]; /* regular, prefill, decode, encode; "": regular */
    char labels[256];
    uint32_t bootstrap_port; /* an SGLang prefill's; 0 none */
    int line;
};

/* One side of a split: the model (or an alias of one) and its share. */
struct kvg_catalog_share {
    char model[KVG_CATALOG_NAME_MAX];
    double weight; /* percent; a split's sum to 100 */
    int line;
};

/* One models: entry as the file writes it (serve's config rows, read by
 * base/opt.h; kvg_opt_free frees what it holds). Exactly one of workers
 * (a served model), split, alias_of. "" and 0: not given, the top level's
 * (struct kvg_catalog_top) for a served model's settings. */
struct kvg_catalog_spec {
    char name[KVG_CATALOG_NAME_MAX];
    struct kvg_strlist aliases;           /* more names for this entry */
    char alias_of[KVG_CATALOG_NAME_MAX];  /* this name stands for that one */
    char tokenizer[KVG_CATALOG_PATH_MAX]; /* tokenizer.json, or a model directory */
    char tokenizer_config[KVG_CATALOG_PATH_MAX];
    char chat_template[KVG_CATALOG_PATH_MAX];
    uint32_t block_size;
    uint32_t max_model_len; /* 0: what the workers report */
    uint32_t max_inflight;  /* its requests the gateway holds at once; 0: no limit */
    uint32_t max_queue;     /* of those, waiting in the gateway queue; 0: no limit */
    /* Its SLO targets (both or neither; 0: the top level's): a request's
     * TTFT and mean ITL in seconds, as serve's --slo-ttft-secs and
     * --slo-itl-secs. */
    double slo_ttft_s, slo_itl_s;
    char policy[64];
    struct kvg_policy_opts policy_opts;
    uint64_t policy_set; /* bit i: the entry gives kvg_policy_opt_table[i] */
    struct kvg_catalog_worker *workers;
    size_t nworkers;
    struct kvg_catalog_share *split;
    size_t nsplit;
    struct kvg_strlist fallbacks; /* models (or their aliases), in order */
    int line;
};

/* What a served model takes when its entry says nothing, and, with no
 * entries, the one model of the single-model flags. Strings "" for none. */
struct kvg_catalog_top {
    const char *file; /* the config file, for "file:line" */
    const char *tokenizer, *tokenizer_config, *chat_template, *policy;
    uint32_t block_size;
    const struct kvg_policy_opts *policy_opts;
    const struct kvg_catalog_worker *workers; /* the one model's (no entries) */
    size_t nworkers;
    double slo_ttft_s, slo_itl_s; /* the targets of a model that gives none (0: none) */
    /* Models' workers are discovered pods, each joining the model its
     * label names (serve's model_label): an entry that is neither a split
     * nor an alias is a model; its workers: (static) serve it beside them. */
    int discovered;
    /* Names (of entries or their aliases) whose workers the host starts
     * itself (serve's local autoscaler): such an entry that is neither a
     * split nor an alias is a model without workers: listed. */
    char *const *scaled;
    size_t nscaled;
};

/* A served model, its settings resolved: its entry's, else the top
 * level's; a tokenizer directory is its tokenizer.json (and its
 * tokenizer_config.json when none is given). Strings are owned by the
 * catalog, "" for none. */
struct kvg_catalog_model {
    const char *name;  /* "" for the single-model flags' model: any name */
    const char *where; /* "file:line" of its entry; "" for the flags' model */
    int entry;         /* its entry's index in the specs; -1 for the flags' model */
    const char *tokenizer, *tokenizer_config, *chat_template;
    uint32_t block_size;
    uint32_t max_model_len;           /* 0: the workers' */
    uint32_t max_inflight, max_queue; /* its entry's limits (gateway/gate.h); 0: none */
    double slo_ttft_s, slo_itl_s;     /* its SLO targets, its entry's or the top's; 0: none */
    const char *policy;
    struct kvg_policy_opts policy_opts; /* the top level's and its entry's; block_size set */
    const struct kvg_catalog_worker *workers;
    size_t nworkers;
    const int *fallbacks; /* served models to try instead, in order; never itself */
    size_t nfallbacks;
    void *host; /* the host's per-model state; not owned, set before the catalog is shared */
};

enum kvg_catalog_kind {
    KVG_CATALOG_MODEL, /* a served model's own name */
    KVG_CATALOG_ALIAS, /* another name for a model or a split */
    KVG_CATALOG_SPLIT, /* a split's own name */
};

/* One name a client may ask for. */
struct kvg_catalog_name {
    const char *name;
    size_t len;
    enum kvg_catalog_kind kind;
    int model; /* the served model it names, through aliases; -1 for a split */
    int split; /* the split it names, through aliases; -1 for a model */
    const char *where;
};

struct kvg_catalog_split {
    const char *name;
    const char *where;
    uint64_t seed; /* of the key hash: the split's name's, so splits pick apart */
    size_t n;
    int model[KVG_CATALOG_MAX_SPLIT];
    double upto[KVG_CATALOG_MAX_SPLIT]; /* cumulative weights; the last is 100 */
};

struct kvg_catalog_url; /* catalog.c: workers by URL */

struct kvg_catalog {
    _Atomic int refs;
    struct kvg_catalog_model *models; /* in the file's order */
    size_t nmodels;
    struct kvg_catalog_name *names; /* in the file's order: each entry's name, then its aliases */
    size_t nnames;
    struct kvg_catalog_split *splits;
    size_t nsplits;
    int any; /* the model every name resolves to (the single-model flags), else -1 */
    /* Told each model's host slot (non-NULL) when the last reference
     * goes; set before the catalog is shared. NULL: the host's own care. */
    void (*host_free)(void *host);
    /* catalog.c's: lookups and what it owns */
    int *by_name;
    struct kvg_catalog_url *by_url;
    size_t nurls;
    char **strs;
    size_t nstrs, capstrs;
};

/* Builds and checks a catalog from n entries (n == 0: the top level's one
 * model, answering to any name). *out has one reference (kvg_catalog_unref).
 * KVG_ECONFIG with "file:line: models[i] 'name': what" in err, -ENOMEM. */
int kvg_catalog_build(const struct kvg_catalog_spec *specs, size_t n,
                      const struct kvg_catalog_top *top, struct kvg_catalog **out, char *err,
                      size_t errlen);
void kvg_catalog_ref(struct kvg_catalog *c);
void kvg_catalog_unref(struct kvg_catalog *c);

/* The current catalog, swapped whole by a reload (as the keys file's set,
 * gateway/keys.h): a reader takes a reference for as long as it uses what
 * it read. */
struct kvg_catalog_holder {
    struct kvg_holder h; /* base/holder.h */
};
/* Takes over the caller's reference to c (NULL: none yet). */
void kvg_catalog_holder_init(struct kvg_catalog_holder *h, struct kvg_catalog *c);
void kvg_catalog_holder_destroy(struct kvg_catalog_holder *h);
/* A new reference to the current catalog (NULL: none); the caller unrefs it. */
struct kvg_catalog *kvg_catalog_acquire(struct kvg_catalog_holder *h);
/* Installs c (takes over the caller's reference), drops the holder's
 * reference to the previous one. */
void kvg_catalog_swap(struct kvg_catalog_holder *h, struct kvg_catalog *c);

/* The decision for one request. */
struct kvg_catalog_pick {
    int name;   /* the names[] entry asked for, -1 none */
    int model;  /* the served model, -1: an unknown name */
    int split;  /* the split that chose it, -1 none */
    int sticky; /* 1: the split chose by the session key */
};

/* The request's name (len bytes, compared exactly) and session key
 * (key_len 0: none, and r, a uniform draw in [0, 1), picks a split's side
 * instead): which served model. No allocation, no lock. */
void kvg_catalog_resolve(const struct kvg_catalog *c, const char *name, size_t len, const char *key,
                         size_t key_len, double r, struct kvg_catalog_pick *out);
/* The names[] index of name, or -1. */
int kvg_catalog_find(const struct kvg_catalog *c, const char *name, size_t len);
/* The served model of a worker: the one whose entry lists url (a
 * trailing '/' ignored; first, so a static worker that is also a
 * discovered pod stays its entry's), else, for a discovered worker whose
 * pod's label names a model (label non-empty), the model that name (or
 * alias) stands for; -1 for none (a label naming a split or nothing).
 * With the single-model flags: any, for every worker. */
int kvg_catalog_worker_model(const struct kvg_catalog *c, const char *url, const char *label);

#endif
