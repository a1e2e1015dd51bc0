/* A tiny unit-test harness. A test file defines cases with TEST(name) { ... };
 * tests/support/test_main.c runs them all in registration order (or the ones
 * named on the command line), prints "ok"/"FAIL"/"skip" per case and a
 * closing "# N passed, N failed, N skipped" line that tests/run.sh adds up. A
 * failed CHECK ends the case and moves on to the next. SKIP("reason") ends
 * the case as skipped, for a precondition the machine lacks (a kernel
 * feature, an installed tool): it is counted and printed, never a pass. Call
 * it before the case allocates anything, as a failed CHECK would leak too. */
#ifndef KVG_TEST_H
#define KVG_TEST_H

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef void (*kvg_test_fn)(void);
void kvg_test_register(const char *name, kvg_test_fn fn);
void kvg_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
void kvg_test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#define TEST(name)                                                                                 \
    static void test_##name(void);                                                                 \
    __attribute__((constructor)) static void reg_##name(void)                                      \
    {                                                                                              \
        kvg_test_register(#name, test_##name);                                                     \
    }                                                                                              \
    static void test_##name(void)

/* SKIP("reason") or SKIP("fmt", args...): ends the case as skipped. */
#define SKIP(...) kvg_test_skip(__VA_ARGS__)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) kvg_test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);                        \
    } while (0)

#define CHECK_INT(a, b)                                                                            \
    do {                                                                                           \
        long long va_ = (long long)(a), vb_ = (long long)(b);                                      \
        if (va_ != vb_)                                                                            \
            kvg_test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, va_, vb_);         \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *sa_ = (a), *sb_ = (b);                                                         \
        if (!sa_ || !sb_ || strcmp(sa_, sb_))                                                      \
            kvg_test_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b,                \
                          sa_ ? sa_ : "(null)", sb_ ? sb_ : "(null)");                             \
    } while (0)

#define CHECK_NEAR(a, b, eps)                                                                      \
    do {                                                                                           \
        double da_ = (a), db_ = (b);                                                               \
        if (!(da_ - db_ <= (eps) && db_ - da_ <= (eps)))                                           \
            kvg_test_fail(__FILE__, __LINE__, "%s ~= %s: %g vs %g", #a, #b, da_, db_);             \
    } while (0)

#endif
