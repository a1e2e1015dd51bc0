/* libFuzzer target: JSONL trace loading (kvg_bench_trace_load) on arbitrary
 * file contents, written to a memfd so the real file path code runs. */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench/workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("trace", 0);
    if (fd < 0) return 0;
    if (write(fd, data, size) == (ssize_t)size) {
        char path[64], err[256];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        struct kvg_bench_trace_rec *recs = NULL;
        size_t n = 0;
        if (kvg_bench_trace_load(path, 1.0, &recs, &n, err, sizeof err) == 0)
            kvg_bench_trace_free(recs, n);
    }
    close(fd);
    return 0;
}
