/* The bench's interruption flag; see interrupt.h. */
#include "bench/interrupt.h"

#include <signal.h>
#include <string.h>

static volatile sig_atomic_t g_interrupted;

static void on_signal(int sig)
{
    (void)sig;
    g_interrupted = 1;
}

void kvg_bench_catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int kvg_bench_interrupted(void)
{
    return g_interrupted;
}
