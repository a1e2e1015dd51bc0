/* API keys: the keys file (shape in keys.h) as base/opt.h tables whose
 * CUSTOM parsers and row checks hold its rules, constant-time
 * authentication, quota scopes and the reload holder. */
#include <errno.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/err.h"
#include "base/opt.h"
#include "base/util.h"
#include "gateway/admission.h"
#include "gateway/keys.h"

#define MAX_FILE (16u * 1024 * 1024)
#define LIMIT_MAX ((uint64_t)1000000000000000) /* 1e15: any real budget fits */

/* ENUM entries kept as their index write an int. */
_Static_assert(sizeof(enum kvg_quota_mode) == sizeof(int), "mode is an ENUM index");

/* What the file's tables fill: the set's arrays and counting, and whether
 * counting had weights (they need mode: weighted). */
struct kfile {
    struct kvg_keys_entry *keys;
    size_t nkeys;
    struct kvg_keys_tenant *tenants;
    size_t ntenants;
    struct kvg_quota_counting counting;
    int have_weights;
};

static int name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > KVG_KEYS_NAME_MAX) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              strchr("._@/-", *s)))
            return 0;
    return 1;
}

/* A model name or pattern: printable ASCII without spaces; '*' only last. */
static int model_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > KVG_KEYS_MODEL_MAX) return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] > '~' || (s[i] == '*' && i != n - 1)) return 0;
    return 1;
}

static int model_match(const char *pattern, const char *model, size_t len)
{
    size_t pl = strlen(pattern);
    if (pl && pattern[pl - 1] == '*') return len >= pl - 1 && !memcmp(pattern, model, pl - 1);
    return pl == len && !memcmp(pattern, model, len);
}

/* The CUSTOM parsers of the tables below: obj is the row (or the limits),
 * the field at o->off. */

/* A limit: a non-negative integer ('_' separators) up to 1e15. */
static int set_limit(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                     size_t errlen)
{
    (void)index;
    int digits = v[0] && v[0] != '_' && v[strlen(v) - 1] != '_';
    for (const char *c = v; *c; c++) digits &= (*c >= '0' && *c <= '9') || *c == '_';
    uint64_t u;
    if (!digits)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "'%s' is not a non-negative integer", v);
    if (kvg_opt_parse_u64(v, &u) || u > LIMIT_MAX)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "'%s' is out of range (0..1e15)", v);
    *(int64_t *)(void *)((char *)obj + o->off) = (int64_t)u;
    return 0;
}

/* A key's name or tenant, a tenant's name (o->meta says which in errors). */
static int set_name(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                    size_t errlen)
{
    (void)index;
    if (!name_ok(v))
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "'%s' is not a valid %s (1-64 of A-Z a-z 0-9 . _ @ / -)", v,
                           o->meta ? o->meta : "name");
    snprintf((char *)obj + o->off, KVG_KEYS_NAME_MAX + 1, "%s", v);
    return 0;
}

static int set_hash(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                    size_t errlen)
{
    (void)index;
    unsigned char *out = (unsigned char *)obj + o->off;
    if (strncmp(v, "sha256:", 7) || strlen(v) != 7 + 64)
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "expected \"sha256:<64 hex digits>\" (from `kvgate keys hash KEY`), "
                           "found '%s'",
                           v);
    for (int i = 0; i < 32; i++) {
        int hi = kvg_hex_digit(v[7 + 2 * i]), lo = kvg_hex_digit(v[8 + 2 * i]);
        if (hi < 0 || lo < 0)
            return kvg_err_set(err, errlen, KVG_ECONFIG, "'%s' has a non-hex digit", v);
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}

/* One value of a key's models list; the array grows with the list. */
static int set_model(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                     size_t errlen)
{
    (void)o;
    struct kvg_keys_entry *e = obj;
    if (!model_ok(v))
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "'%s' is not a model name (1-128 printable characters, '*' only last)",
                           v);
    void *m = realloc(e->models, (index + 1) * sizeof *e->models);
    if (!m) return -ENOMEM;
    e->models = m;
    snprintf(e->models[index], sizeof e->models[index], "%s", v);
    e->nmodels = index + 1;
    return 0;
}

static int set_priority(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                        size_t errlen)
{
    (void)index;
    if (kvg_adm_priority_parse(v, strlen(v), (int *)(void *)((char *)obj + o->off)))
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "'%s' is not a priority (critical, standard, sheddable or an integer "
                           "in [-1000, 1000])",
                           v);
    return 0;
}

static int set_deadline(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                        size_t errlen)
{
    (void)index;
    if (kvg_adm_deadline_parse(v, strlen(v), (uint32_t *)(void *)((char *)obj + o->off)))
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "'%s' is not a deadline (seconds, or a number with s, m or h, "
                           "above 0 and at most 24h)",
                           v);
    return 0;
}

/* A tenant's model pattern (its row's key). */
static int set_pattern(void *obj, const struct kvg_opt *o, const char *v, size_t index, char *err,
                       size_t errlen)
{
    (void)index;
    if (!model_ok(v))
        return kvg_err_set(err, errlen, KVG_ECONFIG, "'%s' is not a model name or pattern", v);
    snprintf((char *)obj + o->off, KVG_KEYS_MODEL_MAX + 1, "%s", v);
    return 0;
}

#define LIMITS_EXPECT                                                                              \
    "tokens_per_{minute,hour,day,month}, requests_per_{minute,hour,day,month} or max_concurrent"
#define LIMIT(name, field)                                                                         \
    {                                                                                              \
        name, NULL, KVG_OPT_CUSTOM, offsetof(struct kvg_quota_limits, field), .parse = set_limit   \
    }

static const struct kvg_opt limits_table[] = {
    LIMIT("tokens_per_minute", tokens[KVG_QW_MINUTE]),
    LIMIT("tokens_per_hour", tokens[KVG_QW_HOUR]),
    LIMIT("tokens_per_day", tokens[KVG_QW_DAY]),
    LIMIT("tokens_per_month", tokens[KVG_QW_MONTH]),
    LIMIT("requests_per_minute", requests[KVG_QW_MINUTE]),
    LIMIT("requests_per_hour", requests[KVG_QW_HOUR]),
    LIMIT("requests_per_day", requests[KVG_QW_DAY]),
    LIMIT("requests_per_month", requests[KVG_QW_MONTH]),
    LIMIT("max_concurrent", max_concurrent),
    KVG_OPT_END,
};

static const char *const bools[] = {"false", "true", NULL}; /* strictly these two */
static const char *const modes[] = {"total", "input", "output", "weighted", NULL};
static const char *const classes[] = {"interactive", "batch", NULL}; /* index: batch */

/* A key's row: priority standard, max_priority unset until check_key. */
static int init_key(void *parent, void *item, size_t index, char *err, size_t errlen)
{
    (void)parent, (void)index, (void)err, (void)errlen;
    struct kvg_keys_entry *e = item;
    e->priority = KVG_ADM_STANDARD;
    e->max_priority = INT_MIN;
    e->max_class = -1;
    kvg_quota_limits_none(&e->limits);
    return 0;
}

/* A key's defaults (tenant: its name; max_priority: its priority), "*"
 * (every model: no list), and names and hashes unique across keys. */
static int check_key(void *parent, void *item, size_t index, char *err, size_t errlen)
{
    const struct kfile *f = parent;
    struct kvg_keys_entry *e = item;
    if (!e->tenant[0]) memcpy(e->tenant, e->name, sizeof e->tenant);
    if (e->max_priority == INT_MIN) e->max_priority = e->priority;
    if (e->max_priority < e->priority)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "max_priority is below priority");
    if (e->max_class < 0) e->max_class = e->batch;
    if (e->max_class > e->batch) /* a batch-only limit on an interactive key */
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "max_class: batch needs class: batch (a key's requests may not be "
                           "held to a lower class than its own)");
    for (size_t i = 0; i < e->nmodels; i++)
        if (!strcmp(e->models[i], "*")) { /* allows everything: no list to search */
            free(e->models);
            e->models = NULL;
            e->nmodels = 0;
        }
    for (size_t j = 0; j < index; j++) {
        const struct kvg_keys_entry *o = &f->keys[j];
        if (!strcmp(o->name, e->name))
            return kvg_err_set(err, errlen, KVG_ECONFIG,
                               "name '%s' is already used by keys[%zu] (line %d)", e->name, j,
                               o->line);
        if (!memcmp(o->digest, e->digest, 32))
            return kvg_err_set(err, errlen, KVG_ECONFIG, "same hash as keys[%zu] '%s' (line %d)", j,
                               o->name, o->line);
    }
    return 0;
}

#define KEY(field) offsetof(struct kvg_keys_entry, field)

static const struct kvg_opt key_table[] = {
    {"name", NULL, KVG_OPT_CUSTOM, KEY(name), .parse = set_name, .flags = KVG_OPT_F_REQUIRED},
    {"hash", NULL, KVG_OPT_CUSTOM, KEY(digest), .parse = set_hash, .flags = KVG_OPT_F_REQUIRED},
    {"tenant", NULL, KVG_OPT_CUSTOM, KEY(tenant), .parse = set_name},
    {"models", NULL, KVG_OPT_CUSTOM, KEY(models), .meta = "model names", .parse = set_model,
     .flags = KVG_OPT_F_MULTI | KVG_OPT_F_LIST_ONLY},
    {"priority", NULL, KVG_OPT_CUSTOM, KEY(priority), .parse = set_priority},
    {"max_priority", NULL, KVG_OPT_CUSTOM, KEY(max_priority), .parse = set_priority},
    {"class", NULL, KVG_OPT_ENUM, KEY(batch), .choices = classes},
    {"max_class", NULL, KVG_OPT_ENUM, KEY(max_class), .choices = classes},
    {"deadline", NULL, KVG_OPT_CUSTOM, KEY(deadline_ms), .parse = set_deadline},
    {"admin", NULL, KVG_OPT_ENUM, KEY(admin), .choices = bools},
    {"limits", NULL, KVG_OPT_INCLUDE, KEY(limits), .sub = limits_table, .noun = "limit",
     .expect = LIMITS_EXPECT},
    {"line", NULL, KVG_OPT_INT, KEY(line), .flags = KVG_OPT_F_LINE},
    KVG_OPT_END,
};

static int init_limits(void *parent, void *item, size_t index, char *err, size_t errlen)
{
    (void)parent, (void)index, (void)err, (void)errlen;
    kvg_quota_limits_none(&((struct kvg_keys_tmodel *)item)->limits);
    return 0;
}

static int init_tenant(void *parent, void *item, size_t index, char *err, size_t errlen)
{
    (void)parent, (void)index, (void)err, (void)errlen;
    kvg_quota_limits_none(&((struct kvg_keys_tenant *)item)->limits);
    return 0;
}

static const struct kvg_opt tmodel_table[] = {
    {"pattern", NULL, KVG_OPT_CUSTOM, offsetof(struct kvg_keys_tmodel, pattern),
     .parse = set_pattern, .flags = KVG_OPT_F_KEY},
    {NULL, NULL, KVG_OPT_INCLUDE, offsetof(struct kvg_keys_tmodel, limits), .sub = limits_table},
    KVG_OPT_END,
};

#define TENANT(field) offsetof(struct kvg_keys_tenant, field)

static const struct kvg_opt tenant_table[] = {
    {"name", NULL, KVG_OPT_CUSTOM, TENANT(name), .meta = "tenant name", .parse = set_name,
     .flags = KVG_OPT_F_KEY},
    {"limits", NULL, KVG_OPT_INCLUDE, TENANT(limits), .sub = limits_table, .noun = "limit",
     .expect = LIMITS_EXPECT},
    {"models", NULL, KVG_OPT_MAP, TENANT(models), sizeof(struct kvg_keys_tmodel),
     .sub = tmodel_table, .init = init_limits, .count_off = TENANT(nmodels),
     .flags = KVG_OPT_F_ALLOC, .noun = "limit", .expect = LIMITS_EXPECT},
    KVG_OPT_END,
};

static int weights_seen(void *parent, void *item, size_t index, char *err, size_t errlen)
{
    (void)item, (void)index, (void)err, (void)errlen;
    ((struct kfile *)parent)->have_weights = 1;
    return 0;
}

static int check_counting(void *parent, void *item, size_t index, char *err, size_t errlen)
{
    (void)item, (void)index;
    const struct kfile *f = parent;
    if (f->have_weights && f->counting.mode != KVG_QM_WEIGHTED)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "weights apply only with mode: weighted");
    return 0;
}

#define FILE_(field) offsetof(struct kfile, field)

static const struct kvg_opt weights_table[] = {
    {"input", NULL, KVG_OPT_DOUBLE, FILE_(counting.w_input), .min = 0, .max = 1e6},
    {"cached_input", NULL, KVG_OPT_DOUBLE, FILE_(counting.w_cached_input), .min = 0, .max = 1e6},
    {"output", NULL, KVG_OPT_DOUBLE, FILE_(counting.w_output), .min = 0, .max = 1e6},
    KVG_OPT_END,
};

static const struct kvg_opt counting_table[] = {
    {"mode", NULL, KVG_OPT_ENUM, FILE_(counting.mode), .choices = modes},
    {"weights", NULL, KVG_OPT_INCLUDE, 0, .sub = weights_table, .check = weights_seen,
     .noun = "weight", .expect = "input, cached_input, output"},
    KVG_OPT_END,
};

static const struct kvg_opt file_table[] = {
    {"keys", NULL, KVG_OPT_ROWS, FILE_(keys), sizeof(struct kvg_keys_entry), .sub = key_table,
     .init = init_key, .check = check_key, .count_off = FILE_(nkeys),
     .flags = KVG_OPT_F_ALLOC | KVG_OPT_F_REQUIRED, .noun = "key",
     .expect =
         "name, hash, tenant, models, priority, max_priority, class, max_class, deadline, admin, "
         "limits"},
    {"tenants", NULL, KVG_OPT_MAP, FILE_(tenants), sizeof(struct kvg_keys_tenant),
     .sub = tenant_table, .init = init_tenant, .count_off = FILE_(ntenants),
     .flags = KVG_OPT_F_ALLOC, .noun = "key", .expect = "limits, models"},
    {"counting", NULL, KVG_OPT_INCLUDE, 0, .sub = counting_table, .check = check_counting,
     .noun = "key", .expect = "mode, weights"},
    KVG_OPT_END,
};

static const struct kvg_opt file_doc = {"",
                                        NULL,
                                        KVG_OPT_INCLUDE,
                                        0,
                                        .sub = file_table,
                                        .noun = "top-level key",
                                        .expect = "keys, tenants, counting"};

/* Frees the arrays (a failed load's too: its rows are counted). */
static void file_free(struct kfile *f)
{
    for (size_t i = 0; i < f->nkeys; i++) free(f->keys[i].models);
    for (size_t i = 0; i < f->ntenants; i++) free(f->tenants[i].models);
    free(f->keys);
    free(f->tenants);
}

static void set_free(struct kvg_keys_set *s)
{
    struct kfile f = {s->keys, s->nkeys, s->tenants, s->ntenants, s->counting, 0};
    file_free(&f);
    free(s);
}

int kvg_keys_parse(const char *yaml, size_t len, const char *name, struct kvg_keys_set **out,
                   char *err, size_t errlen)
{
    struct kfile f = {0};
    kvg_quota_counting_default(&f.counting);
    int rc = kvg_opt_load_yaml_doc(&file_doc, &f, yaml, len, name ? name : "keys", err, errlen);
    struct kvg_keys_set *s = rc ? NULL : calloc(1, sizeof *s);
    if (!rc && !s) rc = -ENOMEM;
    if (rc) {
        file_free(&f);
        return rc;
    }
    atomic_init(&s->refs, 1);
    s->keys = f.keys;
    s->nkeys = f.nkeys;
    s->tenants = f.tenants;
    s->ntenants = f.ntenants;
    s->counting = f.counting;
    *out = s;
    return 0;
}

int kvg_keys_load(const char *path, struct kvg_keys_set **out, char *err, size_t errlen)
{
    struct kvg_buf b;
    kvg_buf_init(&b, MAX_FILE);
    int rc = kvg_buf_read_file(&b, path);
    if (rc && rc != KVG_ETOOBIG && rc != -ENOMEM) {
        snprintf(err, errlen, "%s: %s", path, kvg_strerror(rc));
        kvg_buf_free(&b);
        return rc;
    }
    if (rc) {
        snprintf(err, errlen, "%s: %s", path,
                 rc == KVG_ETOOBIG ? "larger than 16 MB" : "no memory");
        kvg_buf_free(&b);
        return rc == KVG_ETOOBIG ? KVG_ECONFIG : rc;
    }
    rc = kvg_keys_parse(b.data ? b.data : "", b.len, path, out, err, errlen);
    kvg_buf_free(&b);
    return rc;
}

void kvg_keys_ref(struct kvg_keys_set *s)
{
    if (s) atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

void kvg_keys_unref(struct kvg_keys_set *s)
{
    if (s && atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1) set_free(s);
}

void kvg_keys_hash(const char *key, size_t len, char out[72])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_Digest(key, len, md, &n, EVP_sha256(), NULL);
    memcpy(out, "sha256:", 7);
    for (unsigned i = 0; i < 32; i++) snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
}

const struct kvg_keys_entry *kvg_keys_lookup(const struct kvg_keys_set *s,
                                             const unsigned char digest[32])
{
    size_t idx = 0, found = 0;
    for (size_t i = 0; i < s->nkeys; i++) {
        size_t eq = (size_t)(CRYPTO_memcmp(s->keys[i].digest, digest, 32) == 0);
        size_t m = (size_t)0 - eq; /* all ones on a match: select i without a branch */
        idx = (idx & ~m) | (i & m);
        found |= eq;
    }
    return found ? &s->keys[idx] : NULL;
}

/* "Basic base64(user:key)": what a browser sends after its own login
 * prompt (the status page); the key is the password, the user is ignored. */
static enum kvg_keys_auth basic(const struct kvg_keys_set *s, struct kvg_str b64,
                                unsigned char md[32], int *md_set,
                                const struct kvg_keys_entry **out)
{
    while (b64.len && (*b64.p == ' ' || *b64.p == '\t')) b64.p++, b64.len--;
    while (b64.len && (b64.p[b64.len - 1] == ' ' || b64.p[b64.len - 1] == '\t')) b64.len--;
    unsigned char dec[600];
    if (!b64.len || b64.len % 4 || b64.len / 4 * 3 > sizeof dec - 8) return KVG_KEYS_AUTH_MALFORMED;
    int n = EVP_DecodeBlock(dec, (const unsigned char *)b64.p, (int)b64.len);
    if (n < 0) return KVG_KEYS_AUTH_MALFORMED;
    /* Padding ('=' at most twice, at the end) decodes as zero bytes. */
    for (size_t i = b64.len; i > b64.len - 2 && b64.p[i - 1] == '='; i--) n--;
    if (n < 0) return KVG_KEYS_AUTH_MALFORMED;
    const unsigned char *colon = memchr(dec, ':', (size_t)n);
    if (!colon) return KVG_KEYS_AUTH_MALFORMED;
    char bearer[sizeof dec + 8];
    int bl = snprintf(bearer, sizeof bearer, "Bearer %.*s", (int)(dec + n - colon - 1),
                      (const char *)colon + 1);
    OPENSSL_cleanse(dec, sizeof dec);
    enum kvg_keys_auth a =
        bl > 7
            ? kvg_keys_authenticate_memo(s, (struct kvg_str){bearer, (size_t)bl}, md, md_set, out)
            : KVG_KEYS_AUTH_MALFORMED;
    OPENSSL_cleanse(bearer, sizeof bearer);
    return a;
}

enum kvg_keys_auth kvg_keys_authenticate(const struct kvg_keys_set *s, struct kvg_str h,
                                         const struct kvg_keys_entry **out)
{
    unsigned char md[32];
    int set = 0;
    enum kvg_keys_auth a = kvg_keys_authenticate_memo(s, h, md, &set, out);
    OPENSSL_cleanse(md, sizeof md);
    return a;
}

struct kvg_str kvg_keys_bearer(struct kvg_str h)
{
    while (h.len && (*h.p == ' ' || *h.p == '\t')) h.p++, h.len--;
    if (h.len < 7 || strncasecmp(h.p, "bearer", 6) || (h.p[6] != ' ' && h.p[6] != '\t'))
        return (struct kvg_str){NULL, 0};
    h.p += 7;
    h.len -= 7;
    while (h.len && (*h.p == ' ' || *h.p == '\t')) h.p++, h.len--;
    while (h.len && (h.p[h.len - 1] == ' ' || h.p[h.len - 1] == '\t')) h.len--;
    return h;
}

enum kvg_keys_auth kvg_keys_authenticate_memo(const struct kvg_keys_set *s, struct kvg_str h,
                                              unsigned char memo[32], int *memo_set,
                                              const struct kvg_keys_entry **out)
{
    *out = NULL;
    if (!h.p) return KVG_KEYS_AUTH_MISSING;
    while (h.len && (*h.p == ' ' || *h.p == '\t')) h.p++, h.len--;
    if (h.len >= 6 && !strncasecmp(h.p, "basic", 5) && (h.p[5] == ' ' || h.p[5] == '\t'))
        return basic(s, (struct kvg_str){h.p + 6, h.len - 6}, memo, memo_set, out);
    h = kvg_keys_bearer(h);
    if (!h.len) return KVG_KEYS_AUTH_MALFORMED;
    if (!*memo_set) {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int n = 0;
        if (!EVP_Digest(h.p, h.len, md, &n, EVP_sha256(), NULL) || n != 32)
            return KVG_KEYS_AUTH_UNKNOWN;
        memcpy(memo, md, 32);
        OPENSSL_cleanse(md, sizeof md);
        *memo_set = 1;
    }
    *out = kvg_keys_lookup(s, memo);
    return *out ? KVG_KEYS_AUTH_OK : KVG_KEYS_AUTH_UNKNOWN;
}

int kvg_keys_model_allowed(const struct kvg_keys_entry *e, const char *model, size_t len)
{
    if (!e->models) return 1;
    if (!model || !len) return 0;
    for (size_t i = 0; i < e->nmodels; i++)
        if (model_match(e->models[i], model, len)) return 1;
    return 0;
}

static void add_scope(struct kvg_quota_req *r, const struct kvg_quota_limits *l, const char *fmt,
                      ...) __attribute__((format(printf, 3, 4)));
static void add_scope(struct kvg_quota_req *r, const struct kvg_quota_limits *l, const char *fmt,
                      ...)
{
    if (!kvg_quota_limits_any(l) || r->nscopes >= KVG_QUOTA_MAX_SCOPES) return;
    struct kvg_quota_scope *sc = &r->scope[r->nscopes++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sc->id, sizeof sc->id, fmt, ap);
    va_end(ap);
    sc->lim = *l;
}

size_t kvg_keys_scopes(const struct kvg_keys_set *s, const struct kvg_keys_entry *e,
                       const char *model, size_t len, struct kvg_quota_req *r)
{
    r->nscopes = 0;
    add_scope(r, &e->limits, "key:%s", e->name);
    for (size_t i = 0; i < s->ntenants; i++) {
        const struct kvg_keys_tenant *t = &s->tenants[i];
        if (strcmp(t->name, e->tenant)) continue;
        add_scope(r, &t->limits, "tenant:%s", t->name);
        for (size_t m = 0; m < t->nmodels; m++)
            if (model_match(t->models[m].pattern, model ? model : "", model ? len : 0)) {
                add_scope(r, &t->models[m].limits, "model:%s:%s", t->name, t->models[m].pattern);
                break;
            }
        break;
    }
    return r->nscopes;
}

/* One scope to fn if its limits are any; 1 when it was. */
static size_t each_one(kvg_keys_scope_fn fn, void *ud, const struct kvg_quota_req *r,
                       enum kvg_keys_scope_kind kind, const char *owner, const char *pattern)
{
    if (!r->nscopes) return 0;
    fn(ud, &r->scope[0], kind, owner, pattern);
    return 1;
}

size_t kvg_keys_each_scope(const struct kvg_keys_set *s, kvg_keys_scope_fn fn, void *ud)
{
    size_t n = 0;
    struct kvg_quota_req r;
    for (size_t i = 0; i < s->nkeys; i++) {
        r.nscopes = 0;
        add_scope(&r, &s->keys[i].limits, "key:%s", s->keys[i].name);
        n += each_one(fn, ud, &r, KVG_KEYS_SCOPE_KEY, s->keys[i].name, NULL);
    }
    for (size_t i = 0; i < s->ntenants; i++) {
        const struct kvg_keys_tenant *t = &s->tenants[i];
        r.nscopes = 0;
        add_scope(&r, &t->limits, "tenant:%s", t->name);
        n += each_one(fn, ud, &r, KVG_KEYS_SCOPE_TENANT, t->name, NULL);
        for (size_t m = 0; m < t->nmodels; m++) {
            r.nscopes = 0;
            add_scope(&r, &t->models[m].limits, "model:%s:%s", t->name, t->models[m].pattern);
            n += each_one(fn, ud, &r, KVG_KEYS_SCOPE_MODEL, t->name, t->models[m].pattern);
        }
    }
    return n;
}

static void set_ref(void *s)
{
    kvg_keys_ref(s);
}

static void set_unref(void *s)
{
    kvg_keys_unref(s);
}

void kvg_keys_holder_init(struct kvg_keys_holder *h, struct kvg_keys_set *s)
{
    kvg_holder_init(&h->h, s, set_ref, set_unref);
}

void kvg_keys_holder_destroy(struct kvg_keys_holder *h)
{
    kvg_holder_destroy(&h->h);
}

struct kvg_keys_set *kvg_keys_acquire(struct kvg_keys_holder *h)
{
    return kvg_holder_acquire(&h->h);
}

void kvg_keys_swap(struct kvg_keys_holder *h, struct kvg_keys_set *s)
{
    kvg_holder_swap(&h->h, s);
}
