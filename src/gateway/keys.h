/* API keys: the keys file, authentication of `Authorization: Bearer <key>`,
 * and the quota scopes a key's requests are charged to.
 *
 * The keys file (--keys FILE, YAML; re-read on SIGHUP). Keys are stored as
 * SHA-256 hashes, never in clear. Every section but `keys` is optional;
 * unknown keys, wrong types, duplicates and out-of-range values are errors
 * that name the file, the line and the path of the offending entry.
 *
 *   counting:                    # how tokens are charged to token limits
 *     mode: total                # input | output | total (default) | weighted
 *     weights:                   # weighted only; each defaults to 1
 *       input: 1.0               #   prompt tokens not served from cache
 *       cached_input: 0.1        #   prompt tokens served from the prefix cache
 *       output: 4.0              #   completion tokens
 *   keys:
 *     - name: alice              # unique; 1-64 of [A-Za-z0-9._@/-]
 *       hash: sha256:<64 hex>    # `kvgate keys hash KEY`; unique
 *       tenant: team-a           # default: the key's name (same charset)
 *       models: ["*"]            # default ["*"]; exact names, or a prefix
 *                                #   ending in '*' ("llama-3-*")
 *       priority: standard       # critical | standard (default) | sheddable
 *                                #   | integer in [-1000, 1000]
 *       max_priority: standard   # the highest x-kvgate-priority a request of
 *                                #   this key may ask for (default: priority)
 *       class: interactive       # interactive (default) | batch: batch waits
 *                                #   in the gateway queue behind every
 *                                #   interactive request (gateway/admission.h)
 *       max_class: interactive   # the class x-kvgate-class may ask for
 *                                #   (default: class, so a batch key's
 *                                #   requests stay batch)
 *       deadline: 30m            # the longest a batch request of this key
 *                                #   waits (seconds, or s/m/h; at most 24h;
 *                                #   default: serve's --batch-deadline-secs);
 *                                #   x-kvgate-deadline may only shorten it
 *       admin: false             # true: may call the admin API (/workers,
 *                                #   /debug/route); default false
 *       limits:                  # any subset; absent = unlimited, 0 = suspended
 *         tokens_per_minute: 100000
 *         tokens_per_hour: 1000000
 *         tokens_per_day: 5000000
 *         requests_per_minute: 600
 *         requests_per_hour: 10000
 *         requests_per_day: 100000
 *         tokens_per_month: 100000000  # calendar months in UTC: a fixed
 *         requests_per_month: 1000000  #   window, empty on the 1st 00:00 UTC
 *         max_concurrent: 16
 *   tenants:                     # limits shared by every key of a tenant
 *     team-a:
 *       limits: {tokens_per_day: 20000000}
 *       models:                  # per (tenant, model); first match applies;
 *         llama-3-70b: {tokens_per_minute: 20000}   # a '*' pattern is one
 *         "qwen3-*": {requests_per_minute: 100}     # bucket for all it matches
 *
 * A request is charged to up to three scopes, all or nothing: "key:<name>"
 * (the key's limits), "tenant:<tenant>" and "model:<tenant>:<pattern>".
 * Integers may use '_' separators (100_000). The file is read through the
 * option tables of base/opt.h, as serve's and autoscale's files are: a
 * field's name may be written with '-' for '_' (max-concurrent); tenant
 * names and model patterns are matched exactly.
 *
 * Ownership and threads: a struct kvg_keys_set is immutable once loaded and
 * reference-counted. A struct kvg_keys_holder is the process's current set:
 * readers on any thread kvg_keys_acquire() a reference for the life of a
 * request; a reload builds a new set and kvg_keys_swap()s it in; the old set
 * is freed when its last reader drops it. An entry pointer is valid while
 * the caller holds a reference to its set. */
#ifndef KVG_GATEWAY_KEYS_H
#define KVG_GATEWAY_KEYS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/holder.h"
#include "gateway/quota.h"

#define KVG_KEYS_NAME_MAX 64
#define KVG_KEYS_MODEL_MAX 128

struct kvg_keys_entry {
    char name[KVG_KEYS_NAME_MAX + 1];
    char tenant[KVG_KEYS_NAME_MAX + 1];
    unsigned char digest[32];
    char (*models)[KVG_KEYS_MODEL_MAX + 1]; /* NULL: every model */
    size_t nmodels;
    int priority;         /* a request's priority unless it asks for a lower one */
    int max_priority;     /* the most a request may ask for (default: priority) */
    int batch;            /* class: 1 batch, 0 interactive */
    int max_class;        /* the class a request may ask for: 0 interactive, 1 batch only */
    uint32_t deadline_ms; /* a batch request's longest wait; 0: the gateway's default */
    int admin;            /* may use the admin API (workers, debug, reload) */
    struct kvg_quota_limits limits;
    int line;
};

struct kvg_keys_tmodel {
    char pattern[KVG_KEYS_MODEL_MAX + 1];
    struct kvg_quota_limits limits;
};

struct kvg_keys_tenant {
    char name[KVG_KEYS_NAME_MAX + 1];
    struct kvg_quota_limits limits;
    struct kvg_keys_tmodel *models;
    size_t nmodels;
};

struct kvg_keys_set {
    _Atomic int refs;
    struct kvg_keys_entry *keys;
    size_t nkeys;
    struct kvg_keys_tenant *tenants;
    size_t ntenants;
    struct kvg_quota_counting counting;
};

/* Reads and validates a keys file. *out has one reference (kvg_keys_unref).
 * On failure writes "FILE:LINE: path: reason" to err and returns
 * KVG_ECONFIG (or -errno when the file cannot be read). */
int kvg_keys_load(const char *path, struct kvg_keys_set **out, char *err, size_t errlen);
/* The same from memory; `name` is used in messages. */
int kvg_keys_parse(const char *yaml, size_t len, const char *name, struct kvg_keys_set **out,
                   char *err, size_t errlen);
void kvg_keys_ref(struct kvg_keys_set *s);
void kvg_keys_unref(struct kvg_keys_set *s);

/* SHA-256 of a key as written in the file: "sha256:<64 lowercase hex>".
 * out must hold 72 bytes. */
void kvg_keys_hash(const char *key, size_t len, char out[72]);

/* The entry whose digest equals `digest`, or NULL. Constant time in the
 * digest's value: every entry is compared in full with CRYPTO_memcmp and the
 * match is selected without branching, so timing reveals neither whether
 * nor which entry matched, only how many entries the set has. */
const struct kvg_keys_entry *kvg_keys_lookup(const struct kvg_keys_set *s,
                                             const unsigned char digest[32]);

enum kvg_keys_auth {
    KVG_KEYS_AUTH_OK,
    KVG_KEYS_AUTH_MISSING,   /* no Authorization header: 401 */
    KVG_KEYS_AUTH_MALFORMED, /* not "Bearer <key>": 401 */
    KVG_KEYS_AUTH_UNKNOWN,   /* no such key: 401 */
};
/* The token of a "Bearer <token>" value, blanks around it trimmed; a NULL
 * view for any other scheme (an empty one for "Bearer" alone). */
struct kvg_str kvg_keys_bearer(struct kvg_str authorization);
/* Authenticates an Authorization header value (a NULL view when absent). */
enum kvg_keys_auth kvg_keys_authenticate(const struct kvg_keys_set *s, struct kvg_str authorization,
                                         const struct kvg_keys_entry **out);
/* The same, remembering the key's SHA-256 in md/md_set: when *md_set is
 * already 1, md is taken as the digest of this header's key and no hash is
 * computed (a request's head and body checks hash its key once). */
enum kvg_keys_auth kvg_keys_authenticate_memo(const struct kvg_keys_set *s,
                                              struct kvg_str authorization, unsigned char md[32],
                                              int *md_set, const struct kvg_keys_entry **out);

/* May this key use `model`? An empty model name is allowed only to keys
 * that allow every model. */
int kvg_keys_model_allowed(const struct kvg_keys_entry *e, const char *model, size_t len);

/* Fills r->scope[] / r->nscopes with the scopes of a request by e for model
 * (only those that have limits); returns the count. r's other fields are
 * untouched. */
size_t kvg_keys_scopes(const struct kvg_keys_set *s, const struct kvg_keys_entry *e,
                       const char *model, size_t len, struct kvg_quota_req *r);

/* Every scope of the set that has limits, once each, with the ids
 * kvg_keys_scopes gives requests: each key's own ("key:NAME"; owner = the
 * key's name), each tenant's ("tenant:T"; owner = T) and each tenant model
 * pattern's ("model:T:PATTERN"; owner = T, pattern set). sc is valid during
 * the call only. Returns the count. */
enum kvg_keys_scope_kind { KVG_KEYS_SCOPE_KEY, KVG_KEYS_SCOPE_TENANT, KVG_KEYS_SCOPE_MODEL };
typedef void (*kvg_keys_scope_fn)(void *ud, const struct kvg_quota_scope *sc,
                                  enum kvg_keys_scope_kind kind, const char *owner,
                                  const char *pattern);
size_t kvg_keys_each_scope(const struct kvg_keys_set *s, kvg_keys_scope_fn fn, void *ud);

/* The current set, swapped atomically on reload (base/holder.h). */
struct kvg_keys_holder {
    struct kvg_holder h;
};
/* Takes over the caller's reference to s (NULL: no keys, no authentication). */
void kvg_keys_holder_init(struct kvg_keys_holder *h, struct kvg_keys_set *s);
void kvg_keys_holder_destroy(struct kvg_keys_holder *h);
/* A new reference to the current set (NULL when authentication is off);
 * the caller unrefs it when its request ends. */
struct kvg_keys_set *kvg_keys_acquire(struct kvg_keys_holder *h);
/* Installs s (takes over the caller's reference) and drops the holder's
 * reference to the previous set. */
void kvg_keys_swap(struct kvg_keys_holder *h, struct kvg_keys_set *s);

#endif
