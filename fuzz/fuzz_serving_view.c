/* libFuzzer: kvgate observe reads GET /serving from every gateway replica
 * (and from whatever answers at the URL it was given): any body, an error or
 * a view, never a crash or a leak. */
#include <stddef.h>
#include <stdint.h>

#include "ui/observe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kvg_ui_view v = {0};
    kvg_ui_view_parse(&v, (const char *)data, size, 1e9);
    for (size_t i = 0; i < v.nw; i++) kvg_ui_observe_worker(&v, 1, v.w[i].url);
    kvg_ui_view_free(&v);
    return 0;
}
