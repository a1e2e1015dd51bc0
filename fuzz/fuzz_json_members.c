/* libFuzzer, differential: kvg_json_members (base/json_scan.h) against
 * cJSON on the same bytes. For every body cJSON reads as an object, the scan
 * walks it whole and finds its members in order: each unescaped key equal to
 * the tree's, each value's bytes parsing to the tree's value. It never
 * reads outside the input (ASan) whatever the bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/json_scan.h"

struct walk {
    const cJSON *next; /* the tree's member expected next */
    int bad;
};

static int check_member(void *ud, const char *s, const struct kvg_json_member *m)
{
    struct walk *w = ud;
    if (!w->next) {
        w->bad = 1;
        return 1;
    }
    size_t kl = m->key_end - m->key;
    int plain = !m->key_escaped; /* cJSON's key ends at a NUL: raw bytes compare only without */
    for (size_t i = m->key; i < m->key_end && plain; i++) plain = (unsigned char)s[i] >= 0x20;
    if (plain && (strlen(w->next->string) != kl || memcmp(w->next->string, s + m->key, kl)))
        w->bad = 1;
    cJSON *v = cJSON_ParseWithLength(s + m->val, m->val_end - m->val);
    /* The value alone: a copy of the tree's member without its key or siblings. */
    cJSON *want = cJSON_Duplicate(w->next, 1);
    if (want && want->string && !(want->type & cJSON_StringIsConst)) cJSON_free(want->string);
    if (want) want->string = NULL, want->type &= ~cJSON_StringIsConst;
    if (!v || !want || !kvg_json_same(v, want)) w->bad = 1;
    cJSON_Delete(want);
    cJSON_Delete(v);
    w->next = w->next->next;
    return w->bad;
}

static int count_member(void *ud, const char *s, const struct kvg_json_member *m)
{
    (void)s;
    if (m->key > m->key_end || m->val >= m->val_end) abort();
    ++*(size_t *)ud;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    size_t open = 0, close = 0, n = 0;
    cJSON *ref = cJSON_ParseWithLength(s, size);
    cJSON *strict = kvg_json_parse_strict(s, size);
    if (!cJSON_IsObject(strict)) { /* any bytes: the scan only must stay inside */
        (void)kvg_json_members(s, size, count_member, &n, &open, &close);
    } else {
        /* Strict JSON (cJSON's leniencies are refused by its callers): the
         * scan walks it whole, each member the tree's. */
        struct walk w = {.next = ref->child};
        int rc = kvg_json_members(s, size, check_member, &w, &open, &close);
        if (rc || w.bad || w.next || s[open] != '{' || s[close] != '}') abort();
    }
    cJSON_Delete(ref);
    cJSON_Delete(strict);
    return 0;
}
