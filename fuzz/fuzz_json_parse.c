/* libFuzzer, differential: kvg_json_parse against cJSON_ParseWithLength on
 * the same bytes. Both accept or both refuse, and an accepted body is the
 * same tree node for node; the fast reader alone (no hand-over to cJSON)
 * never accepts what cJSON refuses nor builds a different tree. */
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
    cJSON_Delete(ref);
    cJSON_Delete(fast);
    cJSON_Delete(strict);
    return 0;
}
