/* Test driver for the chat -> Responses / Messages translations (api.h):
 * reads a chat completions answer on stdin and prints what a client of the
 * other API is sent.
 *
 *   api_xlate responses|messages stream [split]   stdin is a chat SSE stream,
 *                                                 fed whole or split bytes
 *   api_xlate responses|messages whole            stdin is one chat answer
 *
 * tests/integration/api_sdk_parse.mjs hands the output to the official
 * SDKs' parsers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/buf.h"
#include "base/err.h"

int main(int argc, char **argv)
{
    struct kvg_api_xctx x = {.created = 1700000000};
    struct kvg_buf in, out;
    int rc;
    if (argc < 3 || (strcmp(argv[1], "responses") && strcmp(argv[1], "messages"))) {
        fprintf(stderr, "usage: api_xlate responses|messages stream [split] | whole\n");
        return 2;
    }
    x.kind = strcmp(argv[1], "responses") ? KVG_API_MESSAGES : KVG_API_RESPONSES;
    snprintf(x.model, sizeof(x.model), "sim-coder");
    snprintf(x.id, sizeof(x.id), "%s", x.kind == KVG_API_RESPONSES ? "resp_t1" : "msg_t1");
    kvg_buf_init(&in, 64u << 20);
    kvg_buf_init(&out, 0);
    if ((rc = kvg_buf_read_stream(&in, stdin))) {
        fprintf(stderr, "api_xlate: stdin: %s\n", kvg_strerror(rc));
        return 1;
    }
    if (!strcmp(argv[2], "whole")) {
        rc = kvg_api_answer_from_chat(&x, in.data ? in.data : "", in.len, &out);
    } else {
        struct kvg_api_sse_xlate t;
        size_t step = argc > 3 ? 1 : in.len ? in.len : 1;
        kvg_api_sse_xlate_init(&t, &x);
        rc = 0;
        for (size_t off = 0; !rc && off < in.len; off += step)
            rc = kvg_api_sse_xlate_feed(&t, in.data + off,
                                        in.len - off < step ? in.len - off : step, &out);
        if (!rc) rc = kvg_api_sse_xlate_end(&t, 0, &out);
        kvg_api_sse_xlate_free(&t);
    }
    if (rc) {
        fprintf(stderr, "api_xlate: %s\n", kvg_strerror(rc));
        return 1;
    }
    fwrite(out.data, 1, out.len, stdout);
    kvg_buf_free(&in);
    kvg_buf_free(&out);
    return 0;
}
