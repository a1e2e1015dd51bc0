/* Named engine profiles and the step-time model.
 *
 * One scheduler iteration costs
 *   t_fixed + t_seq*seqs + t_prefill_token*prefill_tokens
 *           + t_prefill_attn*attention_pairs + t_decode_ctx*decode_context
 * t_fixed is what every forward pass pays (reading the weights, launches,
 * sampling); t_seq the dense-layer work of each sequence's new token;
 * prefill tokens add their own dense work plus causal attention over
 * everything before them (pairs = sum of n*(start+(n+1)/2) per chunk); each
 * decoding sequence reads its whole context from HBM (memory bound).
 *
 * Where the constants come from
 *
 * qwen3-32b-h100-tp2 — llm-d's "KV-cache wins you can see" setup
 * (llm-d.ai/blog/kvcache-wins-you-can-see): Qwen3-32B on 2 H100 (TP=2) per pod.
 *   | constant               | value     | source / derivation                                   |
 *   |------------------------|-----------|-------------------------------------------------------|
 *   | block_size             | 64        | the guide's `--block-size 64` (scorer blockSize 64)   |
 *   | kv_capacity_tokens     | 307,328   | the report: KV capacity per pod (4,802 blocks of 64)  |
 *   | max_num_seqs           | 1024      | vLLM V1 default, OpenAI server, >=70 GiB GPU, not A100|
 *   | max_num_batched_tokens | 8192      | same vLLM default table (EngineArgs batch defaults)   |
 *   | max_model_len          | 40,960    | Qwen3-32B max_position_embeddings                     |
 *   | t_fixed                | 12 ms     | bf16 weights 65.6 GB / 2 GPUs / 3.35 TB/s = 9.8 ms,   |
 *   |                        |           | plus ~2 ms launch, all-reduce and sampling            |
 *   | t_seq                  | 50 us     | 2 * 32.8e9 FLOP per token on 2 x 989 TFLOP/s at ~65%  |
 *   | t_decode_ctx           | 20 ns     | fitted: a decode step of 60 seqs x 7,500-token        |
 *   |                        |           | contexts = 12 + 3 + 9 = 24 ms, 30 seqs 18 ms, 100     |
 *   |                        |           | seqs 32 ms, i.e. the ~25 ms ITL the benchmark reports |
 *   |                        |           | at the 30-100 running requests it reaches. (Reading   |
 *   |                        |           | 128 KiB of KV per token per GPU at full bandwidth     |
 *   |                        |           | would be 39 ns, 32 ms at 60 seqs: above that ITL.)    |
 *   | t_prefill_token        | 368 us    | fitted: a cold 10,000-token prompt on an idle engine  |
 *   | t_prefill_attn         | 11.8 ns   | takes 4.3 s as in the blog (2 chunks: 3.42 + 0.87 s); |
 *   |                        |           | split by FLOPs, 65.6 GFLOP per token and 2.1 MFLOP    |
 *   |                        |           | per attention pair (4 * 64 layers * 64 heads * 128),  |
 *   |                        |           | both at an effective 178 TFLOP/s                      |
 *   The same prompt fully cached recomputes only its last partial block:
 *   16 tokens, one step of ~20 ms (the blog measured 0.6 s through the whole
 *   serving path; the model only says "far below a second").
 *   Note: 178 TFLOP/s is ~9% of the pod's bf16 peak, so a prefill chunk of
 *   8,192 tokens stalls the batch for 3.4 s; the blog figure was probably not
 *   taken on an idle pod. qwen3-32b-h100-tp2-roofline keeps everything else
 *   and runs prefill at ~50% of peak (65 us per token, 2.1 ns per pair: the
 *   cold 10k prompt takes 0.78 s), for comparisons.
 *
 * t_cpu_load_token (the CPU tier, --cpu-kv-capacity-tokens): the Qwen3
 *   profiles copy 128 KiB of KV per token per GPU over PCIe Gen5 at the
 *   ~25 GB/s offloading copies achieve (5.2 us per token, 1/70 of the
 *   fitted prefill; kvgate's router assumes the same, its
 *   KVG_POLICY_HOST_TIER_COST); tiny 1 us, 1/20 of its prefill.
 *
 * tiny — for tests and demos: 16-token blocks, 4,096 tokens of KV (256
 *   blocks), 16 sequences, 512-token budget; a 1,000-token prompt cold is
 *   ~30 ms, a decode step of 16 short sequences ~4 ms. The numbers are
 *   arbitrary, chosen so a test runs thousands of requests in milliseconds of
 *   CPU and so a real-time `kvgate sim --profile tiny` streams ~250 tokens/s.
 *
 * instant — for measuring what sits in front of the engine
 *   (bench/gateway/cost.sh): every step takes 1 us (a
 *   step under 10 us is not waited for in real time), 1 M-token context, a large KV
 *   cache and batch, so the gateway is the bottleneck, not the engine.
 *
 * t_encode_image (EPD, --role encode): one image through the vision
 *   encoder. The Qwen3 profiles: a Qwen2.5-VL-class ViT (675 M parameters)
 *   on a 1,024-token image (4,096 patches before the 2x2 merge): 2 x
 *   0.675e9 x 4,096 = 5.5 TFLOP at the profiles' effective 178 TFLOP/s =
 *   31 ms. tiny: 5 ms (arbitrary, for tests). instant: none.
 *
 * KV shape (a PD transfer's bytes per token = layers x KV heads x head dim x
 *   2 x dtype bytes): Qwen3-32B's config.json, 64 layers, 8 KV heads, head
 *   dim 128, bf16: 256 KiB per token (split over the TP ranks, moved in
 *   parallel). tiny: a toy 4 x 2 x 128 x 2 x 2 = 4 KiB per token. instant:
 *   none (its transfers take no time).
 *
 * t_wake_l1, t_wake_l2 (sleep mode, simsrv/sleep.c): vLLM's sleep-mode
 *   blog (blog.vllm.ai/2025/10/26/sleep-mode, A100, vLLM 0.11): a level-1
 *   wake of Qwen3-Coder-30B-A3B (TP1) took 2.87 s (47.4 s cold), so the
 *   Qwen3-32B profiles wake from level 1 in 2.87 s; no 30B level-2 wake is
 *   published: the blog's small models wake from level 2 3.1-3.3x slower
 *   than from level 1 (Qwen3-0.6B 0.26 -> 0.85 s, Phi-3-vision 0.82 ->
 *   2.58 s), so 3.2 x 2.87 = 9.2 s (an extrapolation, not a measurement).
 *   tiny and instant: the blog's Qwen3-0.6B, 0.26 s and 0.85 s. */
#include "sim/sim.h"

#include <string.h>

/* The llm-d pod (table above) but its prefill costs, which the two Qwen3
 * profiles set apart. */
#define QWEN3_32B_H100_TP2_POD                                                                     \
    .block_size = 64, .kv_capacity_tokens = 307328, .max_num_seqs = 1024,                          \
    .max_num_batched_tokens = 8192, .max_model_len = 40960, .t_fixed = 12e-3, .t_seq = 50e-6,      \
    .t_decode_ctx = 20e-9, .t_cpu_load_token = 131072.0 / 25e9, .n_layers = 64, .n_kv_heads = 8,   \
    .head_dim = 128, .kv_dtype_bytes = 2, .t_encode_image = 31e-3, .t_wake_l1 = 2.87,              \
    .t_wake_l2 = 9.2

static const struct kvg_sim_profile g_profiles[] = {
    {
        .name = "tiny",
        .description = "small and fast, for tests",
        .block_size = 16,
        .kv_capacity_tokens = 4096,
        .max_num_seqs = 16,
        .max_num_batched_tokens = 512,
        .max_model_len = 2048,
        .t_fixed = 2e-3,
        .t_seq = 100e-6,
        .t_prefill_token = 20e-6,
        .t_prefill_attn = 5e-9,
        .t_decode_ctx = 200e-9,
        .t_cpu_load_token = 1e-6,
        .n_layers = 4, /* a toy shape: 4 KiB of KV per token */
        .n_kv_heads = 2,
        .head_dim = 128,
        .kv_dtype_bytes = 2,
        .t_encode_image = 5e-3,
        .t_wake_l1 = 0.26,
        .t_wake_l2 = 0.85,
    },
    {
        .name = "instant",
        .description = "no step time, long context: for measuring the gateway",
        .block_size = 16,
        .kv_capacity_tokens = 8u << 20,
        .max_num_seqs = 1024,
        .max_num_batched_tokens = 1u << 20,
        .max_model_len = 1u << 20,
        .t_fixed = 1e-6,
        .t_wake_l1 = 0.26,
        .t_wake_l2 = 0.85,
    },
    {
        .name = "qwen3-32b-h100-tp2",
        .description = "Qwen3-32B on 2 H100 (TP=2), llm-d benchmark pod, blog-fitted prefill",
        QWEN3_32B_H100_TP2_POD,
        .t_prefill_token = 368e-6,
        .t_prefill_attn = 11.8e-9,
    },
    {
        .name = "qwen3-32b-h100-tp2-roofline",
        .description = "as qwen3-32b-h100-tp2 with prefill at ~50% of bf16 peak",
        QWEN3_32B_H100_TP2_POD,
        .t_prefill_token = 65e-6,
        .t_prefill_attn = 2.1e-9,
    },
};

const struct kvg_sim_profile *kvg_sim_profile_find(const char *name)
{
    if (!name) return NULL;
    for (size_t i = 0; i < sizeof g_profiles / sizeof g_profiles[0]; i++)
        if (!strcmp(g_profiles[i].name, name)) return &g_profiles[i];
    return NULL;
}

const struct kvg_sim_profile *kvg_sim_profile_at(size_t i)
{
    return i < sizeof g_profiles / sizeof g_profiles[0] ? &g_profiles[i] : NULL;
}

uint64_t kvg_sim_kv_bytes_per_token(const struct kvg_sim_profile *p)
{
    return (uint64_t)p->n_layers * p->n_kv_heads * p->head_dim * 2u * p->kv_dtype_bytes;
}

double kvg_sim_step_time(const struct kvg_sim_profile *p, const struct kvg_sim_batch_shape *b)
{
    if (!b->num_seqs) return 0;
    return p->t_fixed + p->t_seq * b->num_seqs + p->t_prefill_token * b->prefill_tokens +
           p->t_prefill_attn * b->prefill_attn_pairs +
           p->t_decode_ctx * (double)b->decode_ctx_tokens +
           p->t_cpu_load_token * b->cpu_load_tokens;
}
