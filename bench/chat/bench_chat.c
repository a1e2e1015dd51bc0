/* Chat template rendering speed, single thread: a 4-message conversation
 * (system, user, assistant, user) rendered with each model's chat template,
 * compiled once. Two figures per template: from the request body (JSON
 * text -> cJSON -> context -> prompt, what the gateway does) and from an
 * already parsed request. Prints one line per template:
 *   <name> <renders/s from text> <renders/s from parsed> <prompt bytes>
 * Usage: bench_chat [-t seconds] name=tokenizer_config.json ... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/util.h"
#include "jinja/chat.h"

static const char g_req[] =
    "{\"model\":\"m\",\"messages\":["
    "{\"role\":\"system\",\"content\":\"You are a helpful assistant.\"},"
    "{\"role\":\"user\",\"content\":\"Hello, how are you?\"},"
    "{\"role\":\"assistant\",\"content\":\"I am fine, thanks. How can I help?\"},"
    "{\"role\":\"user\",\"content\":\"Tell me a joke about routers.\"}],"
    "\"add_generation_prompt\":true}";

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

static const char *tok(const cJSON *j)
{
    if (cJSON_IsString(j)) return j->valuestring;
    if (cJSON_IsObject(j) && cJSON_IsString(cJSON_GetObjectItem(j, "content")))
        return cJSON_GetObjectItem(j, "content")->valuestring;
    return NULL;
}

int main(int argc, char **argv)
{
    double secs = 1.0;
    int i = 1;
    if (argc > 2 && !strcmp(argv[1], "-t")) {
        secs = atof(argv[2]);
        i = 3;
    }
    for (; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq) continue;
        *eq = 0;
        char *text = slurp(eq + 1), err[512];
        cJSON *cfg = text ? cJSON_Parse(text) : NULL;
        const cJSON *ct = cJSON_GetObjectItem(cfg, "chat_template");
        struct kvg_jinja_chat *chat;
        if (!cJSON_IsString(ct) ||
            kvg_jinja_chat_new(ct->valuestring, tok(cJSON_GetObjectItem(cfg, "bos_token")),
                               tok(cJSON_GetObjectItem(cfg, "eos_token")), &chat, err,
                               sizeof(err))) {
            fprintf(stderr, "bench_chat: %s: cannot load the template\n", argv[i]);
            return 1;
        }
        struct kvg_buf out;
        kvg_buf_init(&out, 0);
        cJSON *req = cJSON_Parse(g_req);
        double rate[2];
        for (int mode = 0; mode < 2; mode++) {
            long n = 0;
            double t0 = kvg_now_s(), t;
            do {
                for (int k = 0; k < 1000; k++) {
                    kvg_buf_reset(&out);
                    int rc = mode == 0 ? kvg_jinja_chat_render(chat, g_req, sizeof(g_req) - 1, NULL,
                                                               &out, NULL, err, sizeof(err))
                                       : kvg_jinja_chat_render_json(chat, req, NULL, &out, NULL,
                                                                    err, sizeof(err));
                    if (rc) {
                        fprintf(stderr, "bench_chat: %s: %s\n", argv[i], err);
                        return 1;
                    }
                }
                n += 1000;
            } while ((t = kvg_now_s()) - t0 < secs);
            rate[mode] = n / (t - t0);
        }
        printf("%s %.0f %.0f %zu\n", argv[i], rate[0], rate[1], out.len);
        kvg_buf_free(&out);
        cJSON_Delete(req);
        kvg_jinja_chat_free(chat);
        cJSON_Delete(cfg);
        free(text);
    }
    return 0;
}
