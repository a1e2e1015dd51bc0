/* libFuzzer target for the Redis reply path (src/net/redis.c): a Redis
 * server's replies are outside bytes, read by hiredis's reader with the
 * bounds kvgate puts on it (kvg_redis_reader_bound). The input is fed in
 * pieces whose sizes come from its first byte, as a socket would split it,
 * and every reply is taken out until the reader wants more or fails.
 *
 * Checks what the bounds promise: no reply handed over holds more array
 * elements (over all its nested arrays) or a longer string than the bounds
 * allow, and the reader never allocates for more than that (ASan and
 * libFuzzer's memory limit would catch a 16 GB element array). */
#include <stdint.h>
#include <stdlib.h>

#include "net/redis.h"

#define MAX_ELEMENTS 4096
#define MAX_BULK 4096

/* Array elements in r and below it; aborts on a string over the bound. */
static uint64_t elements_in(const redisReply *r)
{
    int text = r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ||
               r->type == REDIS_REPLY_ERROR; /* all made by createString */
    if (text && r->len > MAX_BULK) abort();
    if (r->type != REDIS_REPLY_ARRAY) return 0;
    uint64_t n = r->elements;
    for (size_t i = 0; i < r->elements; i++) n += elements_in(r->element[i]);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    size_t piece = (size_t)data[0] % 16 + 1;
    data++;
    size--;
    redisReader *r = redisReaderCreate();
    if (!r) return 0;
    struct kvg_redis_bounds g;
    kvg_redis_reader_bound(r, &g, MAX_ELEMENTS, MAX_BULK);
    int failed = 0;
    for (size_t off = 0; off < size && !failed; off += piece) {
        size_t n = size - off < piece ? size - off : piece;
        if (redisReaderFeed(r, (const char *)data + off, n) != REDIS_OK) break;
        for (;;) {
            void *reply = NULL;
            if (redisReaderGetReply(r, &reply) != REDIS_OK) {
                failed = 1;
                break;
            }
            if (!reply) break;
            if (elements_in(reply) > MAX_ELEMENTS) abort();
            freeReplyObject(reply);
        }
    }
    redisReaderFree(r);
    return 0;
}
