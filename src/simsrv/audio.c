/* kvgate sim's POST /v1/audio/transcriptions and /translations as vLLM
 * serves them: a multipart/form-data body (multipart.c) with the audio
 * `file` and form fields (model, language, prompt, response_format, stream,
 * stream_include_usage, max_completion_tokens). The sim hears nothing: the
 * audio's duration comes from its WAV header, or from its size at 16 kHz
 * 16-bit mono; the prompt is that many audio tokens drawn from the file's
 * bytes (the same file hits the prefix cache), and the transcript is a
 * duration's worth of the engine's words (3 tokens a second, exactly, so
 * its length depends on the file). Answers: {text, usage{type duration,
 * seconds}} (a translation: {text}), or vLLM's transcription.chunk /
 * translation.chunk stream with its usage chunk and data: [DONE]. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/bytes.h"
#include "base/hash.h"
#include "base/util.h"
#include "simsrv/simsrv.h"

#define AUDIO_TOKENS_PER_S 25  /* the prompt: audio tokens per second of audio */
#define OUTPUT_TOKENS_PER_S 3  /* the transcript: about 2 words a second */
#define RAW_BYTES_PER_S 32000. /* 16 kHz, 16-bit mono: what a file without a header is read as */

struct audio {
    int translate, include_usage;
    char id[64];
    char model[256]; /* the request's model ("" when it named none: vLLM reports null) */
    int64_t created;
    double duration;
};

static void audio_release(struct sim_req *r)
{
    free(r->ext);
    r->ext = NULL;
}

static void chunk_head(struct kvg_buf *b, const struct sim_req *r)
{
    const struct audio *a = r->ext;
    kvg_buf_printf(b, "data: {\"id\":\"%s\",\"object\":\"%s\",\"created\":%lld,\"model\":", a->id,
                   a->translate ? "translation.chunk" : "transcription.chunk",
                   (long long)a->created);
    if (a->model[0])
        kvg_buf_append_json_str(b, a->model, strlen(a->model));
    else
        kvg_buf_append_str(b, "null");
}

static void audio_token(struct sim_req *r, uint32_t id, const char *t, size_t n, int first,
                        enum kvg_sim_finish fin)
{
    (void)id, (void)first;
    kvg_buf_append(&r->text, t, n);
    if (!r->stream) return;
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    chunk_head(&b, r);
    kvg_buf_append_str(&b, ",\"choices\":[{\"delta\":{\"content\":");
    kvg_buf_append_json_str(&b, t, n);
    if (fin)
        kvg_buf_printf(&b, "},\"finish_reason\":\"%s\",\"stop_reason\":null}]}\n\n",
                       fin == KVG_SIM_FINISH_LENGTH ? "length" : "stop");
    else
        kvg_buf_append_str(&b, "}}]}\n\n");
    kvg_http_res_write(r->req, b.data, b.len);
    kvg_buf_free(&b);
}

static void audio_done(struct sim_req *r, enum kvg_sim_finish fin)
{
    (void)fin;
    const struct audio *a = r->ext;
    struct kvg_buf b;
    kvg_buf_init(&b, 0);
    if (r->stream) {
        if (a->include_usage) {
            chunk_head(&b, r);
            kvg_buf_printf(&b,
                           ",\"choices\":[],\"usage\":{\"prompt_tokens\":%u,\"total_tokens\":%u,"
                           "\"completion_tokens\":%u}}\n\n",
                           r->prompt_len, r->prompt_len + r->ntok, r->ntok);
        }
        kvg_buf_append_str(&b, "data: [DONE]\n\n");
        kvg_http_res_write(r->req, b.data, b.len);
        kvg_http_res_end(r->req);
    } else {
        kvg_buf_append_str(&b, "{\"text\":");
        kvg_buf_append_json_str(&b, r->text.data ? r->text.data : "", r->text.len);
        if (!a->translate) /* vLLM reports no usage for a translation */
            kvg_buf_printf(&b, ",\"usage\":{\"type\":\"duration\",\"seconds\":%lld}",
                           (long long)ceil(a->duration));
        kvg_buf_append_str(&b, "}");
        kvg_http_res_send(r->req, 200, "application/json", NULL, 0, b.data, b.len);
    }
    kvg_buf_free(&b);
}

static const struct kvg_simsrv_out audio_out = {
    .token = audio_token, .done = audio_done, .release = audio_release};

/* Seconds of audio: a WAV's data chunk over its byte rate, else the size
 * at RAW_BYTES_PER_S. */
double kvg__simsrv_audio_seconds(const unsigned char *f, size_t n)
{
    if (n >= 12 && !memcmp(f, "RIFF", 4) && !memcmp(f + 8, "WAVE", 4)) {
        uint32_t rate = 0;
        for (size_t i = 12; i + 8 <= n;) {
            uint32_t len = kvg_get_le32(f + i + 4);
            if (!memcmp(f + i, "fmt ", 4) && len >= 16 && i + 8 + 16 <= n)
                rate = kvg_get_le32(f + i + 8 + 8);
            if (!memcmp(f + i, "data", 4) && rate)
                return (double)KVG_MIN((size_t)len, n - i - 8) / rate;
            if (len > n - i - 8) break;
            i += 8 + (size_t)len + (len & 1);
        }
    }
    return (double)n / RAW_BYTES_PER_S;
}

/* The form's fields by name (the first of each). */
struct form {
    const struct kvg_api_part *file, *model, *format, *stream, *usage, *max_tokens;
};

static int field_is(const struct kvg_api_part *p, const char *name)
{
    return p->name_len == strlen(name) && !memcmp(p->name, name, p->name_len);
}

static int truthy(const struct kvg_api_part *p)
{
    return p &&
           ((p->len == 4 && !memcmp(p->data, "true", 4)) ||
            (p->len == 4 && !memcmp(p->data, "True", 4)) || (p->len == 1 && p->data[0] == '1'));
}

static void read_form(const struct kvg_api_part *parts, size_t n, struct form *f)
{
    memset(f, 0, sizeof *f);
    for (size_t i = n; i-- > 0;) { /* backwards: the first of each name wins */
        const struct kvg_api_part *p = &parts[i];
        if (field_is(p, "file")) f->file = p;
        if (field_is(p, "model")) f->model = p;
        if (field_is(p, "response_format")) f->format = p;
        if (field_is(p, "stream")) f->stream = p;
        if (field_is(p, "stream_include_usage")) f->usage = p;
        if (field_is(p, "max_completion_tokens")) f->max_tokens = p;
    }
}

static int served_name(const struct kvg_simsrv_server *s, const struct kvg_api_part *m)
{
    for (int i = 0; i < s->nnames; i++)
        if (strlen(s->names[i]) == m->len && !memcmp(s->names[i], m->data, m->len)) return 1;
    return 0;
}

/* vLLM's checks of the form, in its order; 0, or -1 with the answer sent. */
static int check_form(struct kvg_simsrv_server *s, struct kvg_http_req *req, const struct form *f)
{
    char msg[400];
    const struct kvg_api_part *fmt = f->format;
    if (!f->file) {
        kvg__simsrv_error_validation(req, "file", "Field required");
    } else if (!f->file->filename) {
        kvg__simsrv_error_param(req, 422, "Unprocessable Entity",
                                "Expected 'file' to be a file-like object, not 'str'.", NULL);
    } else if (truthy(f->usage) && !truthy(f->stream)) {
        kvg__simsrv_error_validation(req, "stream_include_usage",
                                     "Stream options can only be defined when `stream=True`.");
    } else if (f->model && f->model->len && !served_name(s, f->model)) {
        snprintf(msg, sizeof msg, "The model `%.*s` does not exist.",
                 (int)KVG_MIN(f->model->len, 200), f->model->data);
        kvg_simsrv_error(req, 404, "NotFoundError", msg);
    } else if (fmt && !(fmt->len == 4 &&
                        (!memcmp(fmt->data, "json", 4) || !memcmp(fmt->data, "text", 4)))) {
        if (fmt->len == 12 && !memcmp(fmt->data, "verbose_json", 12))
            snprintf(msg, sizeof msg, "Currently do not support verbose_json for %s", s->o.model);
        else
            snprintf(msg, sizeof msg,
                     "Currently only support response_format: `text`, `json` or `verbose_json`");
        kvg_simsrv_error(req, 400, "BadRequestError", msg);
    } else if ((double)f->file->len / (1024.0 * 1024.0) > s->o.max_audio_mb) {
        kvg__simsrv_error_param(req, 400, "BadRequestError", "Maximum file size exceeded",
                                "audio_filesize_mb");
    } else if (!f->file->len) {
        kvg_simsrv_error(req, 400, "BadRequestError", "the audio file is empty");
    } else {
        return 0;
    }
    return -1;
}

/* The prompt: the duration's audio tokens, drawn from the file's bytes. */
static uint32_t *audio_prompt(struct kvg_simsrv_server *s, const struct kvg_api_part *file,
                              double seconds, size_t *n)
{
    size_t k = (size_t)ceil(seconds * AUDIO_TOKENS_PER_S);
    k = KVG_MAX(k, (size_t)1);
    k = KVG_MIN(k, (size_t)s->max_model_len / 2);
    uint32_t *ids = malloc(k * sizeof *ids);
    if (!ids) return NULL;
    size_t step = file->len / k, vocab = kvg_tok_vocab_size(s->tok);
    for (size_t i = 0; i < k; i++) {
        size_t at = i * step, len = KVG_MAX(step, (size_t)1);
        len = KVG_MIN(len, file->len - KVG_MIN(at, file->len));
        uint64_t h =
            kvg_hash_fnv1a64(KVG_HASH_FNV1A64_SEED ^ i, file->data + KVG_MIN(at, file->len), len);
        ids[i] = (uint32_t)(h % (vocab ? vocab : 256));
    }
    *n = k;
    return ids;
}

void kvg__simsrv_audio(struct kvg_simsrv_server *s, struct kvg_http_req *req, int translate)
{
    struct kvg_api_part parts[KVG_API_MAX_PARTS];
    size_t np = 0;
    char msg[300];
    struct form f;
    struct kvg_str ct = kvg_http_req_header(req, "content-type");
    if (kvg__simsrv_inject_fail(s, req)) return;
    if (kvg_api_multipart_parse(ct.p, ct.len, req->body.data, req->body.len, parts,
                                KVG_API_MAX_PARTS, &np, msg, sizeof msg)) {
        kvg__simsrv_error_validation(req, "", msg);
        return;
    }
    read_form(parts, np, &f);
    if (check_form(s, req, &f)) return;
    int64_t max_tokens = -1;
    if (f.max_tokens) {
        char v[24];
        uint64_t u;
        snprintf(v, sizeof v, "%.*s", (int)KVG_MIN(f.max_tokens->len, 23), f.max_tokens->data);
        if (kvg_parse_u64(v, &u) || u > 1000000000) {
            kvg__simsrv_error_validation(req, "max_completion_tokens",
                                         "Input should be a valid integer");
            return;
        }
        max_tokens = (int64_t)u;
    }
    struct audio *a = calloc(1, sizeof *a);
    size_t n = 0;
    double seconds = kvg__simsrv_audio_seconds((const unsigned char *)f.file->data, f.file->len);
    uint32_t *ids = a ? audio_prompt(s, f.file, seconds, &n) : NULL;
    if (!ids) {
        free(a);
        kvg_simsrv_error(req, 500, "InternalServerError", "out of memory");
        return;
    }
    int64_t out = (int64_t)ceil(seconds * OUTPUT_TOKENS_PER_S);
    out = KVG_MAX(out, (int64_t)1);
    if (max_tokens >= 0 && max_tokens < out) out = KVG_MAX(max_tokens, (int64_t)1);
    out = KVG_MIN(out, (int64_t)s->max_model_len - (int64_t)n);
    a->translate = translate;
    a->include_usage = truthy(f.usage);
    a->duration = seconds;
    a->created = (int64_t)kvg_wall_s();
    if (f.model)
        snprintf(a->model, sizeof a->model, "%.*s", (int)KVG_MIN(f.model->len, 255), f.model->data);
    char hex[33];
    kvg__simsrv_hex_id(s, hex);
    snprintf(a->id, sizeof a->id, "%s-%s", translate ? "translate" : "transcribe", hex);
    struct kvg_simsrv_gen g = {.req = req,
                               .rk = kvg__simsrv_pick_rank(s, req, NULL, msg, sizeof msg),
                               .lora = -1,
                               .stream = truthy(f.stream),
                               .ids = ids,
                               .nids = n,
                               .max_tokens = (uint32_t)out,
                               .ignore_eos = 1,
                               .seed = -1,
                               .rid = a->id,
                               .out = &audio_out,
                               .ext = a};
    if (!g.rk) {
        free(ids);
        free(a);
        kvg_simsrv_error(req, 400, "BadRequestError", msg);
        return;
    }
    struct sim_req *r = kvg__simsrv_req_new(s, &g);
    if (!r) {
        free(a);
        kvg_simsrv_error(req, 500, "InternalServerError", "out of memory");
        return;
    }
    kvg__simsrv_req_start(r);
}
