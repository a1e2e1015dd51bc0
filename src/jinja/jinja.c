/* Public face of the template interpreter (jinja.h): compile once, render
 * many times. The work is in jinja_lex.c, jinja_parse.c, jinja_eval.c,
 * jinja_filter.c, jinja_str.c and jinja_value.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "jinja/jinja.h"
#include "jinja/jinja_int.h"

int kvg_jinja_compile(const char *src, size_t len, struct kvg_jinja **out, char *err, size_t errlen)
{
    struct jtoks toks = {0};
    struct kvg_jinja *t = calloc(1, sizeof(*t));
    int rc;
    if (err && errlen) err[0] = 0;
    if (!t) return -ENOMEM;
    kvg__jinja_arena_init(&t->arena, 0);
    if ((rc = kvg__jinja_lex(src, len, &t->arena, &toks, err, errlen)) ||
        (rc = kvg__jinja_parse(t, &toks, err, errlen))) {
        free(toks.v);
        kvg_jinja_free(t);
        if (rc == -ENOMEM && err && errlen) snprintf(err, errlen, "out of memory");
        return rc;
    }
    free(toks.v);
    *out = t;
    return 0;
}

void kvg_jinja_free(struct kvg_jinja *t)
{
    if (!t) return;
    kvg__jinja_arena_free(&t->arena);
    free(t->syms);
    free(t->symlen);
    free(t);
}

int kvg_jinja_render_json(const struct kvg_jinja *t, const cJSON *ctx,
                          const struct kvg_jinja_limits *lim, struct kvg_buf *out, char *err,
                          size_t errlen)
{
    struct jrender r;
    int rc = kvg__jinja_run_init(&r, t, lim);
    if (err && errlen) err[0] = 0;
    if (rc) {
        kvg__jinja_run_free(&r);
        return rc;
    }
    if (ctx && !cJSON_IsObject(ctx)) {
        rc = kvg__jinja_run_fail(&r, KVG_EPARSE, "template context must be a JSON object");
        goto out;
    }
    for (const cJSON *c = ctx ? ctx->child : NULL; c && !rc; c = c->next) {
        int later = 0; /* JSON.parse keeps the last of repeated keys */
        for (const cJSON *d = c->next; d && !later; d = d->next)
            later = !strcmp(c->string, d->string);
        if (later) continue;
        struct jv v;
        if (!(rc = kvg__jinja_value_from_json(&r, c, &v)))
            rc = kvg__jinja_run_set_global(&r, c->string, strlen(c->string), v);
    }
    if (!rc) rc = kvg__jinja_run(&r, out);
out:
    if (rc && err && errlen) snprintf(err, errlen, "%s", r.msg[0] ? r.msg : "out of memory");
    kvg__jinja_run_free(&r);
    return rc;
}
