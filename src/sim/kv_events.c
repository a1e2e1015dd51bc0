/* msgpack encoder for KV event batches in vLLM's two wire forms; see
 * kv_events.h for the exact layout. Packing goes through libmsgpack's
 * sbuffer; every pack call's result is folded into one status so a failed
 * allocation anywhere fails the whole batch. Each pack call is its own
 * statement: the operands of `|` have no evaluation order in C, and a map's
 * keys must come before their values. */
#include "sim/kv_events.h"

#include <errno.h>
#include <msgpack.h>
#include <string.h>

int kvg_sim_kv_encoding_parse(const char *s)
{
    if (s && !strcmp(s, "array")) return KVG_SIM_KV_ARRAY;
    if (s && !strcmp(s, "map")) return KVG_SIM_KV_MAP;
    return -EINVAL;
}

static int pack_str(msgpack_packer *pk, const char *s)
{
    return msgpack_pack_str_with_body(pk, s, strlen(s));
}

static int pack_hashes(msgpack_packer *pk, const struct kvg_sim_event *e)
{
    int rc = msgpack_pack_array(pk, e->n_hashes);
    for (uint32_t i = 0; i < e->n_hashes; i++) rc |= msgpack_pack_uint64(pk, e->hashes[i]);
    return rc;
}

static int pack_tokens(msgpack_packer *pk, const struct kvg_sim_event *e)
{
    int rc = msgpack_pack_array(pk, e->n_tokens);
    for (uint32_t i = 0; i < e->n_tokens; i++) rc |= msgpack_pack_uint32(pk, e->tokens[i]);
    return rc;
}

static int pack_parent(msgpack_packer *pk, const struct kvg_sim_event *e)
{
    return e->has_parent ? msgpack_pack_uint64(pk, e->parent) : msgpack_pack_nil(pk);
}

static int pack_str_or_nil(msgpack_packer *pk, const char *s)
{
    return s ? pack_str(pk, s) : msgpack_pack_nil(pk);
}

static int pack_lora_id(msgpack_packer *pk, const struct kvg_sim_event *e)
{
    return e->lora_name ? msgpack_pack_int(pk, e->lora_id) : msgpack_pack_nil(pk);
}

/* extra_keys, one entry per block as vLLM's generate_block_hash_extra_keys
 * builds them: the adapter's name on every block, then the cache salt on a
 * request's first block; nil for a block with neither. */
static int pack_extra_keys(msgpack_packer *pk, const struct kvg_sim_event *e)
{
    int rc = msgpack_pack_array(pk, e->n_hashes);
    for (uint32_t i = 0; i < e->n_hashes; i++) {
        int salt = i == 0 && e->cache_salt;
        int k = (e->lora_name != NULL) + salt;
        if (!k) {
            rc |= msgpack_pack_nil(pk);
            continue;
        }
        rc |= msgpack_pack_array(pk, (size_t)k);
        if (e->lora_name) rc |= pack_str(pk, e->lora_name);
        if (salt) rc |= pack_str(pk, e->cache_salt);
    }
    return rc;
}

/* vLLM's medium names: the GPU cache, or the CPU offloading tier. */
static const char *medium(const struct kvg_sim_event *e)
{
    return e->cpu ? "CPU" : "GPU";
}

/* A block offloaded to the CPU, as vLLM's offloading connector publishes
 * it: the hashes and the medium only (no parent, no tokens, block_size 0);
 * the consumer knows the blocks from their GPU store. */
static int pack_offloaded(msgpack_packer *pk, const struct kvg_sim_event *e, int map)
{
    static const char *keys[] = {"type",      "block_hashes", "parent_block_hash",
                                 "token_ids", "block_size",   "lora_id",
                                 "medium"};
    int rc = map ? msgpack_pack_map(pk, 7) : msgpack_pack_array(pk, 7);
    for (int f = 0; f < 7; f++) {
        if (map) rc |= pack_str(pk, keys[f]);
        switch (f) {
        case 0:
            rc |= pack_str(pk, "BlockStored");
            break;
        case 1:
            rc |= pack_hashes(pk, e);
            break;
        case 3:
            rc |= msgpack_pack_array(pk, 0);
            break;
        case 4:
            rc |= msgpack_pack_uint32(pk, 0);
            break;
        case 6:
            rc |= pack_str(pk, "CPU");
            break;
        default:
            rc |= msgpack_pack_nil(pk);
            break;
        }
    }
    return rc;
}

static int pack_array_event(msgpack_packer *pk, const struct kvg_sim_event *e)
{
    int rc = 0;
    int tagged = e->lora_name || e->cache_salt;
    if (e->type == KVG_SIM_EV_STORED && e->cpu) return pack_offloaded(pk, e, 0);
    switch (e->type) {
    case KVG_SIM_EV_STORED:
        /* msgspec drops trailing defaults only: with an adapter or a salt,
         * lora_name and extra_keys are there. */
        rc |= msgpack_pack_array(pk, tagged ? 9 : 7);
        rc |= pack_str(pk, "BlockStored");
        rc |= pack_hashes(pk, e);
        rc |= pack_parent(pk, e);
        rc |= pack_tokens(pk, e);
        rc |= msgpack_pack_uint32(pk, e->block_size);
        rc |= pack_lora_id(pk, e);
        rc |= pack_str(pk, medium(e));
        if (tagged) {
            rc |= pack_str_or_nil(pk, e->lora_name);
            rc |= pack_extra_keys(pk, e);
        }
        break;
    case KVG_SIM_EV_REMOVED:
        rc |= msgpack_pack_array(pk, 3);
        rc |= pack_str(pk, "BlockRemoved");
        rc |= pack_hashes(pk, e);
        rc |= pack_str(pk, medium(e));
        break;
    case KVG_SIM_EV_CLEARED:
        rc |= msgpack_pack_array(pk, 1);
        rc |= pack_str(pk, "AllBlocksCleared");
        break;
    }
    return rc;
}

static int pack_map_event(msgpack_packer *pk, const struct kvg_sim_event *e)
{
    int rc = 0;
    if (e->type == KVG_SIM_EV_STORED && e->cpu) return pack_offloaded(pk, e, 1);
    switch (e->type) {
    case KVG_SIM_EV_STORED:
        rc |= msgpack_pack_map(pk, 11);
        rc |= pack_str(pk, "type");
        rc |= pack_str(pk, "BlockStored");
        rc |= pack_str(pk, "block_hashes");
        rc |= pack_hashes(pk, e);
        rc |= pack_str(pk, "parent_block_hash");
        rc |= pack_parent(pk, e);
        rc |= pack_str(pk, "token_ids");
        rc |= pack_tokens(pk, e);
        rc |= pack_str(pk, "block_size");
        rc |= msgpack_pack_uint32(pk, e->block_size);
        rc |= pack_str(pk, "lora_id");
        rc |= pack_lora_id(pk, e);
        rc |= pack_str(pk, "medium");
        rc |= pack_str(pk, medium(e));
        rc |= pack_str(pk, "lora_name");
        rc |= pack_str_or_nil(pk, e->lora_name);
        rc |= pack_str(pk, "extra_keys");
        rc |= pack_extra_keys(pk, e);
        rc |= pack_str(pk, "group_idx");
        rc |= msgpack_pack_uint32(pk, 0);
        rc |= pack_str(pk, "kv_cache_spec_kind");
        rc |= pack_str(pk, "full_attention");
        break;
    case KVG_SIM_EV_REMOVED:
        rc |= msgpack_pack_map(pk, 4);
        rc |= pack_str(pk, "type");
        rc |= pack_str(pk, "BlockRemoved");
        rc |= pack_str(pk, "block_hashes");
        rc |= pack_hashes(pk, e);
        rc |= pack_str(pk, "medium");
        rc |= pack_str(pk, medium(e));
        rc |= pack_str(pk, "group_idx");
        rc |= msgpack_pack_uint32(pk, 0);
        break;
    case KVG_SIM_EV_CLEARED:
        rc |= msgpack_pack_map(pk, 1);
        rc |= pack_str(pk, "type");
        rc |= pack_str(pk, "AllBlocksCleared");
        break;
    }
    return rc;
}

int kvg_sim_kv_encode(const struct kvg_sim_event *ev, size_t n, double ts, int dp_rank,
                      enum kvg_sim_kv_encoding enc, void **out, size_t *len)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    int rc = msgpack_pack_array(&pk, dp_rank >= 0 ? 3 : 2);
    rc |= msgpack_pack_double(&pk, ts);
    rc |= msgpack_pack_array(&pk, n);
    for (size_t i = 0; i < n; i++)
        rc |= enc == KVG_SIM_KV_MAP ? pack_map_event(&pk, &ev[i]) : pack_array_event(&pk, &ev[i]);
    if (dp_rank >= 0) rc |= msgpack_pack_int(&pk, dp_rank);
    if (rc) {
        msgpack_sbuffer_destroy(&sb);
        return -ENOMEM;
    }
    *len = sb.size;
    *out = msgpack_sbuffer_release(&sb);
    return 0;
}
