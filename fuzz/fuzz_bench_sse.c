/* libFuzzer target: the live bench's stream parsing (SSE framing, then each
 * event's data as a completion chunk) on arbitrary server bytes, fed in two
 * pieces split where the input's first byte says. */
#include <stddef.h>
#include <stdint.h>

#include "bench/sse.h"

static int on_event(void *ud, const char *data, size_t len)
{
    (void)ud;
    struct kvg_bench_chunk c;
    if (kvg_bench_chunk_parse(data, len, &c) == 0) kvg_bench_chunk_free(&c);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    size_t cut = data[0] % size;
    const char *p = (const char *)data + 1;
    size_t n = size - 1;
    if (cut > n) cut = n;
    struct kvg_bench_sse s;
    kvg_bench_sse_init(&s, 4096);
    if (kvg_bench_sse_feed(&s, p, cut, on_event, NULL) == 0)
        kvg_bench_sse_feed(&s, p + cut, n - cut, on_event, NULL);
    kvg_bench_sse_free(&s);
    return 0;
}
