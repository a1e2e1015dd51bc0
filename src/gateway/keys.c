/* API keys: loading and validating the keys file (shape in keys.h),
 * constant-time authentication, quota scopes, the reload holder and the
 * `kvgate keys` command. */
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "base/err.h"
#include "base/util.h"
#include "gateway/admission.h"
#include "gateway/keys.h"

#define MAX_FILE (16u * 1024 * 1024)
#define LIMIT_MAX ((int64_t)1000000000000000) /* 1e15: any real budget fits */

struct pctx {
    yaml_document_t *d;
    const char *file;
    char *err;
    size_t errlen;
};

static int fail(struct pctx *p, const yaml_node_t *n, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(struct pctx *p, const yaml_node_t *n, const char *path, const char *fmt, ...)
{
    int k = snprintf(p->err, p->errlen, "%s:%d: %s%s", p->file, n ? (int)n->start_mark.line + 1 : 0,
                     path ? path : "", path ? ": " : "");
    if (k < 0 || (size_t)k >= p->errlen) return KVG_ECONFIG;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err + k, p->errlen - (size_t)k, fmt, ap);
    va_end(ap);
    return KVG_ECONFIG;
}

static yaml_node_t *node(struct pctx *p, int id)
{
    return yaml_document_get_node(p->d, id);
}

static const char *sval(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static const char *type_name(const yaml_node_t *n)
{
    return !n                              ? "nothing"
           : n->type == YAML_SCALAR_NODE   ? "a scalar"
           : n->type == YAML_SEQUENCE_NODE ? "a list"
                                           : "a mapping";
}

/* Checks that n is a mapping whose keys are scalars, each once. */
static int check_map(struct pctx *p, yaml_node_t *n, const char *path)
{
    if (!n || n->type != YAML_MAPPING_NODE)
        return fail(p, n, path, "expected a mapping, found %s", type_name(n));
    for (yaml_node_pair_t *a = n->data.mapping.pairs.start; a < n->data.mapping.pairs.top; a++) {
        const char *ka = sval(node(p, a->key));
        if (!ka) return fail(p, node(p, a->key), path, "mapping keys must be plain strings");
        for (yaml_node_pair_t *b = n->data.mapping.pairs.start; b < a; b++)
            if (!strcmp(ka, sval(node(p, b->key))))
                return fail(p, node(p, a->key), path, "duplicate key '%s'", ka);
    }
    return 0;
}

/* Iterates a mapping checked by check_map: pv is the pair, key its name,
 * val its value node. The body must not use break (it would act as continue). */
#define FOR_PAIRS(p, n, pv, kname, val)                                                            \
    for (yaml_node_pair_t *pv = (n)->data.mapping.pairs.start; pv < (n)->data.mapping.pairs.top;   \
         pv++)                                                                                     \
        for (const char *kname = sval(node(p, pv->key)), *once_##pv = kname; once_##pv;            \
             once_##pv = NULL)                                                                     \
            for (yaml_node_t *val = node(p, pv->value); once_##pv; once_##pv = NULL)

/* "a.b" for messages; a long path is cut, never overflowed. */
static void join(char *d, size_t cap, const char *a, const char *b)
{
    if (snprintf(d, cap, "%s.%s", a, b) < 0) d[0] = 0;
}

static int parse_int(struct pctx *p, yaml_node_t *n, const char *path, int64_t *out)
{
    const char *s = sval(n);
    if (!s || !*s)
        return fail(p, n, path, "expected a non-negative integer, found %s", type_name(n));
    char digits[32];
    size_t k = 0;
    for (const char *c = s; *c; c++) {
        if (*c == '_' && c != s && c[1]) continue;
        if (*c < '0' || *c > '9' || k + 1 >= sizeof digits)
            return fail(p, n, path, "'%s' is not a non-negative integer", s);
        digits[k++] = *c;
    }
    digits[k] = 0;
    int64_t v;
    if (kvg_parse_i64(digits, &v) || v > LIMIT_MAX)
        return fail(p, n, path, "'%s' is out of range (0..1e15)", s);
    *out = v;
    return 0;
}

static int parse_double(struct pctx *p, yaml_node_t *n, const char *path, double *out)
{
    const char *s = sval(n);
    double v;
    if (!s || kvg_parse_double(s, &v) || !(v >= 0) || v > 1e6)
        return fail(p, n, path, "expected a number in [0, 1e6], found '%s'", s ? s : type_name(n));
    *out = v;
    return 0;
}

static int parse_limits(struct pctx *p, yaml_node_t *n, const char *path,
                        struct kvg_quota_limits *l)
{
    /* Per window of enum kvg_quota_win: tokens, then requests. */
    static const char *names[] = {"tokens_per_minute", "tokens_per_hour",     "tokens_per_day",
                                  "tokens_per_month",  "requests_per_minute", "requests_per_hour",
                                  "requests_per_day",  "requests_per_month",  "max_concurrent"};
    kvg_quota_limits_none(l);
    int rc = check_map(p, n, path);
    if (rc) return rc;
    FOR_PAIRS(p, n, lp, k, v)
    {
        int64_t *dst = NULL;
        for (size_t i = 0; i < KVG_ARRAY_LEN(names); i++)
            if (!strcmp(k, names[i]))
                dst = i < KVG_QW_N       ? &l->tokens[i]
                      : i < 2 * KVG_QW_N ? &l->requests[i - KVG_QW_N]
                                         : &l->max_concurrent;
        if (!dst)
            return fail(p, node(p, lp->key), path,
                        "unknown limit '%s' (expected tokens_per_{minute,hour,day,month}, "
                        "requests_per_{minute,hour,day,month} or max_concurrent)",
                        k);
        char sub[192];
        join(sub, sizeof sub, path, k);
        if ((rc = parse_int(p, v, sub, dst))) return rc;
    }
    return 0;
}

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

static int parse_hash(struct pctx *p, yaml_node_t *n, const char *path, unsigned char out[32])
{
    const char *s = sval(n);
    if (!s || strncmp(s, "sha256:", 7) || strlen(s) != 7 + 64)
        return fail(p, n, path,
                    "expected \"sha256:<64 hex digits>\" (from `kvgate keys hash KEY`), found '%s'",
                    s ? s : type_name(n));
    for (int i = 0; i < 32; i++) {
        int hi = kvg_hex_digit(s[7 + 2 * i]), lo = kvg_hex_digit(s[8 + 2 * i]);
        if (hi < 0 || lo < 0) return fail(p, n, path, "'%s' has a non-hex digit", s);
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}

static int parse_models(struct pctx *p, yaml_node_t *n, const char *path, struct kvg_keys_entry *e)
{
    if (!n || n->type != YAML_SEQUENCE_NODE)
        return fail(p, n, path, "expected a list of model names, found %s", type_name(n));
    size_t cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    if (cnt == 0) return fail(p, n, path, "empty list: the key could use no model");
    e->models = calloc(cnt, sizeof *e->models);
    if (!e->models) return -ENOMEM;
    int star = 0;
    for (size_t i = 0; i < cnt; i++) {
        yaml_node_t *m = node(p, n->data.sequence.items.start[i]);
        const char *s = sval(m);
        if (!s || !model_ok(s))
            return fail(p, m, path,
                        "'%s' is not a model name (1-128 printable characters, '*' only last)",
                        s ? s : type_name(m));
        star |= !strcmp(s, "*");
        snprintf(e->models[i], sizeof e->models[i], "%s", s);
    }
    e->nmodels = cnt;
    if (star) { /* "*" allows everything: no list to search */
        free(e->models);
        e->models = NULL;
        e->nmodels = 0;
    }
    return 0;
}

static int parse_key(struct pctx *p, yaml_node_t *n, const char *path, struct kvg_keys_entry *e)
{
    int rc = check_map(p, n, path), have_hash = 0, have_max = 0;
    if (rc) return rc;
    e->priority = KVG_ADM_STANDARD;
    e->line = (int)n->start_mark.line + 1;
    kvg_quota_limits_none(&e->limits);
    char sub[128];
    FOR_PAIRS(p, n, kp, k, v)
    {
        join(sub, sizeof sub, path, k);
        const char *s = sval(v);
        if (!strcmp(k, "name") || !strcmp(k, "tenant")) {
            if (!s || !name_ok(s))
                return fail(p, v, sub, "'%s' is not a valid name (1-64 of A-Z a-z 0-9 . _ @ / -)",
                            s ? s : type_name(v));
            snprintf(!strcmp(k, "name") ? e->name : e->tenant, sizeof e->name, "%s", s);
        } else if (!strcmp(k, "hash")) {
            if ((rc = parse_hash(p, v, sub, e->digest))) return rc;
            have_hash = 1;
        } else if (!strcmp(k, "models")) {
            if ((rc = parse_models(p, v, sub, e))) return rc;
        } else if (!strcmp(k, "priority") || !strcmp(k, "max_priority")) {
            int *to = !strcmp(k, "priority") ? &e->priority : &e->max_priority;
            if (!s || kvg_adm_priority_parse(s, strlen(s), to))
                return fail(p, v, sub,
                            "'%s' is not a priority (critical, standard, sheddable or an "
                            "integer in [-1000, 1000])",
                            s ? s : type_name(v));
            have_max |= to == &e->max_priority;
        } else if (!strcmp(k, "admin")) {
            if (!s || (strcmp(s, "true") && strcmp(s, "false")))
                return fail(p, v, sub, "'%s' is not true or false", s ? s : type_name(v));
            e->admin = !strcmp(s, "true");
        } else if (!strcmp(k, "limits")) {
            if ((rc = parse_limits(p, v, sub, &e->limits))) return rc;
        } else {
            return fail(p, node(p, kp->key), path,
                        "unknown key '%s' (expected name, hash, tenant, models, priority, "
                        "max_priority, admin, limits)",
                        k);
        }
    }
    if (!e->name[0]) return fail(p, n, path, "missing 'name'");
    if (!have_hash) return fail(p, n, path, "missing 'hash'");
    if (!e->tenant[0]) memcpy(e->tenant, e->name, sizeof e->tenant);
    if (!have_max) e->max_priority = e->priority;
    if (e->max_priority < e->priority) return fail(p, n, path, "max_priority is below priority");
    return 0;
}

static int parse_keys(struct pctx *p, yaml_node_t *n, struct kvg_keys_set *s)
{
    if (n->type != YAML_SEQUENCE_NODE)
        return fail(p, n, "keys", "expected a list, found %s", type_name(n));
    size_t cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    s->keys = calloc(cnt ? cnt : 1, sizeof *s->keys);
    if (!s->keys) return -ENOMEM;
    for (size_t i = 0; i < cnt; i++) {
        char path[32];
        snprintf(path, sizeof path, "keys[%zu]", i);
        yaml_node_t *kn = node(p, n->data.sequence.items.start[i]);
        s->nkeys = i + 1; /* so that a failure frees this entry's models */
        int rc = parse_key(p, kn, path, &s->keys[i]);
        if (rc) return rc;
        for (size_t j = 0; j < i; j++) {
            if (!strcmp(s->keys[j].name, s->keys[i].name))
                return fail(p, kn, path, "name '%s' is already used by keys[%zu] (line %d)",
                            s->keys[i].name, j, s->keys[j].line);
            if (!memcmp(s->keys[j].digest, s->keys[i].digest, 32))
                return fail(p, kn, path, "same hash as keys[%zu] '%s' (line %d)", j,
                            s->keys[j].name, s->keys[j].line);
        }
    }
    return 0;
}

static int parse_tenants(struct pctx *p, yaml_node_t *n, struct kvg_keys_set *s)
{
    int rc = check_map(p, n, "tenants");
    if (rc) return rc;
    size_t cnt = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    s->tenants = calloc(cnt ? cnt : 1, sizeof *s->tenants);
    if (!s->tenants) return -ENOMEM;
    char path[256], sub[400];
    FOR_PAIRS(p, n, tp, tname, tv)
    {
        struct kvg_keys_tenant *t = &s->tenants[s->ntenants++];
        snprintf(path, sizeof path, "tenants.%s", tname);
        if (!name_ok(tname))
            return fail(p, node(p, tp->key), "tenants",
                        "'%s' is not a valid tenant name (1-64 of A-Z a-z 0-9 . _ @ / -)", tname);
        snprintf(t->name, sizeof t->name, "%s", tname);
        kvg_quota_limits_none(&t->limits);
        if ((rc = check_map(p, tv, path))) return rc;
        FOR_PAIRS(p, tv, tkp, k, v)
        {
            join(sub, sizeof sub, path, k);
            if (!strcmp(k, "limits")) {
                if ((rc = parse_limits(p, v, sub, &t->limits))) return rc;
            } else if (!strcmp(k, "models")) {
                if ((rc = check_map(p, v, sub))) return rc;
                size_t mc = (size_t)(v->data.mapping.pairs.top - v->data.mapping.pairs.start);
                t->models = calloc(mc ? mc : 1, sizeof *t->models);
                if (!t->models) return -ENOMEM;
                /* An inner pair loop: the outer macro's variables stay intact. */
                for (yaml_node_pair_t *mp = v->data.mapping.pairs.start;
                     mp < v->data.mapping.pairs.top; mp++) {
                    const char *mname = sval(node(p, mp->key));
                    char msub[400];
                    join(msub, sizeof msub, sub, mname);
                    if (!model_ok(mname))
                        return fail(p, node(p, mp->key), sub, "'%s' is not a model name or pattern",
                                    mname);
                    struct kvg_keys_tmodel *tm = &t->models[t->nmodels++];
                    snprintf(tm->pattern, sizeof tm->pattern, "%s", mname);
                    if ((rc = parse_limits(p, node(p, mp->value), msub, &tm->limits))) return rc;
                }
            } else {
                return fail(p, node(p, tkp->key), path,
                            "unknown key '%s' (expected limits, models)", k);
            }
        }
    }
    return 0;
}

static int parse_counting(struct pctx *p, yaml_node_t *n, struct kvg_quota_counting *c)
{
    int rc = check_map(p, n, "counting");
    if (rc) return rc;
    int have_weights = 0;
    yaml_node_t *wnode = NULL;
    FOR_PAIRS(p, n, cp, k, v)
    {
        if (!strcmp(k, "mode")) {
            const char *s = sval(v);
            static const char *modes[] = {"total", "input", "output", "weighted"};
            int found = -1;
            for (int i = 0; i < 4; i++)
                if (s && !strcmp(s, modes[i])) found = i;
            if (found < 0)
                return fail(p, v, "counting.mode",
                            "'%s' is not a mode (input, output, total or weighted)",
                            s ? s : type_name(v));
            c->mode = (enum kvg_quota_mode)found;
        } else if (!strcmp(k, "weights")) {
            if ((rc = check_map(p, v, "counting.weights"))) return rc;
            have_weights = 1;
            wnode = v;
            FOR_PAIRS(p, v, wp, wk, wv)
            {
                char sub[96];
                snprintf(sub, sizeof sub, "counting.weights.%s", wk);
                double *dst = !strcmp(wk, "input")          ? &c->w_input
                              : !strcmp(wk, "cached_input") ? &c->w_cached_input
                              : !strcmp(wk, "output")       ? &c->w_output
                                                            : NULL;
                if (!dst)
                    return fail(p, node(p, wp->key), "counting.weights",
                                "unknown weight '%s' (expected input, cached_input, output)", wk);
                if ((rc = parse_double(p, wv, sub, dst))) return rc;
            }
        } else {
            return fail(p, node(p, cp->key), "counting",
                        "unknown key '%s' (expected mode, weights)", k);
        }
    }
    if (have_weights && c->mode != KVG_QM_WEIGHTED)
        return fail(p, wnode, "counting.weights", "weights apply only with mode: weighted");
    return 0;
}

static void set_free(struct kvg_keys_set *s)
{
    for (size_t i = 0; i < s->nkeys; i++) free(s->keys[i].models);
    for (size_t i = 0; i < s->ntenants; i++) free(s->tenants[i].models);
    free(s->keys);
    free(s->tenants);
    free(s);
}

int kvg_keys_parse(const char *yaml, size_t len, const char *name, struct kvg_keys_set **out,
                   char *err, size_t errlen)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    struct pctx p = {&doc, name ? name : "keys", err, errlen};
    if (!yaml_parser_initialize(&parser)) return -ENOMEM;
    yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
    if (!yaml_parser_load(&parser, &doc)) {
        snprintf(err, errlen, "%s:%d: YAML: %s", p.file, (int)parser.problem_mark.line + 1,
                 parser.problem ? parser.problem : "syntax error");
        yaml_parser_delete(&parser);
        return KVG_ECONFIG;
    }
    yaml_parser_delete(&parser);
    struct kvg_keys_set *s = calloc(1, sizeof *s);
    int rc = -ENOMEM, have_keys = 0;
    if (!s) goto out;
    atomic_init(&s->refs, 1);
    kvg_quota_counting_default(&s->counting);
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root) {
        rc = fail(&p, NULL, NULL, "the file is empty (expected a 'keys' list)");
        goto out;
    }
    if ((rc = check_map(&p, root, "(top level)"))) goto out;
    FOR_PAIRS(&p, root, rp, k, v)
    {
        if (!strcmp(k, "keys")) {
            have_keys = 1;
            rc = parse_keys(&p, v, s);
        } else if (!strcmp(k, "tenants")) {
            rc = parse_tenants(&p, v, s);
        } else if (!strcmp(k, "counting")) {
            rc = parse_counting(&p, v, &s->counting);
        } else {
            rc = fail(&p, node(&p, rp->key), NULL,
                      "unknown top-level key '%s' (expected keys, tenants, counting)", k);
        }
        if (rc) goto out;
    }
    if (!have_keys) rc = fail(&p, root, NULL, "no 'keys' list");
out:
    yaml_document_delete(&doc);
    if (rc) {
        if (s) set_free(s);
        return rc;
    }
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

enum kvg_keys_auth kvg_keys_authenticate_memo(const struct kvg_keys_set *s, struct kvg_str h,
                                              unsigned char memo[32], int *memo_set,
                                              const struct kvg_keys_entry **out)
{
    *out = NULL;
    if (!h.p) return KVG_KEYS_AUTH_MISSING;
    while (h.len && (*h.p == ' ' || *h.p == '\t')) h.p++, h.len--;
    if (h.len >= 6 && !strncasecmp(h.p, "basic", 5) && (h.p[5] == ' ' || h.p[5] == '\t'))
        return basic(s, (struct kvg_str){h.p + 6, h.len - 6}, memo, memo_set, out);
    if (h.len < 7 || strncasecmp(h.p, "bearer", 6) || (h.p[6] != ' ' && h.p[6] != '\t'))
        return KVG_KEYS_AUTH_MALFORMED;
    h.p += 7;
    h.len -= 7;
    while (h.len && (*h.p == ' ' || *h.p == '\t')) h.p++, h.len--;
    while (h.len && (h.p[h.len - 1] == ' ' || h.p[h.len - 1] == '\t')) h.len--;
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

void kvg_keys_holder_init(struct kvg_keys_holder *h, struct kvg_keys_set *s)
{
    pthread_mutex_init(&h->mu, NULL);
    h->cur = s;
}

void kvg_keys_holder_destroy(struct kvg_keys_holder *h)
{
    kvg_keys_unref(h->cur);
    h->cur = NULL;
    pthread_mutex_destroy(&h->mu);
}

struct kvg_keys_set *kvg_keys_acquire(struct kvg_keys_holder *h)
{
    /* A mutex rather than a bare atomic pointer: loading the pointer and
     * taking the reference must be one step, or a swap in between could free
     * the set under the reader. */
    pthread_mutex_lock(&h->mu);
    struct kvg_keys_set *s = h->cur;
    kvg_keys_ref(s);
    pthread_mutex_unlock(&h->mu);
    return s;
}

void kvg_keys_swap(struct kvg_keys_holder *h, struct kvg_keys_set *s)
{
    pthread_mutex_lock(&h->mu);
    struct kvg_keys_set *old = h->cur;
    h->cur = s;
    pthread_mutex_unlock(&h->mu);
    kvg_keys_unref(old);
}
