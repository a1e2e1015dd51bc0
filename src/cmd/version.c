/* `kvgate version` (and `kvgate --version`). */
#include <stdio.h>

#include "cmd/cmd.h"

#define KVG_VERSION "0.1.0"

int kvg_cmd_version_main(int argc, char **argv)
{
    printf("kvgate %s\n", KVG_VERSION);
    return 0;
}
