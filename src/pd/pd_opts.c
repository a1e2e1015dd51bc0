/* The PD settings as one option table (base/opt.h) over struct
 * kvg_pd_config: kvgate serve includes it at its top level (the flags and
 * the file's keys of the single-model shorthand) and under each models:
 * entry's serving: section, so an option is named, checked and documented
 * once whichever model it is for. */
#include <math.h>
#include <stddef.h>

#include "pd/pd.h"

#define O(field) offsetof(struct kvg_pd_config, field)
#define S(field) sizeof(((struct kvg_pd_config *)0)->field)
#define NONNEG .min = 0, .max = INFINITY

/* The ENUM below keeps the index in mode: the enum must be an int's size. */
_Static_assert(sizeof(enum kvg_pd_mode) == sizeof(int), "enum kvg_pd_mode is not an int");

/* In the order of enum kvg_pd_mode. */
static const char *const modes[] = {"aggregated", "vllm-pd", "sglang-pd", NULL};

const struct kvg_opt kvg_pd_opt_table[] = {
    {"prefill-policy", NULL, KVG_OPT_STR, O(prefill_policy), S(prefill_policy),
     .section = "disaggregated serving", .meta = "NAME",
     .help = "policy over prefill workers (unset: --policy)"},
    {"decode-policy", NULL, KVG_OPT_STR, O(decode_policy), S(decode_policy), .meta = "NAME",
     .help = "policy over decode workers (unset: kvgate's decode pick, pd_decode)"},
    {"pd-threshold-tokens", NULL, KVG_OPT_U32, O(threshold_tokens), 0,
     .help = "fewer uncached prompt tokens than this go to a decode worker alone"},
    {"pd-prefill-timeout-secs", NULL, KVG_OPT_SECS_MS, O(prefill_timeout_ms), 0,
     .help = "a prefill leg's deadline from its dispatch"},
    {"pd-kv-hold-timeout-secs", NULL, KVG_OPT_SECS_MS, O(hold_timeout_ms), 0,
     .help = "how long prefill engines hold unread KV (vLLM's 480): a decode retry only within it"},
    {"pd-early-rejection", NULL, KVG_OPT_BOOL, O(early_rejection), 0,
     .help = "reject at the door (503) when no decode is predicted to have room once the prefill "
             "is done (Mooncake)"},
    {"pd-reject-kv-frac", NULL, KVG_OPT_DOUBLE, O(reject_kv_frac), 0,
     .help = "early rejection: a decode has room below this share of its KV blocks", NONNEG},
    {"pd-prefill-tokens-per-sec", NULL, KVG_OPT_DOUBLE, O(prefill_tokens_per_s), 0,
     .help = "early rejection: prefill speed, to predict when a prefill ends", NONNEG},
    {"pd-decode-time-secs", NULL, KVG_OPT_DOUBLE, O(decode_secs), 0,
     .help = "early rejection: Mooncake's uniform decode time t_d", NONNEG},
    {"epd-disaggregation", NULL, KVG_OPT_BOOL, O(epd), 0,
     .help = "an encode stage: vLLM (--vllm-pd-disaggregation) sends media to an --encode worker "
             "first; SGLang's prefills call their encoders themselves"},
    {"encode-policy", NULL, KVG_OPT_STR, O(encode_policy), S(encode_policy), .meta = "NAME",
     .help = "policy over encode workers (unset: least_load)"},
    KVG_OPT_END,
};

const struct kvg_opt kvg_pd_serving_table[] = {
    {"mode", NULL, KVG_OPT_ENUM, O(mode), 0, .choices = modes, .flags = KVG_OPT_F_REQUIRED,
     .help = "aggregated, vllm-pd (NIXL two-hop) or sglang-pd (bootstrap)"},
    {NULL, NULL, KVG_OPT_INCLUDE, 0, .sub = kvg_pd_opt_table},
    KVG_OPT_END,
};

const char *kvg_pd_mode_name(enum kvg_pd_mode m)
{
    return m >= KVG_PD_OFF && m <= KVG_PD_SGLANG ? modes[m] : "?";
}
