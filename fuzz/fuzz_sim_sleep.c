/* libFuzzer target for the simulated engine's sleep-mode readers
 * (simsrv/sleep.c): vLLM's /sleep and /wake_up query strings and SGLang's
 * {"tags": [...]} body. Either succeeds with values in range or fails with
 * a reason; anything else traps. */
#include <stdint.h>
#include <string.h>

#include "simsrv/simsrv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kvg_simsrv_sleep_args a;
    char err[160] = "";
    const unsigned all = KVG_SIMSRV_TAG_WEIGHTS | KVG_SIMSRV_TAG_KV_CACHE;
    if (!kvg_simsrv_sleep_query((const char *)data, size, &a, err, sizeof err)) {
        if ((a.level != 1 && a.level != 2) || (a.tags & ~all) ||
            (a.mode != KVG_SIMSRV_SLEEP_ABORT && a.mode != KVG_SIMSRV_SLEEP_WAIT))
            __builtin_trap();
    } else if (!err[0] || !memchr(err, 0, sizeof err)) {
        __builtin_trap();
    }
    unsigned tags = 0;
    err[0] = 0;
    if (!kvg_simsrv_sleep_tags_json((const char *)data, size, &tags, err, sizeof err)) {
        if (tags & ~(all | KVG_SIMSRV_TAG_CUDA_GRAPH)) __builtin_trap();
    } else if (!err[0]) {
        __builtin_trap();
    }
    return 0;
}
