/* TLS server contexts (OpenSSL). The record layer runs over memory BIOs in
 * server.c, so TLS connections use the same libuv loop, limits and write
 * coalescing as plain ones. */
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>

#include "base/err.h"
#include "net/http.h"

static void ssl_reason(char *err, size_t errlen, const char *what, const char *file)
{
    unsigned long e = ERR_get_error();
    char reason[256] = "unknown error";
    if (e) ERR_error_string_n(e, reason, sizeof reason);
    snprintf(err, errlen, "%s %s: %s", what, file, reason);
    ERR_clear_error();
}

int kvg_tls_server_ctx(const char *cert_file, const char *key_file, SSL_CTX **out, char *err,
                       size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        snprintf(err, errlen, "cannot create a TLS context");
        return KVG_ECONFIG;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
        ssl_reason(err, errlen, "certificate", cert_file);
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1) {
        ssl_reason(err, errlen, "private key", key_file);
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        ssl_reason(err, errlen, "key does not match the certificate", key_file);
        goto fail;
    }
    *out = ctx;
    return 0;
fail:
    SSL_CTX_free(ctx);
    return KVG_ECONFIG;
}
