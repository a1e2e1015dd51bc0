/* What the commands share after parsing their flags: --help printed, or the
 * reason a command line was refused, in one wording and with one exit
 * status (cmd.h). */
#include <stdio.h>

#include "cmd/cmd.h"

int kvg__cmd_parsed(int rc, const char *name, const char *err, void (*usage)(FILE *out))
{
    if (!rc) return -1;
    if (rc == 1) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "kvgate %s: %s\n", name, err);
    return 2;
}
