/* YAML config files as flags: a top-level mapping becomes "--key value"
 * arguments (key underscores turned into dashes), sequences become repeated
 * values after one flag, and a `workers:` list of mappings contributes its
 * `url` entries to --worker-urls. The flag parser then does all validation, so
 * a key means exactly what its flag means. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "base/err.h"
#include "base/util.h"
#include "serve/config.h"

struct argv_buf {
    char **v;
    int n, cap;
};

static int push(struct argv_buf *a, const char *s, size_t len)
{
    if (a->n == a->cap) {
        int cap = a->cap ? a->cap * 2 : 32;
        char **v = realloc(a->v, (size_t)cap * sizeof *v);
        if (!v) return -ENOMEM;
        a->v = v;
        a->cap = cap;
    }
    char *d = malloc(len + 1);
    if (!d) return -ENOMEM;
    memcpy(d, s, len);
    d[len] = 0;
    a->v[a->n++] = d;
    return 0;
}

static int push_flag(struct argv_buf *a, const char *key)
{
    char flag[256];
    int n = snprintf(flag, sizeof flag, "--%s", key);
    if (n < 0 || (size_t)n >= sizeof flag) return -EINVAL;
    for (char *p = flag + 2; *p; p++)
        if (*p == '_') *p = '-';
    return push(a, flag, (size_t)n);
}

static const char *scalar(yaml_document_t *d, yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* workers: [{url: ..., kv_events_endpoint: ..., replay_endpoint: ...,
 * upstream_api_key: ..., role: prefill|decode|encode|regular, labels: k=v,...,
 * bootstrap_port: N}] (or
 * plain URL strings) -> --worker-urls url..., and when any worker names KV
 * endpoints, --kv-events-endpoints / --replay-endpoints in the same order
 * with "none" for the others. */
static int add_workers(struct argv_buf *a, yaml_document_t *d, yaml_node_t *seq, char *err,
                       size_t errlen)
{
    if (seq->type != YAML_SEQUENCE_NODE) {
        snprintf(err, errlen, "config: 'workers' must be a list");
        return KVG_ECONFIG;
    }
    static const char *keys[] = {
        "url",    "kv_events_endpoint", "replay_endpoint", "upstream_api_key", "role",
        "labels", "bootstrap_port"};
    static const char *flags[] = {
        "worker_urls",  "kv_events_endpoints", "replay_endpoints",      "upstream_api_keys",
        "worker_roles", "worker_labels",       "worker_bootstrap_ports"};
    for (size_t col = 0; col < KVG_ARRAY_LEN(keys); col++) {
        int any = 0, rc;
        for (yaml_node_item_t *it = seq->data.sequence.items.start;
             it < seq->data.sequence.items.top; it++) {
            yaml_node_t *w = yaml_document_get_node(d, *it);
            if (col == 0) {
                any = 1;
                break;
            }
            for (yaml_node_pair_t *p =
                     w && w->type == YAML_MAPPING_NODE ? w->data.mapping.pairs.start : NULL;
                 p && p < w->data.mapping.pairs.top; p++) {
                const char *k = scalar(d, yaml_document_get_node(d, p->key));
                if (k && !strcmp(k, keys[col])) any = 1;
            }
        }
        if (!any) continue;
        if ((rc = push_flag(a, flags[col]))) return rc;
        for (yaml_node_item_t *it = seq->data.sequence.items.start;
             it < seq->data.sequence.items.top; it++) {
            yaml_node_t *w = yaml_document_get_node(d, *it);
            const char *v = col == 0 ? scalar(d, w) : NULL;
            if (w && w->type == YAML_MAPPING_NODE) {
                for (yaml_node_pair_t *p = w->data.mapping.pairs.start;
                     p < w->data.mapping.pairs.top; p++) {
                    const char *k = scalar(d, yaml_document_get_node(d, p->key));
                    if (k && !strcmp(k, keys[col]))
                        v = scalar(d, yaml_document_get_node(d, p->value));
                }
            }
            if (!v && col == 0) {
                snprintf(err, errlen, "config: each entry of 'workers' needs a url");
                return KVG_ECONFIG;
            }
            if ((rc = push(a, v ? v : "none", strlen(v ? v : "none")))) return rc;
        }
    }
    return 0;
}

int kvg_yaml_to_args(const char *path, char ***args, int *nargs, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "config: cannot open %s: %s", path, strerror(errno));
        return KVG_ECONFIG;
    }
    yaml_parser_t parser;
    yaml_document_t doc;
    struct argv_buf a = {0};
    int rc = 0;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_file(&parser, f);
    if (!yaml_parser_load(&parser, &doc)) {
        snprintf(err, errlen, "config: %s:%zu: %s", path, parser.problem_mark.line + 1,
                 parser.problem ? parser.problem : "invalid YAML");
        yaml_parser_delete(&parser);
        fclose(f);
        return KVG_ECONFIG;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root && root->type != YAML_MAPPING_NODE) {
        snprintf(err, errlen, "config: %s: the top level must be a mapping", path);
        rc = KVG_ECONFIG;
    }
    for (yaml_node_pair_t *p = root ? root->data.mapping.pairs.start : NULL;
         !rc && root && p < root->data.mapping.pairs.top; p++) {
        const char *key = scalar(&doc, yaml_document_get_node(&doc, p->key));
        yaml_node_t *val = yaml_document_get_node(&doc, p->value);
        if (!key || !val) continue;
        if (!strcmp(key, "workers")) {
            rc = add_workers(&a, &doc, val, err, errlen);
            continue;
        }
        if (val->type == YAML_SCALAR_NODE) {
            const char *v = scalar(&doc, val);
            if (!strcmp(v, "true"))
                rc = push_flag(&a, key);
            else if (!strcmp(v, "false"))
                continue; /* flags default off */
            else if (!(rc = push_flag(&a, key)))
                rc = push(&a, v, strlen(v));
        } else if (val->type == YAML_SEQUENCE_NODE) {
            rc = push_flag(&a, key);
            for (yaml_node_item_t *it = val->data.sequence.items.start;
                 !rc && it < val->data.sequence.items.top; it++) {
                const char *v = scalar(&doc, yaml_document_get_node(&doc, *it));
                if (!v) {
                    snprintf(err, errlen, "config: '%s' must be a list of scalars", key);
                    rc = KVG_ECONFIG;
                } else {
                    rc = push(&a, v, strlen(v));
                }
            }
        } else {
            snprintf(err, errlen, "config: '%s' must be a scalar or a list", key);
            rc = KVG_ECONFIG;
        }
    }
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    fclose(f);
    if (rc) {
        if (rc == -ENOMEM) snprintf(err, errlen, "config: out of memory");
        for (int i = 0; i < a.n; i++) free(a.v[i]);
        free(a.v);
        return rc == -ENOMEM ? rc : KVG_ECONFIG;
    }
    *args = a.v;
    *nargs = a.n;
    return 0;
}
