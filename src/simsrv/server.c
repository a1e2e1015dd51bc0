/* The simulated engine's process: the engine, the tokenizer and chat
 * template, the KV event publisher and the HTTP listener, all on one libuv
 * loop (src/cmd/sim.c parses its flags). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/log.h"
#include "simsrv/simsrv.h"
#include "sim/kv_events.h"
#include "simsrv/kvpub.h"

double kvg_simsrv_now(const struct kvg_simsrv_server *s)
{
    return (kvg_now_s() - s->t0) * s->o.speed;
}

void kvg_simsrv_publish(struct kvg_simsrv_rank *rk)
{
    struct kvg_sim_events ev;
    kvg_sim_events(rk->engine, &ev);
    if (!ev.n) return;
    void *payload;
    size_t len;
    /* vLLM stamps every batch with its engine's data_parallel_rank. */
    if (kvg_sim_kv_encode(ev.ev, ev.n, kvg_wall_s(), rk->rank,
                          rk->s->o.kv_events_map ? KVG_SIM_KV_MAP : KVG_SIM_KV_ARRAY, &payload,
                          &len) == 0)
        kvg_simsrv_kvpub_publish(rk->pub, payload, len);
}

/* Rank r's endpoint: the port plus r, as vLLM offsets each DP rank's
 * publisher (and replay socket). -EINVAL when there is no numeric port
 * to offset (a wildcard port, ipc://). */
static int rank_endpoint(const char *ep, int r, char *out, size_t cap)
{
    const char *colon = strrchr(ep, ':');
    uint64_t port;
    if (!r) return snprintf(out, cap, "%s", ep) < (int)cap ? 0 : -EINVAL;
    if (!colon || kvg_parse_u64(colon + 1, &port) || port + (uint64_t)r > 65535) return -EINVAL;
    int n = snprintf(out, cap, "%.*s:%llu", (int)(colon - ep), ep,
                     (unsigned long long)(port + (uint64_t)r));
    return n > 0 && (size_t)n < cap ? 0 : -EINVAL;
}

/* Starts rank rk's KV event publisher on the configured endpoints + rank. */
static int start_publisher(struct kvg_simsrv_server *s, struct kvg_simsrv_rank *rk, char *err,
                           size_t errlen)
{
    const struct kvg_simsrv_opts *o = &s->o;
    char ep[256], rep[256] = "";
    if (rank_endpoint(o->kv_events_endpoint, rk->rank, ep, sizeof ep) ||
        (o->replay_endpoint[0] && rank_endpoint(o->replay_endpoint, rk->rank, rep, sizeof rep))) {
        snprintf(err, errlen, "--dp-size needs endpoints with a numeric port (rank r on port + r)");
        return -EINVAL;
    }
    struct kvg_simsrv_kvpub_config pc;
    kvg_simsrv_kvpub_config_init(&pc);
    pc.endpoint = ep;
    pc.replay_endpoint = rep[0] ? rep : NULL;
    pc.topic = o->kv_topic;
    pc.drop_prob = o->kv_events_drop;
    pc.seed = o->seed + (uint64_t)rk->rank;
    return kvg_simsrv_kvpub_start(&pc, &rk->pub, err, errlen);
}

/* Output token ids: the vocabulary entries that decode to short lowercase
 * words (or single letters and spaces for a byte tokenizer), so generated
 * text reads as text whatever the tokenizer. */
static int output_vocab(struct kvg_tok *tok, uint32_t **out, size_t *n)
{
    size_t vs = kvg_tok_vocab_size(tok), lim = vs < 200000 ? vs : 200000, k = 0;
    uint32_t *v = malloc(4096 * sizeof *v);
    if (!v) return -ENOMEM;
    for (uint32_t id = 0; id < lim && k < 4096; id++) {
        char *t;
        size_t tl;
        if (kvg_tok_decode(tok, &id, 1, 1, &t, &tl)) continue;
        int ok = tl >= 1 && tl <= 10;
        for (size_t i = 0; ok && i < tl; i++) ok = (t[i] >= 'a' && t[i] <= 'z') || t[i] == ' ';
        free(t);
        if (ok) v[k++] = id;
    }
    *out = v;
    *n = k;
    return k ? 0 : KVG_EUNSUPP;
}

static void on_signal(uv_signal_t *h, int sig)
{
    uv_stop(h->loop);
}

void kvg_simsrv_opts_default(struct kvg_simsrv_opts *o)
{
    memset(o, 0, sizeof *o);
    snprintf(o->host, sizeof o->host, "127.0.0.1");
    o->port = 8000;
    snprintf(o->model, sizeof o->model, "sim-model");
    snprintf(o->profile, sizeof o->profile, "tiny");
    snprintf(o->tokenizer, sizeof o->tokenizer, "builtin:bytes");
    o->speed = 1;
    o->fail_status = 500;
    o->disconnect_after = -1;
    o->metrics_after_s = -1;
    o->cpu_load_s_per_token = -1;
    o->log_level = KVG_LOG_INFO;
    o->kv_hold_timeout_s = 480;
    o->kv_load_fail = 1;
    o->bootstrap_timeout_s = 120;
    o->side_channel_port = -1;
    o->embedding_dim = 16;
    o->responses_store_max = 1000;
    o->max_batch = 2048;
    o->max_audio_mb = 25;
    o->wake_s[0] = o->wake_s[1] = -1;
}

/* --served-model-name "a,b" (or "a b", as vLLM's list): every name served,
 * the first reported (it becomes o->model); without it, --model alone. 0,
 * or -1 (stderr told). */
static int served_names(struct kvg_simsrv_server *s)
{
    struct kvg_simsrv_opts *o = &s->o;
    int max = (int)(sizeof s->names / sizeof s->names[0]);
    if (!o->served_names[0]) {
        if (o->model[0]) snprintf(s->names[s->nnames++], sizeof s->names[0], "%s", o->model);
    }
    for (const char *p = o->served_names; *p;) {
        size_t n = strcspn(p, ", ");
        if (n && (n >= sizeof s->names[0] || s->nnames >= max)) {
            fprintf(stderr, "kvgate sim: --served-model-name: at most %d names of 1..%d bytes\n",
                    max, (int)sizeof s->names[0] - 1);
            return -1;
        }
        if (n) {
            memcpy(s->names[s->nnames], p, n);
            s->names[s->nnames++][n] = 0;
        }
        p += n + (p[n] != 0);
    }
    if (!s->nnames) {
        fprintf(stderr, "kvgate sim: no model name (--model or --served-model-name)\n");
        return -1;
    }
    snprintf(o->model, sizeof o->model, "%s", s->names[0]);
    return 0;
}

int kvg_simsrv_main(const struct kvg_simsrv_opts *opts)
{
    static struct kvg_simsrv_server s;
    struct kvg_simsrv_opts *o = &s.o;
    memset(&s, 0, sizeof s);
    *o = *opts;
    int rc;
    /* vLLM's NIXL side channel (VLLM_NIXL_SIDE_CHANNEL_PORT, 5600) is a
     * vLLM engine's; an SGLang prefill serves its KV through the bootstrap
     * port alone, and a fixed default there only collided with a vLLM sim's
     * (two tests side by side). */
    if (o->side_channel_port < 0)
        o->side_channel_port =
            o->flavor != KVG_SIMSRV_FLAVOR_SGLANG &&
                    (o->role == KVG_SIMSRV_ROLE_PREFILL || o->role == KVG_SIMSRV_ROLE_ENCODE)
                ? 5600
                : 0;
    kvg_log_set_level(o->log_level);
    signal(SIGPIPE, SIG_IGN);
    if (served_names(&s)) return 2;
    if (o->responses_store && kvg__simsrv_store_new(o->responses_store_max, &s.store)) {
        fprintf(stderr, "kvgate sim: out of memory\n");
        return 2;
    }
    const struct kvg_sim_profile *prof = kvg_sim_profile_find(o->profile);
    if (!prof) {
        fprintf(stderr, "kvgate sim: unknown --profile '%s' (see --help)\n", o->profile);
        return 2;
    }
    char err[512] = "";
    if ((rc = kvg_tok_load(o->tokenizer, o->tokenizer_config[0] ? o->tokenizer_config : NULL,
                           &s.tok, err, sizeof err))) {
        fprintf(stderr, "kvgate sim: tokenizer: %s\n", err[0] ? err : kvg_strerror(rc));
        return 2;
    }
    if ((rc = kvg_jinja_chat_new(kvg_tok_chat_template(s.tok), kvg_tok_bos_token(s.tok),
                                 kvg_tok_eos_token(s.tok), &s.tmpl, err, sizeof err))) {
        fprintf(stderr, "kvgate sim: chat template: %s\n", err[0] ? err : kvg_strerror(rc));
        return 2;
    }
    int64_t eos =
        kvg_tok_eos_token(s.tok) ? kvg_tok_token_to_id(s.tok, kvg_tok_eos_token(s.tok)) : -1;
    s.eos_id = eos >= 0 ? (uint32_t)eos : 0;
    struct kvg_sim_config cfg;
    kvg_sim_config_init(&cfg, prof);
    if (o->block_size) cfg.profile.block_size = o->block_size;
    if (o->kv_capacity_tokens) cfg.profile.kv_capacity_tokens = o->kv_capacity_tokens;
    if (o->max_num_seqs) cfg.profile.max_num_seqs = o->max_num_seqs;
    if (o->cpu_load_s_per_token >= 0) cfg.profile.t_cpu_load_token = o->cpu_load_s_per_token;
    cfg.cpu_kv_capacity_tokens = o->cpu_kv_capacity_tokens;
    cfg.emit_events = o->kv_events_endpoint[0] != 0;
    uint32_t *vocab = NULL;
    if ((rc = output_vocab(s.tok, &vocab, &cfg.n_output_vocab))) {
        fprintf(stderr, "kvgate sim: the tokenizer has no plain-word tokens for output\n");
        return 2;
    }
    cfg.output_vocab = vocab;
    s.ndp = o->dp_size ? (int)o->dp_size : 1;
    for (int r = 0; r < s.ndp; r++) {
        struct kvg_simsrv_rank *rk = &s.ranks[r];
        rk->s = &s;
        rk->rank = r;
        cfg.seed = o->seed + (uint64_t)r; /* ranks sample apart, as separate engine cores */
        if ((rc = kvg_sim_create(&cfg, &rk->engine))) {
            fprintf(stderr, "kvgate sim: engine configuration rejected: %s\n", kvg_strerror(rc));
            return 2;
        }
    }
    free(vocab);
    struct kvg_sim_metrics em;
    kvg_sim_get_metrics(s.ranks[0].engine, &em);
    s.max_model_len = em.max_model_len;
    s.kv_bytes_per_token = kvg_sim_kv_bytes_per_token(&cfg.profile);
    s.t_encode_image = cfg.profile.t_encode_image;
    for (const char *p = o->lora_adapters; *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n && n < sizeof s.adapters[0] && s.nadapters < KVG_SIMSRV_MAX_ADAPTERS) {
            memcpy(s.adapters[s.nadapters], p, n);
            s.adapters[s.nadapters++][n] = 0;
        } else if (n) {
            fprintf(stderr, "kvgate sim: --lora-adapters: at most %d names under %d bytes\n",
                    KVG_SIMSRV_MAX_ADAPTERS, KVG_SIMSRV_ADAPTER_NAME);
            return 2;
        }
        p += n + (e != NULL);
    }
    for (int r = 0; o->kv_events_endpoint[0] && r < s.ndp; r++)
        if ((rc = start_publisher(&s, &s.ranks[r], err, sizeof err))) {
            fprintf(stderr, "kvgate sim: KV events of rank %d: %s\n", r, err);
            return 2;
        }
    if ((rc = kvg_simsrv_metrics_init(&s))) {
        fprintf(stderr, "kvgate sim: metrics: %s\n", kvg_strerror(rc));
        return 2;
    }
    kvg_rng_seed(&s.rng, o->seed ^ 0x5eed);
    kvg_rng_seed(&s.id_rng, kvg_now_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)o->seed);
    s.t0 = kvg_now_s();
    s.started_wall = kvg_wall_s();
    uv_loop_t *loop = uv_default_loop();
    s.loop = loop;
    for (int r = 0; r < s.ndp; r++) {
        uv_timer_init(loop, &s.ranks[r].step_timer);
        s.ranks[r].step_timer.data = &s.ranks[r];
    }
    struct kvg_http_limits lim = {0}; /* kvg_http_limits_default leaves send_buffer_bytes unset */
    kvg_http_limits_default(&lim);
    if ((rc = kvg_http_server_start(loop, o->host, o->port, KVG_HTTP_BIND_EXCLUSIVE, &lim,
                                    kvg_simsrv_handle, &s, &s.http))) {
        fprintf(stderr, "kvgate sim: cannot listen on %s:%d: %s\n", o->host, o->port,
                kvg_strerror(rc));
        return 1;
    }
    double w1 = o->wake_s[0] >= 0 ? o->wake_s[0] : cfg.profile.t_wake_l1;
    double w2 = o->wake_s[1] >= 0 ? o->wake_s[1] : cfg.profile.t_wake_l2;
    if ((rc = kvg_simsrv_sleep_start(&s, w1, w2))) {
        fprintf(stderr, "kvgate sim: %s\n", kvg_strerror(rc));
        return 1;
    }
    if ((rc = kvg_simsrv_pd_start(&s, err, sizeof err)) ||
        (rc = kvg_simsrv_ec_start(&s, err, sizeof err))) {
        fprintf(stderr, "kvgate sim: %s\n", err);
        return 1;
    }
    uv_signal_t st, si;
    uv_signal_init(loop, &st);
    uv_signal_init(loop, &si);
    uv_signal_start(&st, on_signal, SIGTERM);
    uv_signal_start(&si, on_signal, SIGINT);
    static const char *roles[] = {"both", "prefill", "decode", "encode"};
    KVG_INFO(
        "kvgate sim: model %s, profile %s, flavor %d, block %u, %u blocks, %u CPU-tier blocks, %d "
        "rank%s, role %s, on http://%s:%d%s%s",
        o->model, prof->name, (int)o->flavor, em.block_size, em.num_blocks, em.cpu_num_blocks,
        s.ndp, s.ndp > 1 ? "s" : "", roles[o->role], o->host, kvg_http_server_port(s.http),
        s.ranks[0].pub ? ", KV events on " : "",
        s.ranks[0].pub ? kvg_simsrv_kvpub_endpoint(s.ranks[0].pub) : "");
    uv_run(loop, UV_RUN_DEFAULT);
    /* Stopped by a signal: close everything and let the callbacks run. */
    kvg_http_server_close(s.http);
    kvg_simsrv_pd_stop(&s);
    kvg_simsrv_ec_stop(&s);
    kvg_simsrv_sleep_stop(&s);
    for (int r = 0; r < s.ndp; r++) uv_close((uv_handle_t *)&s.ranks[r].step_timer, NULL);
    uv_close((uv_handle_t *)&st, NULL);
    uv_close((uv_handle_t *)&si, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_loop_close(loop);
    kvg_simsrv_metrics_free(&s);
    for (int r = 0; r < s.ndp; r++) {
        kvg_simsrv_kvpub_stop(s.ranks[r].pub);
        kvg_sim_free(s.ranks[r].engine);
    }
    kvg_tok_free(s.tok);
    kvg_jinja_chat_free(s.tmpl);
    kvg__simsrv_store_free(s.store);
    free(s.live);
    return 0;
}
