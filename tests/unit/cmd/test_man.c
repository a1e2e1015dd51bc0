/* kvgate help --man (src/cmd/man.c): each command's --help becomes its own
 * section, option tables as roff, usage lines and indented lists kept line
 * by line, prose filled and escaped; a command whose help cannot be
 * gathered fails the page; --help is text again afterwards. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/opt.h"
#include "cmd/cmd.h"
#include "support/test.h"

struct fake_opts {
    int port;
};

static const struct kvg_opt fake_flags[] = {
    {"port", NULL, KVG_OPT_INT, offsetof(struct fake_opts, port), .help = "the port",
     .section = "listening", .min = 0, .max = 65535},
    KVG_OPT_END,
};

static int fake_main(int argc, char **argv)
{
    if (argc != 2 || strcmp(argv[1], "--help")) return 2;
    struct fake_opts d = {.port = 9000};
    printf("usage: kvgate fake --port N\n\n"
           "A fake command. Its prose\nspans -two- lines.\n\n");
    kvg_opt_help(fake_flags, &d, stdout);
    printf("\nkinds:\n  a   the first\n  b   the second\n");
    return 0;
}

static int silent_main(int argc, char **argv)
{
    return 0;
}

static char *man(const struct kvg_cmd_entry *c, size_t n, int *rc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    *rc = kvg_cmd_man(c, n, f);
    fclose(f);
    return buf;
}

TEST(man_page_from_help)
{
    const struct kvg_cmd_entry cmds[] = {{"fake", fake_main, "a fake command"}};
    int rc = -1;
    char *p = man(cmds, 1, &rc);
    CHECK(p != NULL);
    CHECK_INT(rc, 0);
    CHECK(strstr(p, ".TH KVGATE 1 ") != NULL);
    CHECK(strstr(p, ".SH COMMANDS\n.TP\n.B fake\na fake command\n") != NULL);
    CHECK(strstr(p, ".SH \"KVGATE FAKE\"\n.PP\n.nf\nusage: kvgate fake \\-\\-port N\n.fi\n") !=
          NULL);
    CHECK(strstr(p, ".PP\nA fake command. Its prose\nspans \\-two\\- lines.\n") != NULL);
    CHECK(strstr(p, ".SS \"listening\"\n.TP\n\\fB\\-\\-port\\fR \\fIN\\fR\nthe port "
                    "(default: 9000)\n") != NULL);
    CHECK(strstr(p, ".PP\n.nf\nkinds:\n  a   the first\n  b   the second\n.fi\n") != NULL);
    CHECK(strstr(p, KVG_OPT_ROFF_BEGIN) == NULL); /* the markers are the page's, not kept */
    CHECK(strstr(p, ".SH FILES\n") != NULL);
    free(p);
    /* --help is text again. */
    char *t = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&t, &len);
    CHECK(f != NULL);
    struct fake_opts d = {.port = 1};
    kvg_opt_help(fake_flags, &d, f);
    fclose(f);
    CHECK(strstr(t, "listening:\n  --port N") == t);
    free(t);
}

TEST(man_page_fails_without_a_help)
{
    const struct kvg_cmd_entry cmds[] = {{"fake", fake_main, "a fake command"},
                                         {"silent", silent_main, "prints nothing"}};
    int rc = 0;
    char *p = man(cmds, 2, &rc);
    CHECK(p != NULL);
    CHECK_INT(rc, 1);
    free(p);
}
