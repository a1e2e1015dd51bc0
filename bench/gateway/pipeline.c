/* The gateway's work-thread path for one long request, alone on one thread:
 * what cost.sh's 30k rows spend in JSON-parse, render + tokenize + block
 * hashes (through the tokenizer prefix cache, warm), and freeing, measured as
 * this thread's CPU time (other processes on the cores do not add to it), so
 * a change of a few percent in those phases shows where the multi-process
 * cost.sh cannot resolve it. Bodies are cost.sh's (bench/gateway/workloads.py:
 * PRE \t POST per line, the request number between them, as body.lua sends).
 *   pipeline TOKENIZER_JSON TOKENIZER_CONFIG BODIES_TSV [--passes P]
 *            [--requests N] [--cache-bytes B] [--block-size S] [--kind chat|messages|responses]
 * (--kind: the endpoint the bodies are for; cost.sh's 30k-msg bodies are
 * Messages requests, converted to chat before rendering, as the gateway does)
 * Prints one line for the best pass (the least total CPU):
 *   requests=N parse_us=.. tokenize_us=.. free_us=.. total_us=..  (per request) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/util.h"
#include "jinja/chat.h"
#include "proxy/route_input.h"
#include "tokenizer/tokenizer.h"

struct body {
    char *pre, *post;
    size_t npre, npost;
};

/* The TSV's lines, pointing into f (both the caller's: *out with free). */
static size_t read_bodies(const char *path, struct kvg_buf *f, struct body **out)
{
    kvg_buf_init(f, 0);
    if (kvg_buf_read_file(f, path) || kvg_buf_append(f, "", 1)) return 0;
    size_t n = 0, cap = 0;
    struct body *v = NULL;
    for (char *line = f->data, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        if (nl) *nl = 0;
        char *tab = strchr(line, '\t');
        if (!tab) continue;
        *tab = 0;
        if (n == cap && !(v = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof *v))) return 0;
        v[n++] = (struct body){line, tab + 1, (size_t)(tab - line), strlen(tab + 1)};
    }
    *out = v;
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: pipeline TOKENIZER_JSON TOKENIZER_CONFIG BODIES_TSV [--passes P] "
                        "[--requests N] [--cache-bytes B] [--block-size S] "
                        "[--kind chat|messages|responses]\n");
        return 2;
    }
    int passes = 7, requests = 400;
    size_t cache_bytes = 64u << 20;
    uint32_t block = 16;
    enum kvg_api_kind kind = KVG_API_CHAT;
    for (int i = 4; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--passes"))
            passes = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--requests"))
            requests = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--cache-bytes"))
            cache_bytes = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--block-size"))
            block = (uint32_t)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--kind")) {
            if (!strcmp(argv[i + 1], "messages"))
                kind = KVG_API_MESSAGES;
            else if (!strcmp(argv[i + 1], "responses"))
                kind = KVG_API_RESPONSES;
            else if (strcmp(argv[i + 1], "chat")) {
                fprintf(stderr, "--kind: chat, messages or responses, not '%s'\n", argv[i + 1]);
                return 2;
            }
        }
    }
    char err[512];
    struct kvg_tok *tok;
    struct kvg_jinja_chat *chat;
    struct kvg_tok_pcache *cache = NULL;
    if (kvg_tok_load(argv[1], argv[2], &tok, err, sizeof err)) {
        fprintf(stderr, "tokenizer: %s\n", err);
        return 1;
    }
    if (kvg_jinja_chat_new(kvg_tok_chat_template(tok), kvg_tok_bos_token(tok),
                           kvg_tok_eos_token(tok), &chat, err, sizeof err)) {
        fprintf(stderr, "chat template: %s\n", err);
        return 1;
    }
    if (cache_bytes && kvg_tok_pcache_new(tok, cache_bytes, &cache)) return 1;
    struct kvg_rinput_tokenizer rt = {tok, chat, block, cache};
    struct body *b = NULL;
    struct kvg_buf file;
    size_t nb = read_bodies(argv[3], &file, &b);
    if (!nb) {
        fprintf(stderr, "%s: no bodies\n", argv[3]);
        return 1;
    }
    struct kvg_buf req;
    kvg_buf_init(&req, 0);
    double best[4] = {0}, best_total = 1e30;
    unsigned long serial = 0;
    /* Pass 0 warms the cache (each body's segments are kept on their second
     * sight, as in the gateway after its warm-up); it is not counted. */
    for (int pass = 0; pass <= passes; pass++) {
        double t[3] = {0};
        int reqs = pass ? requests : 2 * (int)nb;
        for (int r = 0; r < reqs; r++) {
            const struct body *x = &b[(size_t)r % nb];
            char num[24];
            int nl = snprintf(num, sizeof num, "%lu", ++serial);
            kvg_buf_reset(&req);
            if (kvg_buf_append(&req, x->pre, x->npre) || kvg_buf_append(&req, num, (size_t)nl) ||
                kvg_buf_append(&req, x->post, x->npost))
                return 1;
            struct kvg_rinput ri;
            char msg[256];
            double t0 = (double)kvg_thread_cpu_ns() / 1e3;
            if (kvg_rinput_parse(&ri, req.data, req.len, kind, msg, sizeof msg)) {
                fprintf(stderr, "parse: %s\n", msg);
                return 1;
            }
            double t1 = (double)kvg_thread_cpu_ns() / 1e3;
            kvg_rinput_tokenize(&ri, &rt, 0);
            double t2 = (double)kvg_thread_cpu_ns() / 1e3;
            if (ri.tokenize_error || !ri.nhashes) {
                fprintf(stderr, "tokenize failed (%d)\n", ri.tokenize_error);
                return 1;
            }
            kvg_rinput_free(&ri);
            double t3 = (double)kvg_thread_cpu_ns() / 1e3;
            t[0] += t1 - t0, t[1] += t2 - t1, t[2] += t3 - t2;
        }
        double total = t[0] + t[1] + t[2];
        if (pass && total < best_total) {
            best_total = total;
            for (int k = 0; k < 3; k++) best[k] = t[k] / requests;
        }
    }
    printf("requests=%d parse_us=%.1f tokenize_us=%.1f free_us=%.1f total_us=%.1f\n", requests,
           best[0], best[1], best[2], best_total / requests);
    kvg_buf_free(&req);
    kvg_buf_free(&file);
    free(b);
    kvg_tok_pcache_free(cache);
    kvg_jinja_chat_free(chat);
    kvg_tok_free(tok);
    return 0;
}
