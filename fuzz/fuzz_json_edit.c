/* libFuzzer: kvg_json_edit (base/json_edit.h) with cJSON as the oracle. The
 * first byte picks the edits (remove "a", set "b", replace "c", set o.i);
 * the rest is the body. For every body that is strict JSON, an object, the
 * output is strict JSON too, with each edit made, and the members
 * not edited are the input's, in order, byte for byte. It never reads
 * outside the input (ASan) whatever the bytes. */
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/json.h"
#include "base/json_edit.h"
#include "base/json_scan.h"

static const char *const NAMES[] = {"a", "b", "c", "o"};
static unsigned edited; /* bit i: NAMES[i] has an edit */

/* The spans (from the key's quote to the value's end) of the members not
 * edited, gathered in order. */
struct spans {
    size_t n, at[64][2];
    int over;
};

static int gather(void *ud, const char *s, const struct kvg_json_member *m)
{
    struct spans *sp = ud;
    for (size_t i = 0; i < sizeof NAMES / sizeof *NAMES; i++)
        if ((edited >> i & 1) && kvg_json_key_is(s, m->key, m->key_end, NAMES[i])) return 0;
    if (sp->n == 64) {
        sp->over = 1;
        return 0;
    }
    sp->at[sp->n][0] = m->key - 1;
    sp->at[sp->n++][1] = m->val_end;
    return 0;
}

static int count(const cJSON *o, const char *name)
{
    int k = 0;
    for (const cJSON *it = o->child; it; it = it->next)
        k += it->string && !strcmp(it->string, name);
    return k;
}

static int same_value(const cJSON *item, const char *text)
{
    cJSON *v = cJSON_Parse(text);
    int same = v && item && cJSON_Compare(item, v, 1);
    cJSON_Delete(v);
    return same;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    unsigned pick = data[0];
    edited = pick & 15;
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    struct kvg_json_edit e[4];
    size_t ne = 0;
    if (pick & 1) e[ne++] = (struct kvg_json_edit){.op = KVG_JSON_EDIT_REMOVE, .name = "a"};
    if (pick & 2)
        e[ne++] = (struct kvg_json_edit){.op = KVG_JSON_EDIT_SET,
                                         .name = "b",
                                         .value = "[1,\"x\\ty\"]",
                                         .value_len = 10,
                                         .at_start = (pick & 16) != 0};
    if (pick & 4)
        e[ne++] = (struct kvg_json_edit){
            .op = KVG_JSON_EDIT_REPLACE, .name = "c", .value = "-7.5", .value_len = 4};
    if (pick & 8)
        e[ne++] = (struct kvg_json_edit){.op = KVG_JSON_EDIT_SET_IN,
                                         .name = "o",
                                         .inner = "i",
                                         .value = "true",
                                         .value_len = 4,
                                         .at_start = (pick & 32) != 0};
    struct kvg_buf out;
    kvg_buf_init(&out, 0);
    int rc = kvg_json_edit(s, n, e, ne, &out);
    /* The oracle is strict JSON (base/json.h's reader, which declines what
     * cJSON's tree cannot hold, as \u0000): cJSON's leniencies (a bad \u
     * escape read as an empty key) name members the text does not, and a
     * raw NUL ends a tree's key where the text goes on. */
    cJSON *in = kvg_json_parse_strict(s, n);
    int oracle = cJSON_IsObject(in) && !memchr(s, 0, n);
    if (oracle && rc == KVG_EPARSE) abort(); /* strict JSON is always edited */
    if (!oracle) goto done;
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(in, "o");
    if (rc == KVG_EUNSUPP) {
        if (!(pick & 8) || cJSON_IsObject(o) || cJSON_IsNull(o) || !o) abort();
        goto done;
    }
    if (rc < 0) abort();
    cJSON *res = kvg_json_parse_strict(out.data ? out.data : "", out.len);
    if (!cJSON_IsObject(res)) abort();
    if (rc == 0 && (out.len != n || memcmp(out.data, s, n))) abort();
    if ((pick & 1) && count(res, "a")) abort();
    if ((pick & 2) && (count(res, "b") != 1 ||
                       !same_value(cJSON_GetObjectItemCaseSensitive(res, "b"), "[1,\"x\\ty\"]")))
        abort();
    if ((pick & 4) &&
        (count(res, "c") != (count(in, "c") > 0) ||
         (count(in, "c") && !same_value(cJSON_GetObjectItemCaseSensitive(res, "c"), "-7.5"))))
        abort();
    if (pick & 8) {
        const cJSON *ro = cJSON_GetObjectItemCaseSensitive(res, "o");
        if (count(res, "o") != 1 || !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ro, "i")))
            abort();
    }
    /* The members not edited: the same bytes in the same order. */
    struct spans a = {0}, b = {0};
    if (kvg_json_members(s, n, gather, &a, NULL, NULL) ||
        kvg_json_members(out.data, out.len, gather, &b, NULL, NULL) || a.n != b.n)
        abort();
    for (size_t i = 0; i < a.n; i++)
        if (a.at[i][1] - a.at[i][0] != b.at[i][1] - b.at[i][0] ||
            memcmp(s + a.at[i][0], out.data + b.at[i][0], a.at[i][1] - a.at[i][0]))
            abort();
    cJSON_Delete(res);
done:
    cJSON_Delete(in);
    kvg_buf_free(&out);
    return 0;
}
