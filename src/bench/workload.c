/* Workload generation: prompts, the stage schedule, open-loop Poisson
 * arrivals planned up front, and a heap of follow-ups (closed-loop slots and
 * chat turns) that only exist once earlier requests end. See workload.h. */
#include "bench/workload.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/heap.h"
#include "base/log.h"
#include "base/util.h"
#include "bench/agent.h"

enum { P_OPEN, P_TURN, P_SLOT };

/* A pending arrival that depends on an earlier request (or a closed-loop
 * slot). Ordered by time, then by insertion, so the schedule is total. */
struct pend {
    double t;
    uint64_t seq;
    int type;
    int stage;
    struct sess *s;
};

/* A chat session: its whole context so far. At most one of its requests is
 * in flight, so the request may point into these buffers: they only grow
 * after that request is done. */
struct sess {
    uint32_t *tok;
    uint32_t n, cap;
    char *text;
    size_t tlen, tcap;
    uint32_t turn, turns; /* turns: this session's length */
    int slot_stage;
    uint64_t key;
    int lora, tenant;                   /* adapter and tenant index, -1 for none */
    struct kvg_bench_agent_sess *agent; /* agent workload: the conversation */
};

struct kvg_bench_wl {
    struct kvg_bench_wl_opts o;
    struct kvg_rng rng; /* follow-ups: chat messages and think times */
    struct kvg_bench_stage stage[KVG_BENCH_MAX_STAGES];
    double start[KVG_BENCH_MAX_STAGES + 1];
    size_t nst, warm;
    double *open; /* open-loop arrival times, ascending */
    size_t nopen, open_next;
    struct kvg_heap pending; /* struct pend, earliest first */
    uint64_t seq, issued, nsessions;
    /* shared_prefix: prompts in generation order, each plen ids */
    uint32_t *prompts, plen, nprompts, *order;
    char *ptext; /* nprompts x tlen_per characters, or NULL */
    size_t tlen_per;
    /* chat: system prompts, chat_groups x chat_system_len ids; the mixed
     * variant's documents, long_docs x long_len ids */
    uint32_t *sys, *docs;
    /* trace */
    struct kvg_bench_trace_rec *trace;
    size_t ntrace;
    /* agent: the deployments and the renderer */
    struct kvg_bench_agent *agent;
};

void kvg_bench_wl_opts_default(struct kvg_bench_wl_opts *o)
{
    memset(o, 0, sizeof *o);
    o->kind = KVG_BENCH_WL_SHARED_PREFIX;
    o->seed = 1;
    o->vocab = 151936; /* Qwen3's vocabulary */
    o->output_len = 64;
    o->ignore_eos = 1;
    o->groups = 4;
    o->prompts_per_group = 4;
    o->system_len = 256;
    o->question_len = 64;
    o->turns = 4;
    o->user_len = 64;
    o->chat_groups = 4;
    o->chat_system_len = 256;
    o->think_s = 1;
    o->trace_speed = 1;
    o->trace_block = 512;
    o->agent_scale = 1;
    snprintf(o->model, sizeof o->model, "kvgate-sim");
    o->stage[0] = (struct kvg_bench_stage){.rate = 1, .secs = 10};
    o->nstages = 1;
}

void kvg_bench_render_id(uint32_t id, char out[4])
{
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    out[0] = digits[(id >> 12) & 63];
    out[1] = digits[(id >> 6) & 63];
    out[2] = digits[id & 63];
    out[3] = ' ';
}

static uint32_t draw(const struct kvg_bench_wl *wl, struct kvg_rng *r)
{
    if (wl->o.printable) return 32 + (uint32_t)kvg_rng_below(r, 95);
    return (uint32_t)kvg_rng_below(r, wl->o.vocab);
}

static int want_text(const struct kvg_bench_wl *wl)
{
    return wl->o.printable || wl->o.want_text;
}

/* Characters of text per id. */
static size_t cpt(const struct kvg_bench_wl *wl)
{
    return wl->o.printable ? 1 : 4;
}

static void render(const struct kvg_bench_wl *wl, const uint32_t *ids, size_t n, char *out)
{
    if (wl->o.printable) {
        for (size_t i = 0; i < n; i++) out[i] = (char)ids[i];
        return;
    }
    for (size_t i = 0; i < n; i++) kvg_bench_render_id(ids[i], out + 4 * i);
}

/* ---- The pending heap: follow-ups by time, then in the order planned. */
static int pend_less(const void *a, const void *b)
{
    const struct pend *x = a, *y = b;
    return x->t < y->t || (x->t == y->t && x->seq < y->seq);
}

static int pend_push(struct kvg_bench_wl *wl, double t, int type, int stage, struct sess *s)
{
    struct pend p = {t, wl->seq++, type, stage, s};
    return kvg_heap_push(&wl->pending, &p);
}

static double pend_next(const struct kvg_bench_wl *wl)
{
    const struct pend *p = kvg_heap_top(&wl->pending);
    return p ? p->t : INFINITY;
}

/* ---- Building. */
static int make_shared_prefix(struct kvg_bench_wl *wl, struct kvg_rng *rng)
{
    const struct kvg_bench_wl_opts *o = &wl->o;
    uint32_t sep = o->printable ? 1 : 0; /* the ' ' inference-perf puts between texts */
    wl->plen = o->system_len + sep + o->question_len;
    wl->nprompts = o->groups * o->prompts_per_group;
    wl->prompts = malloc((size_t)wl->nprompts * wl->plen * sizeof *wl->prompts);
    wl->order = malloc((size_t)wl->nprompts * sizeof *wl->order);
    if (!wl->prompts || !wl->order) return -ENOMEM;
    for (uint32_t g = 0; g < o->groups; g++) {
        uint32_t *first = wl->prompts + (size_t)g * o->prompts_per_group * wl->plen;
        for (uint32_t i = 0; i < o->system_len; i++) first[i] = draw(wl, rng);
        for (uint32_t u = 0; u < o->prompts_per_group; u++) {
            uint32_t *p = first + (size_t)u * wl->plen;
            if (u) memcpy(p, first, o->system_len * sizeof *p);
            if (sep) p[o->system_len] = ' ';
            for (uint32_t i = 0; i < o->question_len; i++)
                p[o->system_len + sep + i] = draw(wl, rng);
        }
    }
    /* Fisher-Yates, once: the order is then replayed cyclically. */
    for (uint32_t i = 0; i < wl->nprompts; i++) wl->order[i] = i;
    for (uint32_t i = wl->nprompts - 1; i > 0; i--) {
        uint32_t j = (uint32_t)kvg_rng_below(rng, (uint64_t)i + 1), t = wl->order[i];
        wl->order[i] = wl->order[j];
        wl->order[j] = t;
    }
    if (want_text(wl)) {
        wl->tlen_per = wl->plen * cpt(wl);
        wl->ptext = malloc((size_t)wl->nprompts * wl->tlen_per);
        if (!wl->ptext) return -ENOMEM;
        for (uint32_t i = 0; i < wl->nprompts; i++)
            render(wl, wl->prompts + (size_t)i * wl->plen, wl->plen,
                   wl->ptext + (size_t)i * wl->tlen_per);
    }
    return 0;
}

static int make_chat(struct kvg_bench_wl *wl, struct kvg_rng *rng)
{
    const struct kvg_bench_wl_opts *o = &wl->o;
    size_t n = (size_t)o->chat_groups * o->chat_system_len;
    wl->sys = malloc((n ? n : 1) * sizeof *wl->sys);
    if (!wl->sys) return -ENOMEM;
    for (size_t i = 0; i < n; i++) wl->sys[i] = draw(wl, rng);
    if (o->long_frac > 0) {
        size_t nd = (size_t)o->long_docs * o->long_len;
        wl->docs = malloc((nd ? nd : 1) * sizeof *wl->docs);
        if (!wl->docs) return -ENOMEM;
        for (size_t i = 0; i < nd; i++) wl->docs[i] = draw(wl, rng);
    }
    return 0;
}

/* Poisson arrivals of every open-loop stage, planned now so that they do not
 * depend on how the run goes. */
static int plan_open(struct kvg_bench_wl *wl, struct kvg_rng *rng)
{
    size_t cap = 1024;
    wl->open = malloc(cap * sizeof *wl->open);
    if (!wl->open) return -ENOMEM;
    for (size_t s = 0; s < wl->nst; s++) {
        if (wl->stage[s].rate <= 0) continue;
        double t = wl->start[s], end = wl->start[s + 1];
        for (;;) {
            t += -log1p(-kvg_rng_double(rng)) / wl->stage[s].rate;
            if (t >= end) break;
            if (wl->nopen == cap) {
                if (cap >= (size_t)1 << 26) return KVG_ETOOBIG;
                double *v = realloc(wl->open, 2 * cap * sizeof *v);
                if (!v) return -ENOMEM;
                wl->open = v;
                cap *= 2;
            }
            wl->open[wl->nopen++] = t;
        }
    }
    return 0;
}

static int check_opts(const struct kvg_bench_wl_opts *o, char *err, size_t errlen)
{
    if (o->output_len == 0 && o->kind != KVG_BENCH_WL_TRACE)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "output length must be at least 1");
    if (!o->printable && o->vocab == 0)
        return kvg_err_set(err, errlen, KVG_ECONFIG, "vocabulary is empty");
    if (o->kind == KVG_BENCH_WL_SHARED_PREFIX &&
        (!o->groups || !o->prompts_per_group || o->system_len + o->question_len == 0 ||
         (uint64_t)o->groups * o->prompts_per_group > 1000000 ||
         o->system_len + o->question_len > 1000000))
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "shared_prefix needs groups, prompts per group and a non-empty prompt");
    if (o->kind == KVG_BENCH_WL_CHAT &&
        (!o->turns || (!o->user_len && !o->chat_system_len) || !o->chat_groups || o->think_s < 0))
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "chat needs turns, groups and a non-empty message");
    if (o->kind == KVG_BENCH_WL_CHAT &&
        (o->turns_min > o->turns || (o->user_len_max && o->user_len_max < o->user_len) ||
         !(o->long_frac >= 0 && o->long_frac <= 1) ||
         (o->long_frac > 0 && (!o->long_len || !o->long_docs)) ||
         (uint64_t)o->long_docs * o->long_len > 100000000))
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "chat variants need turns_min <= turns, user_len <= user_len_max, "
                           "a long share in [0, 1] and documents when it is > 0");
    if (o->lora_hot > o->lora_adapters || !(o->lora_hot_frac >= 0 && o->lora_hot_frac <= 1) ||
        o->lora_adapters > 100000 || o->salt_tenants > 100000 ||
        ((o->lora_adapters || o->salt_tenants) && o->kind != KVG_BENCH_WL_CHAT))
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "adapters and tenants are chat variants: hot adapters <= adapters, "
                           "a hot share in [0, 1]");
    if (o->kind == KVG_BENCH_WL_AGENT &&
        (!o->turns || !o->chat_groups || o->turns_min > o->turns ||
         (o->user_len_max && o->user_len_max < o->user_len) ||
         !(o->agent_scale > 0 && o->agent_scale <= 100) || o->chat_groups > 10000))
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "agent sessions need turns (turns_min <= turns), 1..10000 deployments, "
                           "user_len <= user_len_max and a scale in (0, 100]");
    if (o->kind == KVG_BENCH_WL_TRACE &&
        (!o->trace_path[0] || !(o->trace_speed > 0) || !o->trace_block))
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "trace needs a file, a speed > 0 and a block size");
    if (o->kind != KVG_BENCH_WL_TRACE) {
        if (!o->nstages || o->nstages > KVG_BENCH_MAX_STAGES || o->warmup >= o->nstages)
            return kvg_err_set(err, errlen, KVG_ECONFIG,
                               "the load needs 1..64 stages, at least one of them measured");
        for (size_t i = 0; i < o->nstages; i++) {
            const struct kvg_bench_stage *s = &o->stage[i];
            if (!(s->secs > 0) || (s->rate > 0) == (s->conc > 0) || !(s->rate < 1e6))
                return kvg_err_set(
                    err, errlen, KVG_ECONFIG,
                    "each stage needs a duration and either a rate or a concurrency");
        }
    }
    return 0;
}

int kvg_bench_wl_new(const struct kvg_bench_wl_opts *o, struct kvg_bench_wl **out, char *err,
                     size_t errlen)
{
    int rc = check_opts(o, err, errlen);
    if (rc) return rc;
    struct kvg_bench_wl *wl = calloc(1, sizeof *wl);
    if (!wl) return -ENOMEM;
    kvg_heap_init(&wl->pending, sizeof(struct pend), pend_less);
    wl->o = *o;
    struct kvg_rng gen;
    kvg_rng_seed(&gen, o->seed);
    kvg_rng_seed(&wl->rng, o->seed ^ 0x9e3779b97f4a7c15ull);
    if (o->kind == KVG_BENCH_WL_TRACE) {
        rc = kvg_bench_trace_load(o->trace_path, o->trace_speed, &wl->trace, &wl->ntrace, err,
                                  errlen);
        if (rc) goto fail;
        if (!wl->ntrace) {
            rc = kvg_err_set(err, errlen, KVG_ECONFIG, "the trace has no request");
            goto fail;
        }
        /* One stage covering the trace; the arrivals are its timestamps. */
        wl->nst = 1;
        wl->start[0] = 0;
        wl->start[1] = wl->trace[wl->ntrace - 1].t + 1e-3;
        wl->stage[0] = (struct kvg_bench_stage){.rate = (double)wl->ntrace / wl->start[1],
                                                .secs = wl->start[1]};
        wl->open = malloc(wl->ntrace * sizeof *wl->open);
        if (!wl->open) goto nomem;
        for (size_t i = 0; i < wl->ntrace; i++) wl->open[i] = wl->trace[i].t;
        wl->nopen = wl->ntrace;
        *out = wl;
        return 0;
    }
    wl->nst = o->nstages;
    wl->warm = o->warmup;
    for (size_t i = 0; i < wl->nst; i++) {
        wl->stage[i] = o->stage[i];
        wl->start[i + 1] = wl->start[i] + o->stage[i].secs;
    }
    if (o->kind == KVG_BENCH_WL_AGENT) {
        if ((rc = kvg_bench_agent_new(o, &wl->agent, err, errlen))) goto fail;
    } else {
        rc = o->kind == KVG_BENCH_WL_SHARED_PREFIX ? make_shared_prefix(wl, &gen)
                                                   : make_chat(wl, &gen);
        if (rc) goto nomem;
    }
    if ((rc = plan_open(wl, &gen))) {
        if (rc == KVG_ETOOBIG) {
            kvg_err_set(err, errlen, rc, "the stages plan more than 2^26 arrivals");
            goto fail;
        }
        goto nomem;
    }
    /* Closed-loop stages fill their slots at their start. */
    for (size_t s = 0; s < wl->nst; s++)
        for (uint32_t k = 0; k < wl->stage[s].conc; k++)
            if ((rc = pend_push(wl, wl->start[s], P_SLOT, (int)s, NULL))) goto nomem;
    *out = wl;
    return 0;
nomem:
    rc = -ENOMEM;
    snprintf(err, errlen, "out of memory building the workload");
fail:
    kvg_bench_wl_free(wl);
    return rc;
}

static void sess_free(struct sess *s)
{
    if (!s) return;
    kvg_bench_agent_sess_free(s->agent);
    free(s->tok);
    free(s->text);
    free(s);
}

void kvg_bench_wl_free(struct kvg_bench_wl *wl)
{
    if (!wl) return;
    for (size_t i = 0; i < wl->pending.n; i++)
        sess_free(((struct pend *)kvg_heap_at(&wl->pending, i))->s);
    kvg_heap_free(&wl->pending);
    free(wl->open);
    free(wl->prompts);
    free(wl->order);
    free(wl->ptext);
    free(wl->sys);
    free(wl->docs);
    kvg_bench_trace_free(wl->trace, wl->ntrace);
    kvg_bench_agent_free(wl->agent);
    free(wl);
}

double kvg_bench_wl_next(const struct kvg_bench_wl *wl)
{
    double t = wl->open_next < wl->nopen ? wl->open[wl->open_next] : INFINITY;
    return fmin(t, pend_next(wl));
}

int kvg_bench_wl_stage_at(const struct kvg_bench_wl *wl, double t)
{
    size_t i = 0;
    while (i + 1 < wl->nst && t >= wl->start[i + 1]) i++;
    return (int)i;
}

/* ---- Requests of each kind. */
struct req_priv {
    struct kvg_bench_req r;
    struct sess *s;    /* chat, agent */
    uint32_t *own_tok; /* trace */
    char *own_text;
    struct kvg_bench_agent_turn *turn; /* agent */
};

static int sess_append(const struct kvg_bench_wl *wl, struct sess *s, const uint32_t *ids, size_t n)
{
    if (s->n + n > s->cap) {
        size_t c = s->cap ? s->cap : 256;
        while (c < s->n + n) c *= 2;
        uint32_t *t = realloc(s->tok, c * sizeof *t);
        if (!t) return -ENOMEM;
        s->tok = t;
        s->cap = (uint32_t)c;
    }
    if (n) memcpy(s->tok + s->n, ids, n * sizeof *ids); /* tok may still be NULL */
    if (want_text(wl)) {
        size_t need = s->tlen + n * cpt(wl);
        if (need > s->tcap) {
            size_t c = s->tcap ? s->tcap : 1024;
            while (c < need) c *= 2;
            char *x = realloc(s->text, c);
            if (!x) return -ENOMEM;
            s->text = x;
            s->tcap = c;
        }
        render(wl, ids, n, s->text + s->tlen);
        s->tlen = need;
    }
    s->n += (uint32_t)n;
    return 0;
}

static int sess_user_message(struct kvg_bench_wl *wl, struct sess *s)
{
    uint32_t n = wl->o.user_len;
    if (wl->o.user_len_max > n) /* a tool result: its length varies turn by turn */
        n += (uint32_t)kvg_rng_below(&wl->rng, (uint64_t)wl->o.user_len_max - n + 1);
    if (!n) return 0;
    uint32_t *m = malloc(n * sizeof *m);
    if (!m) return -ENOMEM;
    for (uint32_t i = 0; i < n; i++) m[i] = draw(wl, &wl->rng);
    int rc = sess_append(wl, s, m, n);
    free(m);
    return rc;
}

static int new_session(struct kvg_bench_wl *wl, int slot_stage, struct sess **out)
{
    struct sess *s = calloc(1, sizeof *s);
    if (!s) return -ENOMEM;
    s->slot_stage = slot_stage;
    s->key = ++wl->nsessions;
    s->lora = s->tenant = -1;
    const struct kvg_bench_wl_opts *o = &wl->o;
    if (o->kind == KVG_BENCH_WL_AGENT) {
        int rc = kvg_bench_agent_sess_new(wl->agent, s->key, &s->agent);
        if (rc) {
            sess_free(s);
            return rc;
        }
        s->turns = kvg_bench_agent_sess_turns(s->agent);
        *out = s;
        return 0;
    }
    s->turns = o->turns;
    if (o->turns_min && o->turns_min < o->turns)
        s->turns = o->turns_min + (uint32_t)kvg_rng_below(&wl->rng, o->turns - o->turns_min + 1);
    int rc;
    if (o->long_frac > 0 && kvg_rng_double(&wl->rng) < o->long_frac) {
        /* A question about one of the documents: one turn, no system prompt. */
        uint32_t d = (uint32_t)kvg_rng_below(&wl->rng, o->long_docs);
        s->turns = 1;
        rc = sess_append(wl, s, wl->docs + (size_t)d * o->long_len, o->long_len);
    } else {
        uint32_t g = (uint32_t)kvg_rng_below(&wl->rng, o->chat_groups);
        if (o->lora_adapters) {
            /* A hot adapter with its share of the traffic, else a cold one. */
            uint32_t cold = o->lora_adapters - o->lora_hot;
            int hot = o->lora_hot && (!cold || kvg_rng_double(&wl->rng) < o->lora_hot_frac);
            s->lora = hot ? (int)kvg_rng_below(&wl->rng, o->lora_hot)
                          : (int)(o->lora_hot + kvg_rng_below(&wl->rng, cold));
            g = (uint32_t)s->lora % o->chat_groups;
        }
        if (o->salt_tenants) {
            s->tenant = (int)kvg_rng_below(&wl->rng, o->salt_tenants);
            g = (uint32_t)s->tenant % o->chat_groups;
        }
        rc = sess_append(wl, s, wl->sys + (size_t)g * o->chat_system_len, o->chat_system_len);
    }
    if (!rc) rc = sess_user_message(wl, s);
    if (rc) {
        sess_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

/* Deterministic ids of a shared trace block or prefix: a function of the
 * seed and the block's name only. */
static void fill_named(const struct kvg_bench_wl *wl, uint64_t name, uint32_t *out, size_t n)
{
    struct kvg_rng r;
    kvg_rng_seed(&r, wl->o.seed ^ (name * 0xbf58476d1ce4e5b9ull + 0x94d049bb133111ebull));
    for (size_t i = 0; i < n; i++) out[i] = draw(wl, &r);
}

static int build_trace(struct kvg_bench_wl *wl, struct req_priv *p, size_t idx)
{
    const struct kvg_bench_trace_rec *t = &wl->trace[idx];
    struct kvg_bench_req *r = &p->r;
    r->max_tokens = t->output_len ? t->output_len : wl->o.output_len;
    snprintf(r->session, sizeof r->session, "%s", t->session);
    if (t->text) {
        /* The text is the prompt; under the byte tokenizer its bytes are ids. */
        p->own_tok = malloc((t->text_len ? t->text_len : 1) * sizeof *p->own_tok);
        if (!p->own_tok) return -ENOMEM;
        for (size_t i = 0; i < t->text_len; i++) p->own_tok[i] = (unsigned char)t->text[i];
        r->tokens = p->own_tok;
        r->ntokens = (uint32_t)t->text_len;
        r->text = t->text;
        r->text_len = t->text_len;
        return 0;
    }
    uint32_t n = t->input_len, done = 0;
    p->own_tok = malloc((n ? n : 1) * sizeof *p->own_tok);
    if (!p->own_tok) return -ENOMEM;
    for (uint32_t h = 0; h < t->nhash && done < n; h++) {
        uint32_t k = KVG_MIN(wl->o.trace_block, n - done);
        fill_named(wl, t->hash_ids[h] + 1, p->own_tok + done, k);
        done += k;
    }
    if (t->prefix_id && done < t->prefix_len) {
        uint32_t k = KVG_MIN(t->prefix_len, n);
        if (k > done) {
            uint32_t *tmp = malloc(k * sizeof *tmp);
            if (!tmp) return -ENOMEM;
            fill_named(wl, t->prefix_id ^ 0x5bd1e995u, tmp, k);
            memcpy(p->own_tok + done, tmp + done, (k - done) * sizeof *tmp);
            free(tmp);
            done = k;
        }
    }
    fill_named(wl, 0xfeedull << 32 | idx, p->own_tok + done, n - done);
    r->tokens = p->own_tok;
    r->ntokens = n;
    if (want_text(wl)) {
        p->own_text = malloc((size_t)n * cpt(wl) + 1);
        if (!p->own_text) return -ENOMEM;
        render(wl, p->own_tok, n, p->own_text);
        r->text = p->own_text;
        r->text_len = (size_t)n * cpt(wl);
    }
    return 0;
}

int kvg_bench_wl_pop(struct kvg_bench_wl *wl, struct kvg_bench_req **out)
{
    double t_open = wl->open_next < wl->nopen ? wl->open[wl->open_next] : INFINITY;
    if (t_open == INFINITY && !wl->pending.n) return KVG_ENOTFOUND;
    struct pend p;
    if (pend_next(wl) < t_open)
        kvg_heap_pop(&wl->pending, &p);
    else
        p = (struct pend){t_open, 0, P_OPEN, -1, NULL};
    struct req_priv *rp = calloc(1, sizeof *rp);
    if (!rp) {
        sess_free(p.s);
        return -ENOMEM;
    }
    size_t open_idx = wl->open_next;
    if (p.type == P_OPEN) wl->open_next++;
    struct kvg_bench_req *r = &rp->r;
    r->priv = rp;
    r->id = wl->issued++;
    r->arrival = p.t;
    r->stage = kvg_bench_wl_stage_at(wl, p.t);
    r->warmup = (size_t)r->stage < wl->warm;
    r->max_tokens = wl->o.output_len;
    r->ignore_eos = wl->o.ignore_eos;
    r->slot_stage = p.type == P_SLOT ? p.stage : -1;
    int rc = 0;
    switch (wl->o.kind) {
    case KVG_BENCH_WL_SHARED_PREFIX: {
        uint32_t k = wl->order[r->id % wl->nprompts];
        r->prompt = k;
        r->tokens = wl->prompts + (size_t)k * wl->plen;
        r->ntokens = wl->plen;
        if (wl->ptext) {
            r->text = wl->ptext + (size_t)k * wl->tlen_per;
            r->text_len = wl->tlen_per;
        }
        /* No routing key: inference-perf sends none, a router must find
         * the shared prefix by itself. */
        break;
    }
    case KVG_BENCH_WL_CHAT: {
        struct sess *s = p.s;
        if (!s && (rc = new_session(wl, r->slot_stage, &s))) break;
        rp->s = s;
        r->slot_stage = s->slot_stage;
        r->prompt = s->turn;
        r->tokens = s->tok;
        r->ntokens = s->n;
        r->text = s->text;
        r->text_len = s->tlen;
        snprintf(r->session, sizeof r->session, "s%llu", (unsigned long long)s->key);
        if (s->lora >= 0) {
            snprintf(r->lora, sizeof r->lora, "lora-%d", s->lora);
            r->lora_id = s->lora + 1;
        }
        if (s->tenant >= 0) snprintf(r->salt, sizeof r->salt, "tenant-%d", s->tenant);
        break;
    }
    case KVG_BENCH_WL_TRACE:
        rc = build_trace(wl, rp, open_idx);
        break;
    case KVG_BENCH_WL_AGENT: {
        struct sess *s = p.s;
        char why[300] = "";
        if (!s && (rc = new_session(wl, r->slot_stage, &s))) break;
        rp->s = s;
        r->slot_stage = s->slot_stage;
        r->prompt = s->turn;
        rc = kvg_bench_agent_request(wl->agent, s->agent, r, &rp->turn, why, sizeof why);
        if (rc) KVG_ERROR("agent workload: %s", why[0] ? why : kvg_strerror(rc));
        break;
    }
    }
    if (rc) {
        sess_free(rp->s);
        kvg_bench_agent_turn_free(rp->turn);
        free(rp->own_tok);
        free(rp->own_text);
        free(rp);
        return rc;
    }
    *out = r;
    return 0;
}

int kvg_bench_wl_wants_output(const struct kvg_bench_wl *wl)
{
    return wl->o.kind == KVG_BENCH_WL_CHAT || wl->o.kind == KVG_BENCH_WL_AGENT;
}

const uint32_t *kvg_bench_wl_output_vocab(const struct kvg_bench_wl *wl, size_t *n)
{
    *n = 0;
    return wl->agent ? kvg_bench_agent_output_vocab(wl->agent, n) : NULL;
}

int64_t kvg_bench_wl_group(const struct kvg_bench_wl *wl, const struct kvg_bench_req *r)
{
    if (wl->o.kind != KVG_BENCH_WL_SHARED_PREFIX) return -1;
    return r->prompt / wl->o.prompts_per_group; /* prompts are generated group by group */
}

/* An agent session's next turn: the answer (ids offline, text live)
 * appended with its tool call and result; 1 when it goes on. The session
 * ends at its last turn, on an error, when the load is over, or before its
 * request body passes max_context bytes. */
static int agent_more(struct kvg_bench_wl *wl, struct sess *s, double next, const uint32_t *ids,
                      size_t n, const char *text, size_t len, int ok, int *rc)
{
    if (!ok || s->turn >= s->turns || next >= wl->start[wl->nst]) return 0;
    *rc = text ? kvg_bench_agent_answer(wl->agent, s->agent, text, len)
               : kvg_bench_agent_answer_ids(wl->agent, s->agent, ids, n);
    if (*rc) return 0;
    return !wl->o.max_context || kvg_bench_agent_next_size(s->agent) <= wl->o.max_context;
}

static int done(struct kvg_bench_wl *wl, struct kvg_bench_req *r, double now, const uint32_t *out,
                size_t n, const char *text, size_t len, int ok)
{
    struct req_priv *rp = r->priv;
    int slot = r->slot_stage, rc = 0;
    double end = wl->start[wl->nst];
    if (rp->s) {
        struct sess *s = rp->s;
        rp->s = NULL;
        s->turn++;
        /* The next turn carries this answer and a new message, after a
         * think time; the session ends at its last turn, on an error, past
         * the context limit, or when the load is over. An agent session
         * draws from its own generator: its turns do not depend on when
         * other sessions' requests end. */
        int more;
        double next;
        if (s->agent) {
            next = now + kvg_bench_agent_sess_think(s->agent, wl->o.think_s);
            more = agent_more(wl, s, next, out, n, text, len, ok, &rc);
        } else {
            next =
                now + (wl->o.think_s > 0 ? -log1p(-kvg_rng_double(&wl->rng)) * wl->o.think_s : 0);
            uint64_t grown =
                (uint64_t)s->n + n + KVG_MAX(wl->o.user_len, wl->o.user_len_max) + wl->o.output_len;
            more = ok && s->turn < s->turns && next < end &&
                   (!wl->o.max_context || grown <= wl->o.max_context);
            if (more) rc = sess_append(wl, s, out, n);
            if (more && !rc) rc = sess_user_message(wl, s);
        }
        if (more && !rc) {
            rc = pend_push(wl, next, P_TURN, slot, s);
        } else {
            sess_free(s);
            if (!rc && slot >= 0 && now < wl->start[slot + 1])
                rc = pend_push(wl, now, P_SLOT, slot, NULL);
        }
    } else if (slot >= 0 && now < wl->start[slot + 1]) {
        rc = pend_push(wl, now, P_SLOT, slot, NULL);
    }
    kvg_bench_agent_turn_free(rp->turn);
    free(rp->own_tok);
    free(rp->own_text);
    free(rp);
    return rc;
}

int kvg_bench_wl_done(struct kvg_bench_wl *wl, struct kvg_bench_req *r, double now,
                      const uint32_t *out, size_t n, int ok)
{
    return done(wl, r, now, out, n, NULL, 0, ok);
}

int kvg_bench_wl_done_text(struct kvg_bench_wl *wl, struct kvg_bench_req *r, double now,
                           const char *text, size_t len, int ok)
{
    struct req_priv *rp = r->priv;
    if (rp->s && rp->s->agent) return done(wl, r, now, NULL, 0, text ? text : "", len, ok);
    /* Under the byte tokenizer the answer's bytes are its ids. */
    uint32_t *ids = NULL;
    if (rp->s && ok && len && !(ids = malloc(len * sizeof *ids))) len = 0;
    for (size_t i = 0; ids && i < len; i++) ids[i] = (unsigned char)text[i];
    int rc = done(wl, r, now, ids, ids ? len : 0, NULL, 0, ok);
    free(ids);
    return rc;
}

size_t kvg_bench_wl_nstages(const struct kvg_bench_wl *wl)
{
    return wl->nst;
}

const struct kvg_bench_stage *kvg_bench_wl_stage(const struct kvg_bench_wl *wl, size_t i,
                                                 double *start)
{
    if (i >= wl->nst) return NULL;
    if (start) *start = wl->start[i];
    return &wl->stage[i];
}

double kvg_bench_wl_warm_end(const struct kvg_bench_wl *wl)
{
    return wl->start[wl->warm];
}

double kvg_bench_wl_end(const struct kvg_bench_wl *wl)
{
    return wl->start[wl->nst];
}

uint64_t kvg_bench_wl_planned(const struct kvg_bench_wl *wl)
{
    return wl->nopen;
}

uint64_t kvg_bench_wl_issued(const struct kvg_bench_wl *wl)
{
    return wl->issued;
}

const uint32_t *kvg_bench_wl_prompt(const struct kvg_bench_wl *wl, uint32_t i, uint32_t *n)
{
    if (!wl->prompts || i >= wl->nprompts) return NULL;
    *n = wl->plen;
    return wl->prompts + (size_t)i * wl->plen;
}

const uint32_t *kvg_bench_wl_order(const struct kvg_bench_wl *wl, uint32_t *n)
{
    *n = wl->order ? wl->nprompts : 0;
    return wl->order;
}
