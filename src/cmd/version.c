/* `kvgate version` (and `kvgate --version`): the release and the git commit
 * the binary was built from. The Makefile passes the commit as KVG_COMMIT
 * (12 hex digits, "-dirty" when the tree had uncommitted changes) and its
 * date as KVG_COMMIT_DATE; a tree built without git (a tarball, a copy
 * without .git) and without KVG_COMMIT set by hand gets neither, and the
 * line says so instead of naming a commit it cannot know. */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"

#define KVG_VERSION "0.1.0"

#ifndef KVG_COMMIT
#define KVG_COMMIT ""
#endif
#ifndef KVG_COMMIT_DATE
#define KVG_COMMIT_DATE ""
#endif

const char *kvg_cmd_version(void)
{
    return KVG_VERSION;
}

const char *kvg_cmd_version_commit(void)
{
    return KVG_COMMIT;
}

const char *kvg_cmd_version_date(void)
{
    return KVG_COMMIT_DATE;
}

int kvg_cmd_version_main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf(
            "usage: kvgate version (or kvgate --version)\n\n"
            "Prints the release and the git commit the binary was built from (\"-dirty\": the\n"
            "tree had uncommitted changes), or says that it was built outside a git checkout.\n");
        return 0;
    }
    if (KVG_COMMIT[0])
        printf("kvgate %s (commit %s%s%s)\n", KVG_VERSION, KVG_COMMIT,
               KVG_COMMIT_DATE[0] ? ", " : "", KVG_COMMIT_DATE);
    else
        printf("kvgate %s (commit unknown: built outside a git checkout)\n", KVG_VERSION);
    return 0;
}
