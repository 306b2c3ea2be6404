#include "collect/net.h"

#include "system/log.h"
#include "collect/procfile.h"
#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define IFNAME_LEN 64
/* Interfaces whose operstate, speed and mtu files stay open (procfile.h):
 * three descriptors each, so not every veth of a container host. */
#define KEPT_IFS_MAX 16

struct nif {
    char name[IFNAME_LEN];
    int dirfd;           /* O_PATH <sys>/class/net/<name>, or -1 */
    char *mac, *driver;  /* cached when the interface appears */
    bool kept;           /* one of the KEPT_IFS_MAX with files kept open */
    struct rt_keptfile operstate, speed, mtu;
    bool seen, have_prev;
    uint64_t rx, tx;
    double rx_rate, tx_rate;
};

struct rt_net_collector {
    int proc_fd, sys_fd;
    struct rt_collect_hooks hooks;
    struct rt_readbuf dev;
    uint64_t prev_ns;
    struct nif *ifs;
    size_t n_ifs, cap_ifs;
    uint32_t *sorted;
    size_t n_sorted;
    size_t n_kept;
    bool warned_read, warned_line, warned_name;
};

static void drop_identity(struct rt_net_collector *c, struct nif *n)
{
    rt_keptfile_close(&n->operstate);
    rt_keptfile_close(&n->speed);
    rt_keptfile_close(&n->mtu);
    c->n_kept -= n->kept;
    n->kept = false;
    if (n->dirfd >= 0)
        close(n->dirfd);
    free(n->mac);
    free(n->driver);
    n->dirfd = -1;
    n->mac = n->driver = NULL;
}

static void load_identity(struct rt_net_collector *c, struct nif *n)
{
    drop_identity(c, n);
    char path[IFNAME_LEN + 16], buf[256];
    snprintf(path, sizeof(path), "class/net/%s", n->name);
    n->dirfd = openat(c->sys_fd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (n->dirfd < 0)
        return;
    n->kept = c->n_kept < KEPT_IFS_MAX;
    c->n_kept += n->kept;
    if (rt_read_str_at(n->dirfd, "address", buf, sizeof(buf)) > 0)
        n->mac = rt_xstrdup(buf);
    ssize_t len = readlinkat(n->dirfd, "device/driver", buf, sizeof(buf) - 1);
    if (len > 0) {
        buf[len] = '\0';
        const char *base = strrchr(buf, '/');
        base = base ? base + 1 : buf;
        if (*base)
            n->driver = rt_xstrdup(base);
    }
}

static struct nif *find_if(struct rt_net_collector *c, const char *name, size_t *hint)
{
    if (*hint < c->n_ifs && strcmp(c->ifs[*hint].name, name) == 0)
        return &c->ifs[(*hint)++];
    for (size_t i = 0; i < c->n_ifs; i++)
        if (strcmp(c->ifs[i].name, name) == 0) {
            *hint = i + 1;
            return &c->ifs[i];
        }
    return NULL;
}

static int cmp_name(const void *a, const void *b, void *ifs)
{
    const struct nif *n = ifs;
    return strcmp(n[*(const uint32_t *)a].name, n[*(const uint32_t *)b].name);
}

static double rate(uint64_t now, uint64_t prev, double secs)
{
    return now >= prev && secs > 0 ? (double)(now - prev) / secs : 0;
}

/* False when /proc/net/dev could not be read (state left untouched). */
static bool read_netdev(struct rt_net_collector *c)
{
    ssize_t len = rt_readbuf_load(&c->dev, c->proc_fd, "net/dev");
    uint64_t now = c->hooks.mono_ns(c->hooks.ctx);
    if (len < 0) {
        rt_log_once(&c->warned_read, LOG_WARNING, "net: cannot read /proc/net/dev: %s; no interfaces reported",
                    strerror((int)-len));
        return false;
    }
    double secs = (double)rt_sat_sub(now, c->prev_ns) / 1e9;
    c->prev_ns = now;
    for (size_t i = 0; i < c->n_ifs; i++)
        c->ifs[i].seen = false;

    bool changed = false;
    size_t hint = 0;
    char *cur = c->dev.data, *line;
    while ((line = rt_next_line(&cur))) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue; /* the two header lines */
        *colon = '\0';
        char *name = rt_trim(line);
        if (strcmp(name, "lo") == 0)
            continue;
        /* rx: bytes packets errs drop fifo frame compressed multicast; tx: bytes ... */
        const char *p = colon + 1;
        uint64_t f[9];
        bool ok = *name != '\0';
        for (int i = 0; ok && i < 9; i++)
            ok = rt_scan_u64(&p, &f[i]);
        if (!ok) {
            rt_log_once(&c->warned_line, LOG_WARNING, "net: unparsable line in /proc/net/dev for '%.32s'", name);
            continue;
        }
        if (strlen(name) >= IFNAME_LEN || strchr(name, '/')) {
            rt_log_once(&c->warned_name, LOG_WARNING, "net: bad interface name '%.32s'", name);
            continue;
        }
        struct nif *n = find_if(c, name, &hint);
        if (!n) {
            if (c->n_ifs == c->cap_ifs) {
                c->cap_ifs = c->cap_ifs ? c->cap_ifs * 2 : 16;
                c->ifs = rt_xrealloc(c->ifs, c->cap_ifs * sizeof(*c->ifs));
            }
            n = &c->ifs[c->n_ifs++];
            memset(n, 0, sizeof(*n));
            n->dirfd = -1;
            n->operstate = n->speed = n->mtu = (struct rt_keptfile)RT_KEPTFILE_WHOLE;
            rt_strlcpy(n->name, name, sizeof(n->name));
            load_identity(c, n);
            changed = true;
        }
        n->seen = true;
        n->rx_rate = n->have_prev ? rate(f[0], n->rx, secs) : 0;
        n->tx_rate = n->have_prev ? rate(f[8], n->tx, secs) : 0;
        n->rx = f[0];
        n->tx = f[8];
        n->have_prev = true;
    }

    size_t keep = 0;
    for (size_t i = 0; i < c->n_ifs; i++) {
        if (c->ifs[i].seen) {
            c->ifs[keep++] = c->ifs[i];
        } else {
            drop_identity(c, &c->ifs[i]);
            changed = true;
        }
    }
    c->n_ifs = keep;
    if (changed) {
        c->sorted = rt_xrealloc(c->sorted, (keep ? keep : 1) * sizeof(*c->sorted));
        for (size_t i = 0; i < keep; i++)
            c->sorted[i] = (uint32_t)i;
        c->n_sorted = keep;
        qsort_r(c->sorted, keep, sizeof(*c->sorted), cmp_name, c->ifs);
    }
    return true;
}

/* An attribute of the interface's sysfs directory, trimmed: its length, or
 * -errno (-ENODATA when empty). */
static ssize_t read_attr(struct nif *n, struct rt_keptfile *k, const char *name, char *buf, size_t size)
{
    if (n->dirfd < 0)
        return -ENOENT;
    return rt_trim_read(buf, n->kept ? rt_keptfile_read(k, n->dirfd, name, buf, size)
                                     : rt_read_file_at(n->dirfd, name, buf, size));
}

/* operstate, speed and MTU change at run time: read every sample. */
static void read_attrs(struct rt_net_collector *c, struct nif *n, struct rt_netif *o, struct rt_arena *a)
{
    char buf[64];
    ssize_t r = read_attr(n, &n->operstate, "operstate", buf, sizeof(buf));
    if ((r == -ENOENT || r == -ENODEV) && n->dirfd >= 0) {
        /* The interface was replaced by a namesake between two reads: its
         * sysfs directory is gone; pick up the new one. */
        load_identity(c, n);
        r = read_attr(n, &n->operstate, "operstate", buf, sizeof(buf));
    }
    if (r > 0)
        o->operstate = rt_arena_strdup(a, buf);
    if (n->dirfd < 0)
        return;
    int64_t speed;
    /* EINVAL when the link is down or the driver has no speed; -1 = unknown. */
    if (read_attr(n, &n->speed, "speed", buf, sizeof(buf)) > 0 && rt_parse_i64(buf, &speed) && speed >= 0) {
        o->has_speed = true;
        o->speed_mbps = speed;
    }
    uint64_t mtu;
    if (read_attr(n, &n->mtu, "mtu", buf, sizeof(buf)) > 0 && rt_parse_u64(buf, &mtu) && mtu <= UINT32_MAX) {
        o->has_mtu = true;
        o->mtu = (uint32_t)mtu;
    }
}

static void fill(struct rt_net_collector *c, struct rt_sample *s)
{
    struct rt_arena *a = &s->arena;
    s->n_nets = c->n_sorted;
    s->nets = rt_arena_alloc(a, (c->n_sorted ? c->n_sorted : 1) * sizeof(*s->nets));
    for (size_t i = 0; i < c->n_sorted; i++) {
        struct nif *n = &c->ifs[c->sorted[i]];
        struct rt_netif *o = &s->nets[i];
        read_attrs(c, n, o, a);
        o->interface = rt_arena_strdup(a, n->name);
        o->mac_address = rt_arena_strdup(a, n->mac);
        o->driver = rt_arena_strdup(a, n->driver);
        o->rx_bytes_per_sec = n->rx_rate;
        o->tx_bytes_per_sec = n->tx_rate;
        o->rx_bytes_total = n->rx;
        o->tx_bytes_total = n->tx;
    }
}

struct rt_net_collector *rt_net_collector_new_hooks(const struct rt_roots *r,
                                                    const struct rt_collect_hooks *hooks)
{
    struct rt_net_collector *c = rt_xcalloc(1, sizeof(*c));
    c->proc_fd = r->proc_fd;
    c->sys_fd = r->sys_fd;
    rt_collect_hooks_resolve(&c->hooks, hooks);
    rt_readbuf_init(&c->dev, 4096);
    c->dev.file.record_max = 512; /* a name and 16 counters */
    c->prev_ns = c->hooks.mono_ns(c->hooks.ctx);
    read_netdev(c); /* baseline and identities */
    return c;
}

void rt_net_collect(struct rt_net_collector *c, struct rt_sample *s)
{
    s->nets = NULL;
    s->n_nets = 0;
    if (read_netdev(c))
        fill(c, s);
}

void rt_net_collector_free(struct rt_net_collector *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_ifs; i++)
        drop_identity(c, &c->ifs[i]);
    free(c->ifs);
    free(c->sorted);
    rt_readbuf_free(&c->dev);
    free(c);
}
