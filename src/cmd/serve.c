/* `kvgate serve`: the gateway's flags and config file (the table is
 * src/serve/config.c's, which the gateway also re-reads on SIGHUP), then
 * src/serve/serve.h runs it. */
#include <stdio.h>

#include "cmd/cmd.h"
#include "serve/serve.h"

int kvg_cmd_serve_main(int argc, char **argv)
{
    struct kvg_serve_config c;
    kvg_serve_config_default(&c);
    char err[512];
    int rc = kvg_serve_config_parse(&c, argc, argv, err, sizeof err);
    if (rc == 1) return 0;
    if (rc) {
        fprintf(stderr, "kvgate serve: %s\n", err);
        kvg_serve_config_free(&c);
        return 2;
    }
    return kvg_serve_run(&c);
}
