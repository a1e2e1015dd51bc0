/* The simulated engine's multipart/form-data parser (src/simsrv/multipart.c):
 * fields and files as a browser or curl sends them, the boundary forms the
 * RFC allows, and every way a hostile or cut body can end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "api/api.h"
#include "support/test.h"

static const char CT[] = "multipart/form-data; boundary=XyZ";

static int parse(const char *ct, const char *body, size_t len, struct kvg_api_part *parts,
                 size_t *n)
{
    char msg[200];
    return kvg_api_multipart_parse(ct, strlen(ct), body, len, parts, KVG_API_MAX_PARTS, n, msg,
                                   sizeof msg);
}

static int part_is(const struct kvg_api_part *p, const char *name, const char *data, size_t dlen)
{
    return p->name_len == strlen(name) && !memcmp(p->name, name, p->name_len) && p->len == dlen &&
           !memcmp(p->data, data, dlen);
}

static const char FORM[] = "--XyZ\r\n"
                           "Content-Disposition: form-data; name=\"model\"\r\n\r\n"
                           "whisper\r\n"
                           "--XyZ\r\n"
                           "Content-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n"
                           "Content-Type: audio/wav\r\n\r\n"
                           "RIFF\r\n--Xy\x00\x01Z\r\n"
                           "--XyZ--\r\n";

TEST(fields_and_a_file)
{
    struct kvg_api_part p[KVG_API_MAX_PARTS];
    size_t n = 0;
    CHECK_INT(parse(CT, FORM, sizeof FORM - 1, p, &n), 0);
    CHECK_INT(n, 2);
    CHECK(part_is(&p[0], "model", "whisper", 7));
    CHECK(p[0].filename == NULL);
    /* the file's bytes keep their CRLF, a near-boundary and NULs */
    CHECK(part_is(&p[1], "file", "RIFF\r\n--Xy\x00\x01Z", 13));
    CHECK(p[1].filename && p[1].filename_len == 5 && !memcmp(p[1].filename, "a.wav", 5));
}

TEST(boundary_forms)
{
    struct kvg_api_part p[KVG_API_MAX_PARTS];
    size_t n = 0;
    /* quoted, after other parameters, upper-case type, a preamble first */
    static const char body[] = "preamble\r\n--a b\r\nContent-Disposition: form-data; name=x\r\n\r\n"
                               "1\r\n--a b--";
    CHECK_INT(
        parse("Multipart/Form-Data; charset=utf-8; boundary=\"a b\"", body, sizeof body - 1, p, &n),
        0);
    CHECK_INT(n, 1);
    CHECK(part_is(&p[0], "x", "1", 1));
}

TEST(refused_content_types)
{
    struct kvg_api_part p[KVG_API_MAX_PARTS];
    size_t n = 0;
    char longb[120] = "multipart/form-data; boundary=";
    memset(longb + strlen(longb), 'b', 71); /* RFC 2046: at most 70 */
    CHECK_INT(parse("application/json", FORM, sizeof FORM - 1, p, &n), KVG_EPARSE);
    CHECK_INT(parse("multipart/form-data", FORM, sizeof FORM - 1, p, &n), KVG_EPARSE);
    CHECK_INT(parse("multipart/form-data; boundary=", FORM, sizeof FORM - 1, p, &n), KVG_EPARSE);
    CHECK_INT(parse("multipart/form-data; boundary=\"XyZ", FORM, sizeof FORM - 1, p, &n),
              KVG_EPARSE);
    CHECK_INT(parse(longb, FORM, sizeof FORM - 1, p, &n), KVG_EPARSE);
    char msg[100];
    CHECK_INT(kvg_api_multipart_parse(NULL, 0, FORM, sizeof FORM - 1, p, 4, &n, msg, sizeof msg),
              KVG_EPARSE);
}

/* A body cut anywhere before its closing delimiter is an error: never the
 * parts that happened to arrive (a truncated upload is not a short file). */
TEST(cut_anywhere)
{
    struct kvg_api_part p[KVG_API_MAX_PARTS];
    size_t n, full = sizeof FORM - 1, close = full - 2; /* FORM ends '--XyZ--' CRLF */
    for (size_t len = 0; len < full; len++) {
        char *copy = malloc(len ? len : 1); /* exactly len bytes: ASan sees any overread */
        memcpy(copy, FORM, len);
        int rc = parse(CT, copy, len, p, &n);
        if (len < close)
            CHECK_INT(rc, KVG_EPARSE);
        else
            CHECK_INT(rc, 0);
        free(copy);
    }
}

TEST(malformed_parts)
{
    struct kvg_api_part p[KVG_API_MAX_PARTS];
    size_t n;
    static const char noname[] = "--XyZ\r\nContent-Type: text/plain\r\n\r\nx\r\n--XyZ--";
    static const char noheaders[] = "--XyZ\r\n\r\nx\r\n--XyZ--";
    static const char notform[] =
        "--XyZ\r\nContent-Disposition: attachment; name=a\r\n\r\nx\r\n--XyZ--";
    static const char lf_only[] = "--XyZ\nContent-Disposition: form-data; name=a\n\nx\n--XyZ--";
    static const char unterminated[] =
        "--XyZ\r\nContent-Disposition: form-data; name=\"a\r\n\r\nx\r\n"
        "--XyZ--";
    CHECK_INT(parse(CT, noname, sizeof noname - 1, p, &n), KVG_EPARSE);
    CHECK_INT(parse(CT, noheaders, sizeof noheaders - 1, p, &n), KVG_EPARSE);
    CHECK_INT(parse(CT, notform, sizeof notform - 1, p, &n), KVG_EPARSE);
    CHECK_INT(parse(CT, lf_only, sizeof lf_only - 1, p, &n), KVG_EPARSE);
    CHECK_INT(parse(CT, unterminated, sizeof unterminated - 1, p, &n), KVG_EPARSE);
    CHECK_INT(parse(CT, "", 0, p, &n), KVG_EPARSE);
}

TEST(part_count_bounded)
{
    char body[4096];
    size_t len = 0;
    for (int i = 0; i < 5; i++)
        len += (size_t)snprintf(body + len, sizeof body - len,
                                "--XyZ\r\nContent-Disposition: form-data; name=f%d\r\n\r\n%d\r\n",
                                i, i);
    len += (size_t)snprintf(body + len, sizeof body - len, "--XyZ--\r\n");
    struct kvg_api_part p[5];
    size_t n;
    char msg[100];
    CHECK_INT(kvg_api_multipart_parse(CT, strlen(CT), body, len, p, 4, &n, msg, sizeof msg),
              KVG_EPARSE);
    CHECK(strstr(msg, "more than 4") != NULL);
    CHECK_INT(kvg_api_multipart_parse(CT, strlen(CT), body, len, p, 5, &n, msg, sizeof msg), 0);
    CHECK_INT(n, 5);
    CHECK(part_is(&p[4], "f4", "4", 1));
}
