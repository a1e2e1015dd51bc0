/* libFuzzer target for the proxy's reading of an engine's error body
 * (kvg__proxy_error_code, src/proxy/obs.c): any bytes give a code or
 * none, NUL-terminated within the buffer (which is cut, never overrun),
 * 1 exactly when the code is not empty. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/proxy_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *in = malloc(size ? size : 1); /* exact size: ASan sees overreads */
    if (!in) return 0;
    memcpy(in, data, size);
    char out[16];
    int rc = kvg__proxy_error_code(in, size, out, size % 2 ? sizeof out : 5);
    if (memchr(out, 0, sizeof out) == NULL) abort();
    if ((rc == 1) != (out[0] != 0) || rc < 0 || rc > 1) abort();
    free(in);
    return 0;
}
