/* Engine load signals: every interval each worker's /metrics is fetched and
 * normalised (vLLM, SGLang and llama.cpp names) into its struct
 * kvg_engine_load, stamped with the time of the sample. A failed scrape
 * leaves the previous sample to age: consumers treat old samples as unknown
 * (kvg_worker_load), never as idle. A worker whose engine reports a KV block
 * size different from the router's is reported loudly (once per change) and
 * counted, because it silently ruins precise prefix routing. Runs on one loop
 * (the main thread's). */
#ifndef KVG_ROUTER_SCRAPE_H
#define KVG_ROUTER_SCRAPE_H

#include <stdatomic.h>
#include <uv.h>

#include "net/http_client.h"
#include "router/pool.h"

struct kvg_scraper {
    uint32_t interval_ms; /* 0 disables */
    uint32_t timeout_ms;
    uint32_t block_size; /* the router's configured block size; 0 = no check */
    /* Optional: called on the loop after each fresh sample of a worker (a
     * queue waiting for room re-asks: room appears in samples as much as
     * in requests ending). */
    void (*on_sample)(void *ud, struct kvg_worker *w);
    void *on_sample_ud;
    struct kvg_pool *pool;
    struct kvg_http_client *client;
    uv_timer_t timer;
    _Atomic uint64_t scrapes, failures, block_size_mismatches;
};

/* Starts scraping on `loop` (the caller fills the settings first). 0, or a
 * negative code with nothing started (do not call kvg_scraper_stop then). */
int kvg_scraper_start(struct kvg_scraper *s, uv_loop_t *loop, struct kvg_pool *pool);
/* Stops the timer and closes the client; scrapes in flight end on the loop.
 * s is the caller's and its timer closes without a callback: s must stay
 * valid until the loop has run again. */
void kvg_scraper_stop(struct kvg_scraper *s);

#endif
