/* The model catalog (router/catalog.h): built from the config's models:
 * entries in passes (each entry alone, the names, the alias chains, the
 * splits, the fallbacks, the workers, then each served model's settings),
 * each pass refusing what it finds wrong with the entry's file:line; then
 * resolution, which reads the built arrays only. */
#include "router/catalog.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "base/err.h"

struct kvg_catalog_url {
    const char *url;
    size_t len; /* without trailing '/' */
    int model, spec, worker;
};

/* A build's working state. */
struct build {
    const struct kvg_catalog_spec *sp;
    size_t n;
    const struct kvg_catalog_top *top;
    struct kvg_catalog *c;
    char *err;
    size_t errlen;
    int *end;     /* per entry: the entry its alias chain ends at (itself when no alias) */
    int *model;   /* per entry: its served model, -1 */
    int *split;   /* per entry: its split, -1 */
    int *owner;   /* per name: its entry */
    int *own;     /* per entry: its own name's index */
    int *mark;    /* per entry: the alias walk that last passed it (its start + 1) */
    int **direct; /* per model: its own fallbacks (models) */
    size_t *ndirect;
};

static const char *file_of(const struct build *b)
{
    return b->top->file && b->top->file[0] ? b->top->file : "config";
}

/* An error at entry i (line: its own line when 0). */
static int fail(struct build *b, size_t i, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(struct build *b, size_t i, int line, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return kvg_err_set(b->err, b->errlen, KVG_ECONFIG, "%s:%d: models[%zu] '%s': %s", file_of(b),
                       line ? line : b->sp[i].line, i, b->sp[i].name, msg);
}

/* A copy of s the catalog owns, or NULL (out of memory). */
static const char *keep(struct kvg_catalog *c, const char *s)
{
    if (c->nstrs == c->capstrs) {
        size_t cap = c->capstrs ? 2 * c->capstrs : 64;
        char **p = realloc(c->strs, cap * sizeof *p);
        if (!p) return NULL;
        c->strs = p;
        c->capstrs = cap;
    }
    char *d = strdup(s);
    if (d) c->strs[c->nstrs++] = d;
    return d;
}

static const char *keep_where(struct build *b, int line)
{
    char w[KVG_CATALOG_PATH_MAX + 32];
    snprintf(w, sizeof w, "%s:%d", file_of(b), line);
    return keep(b->c, w);
}

static int cmp_bytes(const char *a, size_t la, const char *b, size_t lb)
{
    int r = memcmp(a, b, la < lb ? la : lb);
    return r ? r : (la > lb) - (la < lb);
}

/* A name to sort: its bytes and its index in names[]. */
struct sorted {
    const char *name;
    size_t len;
    int index;
};

static int sorted_cmp(const void *x, const void *y)
{
    const struct sorted *a = x, *b = y;
    int r = cmp_bytes(a->name, a->len, b->name, b->len);
    return r ? r : (a->index > b->index) - (a->index < b->index); /* ties: the file's order */
}

int kvg_catalog_find(const struct kvg_catalog *c, const char *name, size_t len)
{
    size_t lo = 0, hi = name ? c->nnames : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct kvg_catalog_name *e = &c->names[c->by_name[mid]];
        int r = cmp_bytes(e->name, e->len, name, len);
        if (!r) return c->by_name[mid];
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static int spec_find(struct build *b, const char *name)
{
    int k = kvg_catalog_find(b->c, name, strlen(name));
    return k < 0 ? -1 : b->owner[k];
}

/* Settings only a model with workers has: the first one s gives. */
static const char *model_setting(const struct kvg_catalog_spec *s)
{
    return s->tokenizer[0]          ? "tokenizer"
           : s->tokenizer_config[0] ? "tokenizer_config"
           : s->chat_template[0]    ? "chat_template"
           : s->block_size          ? "block_size"
           : s->max_model_len       ? "max_model_len"
           : s->max_inflight        ? "max_inflight"
           : s->max_queue           ? "max_queue"
           : s->slo_ttft_s > 0      ? "slo_ttft_secs"
           : s->slo_itl_s > 0       ? "slo_itl_secs"
           : s->policy[0]           ? "policy"
           : s->policy_set          ? "a policy option"
           : s->fallbacks.n         ? "fallbacks"
                                    : NULL;
}

/* Whether the host starts s's workers itself (top->scaled names it). */
static int scaled(const struct build *b, const struct kvg_catalog_spec *s)
{
    for (size_t k = 0; k < b->top->nscaled; k++) {
        const char *n = b->top->scaled[k];
        if (!strcmp(n, s->name)) return 1;
        for (size_t j = 0; j < s->aliases.n; j++)
            if (!strcmp(n, s->aliases.v[j])) return 1;
    }
    return 0;
}

/* Whether entry s is a served model: it lists workers, or (with
 * discovery by a model label, or workers the host starts) it is neither a
 * split nor an alias. */
static int is_model(const struct build *b, const struct kvg_catalog_spec *s)
{
    return s->nworkers || ((b->top->discovered || scaled(b, s)) && !s->nsplit && !s->alias_of[0]);
}

/* Pass 1: each entry alone. */
static int check_entry(struct build *b, size_t i)
{
    const struct kvg_catalog_spec *s = &b->sp[i];
    int kinds = (s->nworkers > 0) + (s->nsplit > 0) + (s->alias_of[0] != 0);
    if (!s->name[0]) return fail(b, i, 0, "an empty name");
    if (kinds > 1) return fail(b, i, 0, "workers, split and alias_of exclude each other");
    if (!kinds && !b->top->discovered && !scaled(b, s))
        return fail(b, i, 0,
                    "no workers, split or alias_of: nothing would serve it (aliases name more "
                    "names for an entry that has one of them)");
    const char *set = model_setting(s);
    if (!is_model(b, s) && set)
        return fail(b, i, 0, "%s: only a model with workers has one (this entry is %s)", set,
                    s->nsplit ? "a split" : "an alias");
    if (s->nworkers > KVG_CATALOG_MAX_WORKERS || s->nsplit > KVG_CATALOG_MAX_SPLIT)
        return fail(b, i, 0, "too many workers or split entries");
    if (!(s->slo_ttft_s > 0) != !(s->slo_itl_s > 0)) /* a request's outcome needs both */
        return fail(b, i, 0, "slo_ttft_secs and slo_itl_secs go together");
    if (s->fallbacks.n > KVG_CATALOG_MAX_FALLBACKS)
        return fail(b, i, 0, "at most %d fallbacks", KVG_CATALOG_MAX_FALLBACKS);
    for (size_t k = 0; k < s->fallbacks.n; k++)
        for (size_t j = 0; j < k; j++)
            if (!strcmp(s->fallbacks.v[j], s->fallbacks.v[k]))
                return fail(b, i, 0, "fallbacks: '%s' twice", s->fallbacks.v[k]);
    if (s->policy[0] && !kvg_policy_known(s->policy))
        return fail(b, i, 0, "unknown policy '%s' (known: %s)", s->policy, kvg_policy_names());
    if (s->nsplit) {
        double sum = 0;
        for (size_t k = 0; k < s->nsplit; k++) {
            if (!(s->split[k].weight >= 0 && s->split[k].weight <= 100))
                return fail(b, i, s->split[k].line, "split: weight of '%s' outside 0..100",
                            s->split[k].model);
            sum += s->split[k].weight;
        }
        if (fabs(sum - 100) > 1e-6) return fail(b, i, 0, "split weights sum to %g, not 100", sum);
    }
    size_t role[4] = {0}; /* regular, prefill, decode, encode */
    for (size_t k = 0; k < s->nworkers; k++) {
        const struct kvg_catalog_worker *w = &s->workers[k];
        const char *r = w->role;
        if (!w->url[0]) return fail(b, i, w->line, "a worker without a URL");
        int x = !r[0] || !strcmp(r, "regular") ? 0
                : !strcmp(r, "prefill")        ? 1
                : !strcmp(r, "decode")         ? 2
                : !strcmp(r, "encode")         ? 3
                                               : -1;
        if (x < 0)
            return fail(b, i, w->line, "worker role '%s': one of regular, prefill, decode, encode",
                        r);
        role[x]++;
    }
    if (!role[1] != !role[2])
        return fail(b, i, 0, "%s workers without %s workers: a prefill/decode pair needs both",
                    role[1] ? "prefill" : "decode", role[1] ? "decode" : "prefill");
    if (role[3] && !role[1]) return fail(b, i, 0, "encode workers without prefill/decode workers");
    return 0;
}

static int add_name(struct build *b, size_t spec, const char *name, enum kvg_catalog_kind kind)
{
    struct kvg_catalog_name *e = &b->c->names[b->c->nnames];
    if (!(e->name = keep(b->c, name)) || !(e->where = keep_where(b, b->sp[spec].line)))
        return -ENOMEM;
    e->len = strlen(name);
    e->kind = kind;
    e->model = e->split = -1;
    b->owner[b->c->nnames++] = (int)spec;
    return 0;
}

static int sort_names(struct kvg_catalog *c)
{
    struct sorted *t = malloc((c->nnames ? c->nnames : 1) * sizeof *t);
    if (!t) return -ENOMEM;
    for (size_t k = 0; k < c->nnames; k++)
        t[k] = (struct sorted){c->names[k].name, c->names[k].len, (int)k};
    qsort(t, c->nnames, sizeof *t, sorted_cmp);
    for (size_t k = 0; k < c->nnames; k++) c->by_name[k] = t[k].index;
    free(t);
    return 0;
}

/* Pass 2: every name and alias, distinct. */
static int collect_names(struct build *b)
{
    struct kvg_catalog *c = b->c;
    size_t total = 0;
    for (size_t i = 0; i < b->n; i++) total += 1 + b->sp[i].aliases.n;
    if (!(c->names = calloc(total, sizeof *c->names)) ||
        !(c->by_name = calloc(total, sizeof *c->by_name)) ||
        !(b->owner = calloc(total, sizeof *b->owner)) || !(b->own = calloc(b->n, sizeof *b->own)))
        return -ENOMEM;
    for (size_t i = 0; i < b->n; i++) {
        const struct kvg_catalog_spec *s = &b->sp[i];
        enum kvg_catalog_kind k = is_model(b, s) ? KVG_CATALOG_MODEL
                                  : s->nsplit    ? KVG_CATALOG_SPLIT
                                                 : KVG_CATALOG_ALIAS;
        b->own[i] = (int)c->nnames;
        int rc = add_name(b, i, s->name, k);
        for (size_t a = 0; !rc && a < s->aliases.n; a++) {
            if (!s->aliases.v[a][0]) return fail(b, i, 0, "aliases: an empty name");
            rc = add_name(b, i, s->aliases.v[a], KVG_CATALOG_ALIAS);
        }
        if (rc) return rc;
    }
    int rc = sort_names(c);
    if (rc) return rc;
    for (size_t k = 1; k < c->nnames; k++) {
        const struct kvg_catalog_name *p = &c->names[c->by_name[k - 1]],
                                      *q = &c->names[c->by_name[k]];
        if (cmp_bytes(p->name, p->len, q->name, q->len)) continue;
        size_t first = (size_t)b->owner[c->by_name[k - 1]], later = (size_t)b->owner[c->by_name[k]];
        /* The later claim (in the file's order) is the one refused. */
        int is_alias = c->by_name[k] != b->own[later];
        return fail(b, later, 0, "%s '%s' is already claimed by models[%zu] '%s' (line %d)",
                    is_alias ? "alias" : "name", q->name, first, b->sp[first].name,
                    b->sp[first].line);
    }
    return 0;
}

/* Pass 3: alias_of chains end at a model or a split. A loop is reported
 * at the first entry of the file whose chain runs into it. */
static int follow_aliases(struct build *b)
{
    if (!(b->mark = calloc(b->n, sizeof *b->mark))) return -ENOMEM;
    for (size_t i = 0; i < b->n; i++) {
        int cur = (int)i;
        char path[1024];
        size_t len = (size_t)snprintf(path, sizeof path, "%s", b->sp[i].name);
        b->mark[i] = (int)i + 1;
        while (b->sp[cur].alias_of[0]) {
            const char *to = b->sp[cur].alias_of;
            int next = spec_find(b, to);
            if (next < 0) return fail(b, (size_t)cur, 0, "alias_of: unknown name '%s'", to);
            if (len < sizeof path)
                len += (size_t)snprintf(path + len, sizeof path - len, " -> %s", to);
            if (b->mark[next] == (int)i + 1) return fail(b, i, 0, "alias_of loops: %s", path);
            b->mark[next] = (int)i + 1;
            cur = next;
        }
        b->end[i] = cur;
    }
    return 0;
}

/* The served model a name stands for (through aliases), or -1 with what it
 * is instead in *why. */
static int model_named(struct build *b, const char *name, const char **why)
{
    int s = spec_find(b, name);
    if (s < 0) {
        *why = "unknown";
        return -1;
    }
    int m = b->model[b->end[s]];
    if (m < 0) *why = "a split";
    return m;
}

/* Pass 4: splits name served models, each once. */
static int build_splits(struct build *b)
{
    struct kvg_catalog *c = b->c;
    for (size_t i = 0; i < b->n; i++) {
        const struct kvg_catalog_spec *s = &b->sp[i];
        if (!s->nsplit) continue;
        struct kvg_catalog_split *x = &c->splits[c->nsplits];
        double upto = 0;
        for (size_t k = 0; k < s->nsplit; k++) {
            const char *why = "";
            int m = model_named(b, s->split[k].model, &why);
            if (m < 0)
                return fail(b, i, s->split[k].line, "split: '%s' is %s%s", s->split[k].model, why,
                            *why == 'a' ? " (a split of a split is refused: name its models)"
                                        : " (no entry has that name or alias)");
            for (size_t j = 0; j < k; j++)
                if (x->model[j] == m)
                    return fail(b, i, s->split[k].line, "split: '%s' is model '%s' again",
                                s->split[k].model, c->models[m].name);
            upto += s->split[k].weight;
            x->model[k] = m;
            x->upto[k] = upto;
        }
        x->upto[s->nsplit - 1] = 100;
        x->n = s->nsplit;
        x->seed = XXH3_64bits(s->name, strlen(s->name));
        if (!(x->name = keep(c, s->name)) || !(x->where = keep_where(b, s->line))) return -ENOMEM;
        b->split[i] = (int)c->nsplits++;
    }
    return 0;
}

/* Pass 5a: each model's own fallbacks, as models. */
static int direct_fallbacks(struct build *b)
{
    for (size_t i = 0; i < b->n; i++) {
        const struct kvg_catalog_spec *s = &b->sp[i];
        int m = b->model[i];
        if (m < 0) continue;
        if (!(b->direct[m] = calloc(s->fallbacks.n + 1, sizeof **b->direct))) return -ENOMEM;
        for (size_t k = 0; k < s->fallbacks.n; k++) {
            const char *why = "";
            int f = model_named(b, s->fallbacks.v[k], &why);
            if (f < 0)
                return fail(b, i, 0, "fallbacks: '%s' is %s (fallbacks name models)",
                            s->fallbacks.v[k], why);
            for (size_t j = 0; j < b->ndirect[m]; j++)
                if (b->direct[m][j] == f)
                    return fail(b, i, 0, "fallbacks: '%s' is model '%s' again", s->fallbacks.v[k],
                                b->c->models[f].name);
            b->direct[m][b->ndirect[m]++] = f;
        }
    }
    return 0;
}

/* Depth-first from m: the loop's first model on the stack (its models
 * stack[that..depth]), or -1 when none is reachable. */
static int loop_from(struct build *b, int m, unsigned char *state, int *stack, size_t depth,
                     size_t *top)
{
    state[m] = 1; /* on the stack */
    stack[depth] = m;
    for (size_t k = 0; k < b->ndirect[m]; k++) {
        int f = b->direct[m][k], d;
        if (state[f] == 1) {
            *top = depth;
            d = 0;
            while (stack[d] != f) d++;
            return d;
        }
        if (!state[f] && (d = loop_from(b, f, state, stack, depth + 1, top)) >= 0) return d;
    }
    state[m] = 2; /* done: no loop through it */
    return -1;
}

/* A fallback loop's error, told from its first model in the file (models
 * are in the file's order): "a -> b -> a". */
static int loop_error(struct build *b, const int *loop, size_t n, const int *spec_of)
{
    size_t first = 0, len = 0;
    char path[1024];
    for (size_t k = 1; k < n; k++)
        if (loop[k] < loop[first]) first = k;
    for (size_t k = 0; k <= n && len < sizeof path; k++)
        len += (size_t)snprintf(path + len, sizeof path - len, "%s%s", k ? " -> " : "",
                                b->c->models[loop[(first + k) % n]].name);
    return fail(b, (size_t)spec_of[loop[first]], 0, "fallbacks loop: %s", path);
}

/* Pass 5b: no fallback chain loops; each model's chain, breadth first. */
static int chain_fallbacks(struct build *b, const int *spec_of)
{
    struct kvg_catalog *c = b->c;
    size_t n = c->nmodels, top = 0;
    unsigned char *state = calloc(n, 1);
    int *stack = calloc(n, sizeof *stack), *seen = calloc(n, sizeof *seen), d;
    int rc = state && stack && seen ? 0 : -ENOMEM;
    for (size_t m = 0; !rc && m < n; m++)
        if (!state[m] && (d = loop_from(b, (int)m, state, stack, 0, &top)) >= 0)
            rc = loop_error(b, stack + d, top + 1 - (size_t)d, spec_of);
    for (size_t m = 0; !rc && m < n; m++) {
        int *q = calloc(n, sizeof *q);
        if (!q) {
            rc = -ENOMEM;
            break;
        }
        size_t head = 0, tail = 0;
        memset(seen, 0, n * sizeof *seen);
        seen[m] = 1;
        q[tail++] = (int)m;
        while (head < tail) {
            int x = q[head++];
            for (size_t k = 0; k < b->ndirect[x]; k++)
                if (!seen[b->direct[x][k]]) {
                    seen[b->direct[x][k]] = 1;
                    q[tail++] = b->direct[x][k];
                }
        }
        memmove(q, q + 1, (tail - 1) * sizeof *q); /* the model itself is not its fallback */
        if (tail == 1) {
            free(q);
            q = NULL;
        }
        c->models[m].fallbacks = q;
        c->models[m].nfallbacks = tail - 1;
    }
    free(state);
    free(stack);
    free(seen);
    return rc;
}

static size_t url_len(const char *u)
{
    size_t n = strlen(u);
    while (n && u[n - 1] == '/') n--;
    return n;
}

static int by_url_cmp(const void *x, const void *y)
{
    const struct kvg_catalog_url *a = x, *b = y;
    int r = cmp_bytes(a->url, a->len, b->url, b->len);
    if (r) return r;
    return a->spec != b->spec ? (a->spec > b->spec) - (a->spec < b->spec)
                              : (a->worker > b->worker) - (a->worker < b->worker);
}

/* Pass 6: every worker under one model, once. */
static int index_workers(struct build *b)
{
    struct kvg_catalog *c = b->c;
    size_t total = 0;
    for (size_t m = 0; m < c->nmodels; m++) total += c->models[m].nworkers;
    if (total > KVG_CATALOG_MAX_WORKERS)
        return kvg_err_set(b->err, b->errlen, KVG_ECONFIG,
                           "%s: models: %zu workers in all, at most %d", file_of(b), total,
                           KVG_CATALOG_MAX_WORKERS);
    if (total && !(c->by_url = calloc(total, sizeof *c->by_url))) return -ENOMEM;
    for (size_t i = 0; i < b->n; i++)
        for (size_t k = 0; k < b->sp[i].nworkers; k++) {
            struct kvg_catalog_url *u = &c->by_url[c->nurls++];
            u->url = c->models[b->model[i]].workers[k].url;
            u->len = url_len(u->url);
            u->model = b->model[i];
            u->spec = (int)i;
            u->worker = (int)k;
        }
    if (c->nurls) /* none: no entry lists workers (discovered models only; by_url NULL) */
        qsort(c->by_url, c->nurls, sizeof *c->by_url, by_url_cmp);
    for (size_t k = 1; k < c->nurls; k++) {
        const struct kvg_catalog_url *p = &c->by_url[k - 1], *q = &c->by_url[k];
        if (cmp_bytes(p->url, p->len, q->url, q->len)) continue;
        if (p->spec == q->spec)
            return fail(b, (size_t)q->spec, b->sp[q->spec].workers[q->worker].line,
                        "worker %s is listed twice (line %d)", q->url,
                        b->sp[p->spec].workers[p->worker].line);
        return fail(b, (size_t)q->spec, b->sp[q->spec].workers[q->worker].line,
                    "worker %s is already under models[%d] '%s' (line %d)", q->url, p->spec,
                    b->sp[p->spec].name, b->sp[p->spec].workers[p->worker].line);
    }
    return 0;
}

static int is_dir(const char *p)
{
    struct stat st;
    return p[0] && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* A tokenizer given as a model directory: its files. */
static int tokenizer_files(struct build *b, size_t i, struct kvg_catalog_model *m)
{
    char tok[KVG_CATALOG_PATH_MAX + 32], cfg[KVG_CATALOG_PATH_MAX + 32];
    if (!is_dir(m->tokenizer)) return 0;
    snprintf(tok, sizeof tok, "%s/tokenizer.json", m->tokenizer);
    snprintf(cfg, sizeof cfg, "%s/tokenizer_config.json", m->tokenizer);
    if (!is_file(tok))
        return b->n ? fail(b, i, 0, "tokenizer: %s is a directory without tokenizer.json",
                           m->tokenizer)
                    : kvg_err_set(b->err, b->errlen, KVG_ECONFIG,
                                  "tokenizer: %s is a directory without tokenizer.json",
                                  m->tokenizer);
    if (!m->tokenizer_config[0] && is_file(cfg) && !(m->tokenizer_config = keep(b->c, cfg)))
        return -ENOMEM;
    return (m->tokenizer = keep(b->c, tok)) ? 0 : -ENOMEM;
}

static const char *or_top(const char *own, const char *top)
{
    return own && own[0] ? own : top ? top : "";
}

/* Pass 7: a served model's settings: its entry's, else the top level's
 * (s NULL: the top level's one model). */
static int settle(struct build *b, size_t i, const struct kvg_catalog_spec *s,
                  struct kvg_catalog_model *m)
{
    const struct kvg_catalog_top *t = b->top;
    struct kvg_catalog *c = b->c;
    int own_tok = s && s->tokenizer[0];
    m->entry = s ? (int)i : -1;
    m->name = keep(c, s ? s->name : "");
    m->where = s ? keep_where(b, s->line) : keep(c, "");
    m->tokenizer = keep(c, or_top(s ? s->tokenizer : NULL, t->tokenizer));
    m->tokenizer_config =
        keep(c, or_top(s ? s->tokenizer_config : NULL, own_tok ? "" : t->tokenizer_config));
    m->chat_template =
        keep(c, or_top(s ? s->chat_template : NULL, own_tok ? "" : t->chat_template));
    m->policy = keep(c, or_top(s ? s->policy : NULL, t->policy));
    if (!m->name || !m->where || !m->tokenizer || !m->tokenizer_config || !m->chat_template ||
        !m->policy)
        return -ENOMEM;
    m->block_size = s && s->block_size ? s->block_size : t->block_size;
    m->max_model_len = s ? s->max_model_len : 0;
    m->max_inflight = s ? s->max_inflight : 0;
    m->max_queue = s ? s->max_queue : 0;
    int own_slo = s && s->slo_ttft_s > 0;
    m->slo_ttft_s = own_slo ? s->slo_ttft_s : t->slo_ttft_s;
    m->slo_itl_s = own_slo ? s->slo_itl_s : t->slo_itl_s;
    if (t->policy_opts)
        m->policy_opts = *t->policy_opts;
    else
        kvg_policy_opts_default(&m->policy_opts);
    for (size_t k = 0; s && k < 64 && kvg_policy_opt_table[k].name; k++)
        if (s->policy_set & (1ull << k))
            kvg_opt_copy(&kvg_policy_opt_table[k], &m->policy_opts, &s->policy_opts);
    m->policy_opts.block_size = m->block_size;
    if (!m->block_size)
        return s ? fail(b, i, 0, "block_size must be at least 1")
                 : kvg_err_set(b->err, b->errlen, KVG_ECONFIG, "--block-size must be at least 1");
    if (!kvg_policy_known(m->policy))
        return kvg_err_set(b->err, b->errlen, KVG_ECONFIG, "unknown policy '%s' (known: %s)",
                           m->policy, kvg_policy_names());
    const struct kvg_catalog_worker *w = s ? s->workers : t->workers;
    size_t nw = s ? s->nworkers : t->nworkers;
    if (nw) {
        struct kvg_catalog_worker *copy = malloc(nw * sizeof *copy);
        if (!copy) return -ENOMEM;
        memcpy(copy, w, nw * sizeof *copy);
        m->workers = copy;
        m->nworkers = nw;
    }
    return tokenizer_files(b, i, m);
}

static void catalog_free(struct kvg_catalog *c)
{
    for (size_t m = 0; m < c->nmodels; m++) {
        free((void *)c->models[m].workers);
        free((void *)c->models[m].fallbacks);
    }
    for (size_t k = 0; k < c->nstrs; k++) free(c->strs[k]);
    free(c->strs);
    free(c->models);
    free(c->names);
    free(c->by_name);
    free(c->splits);
    free(c->by_url);
    free(c);
}

/* The passes over the entries (b->n > 0). */
static int build_entries(struct build *b)
{
    struct kvg_catalog *c = b->c;
    int rc = 0, *spec_of = NULL;
    if (b->n > KVG_CATALOG_MAX_MODELS)
        return kvg_err_set(b->err, b->errlen, KVG_ECONFIG, "models: at most %d entries",
                           KVG_CATALOG_MAX_MODELS);
    for (size_t i = 0; !rc && i < b->n; i++) rc = check_entry(b, i);
    if (rc || (rc = collect_names(b)) || (rc = follow_aliases(b))) return rc;
    if (!(c->models = calloc(b->n, sizeof *c->models)) ||
        !(c->splits = calloc(b->n, sizeof *c->splits)) ||
        !(spec_of = calloc(b->n, sizeof *spec_of)) ||
        !(b->direct = calloc(b->n, sizeof *b->direct)) ||
        !(b->ndirect = calloc(b->n, sizeof *b->ndirect))) {
        free(spec_of);
        return -ENOMEM;
    }
    for (size_t i = 0; i < b->n; i++)
        if (is_model(b, &b->sp[i])) {
            spec_of[c->nmodels] = (int)i;
            b->model[i] = (int)c->nmodels++;
        }
    for (size_t i = 0; !rc && i < c->nmodels; i++)
        rc = settle(b, (size_t)spec_of[i], &b->sp[spec_of[i]], &c->models[i]);
    if (!rc) rc = build_splits(b);
    if (!rc) rc = direct_fallbacks(b);
    if (!rc) rc = chain_fallbacks(b, spec_of);
    if (!rc) rc = index_workers(b);
    for (size_t k = 0; !rc && k < c->nnames; k++) {
        int end = b->end[b->owner[k]];
        c->names[k].model = b->model[end];
        c->names[k].split = b->split[end];
    }
    for (size_t m = 0; b->direct && m < b->n; m++) free(b->direct[m]);
    free(spec_of);
    return rc;
}

int kvg_catalog_build(const struct kvg_catalog_spec *specs, size_t n,
                      const struct kvg_catalog_top *top, struct kvg_catalog **out, char *err,
                      size_t errlen)
{
    *out = NULL;
    struct kvg_catalog *c = calloc(1, sizeof *c);
    struct build b = {.sp = specs, .n = n, .top = top, .c = c, .err = err, .errlen = errlen};
    int rc = c ? 0 : -ENOMEM;
    if (!rc) {
        atomic_init(&c->refs, 1);
        c->any = -1;
    }
    if (!rc && n) {
        b.end = calloc(n, sizeof *b.end);
        b.model = malloc(n * sizeof *b.model);
        b.split = malloc(n * sizeof *b.split);
        if (!b.end || !b.model || !b.split) rc = -ENOMEM;
        for (size_t i = 0; !rc && i < n; i++) b.model[i] = b.split[i] = -1;
        if (!rc) rc = build_entries(&b);
    } else if (!rc) { /* the single-model flags: one model, any name */
        if (!(c->models = calloc(1, sizeof *c->models))) rc = -ENOMEM;
        if (!rc && !(rc = settle(&b, 0, NULL, &c->models[0]))) {
            c->nmodels = 1;
            c->any = 0;
        } else if (c->models) {
            c->nmodels = 1; /* freed with what it holds */
        }
    }
    free(b.end);
    free(b.model);
    free(b.split);
    free(b.owner);
    free(b.own);
    free(b.mark);
    free(b.direct);
    free(b.ndirect);
    if (rc == -ENOMEM) kvg_err_set(err, errlen, rc, "models: out of memory");
    if (rc) {
        if (c) catalog_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void kvg_catalog_ref(struct kvg_catalog *c)
{
    if (c) atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
}

void kvg_catalog_unref(struct kvg_catalog *c)
{
    if (!c || atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1) return;
    for (size_t i = 0; c->host_free && i < c->nmodels; i++)
        if (c->models[i].host) c->host_free(c->models[i].host);
    catalog_free(c);
}

static void cat_ref(void *c)
{
    kvg_catalog_ref(c);
}

static void cat_unref(void *c)
{
    kvg_catalog_unref(c);
}

void kvg_catalog_holder_init(struct kvg_catalog_holder *h, struct kvg_catalog *c)
{
    kvg_holder_init(&h->h, c, cat_ref, cat_unref);
}

void kvg_catalog_holder_destroy(struct kvg_catalog_holder *h)
{
    kvg_holder_destroy(&h->h);
}

struct kvg_catalog *kvg_catalog_acquire(struct kvg_catalog_holder *h)
{
    return kvg_holder_acquire(&h->h);
}

void kvg_catalog_swap(struct kvg_catalog_holder *h, struct kvg_catalog *c)
{
    kvg_holder_swap(&h->h, c);
}

/* A side of split x for the key (its hash with the split's seed), or for
 * r without one: the first whose cumulative weight passes the point. */
static int split_side(const struct kvg_catalog_split *x, const char *key, size_t key_len, double r)
{
    double u = key_len ? (double)(XXH3_64bits_withSeed(key, key_len, x->seed) >> 11) * 0x1p-53
                       : (r >= 0 && r < 1 ? r : 0);
    u *= 100;
    for (size_t k = 0; k < x->n; k++)
        if (u < x->upto[k]) return x->model[k];
    return x->model[x->n - 1];
}

void kvg_catalog_resolve(const struct kvg_catalog *c, const char *name, size_t len, const char *key,
                         size_t key_len, double r, struct kvg_catalog_pick *out)
{
    out->name = name ? kvg_catalog_find(c, name, len) : -1;
    out->model = c->any;
    out->split = -1;
    out->sticky = 0;
    if (out->name < 0) return;
    const struct kvg_catalog_name *e = &c->names[out->name];
    if (e->split < 0) {
        out->model = e->model;
        return;
    }
    out->split = e->split;
    out->sticky = key && key_len > 0;
    out->model =
        split_side(&c->splits[e->split], out->sticky ? key : NULL, out->sticky ? key_len : 0, r);
}

int kvg_catalog_worker_model(const struct kvg_catalog *c, const char *url, const char *label)
{
    if (c->any >= 0) return c->any;
    /* A URL an entry lists is that model's first: a static worker that is
     * also a discovered pod is one worker, the entry's. */
    size_t len = url_len(url), lo = 0, hi = c->nurls;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = cmp_bytes(c->by_url[mid].url, c->by_url[mid].len, url, len);
        if (!r) return c->by_url[mid].model;
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (label && label[0]) {
        int k = kvg_catalog_find(c, label, strlen(label));
        return k < 0 ? -1 : c->names[k].model; /* a split's name serves no worker: -1 */
    }
    return -1;
}
