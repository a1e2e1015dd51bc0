/* libFuzzer, differential: kvg_json_parse against cJSON_ParseWithLength on
 * the same bytes. Both accept or both refuse, and an accepted body is the
 * same tree node for node; the fast reader alone (no hand-over to cJSON)
 * never accepts what cJSON refuses nor builds a different tree; nor do the
 * same readers building in an arena, whose strings may also hold \u0000. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    cJSON *ref = cJSON_ParseWithLength(s, size);
    cJSON *fast = kvg_json_parse(s, size);
    cJSON *strict = kvg_json_parse_strict(s, size);
    if (!kvg_json_same(ref, fast)) abort();
    if (strict && !kvg_json_same(ref, strict)) abort();
    /* In an arena: the same trees; the arena holds one when the fast reader
     * read the bytes, and nothing after kvg_json_free (ASan sees a leak or
     * a node freed twice). */
    struct kvg_json_arena a = {0}, sa = {0};
    cJSON *in = kvg_json_parse_in(&a, s, size);
    cJSON *strict_in = kvg_json_parse_strict_in(&sa, s, size);
    /* A string holding \u0000 only an arena's tree carries (with its
     * length): there the arena readers read what the heap's decline, the
     * same bytes as cJSON's tree holds (kvg_json_same compares them). */
    int nul = !strict && strict_in && kvg_json_has_nul_escape(s, size);
    if (!kvg_json_same(ref, in) || !kvg_json_same(nul ? ref : strict, strict_in)) abort();
    if ((a.blocks != NULL) != (strict != NULL || nul) ||
        (sa.blocks != NULL) != (strict != NULL || nul))
        abort();
    cJSON_Delete(ref);
    cJSON_Delete(fast);
    cJSON_Delete(strict);
    kvg_json_free(&a, in);
    kvg_json_free(&sa, strict_in);
    if (a.blocks || sa.blocks) abort();
    return 0;
}
