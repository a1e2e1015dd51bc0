/* Cache-aware choices: the prewarm's hottest prefixes and the scale-down
 * victim, pure and through the routing-history table. */
#include "support/test.h"

#include <stdio.h>
#include <string.h>

#include "autoscale/warm.h"

TEST(hottest_in_order_with_ties_by_index)
{
    double heat[] = {1, 5, 0, 3, 5, 2};
    size_t out[6];
    CHECK_INT(kvg_autoscale_pick_hottest(heat, 6, 3, out), 3);
    CHECK_INT(out[0], 1);
    CHECK_INT(out[1], 4);
    CHECK_INT(out[2], 3);
    /* more asked than hot: the zero heat is never picked */
    CHECK_INT(kvg_autoscale_pick_hottest(heat, 6, 10, out), 5);
    CHECK_INT(out[4], 0);
    CHECK_INT(kvg_autoscale_pick_hottest(heat, 6, 0, out), 0);
    CHECK_NEAR(kvg_autoscale_heat_at(8, 10, 30, 10), 2, 1e-12);
    CHECK_NEAR(kvg_autoscale_heat_at(8, 10, 5, 10), 8, 1e-12); /* no decay backwards */
}

TEST(victim_is_least_unique_and_least_hot)
{
    /* Three replicas, slots 0 1 2. Prefix A (heat 10) only on slot 0; B
     * (heat 10) on all three; C (heat 1) only on slot 2. Slot 1 holds only
     * what others hold too: it goes. */
    double heat[] = {10, 10, 1};
    uint64_t holders[] = {1u << 0, 7, 1u << 2};
    int slots[] = {0, 1, 2};
    CHECK_INT(kvg_autoscale_pick_victim(heat, holders, 3, slots, NULL, 3), 1);
    /* Without B, slot 1 holds nothing: still it. Make C hot instead and
     * remove slot 1 from the candidates: slot 2's C (heat 1) < slot 0's A. */
    int two[] = {0, 2};
    CHECK_INT(kvg_autoscale_pick_victim(heat, holders, 3, two, NULL, 2), 1);
    /* A tie goes to fewer in flight, then to the last candidate. */
    double h0[] = {0};
    uint64_t none[] = {0};
    uint32_t infl[] = {0, 3, 0};
    CHECK_INT(kvg_autoscale_pick_victim(h0, none, 1, slots, infl, 3), 2);
    uint32_t infl2[] = {0, 3, 1};
    CHECK_INT(kvg_autoscale_pick_victim(h0, none, 1, slots, infl2, 3), 0);
    CHECK_INT(kvg_autoscale_pick_victim(h0, none, 1, slots, NULL, 0), -1);
}

/* A text prompt of model m for the table. */
static const struct kvg_autoscale_hot_prompt *text_prompt(const char *text)
{
    static struct kvg_autoscale_hot_prompt p;
    snprintf(p.model, sizeof p.model, "m");
    p.is_ids = 0;
    p.len = strlen(text);
    memcpy(p.u.text, text, p.len);
    return &p;
}

TEST(history_table_records_decays_and_forgets)
{
    static struct kvg_autoscale_hot h;
    kvg_autoscale_hot_init(&h, 10);
    for (int i = 0; i < 5; i++) kvg_autoscale_hot_record(&h, 111, 0, 1, text_prompt("Pa"));
    kvg_autoscale_hot_record(&h, 222, 1, 1, text_prompt("Pb"));
    kvg_autoscale_hot_record(&h, 222, 1, 1, NULL); /* heat only: the body stays */
    kvg_autoscale_hot_record(&h, 333, 1, 1, NULL); /* no body: never replayed */
    static struct kvg_autoscale_hot_prompt out[4];
    CHECK_INT(kvg_autoscale_hot_top(&h, 1, NULL, 4, out), 2);
    CHECK(out[0].len == 2 && !memcmp(out[0].u.text, "Pa", 2));
    CHECK(out[1].len == 2 && !memcmp(out[1].u.text, "Pb", 2));
    /* Slot 1 holds b (2) and 333 (1), slot 0 holds a (5): slot 1 goes. */
    int slots[] = {0, 1};
    CHECK_INT(kvg_autoscale_hot_victim(&h, 1, slots, NULL, 2), 1);
    /* Later, b is hit often on slot 0 too: a stays unique on 0 and b is
     * shared, so slot 1 (shared b, cold 333) still goes. */
    for (int i = 0; i < 20; i++) kvg_autoscale_hot_record(&h, 222, 0, 2, NULL);
    CHECK_INT(kvg_autoscale_hot_victim(&h, 2, slots, NULL, 2), 1);
    /* Slot 0 left (its cache forgotten): holding nothing, it is the one to go. */
    kvg_autoscale_hot_forget(&h, 0);
    int both[] = {0, 1};
    CHECK_INT(kvg_autoscale_hot_victim(&h, 2, both, NULL, 2), 0);
    /* A full table evicts its coldest entry. */
    for (uint64_t k = 1000; k < 1000 + KVG_AUTOSCALE_HOT_MAX; k++)
        kvg_autoscale_hot_record(&h, k, 2, 100, text_prompt("Px"));
    CHECK_INT(kvg_autoscale_hot_top(&h, 100, NULL, 4, out), 4);
    CHECK(out[0].len == 2 && !memcmp(out[0].u.text, "Px", 2));
    kvg_autoscale_hot_destroy(&h);
}

/* A prompt is kept as kvgate gave it (token ids, with the model), never
 * more than the record holds: an over-long one keeps its heat only. */
TEST(history_keeps_the_prompt_not_a_body)
{
    static struct kvg_autoscale_hot h;
    kvg_autoscale_hot_init(&h, 10);
    static struct kvg_autoscale_hot_prompt p, out[2];
    snprintf(p.model, sizeof p.model, "lora-7");
    p.is_ids = 1;
    p.len = 3;
    p.u.ids[0] = 258, p.u.ids[1] = 97, p.u.ids[2] = 259;
    kvg_autoscale_hot_record(&h, 1, 0, 1, &p);
    p.len = KVG_AUTOSCALE_HOT_IDS + 1; /* over the cap: heat, no prompt */
    kvg_autoscale_hot_record(&h, 2, 0, 1, &p);
    kvg_autoscale_hot_record(&h, 2, 0, 1, &p);
    CHECK_INT(kvg_autoscale_hot_top(&h, 1, NULL, 2, out), 1);
    CHECK_STR(out[0].model, "lora-7");
    /* A replica of another model is prewarmed with its own model's prompts only. */
    CHECK_INT(kvg_autoscale_hot_top(&h, 1, "qwen", 2, out), 0);
    CHECK_INT(kvg_autoscale_hot_top(&h, 1, "lora-7", 2, out), 1);
    CHECK(out[0].is_ids && out[0].len == 3);
    CHECK(out[0].u.ids[0] == 258 && out[0].u.ids[1] == 97 && out[0].u.ids[2] == 259);
    kvg_autoscale_hot_destroy(&h);
}
