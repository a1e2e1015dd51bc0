/* base/opt.h's roff format (the man page's options): the same entries and
 * defaults as --help, as .SS sections and .TP paragraphs between the begin
 * and end markers, everything escaped; and text again once switched back. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/opt.h"
#include "support/test.h"

struct cfg {
    char name[32];
    int port;
    int verbose;
    struct kvg_strlist urls;
};

#define O(f) offsetof(struct cfg, f)

static const struct kvg_opt row_t[] = {
    {"url", NULL, KVG_OPT_LIST, O(urls), .flags = KVG_OPT_F_PRIMARY},
    KVG_OPT_END,
};

static const struct kvg_opt table[] = {
    {"name", "title", KVG_OPT_STR, O(name), sizeof(((struct cfg *)0)->name), .meta = "NAME",
     .help = ".a name, with a \\ and -", .section = "basic things"},
    {"port", NULL, KVG_OPT_INT, O(port), .help = "a port", .min = 0, .max = 65535},
    {"verbose", NULL, KVG_OPT_BOOL, O(verbose), .help = "say more", .section = "other"},
    {"workers", NULL, KVG_OPT_ROWS, 0, 0, .sub = row_t, .help = "rows"},
    KVG_OPT_END,
};

static char *render(const struct cfg *d)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    kvg_opt_help(table, d, f);
    fclose(f);
    return buf;
}

TEST(roff_entries_sections_defaults)
{
    struct cfg d = {.name = "a,b", .port = 8080};
    kvg_opt_help_set_format(KVG_OPT_HELP_ROFF);
    char *r = render(&d);
    kvg_opt_help_set_format(KVG_OPT_HELP_TEXT);
    CHECK(r != NULL);
    CHECK(!strncmp(r, KVG_OPT_ROFF_BEGIN "\n", strlen(KVG_OPT_ROFF_BEGIN) + 1));
    size_t n = strlen(r), e = strlen(KVG_OPT_ROFF_END "\n");
    CHECK(n > e && !strcmp(r + n - e, KVG_OPT_ROFF_END "\n"));
    CHECK(strstr(r, ".SS \"basic things\"\n.TP\n") != NULL);
    /* The help line's leading '.' is not a request here: it follows the
     * paragraph's tag line, and the escaper guards only line starts. */
    CHECK(strstr(r, ".TP\n\\fB\\-\\-name\\fR \\fINAME\\fR\n.a name,\\: with a \\e and \\- "
                    "(default: a,\\:b) (also \\-\\-title)\n") == NULL);
    CHECK(strstr(r, ".TP\n\\fB\\-\\-name\\fR \\fINAME\\fR\n\\&.a name,\\: with a \\e and \\- "
                    "(default: a,\\:b) (also \\-\\-title)\n") != NULL);
    CHECK(strstr(r, ".TP\n\\fB\\-\\-port\\fR \\fIN\\fR\na port (default: 8080)\n") != NULL);
    CHECK(strstr(r, ".SS \"other\"\n.TP\n\\fB\\-\\-verbose\\fR\nsay more\n") != NULL);
    CHECK(strstr(r, ".TP\n\\fBworkers:\\fR [{url},\\: ...]\nrows (YAML file only)\n") != NULL);
    free(r);
    /* Back to text: --help as it always was. */
    r = render(&d);
    CHECK(r != NULL);
    CHECK(strstr(r, "basic things:\n") == r);
    CHECK(strstr(r, "  --port N ") != NULL && strstr(r, ".TP") == NULL);
    free(r);
}

TEST(roff_text_escapes)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f != NULL);
    kvg_opt_roff_text(".dot\n'quote\nmid.dle's\\back --flag", f);
    fclose(f);
    CHECK_STR(buf, "\\&.dot\n\\&'quote\nmid.dle's\\eback \\-\\-flag");
    free(buf);
}
