/* Runner for the TEST() cases of one unit-test program; see test.h. */
#include <stdarg.h>
#include <stdlib.h>

#include "support/test.h"

#define MAX_TESTS 1024

static struct {
    const char *name;
    kvg_test_fn fn;
} g_tests[MAX_TESTS];
static int g_ntests;
static jmp_buf g_jmp;
static char g_skip_reason[256]; /* set by kvg_test_skip before its longjmp */

void kvg_test_register(const char *name, kvg_test_fn fn)
{
    if (g_ntests == MAX_TESTS) {
        fprintf(stderr, "too many tests\n");
        exit(2);
    }
    g_tests[g_ntests].name = name;
    g_tests[g_ntests].fn = fn;
    g_ntests++;
}

void kvg_test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stdout, "  %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    longjmp(g_jmp, 1);
}

void kvg_test_skip(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_skip_reason, sizeof g_skip_reason, fmt, ap);
    va_end(ap);
    longjmp(g_jmp, 2);
}

int main(int argc, char **argv)
{
    static int passed, failed, skipped, i; /* static: survive longjmp */
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (i = 0; i < g_ntests; i++) {
        if (argc > 1) {
            int want = 0;
            for (int a = 1; a < argc; a++) want |= !strcmp(argv[a], g_tests[i].name);
            if (!want) continue;
        }
        switch (setjmp(g_jmp)) {
        case 0:
            g_tests[i].fn();
            printf("ok %s\n", g_tests[i].name);
            passed++;
            break;
        case 2:
            printf("skip %s: %s\n", g_tests[i].name, g_skip_reason);
            skipped++;
            break;
        default:
            printf("FAIL %s\n", g_tests[i].name);
            failed++;
        }
    }
    printf("# %d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
