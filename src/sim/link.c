/* The KV link model of a PD transfer: which link two engines share, by
 * their locality labels, and its bandwidth. kvgate sim's transfers
 * (simsrv/pd.c) and the offline PD benchmark (bench/pd/pd.c) both take it. */
#include <string.h>

#include "base/util.h"
#include "sim/sim.h"

/* Link bandwidths, bytes/s, by how close the two engines are. Typical
 * figures, not measurements: NVLink 4 within a node (~450 GB/s per
 * direction per H100), a 400 Gb/s RDMA NIC per GPU within a rack,
 * 100 Gb/s between racks of a zone, 10 Gb/s across zones. */
static const struct {
    const char *name;
    double bw;
} g_links[] = {{"node", 450e9}, {"rack", 50e9}, {"zone", 12.5e9}, {"across", 1.25e9}};

/* The value of key in "k=v,k2=v2" into out ("" when absent). */
static void label(const char *labels, const char *key, char *out, size_t cap)
{
    out[0] = 0;
    size_t kl = strlen(key);
    for (const char *p = labels; p && *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n > kl && !strncmp(p, key, kl) && p[kl] == '=') {
            size_t vl = KVG_MIN(n - kl - 1, cap - 1);
            memcpy(out, p + kl + 1, vl);
            out[vl] = 0;
            return;
        }
        p = e ? e + 1 : NULL;
    }
}

/* The first of node, rack, zone both name alike; two engines that say
 * nothing count as one zone. */
int kvg_sim_link_of(const char *a, const char *b)
{
    static const char *keys[] = {"node", "rack", "zone"};
    int any = 0;
    for (int i = 0; i < 3; i++) {
        char va[64], vb[64];
        label(a, keys[i], va, sizeof va);
        label(b, keys[i], vb, sizeof vb);
        if (va[0] && vb[0] && !strcmp(va, vb)) return i;
        any |= va[0] || vb[0];
    }
    return any ? 3 : 2;
}

double kvg_sim_link_bw(int link)
{
    return g_links[link >= 0 && link < 4 ? link : 3].bw;
}

const char *kvg_sim_link_name(int link)
{
    return g_links[link >= 0 && link < 4 ? link : 3].name;
}
