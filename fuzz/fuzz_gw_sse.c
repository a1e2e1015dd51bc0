/* libFuzzer target for the gateway's SSE usage filter (src/gateway/usage.c),
 * which reads an engine's stream bytes. The first two input bytes choose the
 * mode and a cut pattern; the rest is the stream. Invariants checked:
 *   - the output does not depend on how the stream was cut into pieces
 *     (whole vs. cut at pseudo-random points vs. byte by byte);
 *   - without strip mode the output is the input, byte for byte;
 *   - with strip mode the output is the input with whole events removed,
 *     so it is never longer and at most the number of stripped events lacks;
 *   - the held event never grows past its cap;
 *   - the token-carrying events (the proxy's token clock) do not depend on
 *     the cuts either, and are at most the events and the tokens counted. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/usage.h"

static void run(const char *in, size_t n, int strip, size_t max_event, const uint8_t *cuts,
                size_t ncuts, struct kvg_buf *out, int *stripped, uint64_t *tev)
{
    struct kvg_usage_sse f;
    kvg_usage_sse_init(&f, strip, max_event);
    size_t at = 0, k = 0;
    while (at < n) {
        size_t step = ncuts ? (size_t)cuts[k++ % ncuts] % 17 : n - at;
        if (step == 0) step = 1;
        if (step > n - at) step = n - at;
        if (kvg_usage_sse_feed(&f, in + at, step, out)) abort();
        if (f.ev.len > f.max_event) abort();
        at += step;
    }
    if (kvg_usage_sse_end(&f, out)) abort();
    *stripped = f.stripped;
    *tev = f.token_events;
    if (f.token_events > f.events + 1 || f.token_events > f.tokens)
        abort(); /* +1: an unended one */
    kvg_usage_sse_free(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    int strip = data[0] & 1;
    size_t max_event = (data[0] & 2) ? 48 : 0; /* a small cap exercises overflow */
    const uint8_t *cuts = data + 1;
    size_t ncuts = data[1] & 7;
    char *in = malloc(size - 2 ? size - 2 : 1); /* exact size: ASan sees overreads */
    if (!in) return 0;
    memcpy(in, data + 2, size - 2);
    size_t n = size - 2;

    struct kvg_buf whole, pieces, bytes;
    kvg_buf_init(&whole, 0);
    kvg_buf_init(&pieces, 0);
    kvg_buf_init(&bytes, 0);
    int s1, s2, s3;
    uint64_t t1, t2, t3;
    static const uint8_t one[1] = {1};
    run(in, n, strip, max_event, NULL, 0, &whole, &s1, &t1);
    run(in, n, strip, max_event, cuts, ncuts, &pieces, &s2, &t2);
    run(in, n, strip, max_event, one, 1, &bytes, &s3, &t3);
    if (t1 != t2 || t1 != t3) abort();
    if (whole.len != pieces.len || whole.len != bytes.len) abort();
    if (whole.len &&
        (memcmp(whole.data, pieces.data, whole.len) || memcmp(whole.data, bytes.data, whole.len)))
        abort();
    if (s1 != s2 || s1 != s3) abort();
    if (!strip && (whole.len != n || (n && memcmp(whole.data, in, n)))) abort();
    if (strip && (whole.len > n || (s1 == 0 && whole.len != n))) abort();
    kvg_buf_free(&whole);
    kvg_buf_free(&pieces);
    kvg_buf_free(&bytes);
    free(in);
    return 0;
}
