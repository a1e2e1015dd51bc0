/* tok_encode: a small driver over kvgate's tokenizer for the integration
 * tests, which compare it with HuggingFace tokenizers.
 *
 *   tok_encode TOKENIZER [--config CFG] [--special] [--decode] [--skip-special]
 *   tok_encode TOKENIZER --load-time      prints the load time in ms
 *
 * Reads JSONL on stdin: one JSON string per line (encode) or one JSON array
 * of ids per line (--decode). Prints one line per input line: the ids
 * separated by spaces, or the decoded text as a JSON string, or
 * "ERR <code> <message>" for an input the tokenizer rejects. TOKENIZER is a
 * tokenizer.json path or builtin:bytes; CFG a tokenizer_config.json. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/util.h"
#include "tokenizer/tok_impl.h"
#include "tokenizer/tokenizer.h"

static int encode_line(const struct kvg_tok *tok, const char *line, size_t len, int special,
                       struct kvg_buf *text, struct kvg_buf *out)
{
    struct kvg_tok_js js = {line, line + len};
    kvg__tok_js_ws(&js);
    int rc = kvg__tok_js_string(&js, text);
    if (rc) return kvg_buf_printf(out, "ERR %d bad JSON string\n", rc);
    uint32_t *ids;
    size_t n;
    rc = kvg_tok_encode(tok, text->data ? text->data : "", text->len, special, &ids, &n);
    if (rc) return kvg_buf_printf(out, "ERR %d %s\n", rc, kvg_strerror(rc));
    for (size_t i = 0; i < n && !rc; i++) rc = kvg_buf_printf(out, i ? " %u" : "%u", ids[i]);
    free(ids);
    return rc ? rc : kvg_buf_append(out, "\n", 1);
}

static int decode_line(const struct kvg_tok *tok, const char *line, size_t len, int skip,
                       struct kvg_buf *out)
{
    cJSON *arr = cJSON_ParseWithLength(line, len);
    if (!cJSON_IsArray(arr)) {
        cJSON_Delete(arr);
        return kvg_buf_printf(out, "ERR %d bad JSON array\n", KVG_EPARSE);
    }
    size_t n = (size_t)cJSON_GetArraySize(arr), i = 0;
    uint32_t *ids = malloc((n + 1) * sizeof *ids);
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) ids[i++] = (uint32_t)e->valuedouble;
    cJSON_Delete(arr);
    char *text;
    size_t tl;
    int rc = kvg_tok_decode(tok, ids, n, skip, &text, &tl);
    free(ids);
    if (rc) return kvg_buf_printf(out, "ERR %d %s\n", rc, kvg_strerror(rc));
    rc = kvg_buf_append_json_str(out, text, tl);
    free(text);
    return rc ? rc : kvg_buf_append(out, "\n", 1);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: tok_encode TOKENIZER [--config CFG] [--special] [--decode] "
                        "[--skip-special] [--load-time]\n");
        return 2;
    }
    int special = 0, decode = 0, skip = 0, load_time = 0;
    const char *config = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--special"))
            special = 1;
        else if (!strcmp(argv[i], "--decode"))
            decode = 1;
        else if (!strcmp(argv[i], "--skip-special"))
            skip = 1;
        else if (!strcmp(argv[i], "--load-time"))
            load_time = 1;
        else if (!strcmp(argv[i], "--config") && i + 1 < argc)
            config = argv[++i];
    }
    char err[512];
    struct kvg_tok *tok;
    uint64_t t0 = kvg_now_ns();
    int rc = kvg_tok_load(argv[1], config, &tok, err, sizeof err);
    double ms = (double)(kvg_now_ns() - t0) / 1e6;
    if (rc) {
        fprintf(stderr, "load %s: %s (%s)\n", argv[1], err, kvg_strerror(rc));
        return 2;
    }
    if (load_time) {
        printf("%.2f\n", ms);
        kvg_tok_free(tok);
        return 0;
    }
    struct kvg_buf text, out;
    kvg_buf_init(&text, 1u << 30);
    kvg_buf_init(&out, 1u << 30);
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, stdin)) > 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
        kvg_buf_reset(&out);
        rc = decode ? decode_line(tok, line, (size_t)len, skip, &out)
                    : encode_line(tok, line, (size_t)len, special, &text, &out);
        if (rc) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        fwrite(out.data, 1, out.len, stdout);
    }
    free(line);
    kvg_buf_free(&text);
    kvg_buf_free(&out);
    kvg_tok_free(tok);
    return 0;
}
