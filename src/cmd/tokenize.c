/* `kvgate tokenize`: token ids (or the rendered chat prompt) for text or
 * OpenAI chat requests read on stdin, so that kvgate's view of a prompt can
 * be checked against an engine's by hand or by scripts.
 *
 *   kvgate tokenize --tokenizer DIR|tokenizer.json|builtin:bytes
 *       [--tokenizer-config tokenizer_config.json] [--chat-template FILE]
 *       [--chat] [--render] [--jsonl] [--add-special-tokens]
 *
 * Input is all of stdin, or with --jsonl one input per line: a JSON-encoded
 * string (text mode) or a chat request object (--chat). Output is one line
 * per input: {"ids":[...]}, {"text":"..."} with --render, or {"error":"..."};
 * in --jsonl mode an error on one line does not stop the others.
 *
 * Special tokens: text is encoded without the post-processor's BOS/EOS unless
 * --add-special-tokens. A chat prompt is encoded without them too (as vLLM
 * does: the template already wrote BOS where the model wants it) unless
 * --add-special-tokens or the request's "add_special_tokens": true.
 *
 * The chat template is --chat-template FILE, else the tokenizer config's,
 * else for builtin:bytes the built-in ChatML template (jinja/chat.h). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cmd/cmd.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/json.h"
#include "base/opt.h"
#include "base/utf8.h"
#include "jinja/chat.h"
#include "tokenizer/tokenizer.h"

#define MAX_PROMPT (256u << 20)

struct cli {
    struct kvg_tok *tok;
    struct kvg_jinja_chat *chat;
    int chat_mode, render, jsonl, add_special;
    struct kvg_buf out; /* one output line */
    struct kvg_buf text;
};

#define F(field) offsetof(struct kvg_cmd_tokenize_opts, field)
#define S(field) sizeof(((struct kvg_cmd_tokenize_opts *)0)->field)

static const struct kvg_opt flags[] = {
    {"tokenizer", NULL, KVG_OPT_STR, F(tokenizer), S(tokenizer),
     .meta = "DIR|tokenizer.json|builtin:bytes",
     .help = "the tokenizer: a model directory (its tokenizer.json and tokenizer_config.json), "
             "a tokenizer.json, or builtin:bytes (required)",
     .section = "options"},
    {"tokenizer-config", NULL, KVG_OPT_STR, F(tokenizer_config), S(tokenizer_config),
     .meta = "tokenizer_config.json", .help = "its config (special tokens, chat template)"},
    {"chat-template", NULL, KVG_OPT_STR, F(chat_template), S(chat_template), .meta = "FILE",
     .help = "the chat template (default: the config's; ChatML for builtin:bytes)"},
    {"chat", NULL, KVG_OPT_BOOL, F(chat), .help = "the input is an OpenAI chat request"},
    {"render", NULL, KVG_OPT_BOOL, F(render), .help = "print the rendered prompt, not its ids"},
    {"jsonl", NULL, KVG_OPT_BOOL, F(jsonl), .help = "one JSON input per line"},
    {"add-special-tokens", NULL, KVG_OPT_BOOL, F(add_special_tokens),
     .help = "add the post-processor's BOS/EOS"},
    KVG_OPT_END,
};

#undef F
#undef S

void kvg_cmd_tokenize_usage(FILE *f)
{
    fprintf(f, "usage: kvgate tokenize --tokenizer DIR|tokenizer.json|builtin:bytes\n"
               "         [--tokenizer-config tokenizer_config.json] [--chat-template FILE]\n"
               "         [--chat] [--render] [--jsonl] [--add-special-tokens]\n"
               "Reads text (or with --chat an OpenAI chat request) on stdin and prints\n"
               "{\"ids\":[...]}, or {\"text\":...} with --render; --jsonl: one JSON input per "
               "line.\n\n");
    kvg_opt_help(flags, NULL, f);
}

int kvg_cmd_tokenize_parse(struct kvg_cmd_tokenize_opts *o, int argc, char **argv, char *err,
                           size_t errlen)
{
    memset(o, 0, sizeof *o);
    /* "kvgate tokenize tokenize ..." has always been accepted: skip it. */
    int first = argc > 1 && !strcmp(argv[1], "tokenize") ? 2 : 1;
    int rc = kvg_opt_parse_argv(flags, o, argc, argv, first, err, errlen);
    if (rc) return rc;
    if (!o->tokenizer[0]) return kvg_err_set(err, errlen, KVG_ECONFIG, "--tokenizer is required");
    return 0;
}

static void emit_error(struct cli *c, const char *msg)
{
    kvg_buf_reset(&c->out);
    kvg_buf_append_str(&c->out, "{\"error\":");
    kvg_buf_append_json_str(&c->out, msg, strlen(msg));
    kvg_buf_append_str(&c->out, "}\n");
}

/* Renders or encodes one input into c->out. 0, or an error already put in
 * c->out as {"error":...}. */
static int process(struct cli *c, const char *in, size_t len, int json_text)
{
    char err[1024];
    int rc, add_special = c->add_special;
    const char *text = in;
    size_t tlen = len;
    cJSON *str = NULL;
    struct kvg_json_arena mem = {0};
    kvg_buf_reset(&c->text);
    if (c->chat_mode) {
        struct kvg_jinja_chat_info info;
        rc = kvg_jinja_chat_render(c->chat, in, len, NULL, &c->text, &info, err, sizeof(err));
        if (rc) {
            emit_error(c, err[0] ? err : kvg_strerror(rc));
            return rc;
        }
        add_special = add_special || info.add_special_tokens;
        text = c->text.data ? c->text.data : "";
        tlen = c->text.len;
    } else if (json_text) {
        if (!kvg_utf8_valid(in, len)) {
            emit_error(c, "request is not valid UTF-8");
            return KVG_EUTF8;
        }
        /* The fast reader's string carries its length: a NUL is data. */
        str = kvg_json_parse_in(&mem, in, len);
        if (!cJSON_IsString(str) || (!mem.blocks && kvg_json_has_nul_escape(in, len))) {
            int cut = cJSON_IsString(str);
            kvg_json_free(&mem, str);
            emit_error(c, cut ? "unsupported: \\u0000 in this line"
                              : "each --jsonl line must be a JSON string");
            return cut ? KVG_EUNSUPP : KVG_EPARSE;
        }
        text = kvg_json_str(str, &tlen);
    }
    kvg_buf_reset(&c->out);
    if (c->render) {
        kvg_buf_append_str(&c->out, "{\"text\":");
        kvg_buf_append_json_str(&c->out, text, tlen);
        kvg_buf_append_str(&c->out, "}\n");
        kvg_json_free(&mem, str);
        return 0;
    }
    uint32_t *ids = NULL;
    size_t n = 0;
    rc = kvg_tok_encode(c->tok, text, tlen, add_special, &ids, &n);
    kvg_json_free(&mem, str);
    if (rc) {
        emit_error(c, kvg_strerror(rc));
        return rc;
    }
    kvg_buf_append_str(&c->out, "{\"ids\":[");
    for (size_t i = 0; i < n; i++) kvg_buf_printf(&c->out, i ? ",%u" : "%u", ids[i]);
    kvg_buf_append_str(&c->out, "]}\n");
    free(ids);
    return 0;
}

static int load_template(const char *path, char **out)
{
    struct kvg_buf b;
    kvg_buf_init(&b, 16u << 20);
    int rc = kvg_buf_read_file(&b, path);
    if (!rc && !(*out = kvg_buf_cstr(&b))) rc = -ENOMEM;
    if (rc) kvg_buf_free(&b);
    return rc;
}

int kvg_cmd_tokenize_main(int argc, char **argv)
{
    struct kvg_cmd_tokenize_opts o;
    struct cli c = {0};
    char err[1024];
    int rc = kvg_cmd_tokenize_parse(&o, argc, argv, err, sizeof err);
    if ((rc = kvg__cmd_parsed(rc, "tokenize", err, kvg_cmd_tokenize_usage)) >= 0) return rc;
    const char *tok_path = o.tokenizer,
               *cfg_path = o.tokenizer_config[0] ? o.tokenizer_config : NULL,
               *tpl_path = o.chat_template[0] ? o.chat_template : NULL;
    c.chat_mode = o.chat;
    c.render = o.render;
    c.jsonl = o.jsonl;
    c.add_special = o.add_special_tokens;
    kvg_buf_init(&c.out, 0);
    kvg_buf_init(&c.text, MAX_PROMPT);
    if ((rc = kvg_tok_load(tok_path, cfg_path, &c.tok, err, sizeof(err)))) {
        fprintf(stderr, "kvgate tokenize: %s: %s\n", tok_path, err[0] ? err : kvg_strerror(rc));
        rc = 1;
        goto out;
    }
    if (c.chat_mode) {
        char *tpl = NULL;
        const char *src = NULL;
        if (tpl_path) {
            if ((rc = load_template(tpl_path, &tpl))) {
                fprintf(stderr, "kvgate tokenize: %s: %s\n", tpl_path, kvg_strerror(rc));
                rc = 1;
                goto out;
            }
            src = tpl;
        } else {
            src = kvg_tok_chat_template(c.tok);
            if (!src && strcmp(tok_path, "builtin:bytes")) {
                fprintf(stderr, "kvgate tokenize: the tokenizer config has no chat_template "
                                "(give --tokenizer-config or --chat-template)\n");
                rc = 1;
                goto out;
            }
        }
        rc = kvg_jinja_chat_new(src, kvg_tok_bos_token(c.tok), kvg_tok_eos_token(c.tok), &c.chat,
                                err, sizeof(err));
        free(tpl);
        if (rc) {
            fprintf(stderr, "kvgate tokenize: chat template: %s\n", err);
            rc = 1;
            goto out;
        }
    }
    if (c.jsonl) {
        char *line = NULL;
        size_t cap = 0;
        ssize_t n;
        rc = 0;
        while ((n = getline(&line, &cap, stdin)) >= 0) {
            while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
            process(&c, line, (size_t)n, 1);
            if (fwrite(c.out.data, 1, c.out.len, stdout) != c.out.len) rc = 1;
        }
        free(line);
        if (ferror(stdin)) rc = 1;
    } else {
        struct kvg_buf in;
        kvg_buf_init(&in, MAX_PROMPT);
        if ((rc = kvg_buf_read_stream(&in, stdin))) {
            fprintf(stderr, "kvgate tokenize: reading stdin: %s\n", kvg_strerror(rc));
            kvg_buf_free(&in);
            rc = 1;
            goto out;
        }
        rc = process(&c, in.data ? in.data : "", in.len, 0) ? 1 : 0;
        fwrite(c.out.data, 1, c.out.len, stdout);
        kvg_buf_free(&in);
    }
    if (fflush(stdout)) rc = 1;
out:
    kvg_jinja_chat_free(c.chat);
    kvg_tok_free(c.tok);
    kvg_buf_free(&c.out);
    kvg_buf_free(&c.text);
    return rc;
}
