/* A pooling request (embeddings, pooling, classify, score, rerank) as the
 * engine sees it: one prompt-only request per input, as vLLM submits them
 * (its prefill and first sampled token, the output discarded), all of one
 * client request. The answer is written once every member finished; a
 * member that fails answers for all (vLLM's 500) and drops the others; a
 * client that leaves drops them all. The members run through the same
 * scheduler, prefix cache and metrics as generations, so a pooling load
 * is a real load. */
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "simsrv/simsrv.h"

struct group {
    struct kvg_simsrv_server *s;
    struct kvg_http_req *req; /* NULL once answered or gone */
    size_t n, finished, live;
    int hold;                 /* > 0 while a loop here walks the members */
    struct sim_req **members; /* NULL once freed */
    uint32_t *cached;         /* prefix-cache hits per member */
    kvg_simsrv_group_answer answer;
    void *ud;
    void (*free_ud)(void *ud);
};

static void group_free(struct group *g)
{
    if (g->free_ud) g->free_ud(g->ud);
    free(g->members);
    free(g->cached);
    free(g);
}

static void group_unhold(struct group *g)
{
    if (--g->hold == 0 && g->live == 0) group_free(g);
}

/* Drops every member but `except` (the client is gone, or one failed). */
static void drop_all(struct group *g, const struct sim_req *except)
{
    g->hold++;
    for (size_t i = 0; i < g->n; i++)
        if (g->members[i] && g->members[i] != except) kvg__simsrv_req_drop(g->members[i]);
    group_unhold(g);
}

static void member_token(struct sim_req *r, uint32_t id, const char *t, size_t n, int first,
                         enum kvg_sim_finish fin)
{
    (void)r, (void)id, (void)t, (void)n, (void)first, (void)fin; /* a pooling output has no text */
}

static void member_done(struct sim_req *r, enum kvg_sim_finish fin)
{
    (void)fin;
    struct group *g = r->ext;
    g->cached[r->gidx] = r->cached;
    if (++g->finished == g->n && g->req) {
        struct kvg_http_req *req = g->req;
        g->req = NULL;
        req->on_abort = NULL;
        g->answer(req, g->ud, g->cached, g->n);
    }
}

static void member_fail(struct sim_req *r, const char *msg)
{
    struct group *g = r->ext;
    if (g->req) {
        g->req->on_abort = NULL;
        kvg_simsrv_error(g->req, 500, "InternalServerError", msg);
        g->req = NULL;
    }
    drop_all(g, r);
}

static void member_release(struct sim_req *r)
{
    struct group *g = r->ext;
    g->members[r->gidx] = NULL;
    if (--g->live == 0 && !g->hold) group_free(g);
}

static const struct kvg_simsrv_out member_out = {
    .token = member_token, .done = member_done, .fail = member_fail, .release = member_release};

static void on_abort(struct kvg_http_req *req, void *ud)
{
    (void)req;
    struct group *g = ud;
    g->req = NULL;
    drop_all(g, NULL);
}

static void free_inputs(uint32_t **ids, size_t from, size_t n)
{
    for (size_t i = from; i < n; i++) free(ids[i]);
}

void kvg__simsrv_group_run(struct kvg_simsrv_server *s, struct kvg_http_req *req,
                           struct kvg_simsrv_rank *rk, int lora, uint32_t **ids, const size_t *nids,
                           size_t n, kvg_simsrv_group_answer answer, void *ud,
                           void (*free_ud)(void *ud))
{
    struct group *g = calloc(1, sizeof *g);
    if (g) {
        g->members = calloc(n ? n : 1, sizeof *g->members);
        g->cached = calloc(n ? n : 1, sizeof *g->cached);
    }
    if (!g || !g->members || !g->cached) {
        free_inputs(ids, 0, n);
        if (g) {
            free(g->members);
            free(g->cached);
            free(g);
        }
        if (free_ud) free_ud(ud);
        kvg_simsrv_error(req, 500, "InternalServerError", "out of memory");
        return;
    }
    *g = (struct group){.s = s,
                        .req = req,
                        .n = n,
                        .hold = 1,
                        .members = g->members,
                        .cached = g->cached,
                        .answer = answer,
                        .ud = ud,
                        .free_ud = free_ud};
    if (s->o.hang_rate > 0 && kvg_rng_double(&s->rng) < s->o.hang_rate) {
        g->req = NULL; /* fault: never answer; the socket stays open */
        free_inputs(ids, 0, n);
        group_unhold(g);
        return;
    }
    req->ud = g;
    req->on_abort = on_abort;
    size_t i = 0;
    for (; i < n && g->req; i++) {
        /* A prompt as long as the context is accepted for pooling (vLLM);
         * the engine model samples a token after it, so it runs one short. */
        size_t len = KVG_MIN(nids[i], (size_t)s->max_model_len - 1);
        struct kvg_simsrv_gen gen = {.req = req,
                                     .rk = rk,
                                     .lora = lora,
                                     .ids = ids[i],
                                     .nids = len,
                                     .max_tokens = 1,
                                     .ignore_eos = 1,
                                     .seed = -1,
                                     .out = &member_out,
                                     .ext = g,
                                     .member = 1};
        ids[i] = NULL;
        struct sim_req *r = kvg__simsrv_req_new(s, &gen);
        if (!r) {
            member_fail(&(struct sim_req){.ext = g}, "out of memory");
            i++;
            break;
        }
        r->gidx = (uint32_t)i;
        g->members[i] = r;
        g->live++;
        kvg__simsrv_req_start(r);
    }
    free_inputs(ids, i, n);
    group_unhold(g);
}
