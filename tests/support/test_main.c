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

int main(int argc, char **argv)
{
    static int passed, failed, i; /* static: survive longjmp */
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (i = 0; i < g_ntests; i++) {
        if (argc > 1) {
            int want = 0;
            for (int a = 1; a < argc; a++) want |= !strcmp(argv[a], g_tests[i].name);
            if (!want) continue;
        }
        if (setjmp(g_jmp) == 0) {
            g_tests[i].fn();
            printf("ok %s\n", g_tests[i].name);
            passed++;
        } else {
            printf("FAIL %s\n", g_tests[i].name);
            failed++;
        }
    }
    printf("# %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
