/* Loading a tokenizer: tokenizer.json (and tokenizer_config.json), the
 * dispatch to "builtin:bytes", freeing, and the small read-only accessors.
 *
 * tokenizer.json is walked once at the top level; model.vocab and
 * model.merges are handed to the purpose-built scanner (tok_json.c) and
 * every other section to cJSON. Components are loaded in dependency order:
 * pre-tokenizer (decides byte-level mode), normalizer, model, added tokens
 * (their ids come from the vocabulary, their normalized forms from the
 * normalizer), post-processor, decoder. Anything not supported fails here,
 * naming the component, never later with a wrong answer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/err.h"
#include "tokenizer/tok_impl.h"

#define MAX_FILE (1u << 30)

const char *kvg__tok_jstr(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int kvg__tok_jbool(const cJSON *obj, const char *name, int dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (cJSON_IsBool(v)) return cJSON_IsTrue(v);
    return dflt;
}

int kvg__tok_ids_reserve(struct kvg_tok *tok, uint32_t n)
{
    if (n <= tok->n_ids) return 0;
    /* Capacity grows by doubling; entries in [n_ids, cap) are initialised. */
    size_t cap = tok->ids_cap;
    if (n > cap) {
        size_t ncap = cap ? cap : 1024;
        while (ncap < n) ncap *= 2;
        uint32_t *vo = realloc(tok->vocab_off, ncap * sizeof *vo);
        if (!vo) return -ENOMEM;
        tok->vocab_off = vo;
        uint32_t *vl = realloc(tok->vocab_len, ncap * sizeof *vl);
        if (!vl) return -ENOMEM;
        tok->vocab_len = vl;
        int32_t *ax = realloc(tok->added_ix, ncap * sizeof *ax);
        if (!ax) return -ENOMEM;
        tok->added_ix = ax;
        uint8_t *sp = realloc(tok->special, ncap);
        if (!sp) return -ENOMEM;
        tok->special = sp;
        for (size_t i = cap; i < ncap; i++) {
            vo[i] = KVG_TOK_NONE;
            vl[i] = 0;
            ax[i] = -1;
            sp[i] = 0;
        }
        tok->ids_cap = ncap;
    }
    tok->n_ids = n;
    return 0;
}

/* Reads a whole file into a malloc'd, NUL-terminated buffer (caller frees). */
static int read_file(const char *path, char **data, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) return kvg_err_set(err, errlen, -errno, "%s: %s", path, strerror(errno));
    struct kvg_buf b;
    kvg_buf_init(&b, MAX_FILE);
    struct stat st;
    int rc = 0;
    /* One allocation of the right size when the size is known up front. */
    if (fstat(fileno(f), &st) == 0 && st.st_size > 0 && (uint64_t)st.st_size < MAX_FILE)
        rc = kvg_buf_reserve(&b, (size_t)st.st_size + 1);
    for (;;) {
        if (rc || (rc = kvg_buf_reserve(&b, b.cap > b.len + 1 ? 1 : 1 << 20))) break;
        size_t got = fread(b.data + b.len, 1, b.cap - b.len - 1, f);
        b.len += got;
        if (got == 0) {
            if (ferror(f)) rc = -EIO;
            break;
        }
    }
    fclose(f);
    if (!rc && !kvg_buf_cstr(&b)) rc = -ENOMEM;
    if (rc) {
        kvg_buf_free(&b);
        return kvg_err_set(err, errlen, rc, "%s: %s", path, kvg_strerror(rc));
    }
    *data = b.data;
    *len = b.len;
    return 0;
}

struct span {
    const char *p;
    size_t n;
};

/* Walks the object at js->p, calling back per member with the key; the
 * callback consumes the member's value from js (parsing or skipping it). */
static int walk_object(struct kvg_tok_js *js,
                       int (*fn)(void *ctx, const char *key, struct span key_raw,
                                 struct kvg_tok_js *js),
                       void *ctx)
{
    struct kvg_buf key;
    kvg_buf_init(&key, 1 << 16);
    int rc = KVG_EPARSE;
    kvg__tok_js_ws(js);
    if (js->p >= js->end || *js->p != '{') goto out;
    js->p++;
    kvg__tok_js_ws(js);
    if (js->p < js->end && *js->p == '}') {
        js->p++;
        rc = 0;
        goto out;
    }
    for (;;) {
        kvg__tok_js_ws(js);
        const char *kstart = js->p;
        if ((rc = kvg__tok_js_string(js, &key)) || !kvg_buf_cstr(&key)) goto out;
        struct span kraw = {kstart, (size_t)(js->p - kstart)};
        kvg__tok_js_ws(js);
        rc = KVG_EPARSE;
        if (js->p >= js->end || *js->p != ':') goto out;
        js->p++;
        kvg__tok_js_ws(js);
        if ((rc = fn(ctx, key.data, kraw, js))) goto out;
        kvg__tok_js_ws(js);
        rc = KVG_EPARSE;
        if (js->p < js->end && *js->p == ',') {
            js->p++;
            continue;
        }
        if (js->p < js->end && *js->p == '}') {
            js->p++;
            rc = 0;
            break;
        }
        goto out;
    }
out:
    kvg_buf_free(&key);
    return rc;
}

/* Skips the value at js, returning its span. */
static int skip_span(struct kvg_tok_js *js, struct span *out)
{
    const char *start = js->p;
    int rc = kvg__tok_js_skip(js);
    *out = (struct span){start, (size_t)(js->p - start)};
    return rc;
}

struct top {
    struct kvg_tok *tok;
    char *err;
    size_t errlen;
    int have_model, have_vocab, have_merges;
    struct span normalizer, pre, post, decoder, added, truncation, padding;
    struct span merges;        /* merges seen before vocab: parsed after it */
    struct kvg_buf model_rest; /* "{...}" of model's other members, for cJSON */
};

/* model.vocab and model.merges are parsed in place, in one pass over the
 * file; the small members are collected for cJSON. */
static int model_member(void *ctx, const char *key, struct span kraw, struct kvg_tok_js *js)
{
    struct top *t = ctx;
    struct span ignored;
    /* A vocabulary that is not an object belongs to another model type
     * (Unigram's is a list): left for the type check to name. */
    if ((!strcmp(key, "vocab") && t->have_vocab) || (!strcmp(key, "merges") && t->have_merges))
        return kvg_err_set(t->err, t->errlen, KVG_EPARSE, "model: duplicate field %s", key);
    if (!strcmp(key, "vocab")) {
        if (js->p >= js->end || *js->p != '{') return skip_span(js, &ignored);
        t->have_vocab = 1;
        return kvg__tok_js_vocab(t->tok, js, t->err, t->errlen);
    }
    if (!strcmp(key, "merges")) {
        t->have_merges = 1;
        if (!t->have_vocab) return skip_span(js, &t->merges);
        return kvg__tok_js_merges(t->tok, js, t->err, t->errlen);
    }
    struct span val;
    int rc = skip_span(js, &val);
    if (!rc && t->model_rest.len > 1) rc = kvg_buf_append(&t->model_rest, ",", 1);
    if (!rc) rc = kvg_buf_append(&t->model_rest, kraw.p, kraw.n);
    if (!rc) rc = kvg_buf_append(&t->model_rest, ":", 1);
    if (!rc) rc = kvg_buf_append(&t->model_rest, val.p, val.n);
    return rc;
}

static int top_member(void *ctx, const char *key, struct span kraw, struct kvg_tok_js *js)
{
    struct top *t = ctx;
    (void)kraw;
    if (!strcmp(key, "model")) {
        t->have_model = 1;
        int rc = walk_object(js, model_member, t);
        if (rc && t->err && !t->err[0]) kvg_err_set(t->err, t->errlen, rc, "model: malformed");
        return rc;
    }
    struct span *dst = NULL, ignored;
    if (!strcmp(key, "normalizer"))
        dst = &t->normalizer;
    else if (!strcmp(key, "pre_tokenizer"))
        dst = &t->pre;
    else if (!strcmp(key, "post_processor"))
        dst = &t->post;
    else if (!strcmp(key, "decoder"))
        dst = &t->decoder;
    else if (!strcmp(key, "added_tokens"))
        dst = &t->added;
    else if (!strcmp(key, "truncation"))
        dst = &t->truncation;
    else if (!strcmp(key, "padding"))
        dst = &t->padding;
    return skip_span(js, dst ? dst : &ignored);
}

/* Parses a section with cJSON; a missing section parses as JSON null. */
static cJSON *section(struct span s)
{
    if (!s.p) return cJSON_CreateNull();
    return cJSON_ParseWithLength(s.p, s.n);
}

static int load_section(struct kvg_tok *tok, struct span s, const char *name,
                        int (*fn)(struct kvg_tok *, const cJSON *, char *, size_t), char *err,
                        size_t errlen)
{
    cJSON *j = section(s);
    if (!j) return kvg_err_set(err, errlen, KVG_EPARSE, "%s: malformed JSON", name);
    int rc = fn(tok, j, err, errlen);
    cJSON_Delete(j);
    return rc;
}

static int check_absent_or_null(struct span s, const char *name, char *err, size_t errlen)
{
    cJSON *j = section(s);
    if (!j) return kvg_err_set(err, errlen, KVG_EPARSE, "%s: malformed JSON", name);
    int rc = 0;
    if (!cJSON_IsNull(j)) {
        /* Padding to the longest of a batch does nothing to one sequence. */
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "strategy");
        if (!(strcmp(name, "padding") == 0 && cJSON_IsString(st) &&
              !strcmp(st->valuestring, "BatchLongest")))
            rc = kvg_err_set(err, errlen, KVG_EUNSUPP, "unsupported component: %s", name);
    }
    cJSON_Delete(j);
    return rc;
}

/* Loads tokenizer.json text (data[0..len), NUL-terminated or not); path
 * only names it in messages. */
static int load_hf(struct kvg_tok *tok, const char *data, size_t len, const char *path, char *err,
                   size_t errlen)
{
    struct top t;
    memset(&t, 0, sizeof t);
    t.tok = tok;
    t.err = err;
    t.errlen = errlen;
    kvg_buf_init(&t.model_rest, 1 << 26);
    int rc = 0;
    if (!kvg_utf8_valid(data, len)) {
        rc = kvg_err_set(err, errlen, KVG_EPARSE, "%s: not valid UTF-8", path);
        goto out;
    }
    if ((rc = kvg_buf_append(&t.model_rest, "{", 1))) goto out;
    struct kvg_tok_js js = {data, data + len};
    if ((rc = walk_object(&js, top_member, &t))) {
        if (!err || !err[0]) kvg_err_set(err, errlen, rc, "%s: malformed JSON", path);
        goto out;
    }
    kvg__tok_js_ws(&js);
    if (js.p != js.end) {
        rc = kvg_err_set(err, errlen, KVG_EPARSE, "%s: text after the JSON object", path);
        goto out;
    }
    if (!t.have_model) {
        rc = kvg_err_set(err, errlen, KVG_EPARSE, "%s: no \"model\"", path);
        goto out;
    }
    if ((rc = kvg_buf_append(&t.model_rest, "}", 1))) goto out;
    if ((rc = check_absent_or_null(t.truncation, "truncation", err, errlen))) goto out;
    if ((rc = check_absent_or_null(t.padding, "padding", err, errlen))) goto out;
    struct span rest = {t.model_rest.data, t.model_rest.len};
    if ((rc = load_section(tok, rest, "model", kvg__tok_model_options, err, errlen))) goto out;
    if (!t.have_vocab || !t.have_merges) {
        rc = kvg_err_set(err, errlen, KVG_EPARSE, "model: BPE needs \"vocab\" and \"merges\"");
        goto out;
    }
    if (t.merges.p) {
        struct kvg_tok_js mj = {t.merges.p, t.merges.p + t.merges.n};
        if ((rc = kvg__tok_js_merges(tok, &mj, err, errlen))) goto out;
    }
    if ((rc = load_section(tok, t.pre, "pre_tokenizer", kvg__tok_pre_load, err, errlen))) goto out;
    if ((rc = load_section(tok, t.normalizer, "normalizer", kvg__tok_norm_load, err, errlen)))
        goto out;
    if ((rc = kvg__tok_model_finish(tok, err, errlen))) goto out;
    if ((rc = load_section(tok, t.added, "added_tokens", kvg__tok_added_load, err, errlen)))
        goto out;
    if ((rc = kvg__tok_added_build(tok, err, errlen))) goto out;
    if ((rc = load_section(tok, t.post, "post_processor", kvg__tok_post_load, err, errlen)))
        goto out;
    rc = load_section(tok, t.decoder, "decoder", kvg__tok_dec_load, err, errlen);
out:
    kvg_buf_free(&t.model_rest);
    return rc;
}

/* bos_token / eos_token: a string, {"content": ...} or null. */
static int config_token(const cJSON *cfg, const char *name, char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, name);
    if (cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "content");
    if (!cJSON_IsString(v)) return 0;
    free(*out);
    *out = strdup(v->valuestring);
    return *out ? 0 : -ENOMEM;
}

/* transformers' Llama, CodeLlama and Gemma fast tokenizers rebuild the
 * post-processor from add_bos_token (default true) / add_eos_token (default
 * false) when they load, whatever tokenizer.json says; vLLM tokenizes through
 * transformers, so with such a config add_special follows them too
 * (DeepSeek-V3's tokenizer.json adds no BOS; its LlamaTokenizerFast does). */
static int llama_post(struct kvg_tok *tok, const cJSON *cfg, char *err, size_t errlen)
{
    static const char *const classes[] = {"LlamaTokenizer",     "LlamaTokenizerFast",
                                          "CodeLlamaTokenizer", "CodeLlamaTokenizerFast",
                                          "GemmaTokenizer",     "GemmaTokenizerFast"};
    const char *cls = kvg__tok_jstr(cfg, "tokenizer_class");
    int match = 0;
    for (size_t i = 0; cls && i < sizeof classes / sizeof classes[0]; i++)
        match |= !strcmp(cls, classes[i]);
    if (!match) return 0;
    int add_bos = kvg__tok_jbool(cfg, "add_bos_token", 1);
    int add_eos = kvg__tok_jbool(cfg, "add_eos_token", 0);
    int64_t bos = tok->bos ? kvg_tok_token_to_id(tok, tok->bos) : -1;
    int64_t eos = tok->eos ? kvg_tok_token_to_id(tok, tok->eos) : -1;
    if ((add_bos && bos < 0) || (add_eos && eos < 0))
        return kvg_err_set(err, errlen, KVG_ECONFIG,
                           "tokenizer_config: add_%s_token with no such token in the vocabulary",
                           add_bos && bos < 0 ? "bos" : "eos");
    uint32_t *post = malloc(3 * sizeof *post);
    if (!post) return -ENOMEM;
    size_t n = 0;
    if (add_bos) post[n++] = (uint32_t)bos;
    post[n++] = KVG_TOK_NONE;
    if (add_eos) post[n++] = (uint32_t)eos;
    free(tok->post);
    tok->post = post;
    tok->n_post = n;
    tok->has_post = n > 1;
    return 0;
}

static int load_config(struct kvg_tok *tok, const char *path, char *err, size_t errlen)
{
    char *data = NULL;
    size_t len = 0;
    int rc = read_file(path, &data, &len, err, errlen);
    if (rc) return rc;
    cJSON *cfg = cJSON_ParseWithLength(data, len);
    free(data);
    if (!cJSON_IsObject(cfg)) {
        cJSON_Delete(cfg);
        return kvg_err_set(err, errlen, KVG_EPARSE, "%s: malformed JSON", path);
    }
    if (!rc) rc = config_token(cfg, "bos_token", &tok->bos);
    if (!rc) rc = config_token(cfg, "eos_token", &tok->eos);
    /* chat_template: a string, or a list of {name, template}: the "default"
     * one (transformers' choice), else the first. */
    const cJSON *ct = cJSON_GetObjectItemCaseSensitive(cfg, "chat_template");
    const char *tpl = NULL;
    if (cJSON_IsString(ct))
        tpl = ct->valuestring;
    else if (cJSON_IsArray(ct)) {
        const cJSON *e;
        cJSON_ArrayForEach(e, ct)
        {
            const char *name = kvg__tok_jstr(e, "name"), *t = kvg__tok_jstr(e, "template");
            if (t && (!tpl || (name && !strcmp(name, "default")))) tpl = t;
            if (t && name && !strcmp(name, "default")) break;
        }
    }
    if (!rc && tpl) {
        free(tok->chat_template);
        tok->chat_template = strdup(tpl);
        if (!tok->chat_template) rc = -ENOMEM;
    }
    if (!rc && tok->kind == KVG_TOK_HF) rc = llama_post(tok, cfg, err, errlen);
    cJSON_Delete(cfg);
    return rc;
}

int kvg_tok_load(const char *path, const char *config_path, struct kvg_tok **out, char *err,
                 size_t errlen)
{
    *out = NULL;
    if (err && errlen) err[0] = 0;
    if (!path) return kvg_err_set(err, errlen, -EINVAL, "no tokenizer path");
    struct kvg_tok *tok = calloc(1, sizeof *tok);
    if (!tok) return -ENOMEM;
    tok->unk_id = -1;
    int rc;
    char file[4096], cfg[4096]; /* what a model directory's path names */
    if (!strcmp(path, "builtin:bytes"))
        rc = kvg__tok_builtin_init(tok, err, errlen);
    else if (!strncmp(path, "builtin:", 8))
        rc = kvg_err_set(err, errlen, KVG_EUNSUPP, "unsupported builtin tokenizer: %s", path);
    else {
        char *data = NULL;
        size_t len = 0;
        rc = kvg__tok_resolve(path, config_path, file, sizeof file, cfg, sizeof cfg, err, errlen);
        if (!rc) rc = read_file(file, &data, &len, err, errlen);
        if (!rc) rc = load_hf(tok, data, len, file, err, errlen);
        free(data);
        config_path = cfg[0] ? cfg : NULL;
    }
    if (!rc && config_path) rc = load_config(tok, config_path, err, errlen);
    if (rc) {
        if (err && errlen && !err[0]) snprintf(err, errlen, "%s", kvg_strerror(rc));
        kvg_tok_free(tok);
        return rc;
    }
    *out = tok;
    return 0;
}

int kvg__tok_load_mem(const char *json, size_t len, struct kvg_tok **out, char *err, size_t errlen)
{
    *out = NULL;
    if (err && errlen) err[0] = 0;
    struct kvg_tok *tok = calloc(1, sizeof *tok);
    if (!tok) return -ENOMEM;
    tok->unk_id = -1;
    int rc = load_hf(tok, json, len, "tokenizer.json", err, errlen);
    if (rc) {
        if (err && errlen && !err[0]) snprintf(err, errlen, "%s", kvg_strerror(rc));
        kvg_tok_free(tok);
        return rc;
    }
    *out = tok;
    return 0;
}

void kvg_tok_free(struct kvg_tok *tok)
{
    if (!tok) return;
    kvg__tok_norm_free(tok);
    kvg__tok_pre_free(tok);
    kvg__tok_dec_free(tok);
    kvg__tok_added_free(tok);
    kvg__tok_smap_free(&tok->vocab);
    kvg__tok_smap_free(&tok->raw);
    kvg__tok_mmap_free(&tok->merges);
    free(tok->cache);
    free(tok->post);
    free(tok->vocab_off);
    free(tok->vocab_len);
    free(tok->added_ix);
    free(tok->special);
    free(tok->arena.p);
    free(tok->bos);
    free(tok->eos);
    free(tok->chat_template);
    free(tok);
}

size_t kvg_tok_vocab_size(const struct kvg_tok *tok)
{
    return tok->n_ids;
}

const char *kvg_tok_bos_token(const struct kvg_tok *tok)
{
    return tok->bos;
}

const char *kvg_tok_eos_token(const struct kvg_tok *tok)
{
    return tok->eos;
}

const char *kvg_tok_chat_template(const struct kvg_tok *tok)
{
    return tok->chat_template;
}

int64_t kvg_tok_token_to_id(const struct kvg_tok *tok, const char *token)
{
    size_t n = strlen(token);
    int64_t id = kvg__tok_smap_get(&tok->added_map, tok->arena.p, token, n);
    if (id < 0) id = kvg__tok_smap_get(&tok->vocab, tok->arena.p, token, n);
    return id;
}

const char *kvg_tok_id_to_token(const struct kvg_tok *tok, uint32_t id, size_t *len)
{
    if (id >= tok->n_ids) return NULL;
    uint32_t off, n;
    if (tok->added_ix[id] >= 0) {
        off = tok->added[tok->added_ix[id]].off;
        n = tok->added[tok->added_ix[id]].len;
    } else if (tok->vocab_off[id] != KVG_TOK_NONE) {
        off = tok->vocab_off[id];
        n = tok->vocab_len[id];
    } else
        return NULL;
    if (len) *len = n;
    return tok->arena.p + off;
}

int kvg_tok_is_special(const struct kvg_tok *tok, uint32_t id)
{
    return id < tok->n_ids && tok->special[id];
}
