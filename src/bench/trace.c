/* JSONL trace replay: one request per line, a JSON object with
 *
 *   timestamp      arrival in seconds (number), or
 *   timestamp_ms   arrival in milliseconds (Mooncake's traces use this unit
 *                  under the name "timestamp": give --trace-speed 1000 then);
 *                  times are shifted so the earliest request arrives at 0
 *   input_length   prompt length in tokens, or
 *   text / prompt  the prompt itself (its bytes are the token ids under the
 *                  built-in byte tokenizer; input_length is then ignored)
 *   output_length  max_tokens (alias output_len, max_tokens); 0/absent: the
 *                  workload's --output-len
 *   session_id     optional routing key (string or integer), sent as
 *                  x-session-id and seen by sticky policies
 *   prefix_id, prefix_length   optional: requests naming the same prefix_id
 *                  share their first prefix_length tokens
 *   hash_ids       optional, Mooncake's format: a list of integers, each a
 *                  block of --trace-block tokens shared by every request that
 *                  lists the same integer (the prompt starts with these blocks)
 *
 * Unknown fields are ignored. A line that is empty or only spaces is skipped. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "base/hash.h"
#include "bench/workload.h"

#define MAX_LINE (64u << 20) /* one request's JSON */
#define MAX_RECS (1u << 24)  /* requests in one trace */
#define MAX_INPUT (1u << 24) /* tokens in one prompt */

/* FNV-1a 64 of a name, never 0 (0 means "no prefix"). */
static uint64_t name_hash(const char *s, size_t n)
{
    uint64_t h = kvg_hash_fnv1a64(KVG_HASH_FNV1A64_SEED, s, n);
    return h ? h : 1;
}

/* A string or an integer as a key; writes its text to out (may be NULL). */
static int key_of(const cJSON *v, char *out, size_t cap, uint64_t *hash)
{
    char buf[64];
    const char *s;
    if (cJSON_IsString(v)) {
        s = v->valuestring;
    } else if (cJSON_IsNumber(v)) {
        snprintf(buf, sizeof buf, "%.0f", v->valuedouble);
        s = buf;
    } else {
        return -1;
    }
    if (out) { /* keys longer than the field are cut: they only spread load */
        size_t l = strlen(s) < cap - 1 ? strlen(s) : cap - 1;
        memcpy(out, s, l);
        out[l] = 0;
    }
    if (hash) *hash = name_hash(s, strlen(s));
    return 0;
}

static int get_uint(const cJSON *o, const char *k, uint32_t max, uint32_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!v) return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > max ||
        v->valuedouble != floor(v->valuedouble))
        return -1;
    *out = (uint32_t)v->valuedouble;
    return 1;
}

static int parse_line(const char *line, size_t len, double speed, struct kvg_bench_trace_rec *r,
                      const char **why)
{
    memset(r, 0, sizeof *r);
    cJSON *o = cJSON_ParseWithLength(line, len);
    int rc = -1;
    if (!cJSON_IsObject(o)) {
        *why = "not a JSON object";
        goto out;
    }
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(o, "timestamp");
    const cJSON *tms = cJSON_GetObjectItemCaseSensitive(o, "timestamp_ms");
    if (cJSON_IsNumber(ts))
        r->t = ts->valuedouble / speed;
    else if (cJSON_IsNumber(tms))
        r->t = tms->valuedouble / 1000.0 / speed;
    else {
        *why = "no numeric timestamp or timestamp_ms";
        goto out;
    }
    if (!isfinite(r->t)) {
        *why = "timestamp out of range";
        goto out;
    }
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(o, "text");
    if (!text) text = cJSON_GetObjectItemCaseSensitive(o, "prompt");
    if (text) {
        if (!cJSON_IsString(text) || !text->valuestring[0] ||
            strlen(text->valuestring) > MAX_INPUT) {
            *why = "text must be a non-empty string";
            goto out;
        }
        r->text_len = strlen(text->valuestring);
        r->text = strdup(text->valuestring);
        if (!r->text) {
            *why = "out of memory";
            goto out;
        }
        r->input_len = (uint32_t)r->text_len;
    } else if (get_uint(o, "input_length", MAX_INPUT, &r->input_len) != 1 || !r->input_len) {
        *why = "input_length (a positive integer) or text is required";
        goto out;
    }
    if (get_uint(o, "output_length", 1u << 20, &r->output_len) < 0 ||
        get_uint(o, "output_len", 1u << 20, &r->output_len) < 0 ||
        get_uint(o, "max_tokens", 1u << 20, &r->output_len) < 0) {
        *why = "output_length must be a non-negative integer";
        goto out;
    }
    const cJSON *sess = cJSON_GetObjectItemCaseSensitive(o, "session_id");
    if (sess && key_of(sess, r->session, sizeof r->session, NULL)) {
        *why = "session_id must be a string or an integer";
        goto out;
    }
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(o, "prefix_id");
    if (pid) {
        if (key_of(pid, NULL, 0, &r->prefix_id) ||
            get_uint(o, "prefix_length", MAX_INPUT, &r->prefix_len) != 1) {
            *why = "prefix_id needs a string/integer id and an integer prefix_length";
            goto out;
        }
    }
    const cJSON *hid = cJSON_GetObjectItemCaseSensitive(o, "hash_ids");
    if (hid) {
        int n = cJSON_GetArraySize(hid);
        if (!cJSON_IsArray(hid) || n > (int)MAX_INPUT) {
            *why = "hash_ids must be a list of integers";
            goto out;
        }
        r->hash_ids = malloc((size_t)(n ? n : 1) * sizeof *r->hash_ids);
        if (!r->hash_ids) {
            *why = "out of memory";
            goto out;
        }
        const cJSON *e;
        cJSON_ArrayForEach(e, hid)
        {
            if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble > 9007199254740992.0) {
                *why = "hash_ids must be a list of non-negative integers";
                goto out;
            }
            r->hash_ids[r->nhash++] = (uint64_t)e->valuedouble;
        }
    }
    rc = 0;
out:
    cJSON_Delete(o);
    if (rc) {
        free(r->text);
        free(r->hash_ids);
        memset(r, 0, sizeof *r);
    }
    return rc;
}

/* Sort key: time, then the line's position (qsort is not stable). */
struct order {
    double t;
    size_t i;
};

static int cmp_order(const void *a, const void *b)
{
    const struct order *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

int kvg_bench_trace_load(const char *path, double speed, struct kvg_bench_trace_rec **out,
                         size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        int e = errno;
        snprintf(err, errlen, "trace %s: %s", path, strerror(e));
        return -e;
    }
    struct kvg_bench_trace_rec *recs = NULL;
    size_t nrec = 0, cap = 0, lineno = 0;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    int rc = 0;
    while ((len = getline(&line, &lcap, f)) >= 0) {
        lineno++;
        size_t i = 0;
        while (i < (size_t)len && isspace((unsigned char)line[i])) i++;
        if (i == (size_t)len) continue;
        if ((size_t)len > MAX_LINE || nrec >= MAX_RECS) {
            snprintf(err, errlen, "trace %s:%zu: line or trace too long", path, lineno);
            rc = KVG_ETOOBIG;
            break;
        }
        if (nrec == cap) {
            size_t c = cap ? cap * 2 : 256;
            struct kvg_bench_trace_rec *x = realloc(recs, c * sizeof *x);
            if (!x) {
                rc = -ENOMEM;
                snprintf(err, errlen, "trace %s: out of memory", path);
                break;
            }
            recs = x;
            cap = c;
        }
        const char *why = "";
        if (parse_line(line, (size_t)len, speed, &recs[nrec], &why)) {
            snprintf(err, errlen, "trace %s:%zu: %s", path, lineno, why);
            rc = KVG_EPARSE;
            break;
        }
        nrec++;
    }
    free(line);
    if (!rc && ferror(f)) {
        rc = -EIO;
        snprintf(err, errlen, "trace %s: read error", path);
    }
    fclose(f);
    if (rc) {
        kvg_bench_trace_free(recs, nrec);
        return rc;
    }
    struct order *ord = malloc((nrec ? nrec : 1) * sizeof *ord);
    struct kvg_bench_trace_rec *sorted = malloc((nrec ? nrec : 1) * sizeof *sorted);
    if (!ord || !sorted) {
        free(ord);
        free(sorted);
        kvg_bench_trace_free(recs, nrec);
        snprintf(err, errlen, "trace %s: out of memory", path);
        return -ENOMEM;
    }
    for (size_t i = 0; i < nrec; i++) ord[i] = (struct order){recs[i].t, i};
    qsort(ord, nrec, sizeof *ord, cmp_order);
    for (size_t i = 0; i < nrec; i++) sorted[i] = recs[ord[i].i];
    free(ord);
    free(recs);
    double t0 = nrec ? sorted[0].t : 0;
    for (size_t i = 0; i < nrec; i++) sorted[i].t -= t0;
    *out = sorted;
    *n = nrec;
    return 0;
}

void kvg_bench_trace_free(struct kvg_bench_trace_rec *recs, size_t n)
{
    for (size_t i = 0; recs && i < n; i++) {
        free(recs[i].text);
        free(recs[i].hash_ids);
    }
    free(recs);
}
