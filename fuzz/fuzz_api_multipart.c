/* libFuzzer: the multipart/form-data parser (src/api/multipart.c: the
 * gateway reads an upload's model with it, the simulated engine its file),
 * the body of an audio request, and the audio
 * duration read from a file part (src/simsrv/audio.c). The input is a
 * Content-Type line, then the body. Any bytes: an error or parts that lie
 * inside the body, never a crash, an overread (the body is copied to a
 * block of exactly its size) or more parts than allowed. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "simsrv/simsrv.h"

static int inside(const char *p, size_t n, const char *body, size_t len)
{
    return p >= body && n <= len && (size_t)(p - body) <= len - n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    size_t ctl = nl ? (size_t)(nl - data) : size, len = nl ? size - ctl - 1 : 0;
    char *ct = malloc(ctl ? ctl : 1), *body = malloc(len ? len : 1);
    if (!ct || !body) goto out;
    memcpy(ct, data, ctl);
    if (len) memcpy(body, nl + 1, len);
    struct kvg_api_part parts[8];
    size_t n = 0;
    char msg[200];
    if (kvg_api_multipart_parse(ct, ctl, body, len, parts, 8, &n, msg, sizeof msg) == 0) {
        if (n > 8) abort();
        for (size_t i = 0; i < n; i++) {
            const struct kvg_api_part *p = &parts[i];
            if (!inside(p->name, p->name_len, body, len) || !inside(p->data, p->len, body, len) ||
                (p->filename && !inside(p->filename, p->filename_len, body, len)))
                abort();
            double s = kvg__simsrv_audio_seconds((const unsigned char *)p->data, p->len);
            if (!(s >= 0)) abort();
        }
    }
out:
    free(ct);
    free(body);
    return 0;
}
