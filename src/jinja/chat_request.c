/* OpenAI chat request -> template variables, following what vLLM does
 * before it calls apply_chat_template (its chat message parsing and
 * post-processing; the request's tools
 * are pydantic model_dump()s; chat_template_kwargs merge under the request's
 * own add_generation_prompt). chat.h lists the rules; this file applies
 * them, building values straight into the render's arena (strings point into
 * the request's cJSON tree, which outlives the render). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/json.h"
#include "jinja/chat_int.h"

void kvg__jinja_chat_scratch_free(struct chat_scratch *s)
{
    for (size_t i = 0; i < s->n; i++) cJSON_Delete(s->trees[i]);
    free(s->trees);
    s->trees = NULL;
    s->n = s->cap = 0;
}

static int keep_tree(struct jrender *r, struct chat_scratch *s, cJSON *t)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 8;
        cJSON **v = realloc(s->trees, nc * sizeof(*v));
        if (!v) {
            cJSON_Delete(t);
            return kvg__jinja_run_fail(r, -ENOMEM, "out of memory");
        }
        s->trees = v;
        s->cap = nc;
    }
    s->trees[s->n++] = t;
    return 0;
}

int kvg__jinja_chat_json_strict(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        char c = s[i];
        if (c == '"') {
            for (i++; i < n && s[i] != '"'; i++) {
                if ((unsigned char)s[i] < 0x20) return 0;
                if (s[i] == '\\') {
                    if (i + 5 < n && s[i + 1] == 'u' && !memcmp(s + i + 2, "0000", 4)) return -1;
                    i++;
                }
            }
            if (i >= n) return 0;
            i++;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            if (c == '-') i++;
            if (i < n && s[i] == '0') {
                i++;
                if (i < n && s[i] >= '0' && s[i] <= '9') return 0; /* leading zero */
            } else {
                while (i < n && s[i] >= '0' && s[i] <= '9') i++;
            }
            if (i < n && s[i] == '.') {
                i++;
                if (!(i < n && s[i] >= '0' && s[i] <= '9')) return 0; /* "1." */
                while (i < n && s[i] >= '0' && s[i] <= '9') i++;
            }
        } else {
            i++;
        }
    }
    return 1;
}

/* The member a JS JSON.parse would keep: the last of repeated keys. */
static const cJSON *jget(const cJSON *o, const char *key)
{
    const cJSON *found = NULL;
    for (const cJSON *k = o ? o->child : NULL; k; k = k->next)
        if (k->string && !strcmp(k->string, key)) found = k;
    return found;
}

static int is_str(const cJSON *j, const char *s)
{
    return cJSON_IsString(j) && !strcmp(j->valuestring, s);
}

/* A string node's text, a NUL inside included (base/json.h). */
static struct jv sv(const cJSON *j)
{
    size_t n = 0;
    const char *s = kvg_json_str(j, &n);
    return jv_str(s ? s : "", n);
}

/* Text parts joined with "\n"; empty texts are skipped, as vLLM's
 * `if parse_res:` skips them. */
static int conv_content(struct jrender *r, const cJSON *content, struct jv *out)
{
    if (!content || cJSON_IsNull(content)) {
        *out = jv_str("", 0);
        return 0;
    }
    if (cJSON_IsString(content)) {
        *out = sv(content);
        return 0;
    }
    if (!cJSON_IsArray(content))
        return kvg__jinja_run_fail(r, KVG_EPARSE,
                                   "message content must be a string or an array of parts");
    const cJSON *texts[64], **tv = texts;
    size_t nt = 0, cap = 64, total = 0;
    for (const cJSON *p = content->child; p; p = p->next) {
        const cJSON *t = NULL;
        if (cJSON_IsString(p)) {
            t = p;
        } else if (cJSON_IsObject(p)) {
            const cJSON *type = jget(p, "type");
            const cJSON *uuid = jget(p, "uuid");
            const char *field = NULL;
            if (cJSON_IsString(type) && (!uuid || cJSON_IsNull(uuid))) {
                const char *ty = type->valuestring;
                if (!strcmp(ty, "text") || !strcmp(ty, "input_text") || !strcmp(ty, "output_text"))
                    field = "text";
                else if (!strcmp(ty, "refusal"))
                    field = "refusal";
                else if (!strcmp(ty, "thinking"))
                    field = "thinking";
                else if (!strcmp(ty, "image_url") || !strcmp(ty, "input_image") ||
                         !strcmp(ty, "audio_url") || !strcmp(ty, "video_url") ||
                         !strcmp(ty, "input_audio") || !strcmp(ty, "image_embeds") ||
                         !strcmp(ty, "audio_embeds") || !strcmp(ty, "prompt_embeds") ||
                         !strcmp(ty, "image_pil") || !strcmp(ty, "tool_reference"))
                    return kvg__jinja_run_fail(r, KVG_EUNSUPP,
                                               "unsupported: content part type '%s'", ty);
                else
                    return kvg__jinja_run_fail(r, KVG_EPARSE,
                                               "Unsupported chat content part type: '%s'", ty);
                const cJSON *f = jget(p, field);
                if (f && !cJSON_IsNull(f) && !cJSON_IsString(f))
                    return kvg__jinja_run_fail(r, KVG_EPARSE, "content part %s must be a string",
                                               field);
                if (cJSON_IsString(f)) t = f;
            } else if (type && !cJSON_IsNull(type) && !cJSON_IsString(type)) {
                return kvg__jinja_run_fail(r, KVG_EPARSE,
                                           "Invalid 'type' field in multimodal part.");
            } else {
                static const char *media[] = {"image_url",    "image_pil",     "image_embeds",
                                              "audio_embeds", "prompt_embeds", "audio_url",
                                              "input_audio",  "video_url",     "tool_reference"};
                for (size_t k = 0; k < sizeof(media) / sizeof(media[0]); k++)
                    if (jget(p, media[k]))
                        return kvg__jinja_run_fail(r, KVG_EUNSUPP, "unsupported: content part '%s'",
                                                   media[k]);
                return kvg__jinja_run_fail(r, KVG_EPARSE,
                                           "Missing 'type' field in multimodal part.");
            }
        } else {
            return kvg__jinja_run_fail(r, KVG_EPARSE, "content parts must be strings or objects");
        }
        size_t tl = 0;
        if (!t || !kvg_json_str(t, &tl) || !tl) continue;
        if (nt == cap) {
            const cJSON **nv = kvg__jinja_arena_alloc(&r->arena, cap * 2 * sizeof(*nv));
            if (!nv)
                return kvg__jinja_run_fail(r, KVG_ETOOBIG, "template render memory limit reached");
            memcpy(nv, tv, nt * sizeof(*nv));
            tv = nv;
            cap *= 2;
        }
        tv[nt++] = t;
        total += tl + 1;
    }
    if (!nt) {
        *out = jv_str("", 0);
        return 0;
    }
    if (nt == 1) {
        *out = sv(tv[0]);
        return 0;
    }
    char *d = kvg__jinja_arena_alloc(&r->arena, total);
    if (!d) return kvg__jinja_run_fail(r, KVG_ETOOBIG, "template render memory limit reached");
    size_t off = 0;
    for (size_t i = 0; i < nt; i++) {
        size_t l = 0;
        const char *s = kvg_json_str(tv[i], &l);
        if (i) d[off++] = '\n';
        memcpy(d + off, s, l);
        off += l;
    }
    *out = jv_str(d, off);
    return 0;
}

/* function.arguments as vLLM's _postprocess_messages leaves it. */
static int conv_arguments(struct jrender *r, struct chat_scratch *s, const cJSON *a, struct jv *out)
{
    struct jobj *empty;
    if (cJSON_IsString(a)) {
        const char *txt = a->valuestring;
        size_t n = strlen(txt);
        int ok = kvg__jinja_chat_json_strict(txt, n);
        if (ok < 0)
            return kvg__jinja_run_fail(r, KVG_EUNSUPP,
                                       "unsupported: \\u0000 in tool call arguments");
        cJSON *t = ok ? kvg__jinja_chat_parse_json(txt, n) : NULL;
        if (t) {
            int rc = keep_tree(r, s, t);
            return rc ? rc : kvg__jinja_value_from_json(r, t, out);
        }
    } else if (cJSON_IsObject(a) || cJSON_IsArray(a)) {
        return kvg__jinja_value_from_json(r, a, out);
    }
    if (!(empty = kvg__jinja_obj_new(r, 0))) return r->err;
    out->t = JV_OBJ;
    out->u.o = empty;
    return 0;
}

static int conv_tool_call(struct jrender *r, struct chat_scratch *s, const cJSON *tc,
                          struct jv *out)
{
    if (!cJSON_IsObject(tc))
        return kvg__jinja_run_fail(r, KVG_EPARSE, "each tool call must be an object");
    const cJSON *fn = jget(tc, "function");
    if (!cJSON_IsObject(fn))
        return kvg__jinja_run_fail(r, KVG_EPARSE, "tool call without a function object");
    struct jobj *o = kvg__jinja_obj_new(r, 4), *fo = kvg__jinja_obj_new(r, 3);
    int rc, seen_args = 0;
    struct jv v;
    if (!o || !fo) return r->err;
    for (const cJSON *k = fn->child; k; k = k->next) {
        if (!strcmp(k->string, "arguments")) {
            if (seen_args) continue; /* a repeated key keeps its first place */
            seen_args = 1;
            rc = conv_arguments(r, s, jget(fn, "arguments"), &v);
        } else {
            rc = kvg__jinja_value_from_json(r, k, &v);
        }
        if (rc || (rc = kvg__jinja_obj_set(r, fo, k->string, strlen(k->string), v))) return rc;
    }
    if (!seen_args) {
        if ((rc = conv_arguments(r, s, NULL, &v)) ||
            (rc = kvg__jinja_obj_push(r, fo, "arguments", 9, v)))
            return rc;
    }
    for (const cJSON *k = tc->child; k; k = k->next) {
        if (!strcmp(k->string, "function")) {
            v.t = JV_OBJ;
            v.u.o = fo;
        } else if ((rc = kvg__jinja_value_from_json(r, k, &v))) {
            return rc;
        }
        if ((rc = kvg__jinja_obj_set(r, o, k->string, strlen(k->string), v))) return rc;
    }
    out->t = JV_OBJ;
    out->u.o = o;
    return 0;
}

static int conv_message(struct jrender *r, struct chat_scratch *s, const cJSON *m, struct jv *out)
{
    if (!cJSON_IsObject(m))
        return kvg__jinja_run_fail(r, KVG_EPARSE, "each message must be an object");
    /* one pass over the keys (the last of a repeated key wins, as in JS) */
    const cJSON *role = NULL, *content = NULL, *tcs = NULL, *rs = NULL, *id = NULL, *name = NULL,
                *task = NULL, *tools = NULL;
    for (const cJSON *k = m->child; k; k = k->next) {
        const char *ks = k->string;
        switch (ks[0]) {
        case 'r':
            if (!strcmp(ks, "role"))
                role = k;
            else if (!strcmp(ks, "reasoning"))
                rs = k;
            break;
        case 'c':
            if (!strcmp(ks, "content")) content = k;
            break;
        case 't':
            if (!strcmp(ks, "tool_calls"))
                tcs = k;
            else if (!strcmp(ks, "tool_call_id"))
                id = k;
            else if (!strcmp(ks, "task"))
                task = k;
            else if (!strcmp(ks, "tools"))
                tools = k;
            break;
        case 'n':
            if (!strcmp(ks, "name")) name = k;
            break;
        }
    }
    if (!cJSON_IsString(role))
        return kvg__jinja_run_fail(r, KVG_EPARSE, "message role must be a string");
    struct jobj *o = kvg__jinja_obj_new(r, 6);
    struct jv v;
    int rc;
    if (!o) return r->err;
    if ((rc = kvg__jinja_obj_push(r, o, "role", 4, sv(role))) ||
        (rc = conv_content(r, content, &v)) || (rc = kvg__jinja_obj_push(r, o, "content", 7, v)))
        return rc;
    const char *ro = role->valuestring;
    int is_assistant = ro[0] == 'a' && !strcmp(ro, "assistant");
    int is_tool = ro[0] == 't' && !strcmp(ro, "tool");
    int is_developer = ro[0] == 'd' && !strcmp(ro, "developer");
    if (is_assistant) {
        if (tcs && !cJSON_IsNull(tcs)) {
            if (!cJSON_IsArray(tcs))
                return kvg__jinja_run_fail(r, KVG_EPARSE, "tool_calls must be an array");
            if (tcs->child) { /* an empty list is dropped */
                struct jarr *a = kvg__jinja_arr_new(r, (size_t)cJSON_GetArraySize(tcs));
                if (!a) return r->err;
                for (const cJSON *tc = tcs->child; tc; tc = tc->next) {
                    if ((rc = conv_tool_call(r, s, tc, &a->v[a->n]))) return rc;
                    a->n++;
                }
                v.t = JV_ARR;
                v.u.a = a;
                if ((rc = kvg__jinja_obj_push(r, o, "tool_calls", 10, v))) return rc;
            }
        }
        if (rs && !cJSON_IsNull(rs)) {
            if (!cJSON_IsString(rs))
                return kvg__jinja_run_fail(r, KVG_EPARSE, "reasoning must be a string");
            if ((rc = kvg__jinja_obj_push(r, o, "reasoning", 9, sv(rs))) ||
                (rc = kvg__jinja_obj_push(r, o, "reasoning_content", 17, sv(rs))))
                return rc;
        }
    } else if (is_tool) {
        if (id && ((rc = kvg__jinja_value_from_json(r, id, &v)) ||
                   (rc = kvg__jinja_obj_push(r, o, "tool_call_id", 12, v))))
            return rc;
    }
    if (cJSON_IsString(name) && (rc = kvg__jinja_obj_push(r, o, "name", 4, sv(name)))) return rc;
    if (cJSON_IsString(task) && (rc = kvg__jinja_obj_push(r, o, "task", 4, sv(task)))) return rc;
    if (is_developer) {
        v = jv_null();
        if (tools && (rc = kvg__jinja_value_from_json(r, tools, &v))) return rc;
        if ((rc = kvg__jinja_obj_push(r, o, "tools", 5, v))) return rc;
    }
    out->t = JV_OBJ;
    out->u.o = o;
    return 0;
}

/* A tool as pydantic's model_dump() of ChatCompletionToolsParam gives it. */
static int conv_tool(struct jrender *r, const cJSON *t, struct jv *out)
{
    if (!cJSON_IsObject(t))
        return kvg__jinja_run_fail(r, KVG_EPARSE, "each tool must be an object");
    const cJSON *type = jget(t, "type");
    const cJSON *fn = jget(t, "function");
    if (type && !is_str(type, "function"))
        return kvg__jinja_run_fail(r, KVG_EPARSE, "tool type must be \"function\"");
    if (!cJSON_IsObject(fn))
        return kvg__jinja_run_fail(r, KVG_EPARSE, "tool without a function object");
    const cJSON *name = jget(fn, "name");
    const cJSON *desc = jget(fn, "description");
    const cJSON *par = jget(fn, "parameters");
    if (!cJSON_IsString(name))
        return kvg__jinja_run_fail(r, KVG_EPARSE, "tool function name must be a string");
    if (desc && !cJSON_IsNull(desc) && !cJSON_IsString(desc))
        return kvg__jinja_run_fail(r, KVG_EPARSE, "tool function description must be a string");
    if (par && !cJSON_IsNull(par) && !cJSON_IsObject(par))
        return kvg__jinja_run_fail(r, KVG_EPARSE, "tool function parameters must be an object");
    struct jobj *o = kvg__jinja_obj_new(r, 2), *fo = kvg__jinja_obj_new(r, 3);
    struct jv v;
    int rc;
    if (!o || !fo) return r->err;
    static const char *fixed[] = {"name", "description", "parameters"};
    for (int i = 0; i < 3; i++) {
        const cJSON *x = jget(fn, fixed[i]);
        v = jv_null();
        if (x && (rc = kvg__jinja_value_from_json(r, x, &v))) return rc;
        if ((rc = kvg__jinja_obj_push(r, fo, fixed[i], strlen(fixed[i]), v))) return rc;
    }
    for (const cJSON *k = fn->child; k; k = k->next) {
        if (!strcmp(k->string, "name") || !strcmp(k->string, "description") ||
            !strcmp(k->string, "parameters"))
            continue;
        if ((rc = kvg__jinja_value_from_json(r, k, &v)) ||
            (rc = kvg__jinja_obj_set(r, fo, k->string, strlen(k->string), v)))
            return rc;
    }
    if ((rc = kvg__jinja_obj_push(r, o, "type", 4, jv_str("function", 8)))) return rc;
    v.t = JV_OBJ;
    v.u.o = fo;
    if ((rc = kvg__jinja_obj_push(r, o, "function", 8, v))) return rc;
    for (const cJSON *k = t->child; k; k = k->next) {
        if (!strcmp(k->string, "type") || !strcmp(k->string, "function")) continue;
        if ((rc = kvg__jinja_value_from_json(r, k, &v)) ||
            (rc = kvg__jinja_obj_set(r, o, k->string, strlen(k->string), v)))
            return rc;
    }
    out->t = JV_OBJ;
    out->u.o = o;
    return 0;
}

int kvg__jinja_chat_build_context(struct jrender *r, const struct kvg_jinja_chat *c,
                                  const cJSON *req, struct chat_scratch *s,
                                  struct kvg_jinja_chat_info *info)
{
    int rc, agp, cont, addsp;
    struct jv v;
    if (!cJSON_IsObject(req))
        return kvg__jinja_run_fail(r, KVG_EPARSE, "request must be a JSON object");
    const cJSON *msgs = NULL, *kw = NULL, *tools = NULL, *passed_v[2] = {NULL, NULL},
                *flags[3] = {NULL, NULL, NULL};
    static const char *flag_names[3] = {"add_generation_prompt", "continue_final_message",
                                        "add_special_tokens"};
    for (const cJSON *k = req->child; k; k = k->next) {
        const char *ks = k->string;
        if (!strcmp(ks, "messages"))
            msgs = k;
        else if (!strcmp(ks, "chat_template_kwargs"))
            kw = k;
        else if (!strcmp(ks, "tools"))
            tools = k;
        else if (!strcmp(ks, "documents"))
            passed_v[0] = k;
        else if (!strcmp(ks, "reasoning_effort"))
            passed_v[1] = k;
        else
            for (int i = 0; i < 3; i++)
                if (!strcmp(ks, flag_names[i])) flags[i] = k;
    }
    int *fv[3] = {&agp, &cont, &addsp};
    for (int i = 0; i < 3; i++) {
        *fv[i] = i == 0;
        if (!flags[i]) continue;
        if (!cJSON_IsBool(flags[i]))
            return kvg__jinja_run_fail(r, KVG_EPARSE, "%s must be a boolean", flag_names[i]);
        *fv[i] = cJSON_IsTrue(flags[i]);
    }
    if (cont && agp)
        return kvg__jinja_run_fail(r, KVG_EPARSE,
                                   "Cannot set both `continue_final_message` and "
                                   "`add_generation_prompt` to True.");
    if (cont) return kvg__jinja_run_fail(r, KVG_EUNSUPP, "unsupported: continue_final_message");
    info->add_generation_prompt = agp;
    info->add_special_tokens = addsp;

    if (!cJSON_IsArray(msgs))
        return kvg__jinja_run_fail(r, KVG_EPARSE, "messages must be an array");
    struct jarr *ma = kvg__jinja_arr_new(r, (size_t)cJSON_GetArraySize(msgs));
    if (!ma) return r->err;
    for (const cJSON *m = msgs->child; m; m = m->next) {
        if ((rc = conv_message(r, s, m, &ma->v[ma->n]))) return rc;
        ma->n++;
    }

    if (kw && !cJSON_IsNull(kw) && !cJSON_IsObject(kw))
        return kvg__jinja_run_fail(r, KVG_EPARSE, "chat_template_kwargs must be an object");
    struct jv vals[CV_COUNT];
    uint8_t have[CV_COUNT] = {0};
    vals[CV_MESSAGES].t = JV_ARR;
    vals[CV_MESSAGES].u.a = ma;
    have[CV_MESSAGES] = 1;
    vals[CV_TOOLS] = jv_null();
    have[CV_TOOLS] = 1;
    if (tools && !cJSON_IsNull(tools)) {
        if (!cJSON_IsArray(tools))
            return kvg__jinja_run_fail(r, KVG_EPARSE, "tools must be an array");
        struct jarr *ta = kvg__jinja_arr_new(r, (size_t)cJSON_GetArraySize(tools));
        if (!ta) return r->err;
        for (const cJSON *t = tools->child; t; t = t->next) {
            if ((rc = conv_tool(r, t, &ta->v[ta->n]))) return rc;
            ta->n++;
        }
        vals[CV_TOOLS].t = JV_ARR;
        vals[CV_TOOLS].u.a = ta;
    }
    if (c->bos) vals[CV_BOS] = jv_str(c->bos, strlen(c->bos)), have[CV_BOS] = 1;
    if (c->eos) vals[CV_EOS] = jv_str(c->eos, strlen(c->eos)), have[CV_EOS] = 1;
    for (int i = 0; i < 2; i++) {
        const cJSON *x = passed_v[i];
        if (x && !cJSON_IsNull(x)) {
            if ((rc = kvg__jinja_value_from_json(r, x, &vals[CV_DOCUMENTS + i]))) return rc;
            have[CV_DOCUMENTS + i] = 1;
        }
    }
    for (const cJSON *k = kw ? kw->child : NULL; k; k = k->next) {
        const char *ks = k->string;
        if (!strcmp(ks, "chat_template") || !strcmp(ks, "tokenize") ||
            !strcmp(ks, "add_generation_prompt") || !strcmp(ks, "continue_final_message"))
            continue; /* vLLM drops or overrides these */
        if (!strcmp(ks, "messages"))
            return kvg__jinja_run_fail(r, KVG_EPARSE, "chat_template_kwargs may not set messages");
        int later = 0; /* a repeated key: the last one counts */
        for (const cJSON *d = k->next; d && !later; d = d->next) later = !strcmp(ks, d->string);
        if (later) continue;
        int fixed = -1;
        for (int i = 0; i < CV_COUNT; i++)
            if (!strcmp(ks, kvg__jinja_chat_var_names[i])) fixed = i;
        if ((rc = kvg__jinja_value_from_json(r, k, &v))) return rc;
        if (fixed >= 0) {
            vals[fixed] = v;
            have[fixed] = 1;
        } else if ((rc = kvg__jinja_run_set_global(r, ks, strlen(ks), v))) {
            return rc;
        }
    }
    vals[CV_AGP] = jv_bool(agp);
    have[CV_AGP] = 1;
    for (int i = 0; i < CV_COUNT; i++)
        if (have[i] && c->sym[i] >= 0) jr_put_global(r, (uint32_t)c->sym[i], vals[i]);
    return 0;
}
