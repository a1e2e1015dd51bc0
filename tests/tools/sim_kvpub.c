/* Test driver for tests/integration/sim_model_events.sh: runs the simulated
 * engine model on random requests with shared prefixes (virtual time, as
 * fast as it goes) and publishes its KV events over ZeroMQ exactly as
 * `kvgate sim` will, so that an independent subscriber can rebuild the
 * cache from the wire and compare it with the dump this program writes.
 *
 *   sim_kvpub --dir D [--encoding array|map] [--requests N] [--seed S]
 *             [--block-size B] [--capacity TOKENS] [--drop P] [--replay]
 *
 * Handshake through files in D, every wait bounded:
 *   D/ready  written after binding: "PUB_ENDPOINT REPLAY_ENDPOINT|-"
 *   D/go     created by the subscriber once it receives anything; until
 *            then empty batches are published every 50 ms (PUB/SUB joins
 *            are asynchronous)
 *   D/dump   written at the end: "last_seq N" then the resident block
 *            hashes, one decimal per line
 *   D/done   created by the subscriber when it no longer needs replay */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "sim/kv_events.h"
#include "simsrv/kvpub.h"
#include "sim/sim.h"

static int wait_file(const char *dir, const char *name, double seconds,
                     struct kvg_simsrv_kvpub *hello)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    for (double t = 0; t < seconds; t += 0.05) {
        if (access(path, F_OK) == 0) return 0;
        if (hello) {
            void *buf;
            size_t len;
            if (kvg_sim_kv_encode(NULL, 0, kvg_wall_s(), 0, KVG_SIM_KV_ARRAY, &buf, &len) == 0)
                kvg_simsrv_kvpub_publish(hello, buf, len);
        }
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "sim_kvpub: timed out waiting for %s\n", path);
    return -ETIMEDOUT;
}

static int write_file(const char *dir, const char *name, const char *text)
{
    char path[512], tmp[520];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return -errno;
    fputs(text, f);
    if (fclose(f)) return -EIO;
    return rename(tmp, path) ? -errno : 0;
}

struct ctx {
    struct kvg_sim *e;
    struct kvg_simsrv_kvpub *pub;
    enum kvg_sim_kv_encoding enc;
    int64_t last_seq;
    double t;
    uint64_t batches, events;
};

static int flush_events(struct ctx *c)
{
    struct kvg_sim_events ev;
    kvg_sim_events(c->e, &ev);
    if (ev.lost) return -ENOMEM;
    if (!ev.n) return 0;
    void *buf;
    size_t len;
    int rc = kvg_sim_kv_encode(ev.ev, ev.n, c->t, 0, c->enc, &buf, &len);
    if (rc) return rc;
    c->events += ev.n;
    kvg_sim_events_clear(c->e);
    int64_t seq = kvg_simsrv_kvpub_publish(c->pub, buf, len);
    if (seq < 0) return (int)seq;
    c->last_seq = seq;
    c->batches++;
    return 0;
}

static int step(struct ctx *c)
{
    struct kvg_sim_step st;
    int rc = kvg_sim_step(c->e, c->t, &st);
    if (rc) return rc;
    c->t += st.duration;
    return flush_events(c);
}

static int run_model(struct ctx *c, uint64_t nreq, uint64_t seed)
{
    struct kvg_rng rng;
    kvg_rng_seed(&rng, seed);
    enum { NPFX = 12 };
    static uint32_t pfx[NPFX][500], prompt[900];
    uint32_t plen[NPFX];
    for (int g = 0; g < NPFX; g++) {
        plen[g] = 30 + (uint32_t)kvg_rng_below(&rng, 470);
        for (uint32_t i = 0; i < plen[g]; i++) pfx[g][i] = (uint32_t)kvg_rng_below(&rng, 50000);
    }
    for (uint64_t id = 0; id < nreq; id++) {
        int g = (int)kvg_rng_below(&rng, NPFX);
        uint32_t q = 1 + (uint32_t)kvg_rng_below(&rng, 300);
        memcpy(prompt, pfx[g], plen[g] * sizeof *prompt);
        for (uint32_t i = 0; i < q; i++) prompt[plen[g] + i] = (uint32_t)kvg_rng_below(&rng, 50000);
        struct kvg_sim_request r = {.id = id,
                                    .prompt = prompt,
                                    .prompt_len = plen[g] + q,
                                    .max_tokens = 1 + (uint32_t)kvg_rng_below(&rng, 80),
                                    .ignore_eos = (int)kvg_rng_below(&rng, 2),
                                    .arrival = c->t};
        int rc = kvg_sim_submit(c->e, &r);
        if (rc) return rc;
        if (kvg_rng_below(&rng, 20) == 0 && id > 5) kvg_sim_abort(c->e, id - 3); /* may be gone */
        uint64_t steps = kvg_rng_below(&rng, 4);
        for (uint64_t s = 0; s < steps && !kvg_sim_idle(c->e); s++)
            if ((rc = step(c))) return rc;
        if (id == nreq / 2) { /* a prefix-cache reset mid-run: AllBlocksCleared */
            for (int k = 0; k < 1000000 && !kvg_sim_idle(c->e); k++)
                if ((rc = step(c))) return rc;
            if ((rc = kvg_sim_reset_prefix_cache(c->e)) || (rc = flush_events(c))) return rc;
        }
    }
    for (int k = 0; k < 10000000 && !kvg_sim_idle(c->e); k++) {
        int rc = step(c);
        if (rc) return rc;
    }
    return kvg_sim_idle(c->e) ? 0 : -ETIMEDOUT;
}

static int dump(struct ctx *c, const char *dir)
{
    struct kvg_sim_metrics m;
    kvg_sim_get_metrics(c->e, &m);
    size_t n = kvg_sim_cached_hashes(c->e, NULL, 0);
    uint64_t *h = malloc((n + 1) * sizeof *h);
    char *text = malloc(32 + (n + 1) * 24);
    if (!h || !text) {
        free(h);
        free(text);
        return -ENOMEM;
    }
    kvg_sim_cached_hashes(c->e, h, n);
    size_t off = (size_t)sprintf(text, "last_seq %lld\n", (long long)c->last_seq);
    for (size_t i = 0; i < n; i++)
        off += (size_t)sprintf(text + off, "%llu\n", (unsigned long long)h[i]);
    int rc = write_file(dir, "dump", text);
    free(h);
    free(text);
    fprintf(stderr,
            "sim_kvpub: %llu batches, %llu events, %zu resident blocks, %llu/%llu tokens hit\n",
            (unsigned long long)c->batches, (unsigned long long)c->events, n,
            (unsigned long long)m.prefix_cache_hits, (unsigned long long)m.prefix_cache_queries);
    return rc;
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *encs = "array";
    uint64_t nreq = 1500, seed = 1, bs = 16, cap = 4096;
    double drop = 0;
    int want_replay = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1;
        if (!strcmp(a, "--replay")) {
            want_replay = 1;
            continue;
        }
        if (!v)
            ok = 0;
        else if (!strcmp(a, "--dir"))
            dir = v;
        else if (!strcmp(a, "--encoding"))
            encs = v;
        else if (!strcmp(a, "--requests"))
            ok = kvg_parse_u64(v, &nreq) == 0;
        else if (!strcmp(a, "--seed"))
            ok = kvg_parse_u64(v, &seed) == 0;
        else if (!strcmp(a, "--block-size"))
            ok = kvg_parse_u64(v, &bs) == 0;
        else if (!strcmp(a, "--capacity"))
            ok = kvg_parse_u64(v, &cap) == 0;
        else if (!strcmp(a, "--drop"))
            ok = kvg_parse_double(v, &drop) == 0;
        else
            ok = 0;
        if (!ok) {
            fprintf(stderr, "sim_kvpub: bad argument %s\n", a);
            return 2;
        }
        i++;
    }
    int enc = kvg_sim_kv_encoding_parse(encs);
    if (!dir || enc < 0) {
        fprintf(stderr, "usage: sim_kvpub --dir D [--encoding array|map] ...\n");
        return 2;
    }
    struct kvg_sim_config sc;
    kvg_sim_config_init(&sc, kvg_sim_profile_find("tiny"));
    sc.profile.block_size = (uint32_t)bs;
    sc.profile.kv_capacity_tokens = cap;
    sc.seed = seed;
    struct ctx c = {.enc = (enum kvg_sim_kv_encoding)enc, .last_seq = -1};
    int rc = kvg_sim_create(&sc, &c.e);
    if (rc) {
        fprintf(stderr, "sim_kvpub: engine: %d\n", rc);
        return 1;
    }
    struct kvg_simsrv_kvpub_config pc;
    kvg_simsrv_kvpub_config_init(&pc);
    pc.endpoint = "tcp://127.0.0.1:*";
    pc.replay_endpoint = want_replay ? "tcp://127.0.0.1:*" : NULL;
    pc.topic = "kv@sim-test@tiny";
    pc.drop_prob = drop;
    pc.seed = seed;
    pc.buffer_steps = 200000;
    char err[256] = "";
    if ((rc = kvg_simsrv_kvpub_start(&pc, &c.pub, err, sizeof err))) {
        fprintf(stderr, "sim_kvpub: publisher: %s\n", err);
        kvg_sim_free(c.e);
        return 1;
    }
    char ready[600];
    const char *rep = kvg_simsrv_kvpub_replay_endpoint(c.pub);
    snprintf(ready, sizeof ready, "%s %s\n", kvg_simsrv_kvpub_endpoint(c.pub), rep ? rep : "-");
    if (!(rc = write_file(dir, "ready", ready)) && !(rc = wait_file(dir, "go", 20, c.pub)) &&
        !(rc = run_model(&c, nreq, seed)) && !(rc = dump(&c, dir)))
        rc = wait_file(dir, "done", 60, NULL);
    kvg_simsrv_kvpub_stop(c.pub);
    kvg_sim_free(c.e);
    if (rc) fprintf(stderr, "sim_kvpub: failed: %d\n", rc);
    return rc ? 1 : 0;
}
