/* The bench's SIGINT/SIGTERM: they set a flag (kvg_bench_interrupted)
 * instead of killing the bench, so that it can stop its children (started
 * with base/proc.h) first; its waits check the flag. */
#ifndef KVG_BENCH_INTERRUPT_H
#define KVG_BENCH_INTERRUPT_H

/* Installs the SIGINT/SIGTERM flag handler (idempotent). */
void kvg_bench_catch_signals(void);
/* Nonzero once SIGINT or SIGTERM arrived. */
int kvg_bench_interrupted(void);

#endif
