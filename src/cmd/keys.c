/* `kvgate keys ...`: argv[0] is "keys".
 *   keys hash KEY     prints the file's hash: value for KEY ("-": read stdin)
 *   keys new [NAME]   makes a random key; prints it and a ready keys entry
 *   keys check FILE   validates a keys file
 * The keys file itself is src/gateway/keys.h's. */
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "gateway/keys.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: kvgate keys hash KEY|-   print the keys-file hash of KEY ('-': stdin)\n"
               "       kvgate keys new [NAME]   make a random key and its keys-file entry\n"
               "       kvgate keys check FILE   validate a keys file\n"
               "The keys file is YAML: keys, tenants, counting (src/gateway/keys.h).\n");
}

static int cli_usage(void)
{
    usage(stderr);
    return 2;
}

int kvg_cmd_keys_main(int argc, char **argv)
{
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    if (argc < 2) return cli_usage();
    char out[72];
    if (!strcmp(argv[1], "hash") && argc == 3) {
        char line[4096];
        const char *key = argv[2];
        size_t n = strlen(key);
        if (!strcmp(key, "-")) { /* keeps the key out of shell history and ps */
            if (!fgets(line, sizeof line, stdin)) return cli_usage();
            n = strcspn(line, "\r\n");
            key = line;
        }
        if (!n) {
            fprintf(stderr, "kvgate keys hash: the key is empty\n");
            return 1;
        }
        kvg_keys_hash(key, n, out);
        printf("%.71s\n", out);
        OPENSSL_cleanse(line, sizeof line);
        return 0;
    }
    if (!strcmp(argv[1], "new") && argc <= 3) {
        unsigned char rnd[24];
        char key[8 + 48 + 1] = "sk-kvg-";
        if (!RAND_bytes(rnd, sizeof rnd)) {
            fprintf(stderr, "kvgate keys new: no randomness\n");
            return 1;
        }
        for (size_t i = 0; i < sizeof rnd; i++) snprintf(key + 7 + 2 * i, 3, "%02x", rnd[i]);
        kvg_keys_hash(key, strlen(key), out);
        printf("key: %s\n\n  - name: %s\n    hash: %.71s\n", key, argc == 3 ? argv[2] : "NAME",
               out);
        OPENSSL_cleanse(key, sizeof key);
        return 0;
    }
    if (!strcmp(argv[1], "check") && argc == 3) {
        char err[512];
        struct kvg_keys_set *s;
        if (kvg_keys_load(argv[2], &s, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        printf("%s: %zu keys, %zu tenants, counting %s\n", argv[2], s->nkeys, s->ntenants,
               kvg_quota_mode_name(s->counting.mode));
        kvg_keys_unref(s);
        return 0;
    }
    return cli_usage();
}
