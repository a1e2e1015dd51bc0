/* libFuzzer: the encode stage's readers of outside bytes: an encoder's
 * answer (ec_transfer_params, pd/encode.c), a client's chat body (its media
 * items), and the sim's reading of both (mm_hashes, the placeholder text,
 * the params a prefill gets). Any bytes: an error or a result, never a
 * crash or a leak. */
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pd/pd.h"
#include "simsrv/simsrv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *p = NULL;
    size_t n = 0;
    char err[160];
    if (kvg_pd_ec_params_parse((const char *)data, size, &p, &n, err, sizeof err) == 0)
        cJSON_Delete(p);
    cJSON *j = cJSON_ParseWithLength((const char *)data, size);
    if (!j) return 0;
    (void)kvg_pd_media_items(j);
    static struct kvg_simsrv_server s; /* no engine: the parse reads the options only */
    struct kvg_simsrv_ec_req e;
    for (int role = KVG_SIMSRV_ROLE_BOTH; role <= KVG_SIMSRV_ROLE_ENCODE; role++) {
        s.o.role = role;
        (void)kvg_simsrv_ec_parse(&s, j, &e, err, sizeof err);
    }
    free(kvg_simsrv_ec_text_body(j));
    cJSON_Delete(j);
    return 0;
}
