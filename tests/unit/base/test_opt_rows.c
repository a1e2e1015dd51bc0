/* base/opt's nested rows: a ROWS of structs inside a grown row, scalar
 * rows as their primary key's value, seen() told each key a row sets
 * (test_opt.c has the flags, help, emit and the other YAML cases). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/opt.h"
#include "support/test.h"

/* An included table, as a row's policy options are (serve's models:). */
struct sub {
    double w;
    uint32_t n;
};

static const struct kvg_opt sub_t[] = {
    {"weight", NULL, KVG_OPT_DOUBLE, offsetof(struct sub, w), .help = "a weight", .min = 0,
     .max = 10},
    {"count-n", NULL, KVG_OPT_U32, offsetof(struct sub, n), .help = "a count"},
    KVG_OPT_END,
};

/* Rows of rows (a ROWS of structs inside a grown row), scalar rows of
 * structs as their primary key's value (ROWS and MAP alike), seen() told
 * each key a row sets, and kvg_opt_copy. */
struct leaf {
    char url[32];
    uint32_t port;
    int line;
};

struct branch {
    char name[16];
    struct leaf *leaves;
    size_t nleaves;
    struct leaf *weights; /* MAP: url is the key, port the scalar */
    size_t nweights;
    struct sub inc;
    unsigned seen; /* bit 1: weight (a key of the include), bit 2: leaves */
    int line;
};

struct tree {
    struct branch *branches;
    size_t nbranches;
};

static const struct kvg_opt leaf_t[] = {
    {"url", NULL, KVG_OPT_STR, offsetof(struct leaf, url), sizeof(((struct leaf *)0)->url),
     .flags = KVG_OPT_F_PRIMARY | KVG_OPT_F_REQUIRED},
    {"port", NULL, KVG_OPT_U32, offsetof(struct leaf, port), .min = 1, .max = 65535},
    {"line", NULL, KVG_OPT_INT, offsetof(struct leaf, line), .flags = KVG_OPT_F_LINE},
    KVG_OPT_END,
};

static const struct kvg_opt weight_t[] = {
    {"url", NULL, KVG_OPT_STR, offsetof(struct leaf, url), sizeof(((struct leaf *)0)->url),
     .flags = KVG_OPT_F_KEY},
    {"port", NULL, KVG_OPT_U32, offsetof(struct leaf, port), .min = 1, .max = 65535,
     .flags = KVG_OPT_F_PRIMARY},
    {"line", NULL, KVG_OPT_INT, offsetof(struct leaf, line), .flags = KVG_OPT_F_LINE},
    KVG_OPT_END,
};

static const struct kvg_opt branch_t[] = {
    {"name", NULL, KVG_OPT_STR, offsetof(struct branch, name), sizeof(((struct branch *)0)->name),
     .flags = KVG_OPT_F_REQUIRED},
    {"leaves", NULL, KVG_OPT_ROWS, offsetof(struct branch, leaves), sizeof(struct leaf),
     .sub = leaf_t, .count_off = offsetof(struct branch, nleaves), .flags = KVG_OPT_F_ALLOC},
    {"weights", NULL, KVG_OPT_MAP, offsetof(struct branch, weights), sizeof(struct leaf),
     .sub = weight_t, .count_off = offsetof(struct branch, nweights), .max_rows = 2,
     .flags = KVG_OPT_F_ALLOC},
    {NULL, NULL, KVG_OPT_INCLUDE, offsetof(struct branch, inc), .sub = sub_t},
    {"line", NULL, KVG_OPT_INT, offsetof(struct branch, line), .flags = KVG_OPT_F_LINE},
    KVG_OPT_END,
};

static void branch_seen(void *item, const struct kvg_opt *o)
{
    struct branch *b = item;
    if (o == &sub_t[0]) b->seen |= 1u << 1;
    if (o == &branch_t[1]) b->seen |= 1u << 2;
}

static const struct kvg_opt tree_t[] = {
    {"branches", NULL, KVG_OPT_ROWS, offsetof(struct tree, branches), sizeof(struct branch),
     .sub = branch_t, .count_off = offsetof(struct tree, nbranches), .flags = KVG_OPT_F_ALLOC,
     .seen = branch_seen},
    KVG_OPT_END,
};

static int load_tree(struct tree *t, const char *y, char *err, size_t errlen)
{
    kvg_opt_free(tree_t, t);
    err[0] = 0;
    return kvg_opt_load_yaml_text(tree_t, t, y, strlen(y), "r.yaml", err, errlen);
}

TEST(yaml_rows_of_rows_and_scalar_rows)
{
    struct tree t = {0};
    char err[512];
    CHECK_INT(load_tree(&t,
                        "branches:\n"
                        "  - name: a\n"
                        "    leaves: [http://x, {url: http://y, port: 8}]\n"
                        "    weights: {http://x: 90, http://y: {port: 10}}\n"
                        "    weight: 2\n"
                        "  - name: b\n"
                        "    leaves:\n"
                        "      - http://z\n",
                        err, sizeof err),
              0);
    CHECK_STR(err, "");
    CHECK_INT(t.nbranches, 2);
    struct branch *a = &t.branches[0], *b = &t.branches[1];
    CHECK_INT(a->nleaves, 2);
    CHECK_STR(a->leaves[0].url, "http://x");
    CHECK_INT(a->leaves[0].port, 0);
    CHECK_INT(a->leaves[0].line, 3);
    CHECK_STR(a->leaves[1].url, "http://y");
    CHECK_INT(a->leaves[1].port, 8);
    CHECK_INT(a->nweights, 2);
    CHECK_STR(a->weights[0].url, "http://x");
    CHECK_INT(a->weights[0].port, 90);
    CHECK_INT(a->weights[0].line, 4);
    CHECK_INT(a->weights[1].port, 10);
    CHECK_NEAR(a->inc.w, 2, 0);
    CHECK_INT(a->seen, (1u << 1) | (1u << 2)); /* the include's key and leaves, told once each */
    CHECK_INT(b->nleaves, 1);
    CHECK_STR(b->leaves[0].url, "http://z");
    CHECK_INT(b->leaves[0].line, 8);
    CHECK_INT(b->seen, 1u << 2);
    /* The inner rows' errors name their own path and line. */
    CHECK_INT(load_tree(&t, "branches:\n  - name: a\n    leaves: [http://x, {port: 8}]\n", err,
                        sizeof err),
              KVG_ECONFIG);
    CHECK_STR(err, "r.yaml:3: branches[0].leaves[1]: needs url");
    CHECK_INT(
        load_tree(&t, "branches:\n  - name: a\n    weights: {http://x: 0}\n", err, sizeof err),
        KVG_ECONFIG);
    CHECK_STR(err, "r.yaml:3: branches[0].weights.http://x: expects an integer 1..65535, got '0'");
    CHECK_INT(
        load_tree(&t, "branches:\n  - name: a\n    weights: {a: 1, b: 2, c: 3}\n", err, sizeof err),
        KVG_ECONFIG);
    CHECK_STR(err, "r.yaml:3: branches[0].weights.c: at most 2 entries");
    CHECK_INT(load_tree(&t, "branches:\n  - name: a\n    leaves: [[http://x]]\n", err, sizeof err),
              KVG_ECONFIG);
    CHECK_STR(err, "r.yaml:3: branches[0].leaves[0]: expects a mapping, got a list");
    CHECK_INT(load_tree(&t, "branches:\n  - name: a\n    leaves:\n      - {url: u, prt: 1}\n", err,
                        sizeof err),
              KVG_ECONFIG);
    CHECK_STR(err, "r.yaml:4: branches[0].leaves[0].prt: unknown key (did you mean port?)");
    /* A scalar row where another key is required, and where no key is primary. */
    CHECK_INT(load_tree(&t, "branches: [a]\n", err, sizeof err), KVG_ECONFIG);
    CHECK_STR(err, "r.yaml:1: branches[0]: expects a mapping, got a value");
    /* Rows of rows compare and free as deep as they go. */
    struct tree u = {0};
    const char *y = "branches:\n  - {name: a, leaves: [http://x]}\n";
    CHECK_INT(load_tree(&t, y, err, sizeof err), 0);
    CHECK_INT(load_tree(&u, y, err, sizeof err), 0);
    char diff[64];
    CHECK_INT(kvg_opt_diff(tree_t, &t, &u, NULL, NULL, diff, sizeof diff), 0);
    snprintf(u.branches[0].leaves[0].url, sizeof u.branches[0].leaves[0].url, "http://w");
    CHECK_INT(kvg_opt_diff(tree_t, &t, &u, NULL, NULL, diff, sizeof diff), 1);
    CHECK_STR(diff, "branches");
    kvg_opt_free(tree_t, &t);
    kvg_opt_free(tree_t, &u);
    CHECK(t.branches == NULL && u.branches == NULL);
}
