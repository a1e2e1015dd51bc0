/* libFuzzer: the request headers that set a request's admission (its
 * x-kvgate-priority, x-kvgate-class and x-kvgate-deadline values, as the
 * client sent them) read by gateway/admission.c's parsers: any bytes, a
 * verdict, never a crash or a read past the value; an accepted value is in
 * its documented range. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/admission.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of exactly size bytes: ASan sees any read past the value. */
    char *v = malloc(size ? size : 1);
    if (!v) return 0;
    memcpy(v, data, size);
    int prio, batch;
    uint32_t ms;
    if (!kvg_adm_priority_parse(v, size, &prio) &&
        (prio < KVG_ADM_PRIO_MIN || prio > KVG_ADM_PRIO_MAX))
        abort();
    if (!kvg_adm_traffic_parse(v, size, &batch) && batch != 0 && batch != 1) abort();
    if (!kvg_adm_deadline_parse(v, size, &ms) &&
        (ms == 0 || ms > (uint64_t)KVG_ADM_DEADLINE_MAX_S * 1000 + 1))
        abort();
    free(v);
    return 0;
}
