/* Test driver for chat rendering without the tokenizer: renders OpenAI chat
 * requests (one JSON object per stdin line) through a chat template and
 * prints one JSON line per request, {"text": ...} or {"error": ...,
 * "kind": "template"|"parse"|"unsupported"|"other"}.
 *
 *   chat_render --config tokenizer_config.json    template, bos and eos from it
 *   chat_render --template FILE [--bos S] [--eos S]
 *   chat_render --builtin                          the built-in ChatML template
 *   chat_render --print-builtin                    prints that template's source
 *
 * tests/integration/chat_vs_jinja.mjs compares its output with
 * @huggingface/jinja's. kvgate tokenize --chat --render does the same with a
 * tokenizer loaded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/err.h"
#include "jinja/chat.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    char tmp[65536];
    size_t n;
    while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
        if (kvg_buf_append(&b, tmp, n)) break;
    fclose(f);
    char *s = kvg_buf_cstr(&b);
    if (!s) kvg_buf_free(&b);
    return s;
}

/* A special token is a string or an AddedToken object {"content": ...}. */
static const char *token_str(const cJSON *j)
{
    if (cJSON_IsString(j)) return j->valuestring;
    if (cJSON_IsObject(j)) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, "content");
        if (cJSON_IsString(c)) return c->valuestring;
    }
    return NULL;
}

static const char *kind_of(int rc)
{
    switch (rc) {
    case KVG_ETEMPLATE:
        return "template";
    case KVG_EPARSE:
        return "parse";
    case KVG_EUNSUPP:
        return "unsupported";
    default:
        return "other";
    }
}

int main(int argc, char **argv)
{
    const char *config = NULL, *tfile = NULL, *bos = NULL, *eos = NULL;
    int builtin = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--config") && i + 1 < argc)
            config = argv[++i];
        else if (!strcmp(argv[i], "--template") && i + 1 < argc)
            tfile = argv[++i];
        else if (!strcmp(argv[i], "--bos") && i + 1 < argc)
            bos = argv[++i];
        else if (!strcmp(argv[i], "--eos") && i + 1 < argc)
            eos = argv[++i];
        else if (!strcmp(argv[i], "--builtin"))
            builtin = 1;
        else if (!strcmp(argv[i], "--print-builtin")) {
            fputs(kvg_jinja_chat_builtin_template(), stdout);
            return 0;
        } else {
            fprintf(stderr, "usage: chat_render --config F | --template F [--bos S --eos S] | "
                            "--builtin | --print-builtin\n");
            return 2;
        }
    }
    char *src = NULL, *cfgtext = NULL;
    cJSON *cfg = NULL;
    const char *tpl = NULL;
    if (config) {
        if (!(cfgtext = slurp(config)) || !(cfg = cJSON_Parse(cfgtext))) {
            fprintf(stderr, "chat_render: cannot read %s\n", config);
            return 1;
        }
        const cJSON *ct = cJSON_GetObjectItemCaseSensitive(cfg, "chat_template");
        if (cJSON_IsString(ct)) {
            tpl = ct->valuestring;
        } else if (cJSON_IsArray(ct)) { /* [{name, template}]: the "default" one */
            for (const cJSON *e = ct->child; e; e = e->next) {
                const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
                const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "template");
                if (cJSON_IsString(t) &&
                    (!tpl || (cJSON_IsString(nm) && !strcmp(nm->valuestring, "default"))))
                    tpl = t->valuestring;
            }
        }
        if (!tpl) {
            fprintf(stderr, "chat_render: %s has no chat_template\n", config);
            return 1;
        }
        bos = token_str(cJSON_GetObjectItemCaseSensitive(cfg, "bos_token"));
        eos = token_str(cJSON_GetObjectItemCaseSensitive(cfg, "eos_token"));
    } else if (tfile) {
        if (!(src = slurp(tfile))) {
            fprintf(stderr, "chat_render: cannot read %s\n", tfile);
            return 1;
        }
        tpl = src;
    } else if (!builtin) {
        fprintf(stderr, "chat_render: give --config, --template or --builtin\n");
        return 2;
    }
    char err[1024];
    struct kvg_jinja_chat *chat;
    int rc = kvg_jinja_chat_new(tpl, bos, eos, &chat, err, sizeof(err));
    if (rc) {
        /* a template the reference cannot parse either: every line errors */
        chat = NULL;
    }
    struct kvg_buf out, line;
    kvg_buf_init(&out, 0);
    kvg_buf_init(&line, 0);
    char *in = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&in, &cap, stdin)) > 0) {
        while (n > 0 && (in[n - 1] == '\n' || in[n - 1] == '\r')) n--;
        kvg_buf_reset(&out);
        kvg_buf_reset(&line);
        int r2 =
            chat ? kvg_jinja_chat_render(chat, in, (size_t)n, NULL, &out, NULL, err, sizeof(err)) : rc;
        if (!r2) {
            kvg_buf_append_str(&line, "{\"text\":");
            kvg_buf_append_json_str(&line, out.data ? out.data : "", out.len);
        } else {
            kvg_buf_append_str(&line, "{\"error\":");
            kvg_buf_append_json_str(&line, err, strlen(err));
            kvg_buf_printf(&line, ",\"kind\":\"%s\"", kind_of(r2));
        }
        kvg_buf_append_str(&line, "}\n");
        fwrite(line.data, 1, line.len, stdout);
    }
    free(in);
    kvg_buf_free(&out);
    kvg_buf_free(&line);
    kvg_jinja_chat_free(chat);
    cJSON_Delete(cfg);
    free(cfgtext);
    free(src);
    return 0;
}
