#include "collect/disk.h"

#include "system/log.h"
#include "collect/procfile.h"
#include "rt/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* /proc/diskstats counts 512-byte units whatever the device's sector size
 * (kernel Documentation/block/stat.rst). */
#define SECTOR_BYTES 512u
#define DEVNAME_LEN 64
/* How often reported disks' sizes are re-read (online resize, media removed). */
#define SIZE_CHECK_NS (30 * RT_NSEC_PER_SEC)

enum dev_kind {
    DEV_DISK,    /* whole disk we report */
    DEV_OTHER,   /* partition, or not in <sys>/block */
    DEV_SKIPPED, /* loop*, ram*, zram* */
    DEV_EMPTY,   /* whole disk of size 0 (or unreadable): rechecked when its counters move */
    DEV_PATH,    /* hidden NVMe multipath path (nvmeXcYnZ): its I/O is its head's (nvmeXnZ) */
};

struct part {
    char name[DEVNAME_LEN];
    uint64_t devnum;
};

/* Every name in /proc/diskstats, so that a new name (a device appearing) is
 * noticed and classified once. */
struct dev {
    char name[DEVNAME_LEN];
    uint64_t devnum; /* major << 32 | minor */
    enum dev_kind kind;
    bool seen;       /* in this tick's read */
    bool have_prev;
    uint64_t line_rd, line_wr; /* sectors in this read's line */
    uint64_t rd, wr; /* sectors at the last read (a multipath head: with its paths') */
    double rd_rate, wr_rate;
    bool own_iostats; /* a multipath head that counts its own I/O (queue/iostats) */
    /* identity, DEV_DISK only */
    char *model, *vendor, *serial, *dm_name;
    const char *type;
    uint64_t capacity;
    bool stacked;
    struct part *parts;
    size_t n_parts;
};

struct devmap_entry {
    uint64_t devnum;
    uint32_t dev;    /* index into devs */
};

/* A filesystem found in mountinfo; strings point into the mountinfo buffer. */
struct mnt {
    uint32_t dev;
    uint64_t key;    /* block device it lives on: dedupe key */
    const char *mount_point, *fstype;
    uint64_t total, used, avail;
};

struct rt_disk_collector {
    int proc_fd, sys_fd;
    struct rt_collect_hooks hooks;
    struct rt_readbuf stats, mountinfo;
    uint64_t prev_ns, size_check_ns;

    struct dev *devs;
    size_t n_devs, cap_devs;
    uint32_t *sorted;            /* DEV_DISK indices by name */
    size_t n_sorted;
    struct devmap_entry *map;    /* disks and partitions by devnum, sorted */
    size_t n_map;
    struct mnt *mnts;
    size_t n_mnts, cap_mnts;
    bool mounts_known;           /* mnts still match mountinfo and the disks */

    bool warned_stats, warned_line, warned_mountinfo, warned_mountline, warned_name;
};

static uint64_t mkdevnum(uint64_t major, uint64_t minor)
{
    return major << 32 | (minor & 0xffffffffu);
}

/* ---- identity ---- */

static char *read_attr(int dirfd, const char *path)
{
    char buf[256];
    return rt_read_str_at(dirfd, path, buf, sizeof(buf)) > 0 ? rt_xstrdup(buf) : NULL;
}

static void drop_identity(struct dev *d)
{
    free(d->model);
    free(d->vendor);
    free(d->serial);
    free(d->dm_name);
    free(d->parts);
    d->model = d->vendor = d->serial = d->dm_name = NULL;
    d->parts = NULL;
    d->n_parts = 0;
    d->type = NULL;
    d->capacity = 0;
    d->stacked = false;
}

static void load_identity(struct dev *d, int dfd, uint64_t size)
{
    d->model = read_attr(dfd, "device/model");
    d->vendor = read_attr(dfd, "device/vendor");
    d->serial = read_attr(dfd, "device/serial");
    if (!d->serial)
        d->serial = read_attr(dfd, "device/wwid");
    if (!d->serial)
        d->serial = read_attr(dfd, "serial"); /* virtio_blk keeps it here */
    d->dm_name = read_attr(dfd, "dm/name");
    if (rt_str_starts_with(d->name, "nvme")) {
        d->type = "nvme";
    } else {
        char rot[8];
        if (rt_read_str_at(dfd, "queue/rotational", rot, sizeof(rot)) > 0)
            d->type = strcmp(rot, "0") == 0 ? "ssd" : strcmp(rot, "1") == 0 ? "hdd" : NULL;
    }
    d->capacity = size * 512; /* <sys>/block/X/size is in 512-byte units too */
    d->stacked = rt_dir_has_entries_at(dfd, "slaves");
}

/* "cciss/c0d0" in diskstats is "cciss!c0d0" in sysfs. */
static void sysfs_block_path(char *out, size_t size, const char *name)
{
    snprintf(out, size, "block/%s", name);
    for (char *p = out + 6; *p; p++)
        if (*p == '/')
            *p = '!';
}

static void classify(struct rt_disk_collector *c, struct dev *d)
{
    drop_identity(d);
    if (rt_str_starts_with(d->name, "loop") || rt_str_starts_with(d->name, "ram") ||
        rt_str_starts_with(d->name, "zram")) {
        d->kind = DEV_SKIPPED;
        return;
    }
    char path[DEVNAME_LEN + 8];
    sysfs_block_path(path, sizeof(path), d->name);
    int dfd = openat(c->sys_fd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        d->kind = DEV_OTHER;
        return;
    }
    uint64_t size = 0;
    char flag[8];
    if (rt_read_str_at(dfd, "hidden", flag, sizeof(flag)) > 0 && strcmp(flag, "1") == 0) {
        d->kind = DEV_PATH; /* no /dev node; the head device is the disk */
    } else if (rt_read_u64_at(dfd, "size", &size) < 0 || size == 0) {
        d->kind = DEV_EMPTY;
    } else {
        d->kind = DEV_DISK;
        load_identity(d, dfd, size);
        /* A multipath head counts its own I/O only when queue/iostats is on
         * (off by default, Linux >= 6.3; never before). */
        d->own_iostats = rt_read_str_at(dfd, "queue/iostats", flag, sizeof(flag)) <= 0 || strcmp(flag, "0") != 0;
    }
    close(dfd);
}

/* A disk whose size changed (grown online, media removed) is classified
 * again; true when one did. */
static bool recheck_sizes(struct rt_disk_collector *c)
{
    bool changed = false;
    for (size_t i = 0; i < c->n_devs; i++) {
        struct dev *d = &c->devs[i];
        if (d->kind != DEV_DISK)
            continue;
        char path[DEVNAME_LEN + 16];
        sysfs_block_path(path, sizeof(path), d->name);
        strcat(path, "/size");
        uint64_t size = 0;
        if (rt_read_u64_at(c->sys_fd, path, &size) >= 0 && size * 512 == d->capacity)
            continue;
        classify(c, d);
        changed = true;
    }
    return changed;
}

/* Partitions are the subdirectories <sys>/block/X/Y whose name extends X's
 * and that have a dev file. */
static void load_partitions(struct rt_disk_collector *c, struct dev *d)
{
    free(d->parts);
    d->parts = NULL;
    d->n_parts = 0;
    char path[DEVNAME_LEN + 8];
    sysfs_block_path(path, sizeof(path), d->name);
    int fd = openat(c->sys_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return;
    DIR *dir = fdopendir(fd);
    if (!dir) {
        close(fd);
        return;
    }
    const char *sysname = path + 6; /* the name as sysfs spells it */
    size_t cap = 0, len = strlen(sysname);
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (strncmp(e->d_name, sysname, len) != 0 || !e->d_name[len] || strlen(e->d_name) >= DEVNAME_LEN)
            continue;
        char devpath[sizeof(e->d_name) + 8], val[32];
        snprintf(devpath, sizeof(devpath), "%s/dev", e->d_name);
        unsigned maj, min;
        if (rt_read_str_at(dirfd(dir), devpath, val, sizeof(val)) < 0 ||
            sscanf(val, "%u:%u", &maj, &min) != 2)
            continue;
        if (d->n_parts == cap) {
            cap = cap ? cap * 2 : 4;
            d->parts = rt_xrealloc(d->parts, cap * sizeof(*d->parts));
        }
        struct part *p = &d->parts[d->n_parts++];
        rt_strlcpy(p->name, e->d_name, sizeof(p->name));
        for (char *ch = p->name; *ch; ch++)
            if (*ch == '!')
                *ch = '/'; /* back to the /dev and diskstats spelling */
        p->devnum = mkdevnum(maj, min);
    }
    closedir(dir);
}

/* ---- the device table ---- */

static struct dev *find_dev(struct rt_disk_collector *c, const char *name, size_t *hint)
{
    /* diskstats keeps its order, so the next entry is almost always it. */
    if (*hint < c->n_devs && strcmp(c->devs[*hint].name, name) == 0)
        return &c->devs[(*hint)++];
    for (size_t i = 0; i < c->n_devs; i++)
        if (strcmp(c->devs[i].name, name) == 0) {
            *hint = i + 1;
            return &c->devs[i];
        }
    return NULL;
}

static struct dev *add_dev(struct rt_disk_collector *c, const char *name, uint64_t devnum)
{
    if (c->n_devs == c->cap_devs) {
        c->cap_devs = c->cap_devs ? c->cap_devs * 2 : 32;
        c->devs = rt_xrealloc(c->devs, c->cap_devs * sizeof(*c->devs));
    }
    struct dev *d = &c->devs[c->n_devs++];
    memset(d, 0, sizeof(*d));
    rt_strlcpy(d->name, name, sizeof(d->name));
    d->devnum = devnum;
    classify(c, d);
    return d;
}

static int cmp_map(const void *a, const void *b)
{
    uint64_t x = ((const struct devmap_entry *)a)->devnum, y = ((const struct devmap_entry *)b)->devnum;
    return x < y ? -1 : x > y;
}

static int cmp_name(const void *a, const void *b, void *devs)
{
    const struct dev *d = devs;
    return strcmp(d[*(const uint32_t *)a].name, d[*(const uint32_t *)b].name);
}

/* After a device appeared, vanished or changed kind: partitions, the devnum
 * map and the name order are rebuilt (rare; never on a steady tick). */
static void rebuild(struct rt_disk_collector *c)
{
    c->mounts_known = false;
    size_t n_disks = 0, n_map = 0;
    for (size_t i = 0; i < c->n_devs; i++)
        if (c->devs[i].kind == DEV_DISK) {
            load_partitions(c, &c->devs[i]);
            n_disks++;
            n_map += 1 + c->devs[i].n_parts;
        }
    c->sorted = rt_xrealloc(c->sorted, (n_disks ? n_disks : 1) * sizeof(*c->sorted));
    c->map = rt_xrealloc(c->map, (n_map ? n_map : 1) * sizeof(*c->map));
    c->n_sorted = c->n_map = 0;
    for (size_t i = 0; i < c->n_devs; i++) {
        struct dev *d = &c->devs[i];
        if (d->kind != DEV_DISK)
            continue;
        c->sorted[c->n_sorted++] = (uint32_t)i;
        c->map[c->n_map++] = (struct devmap_entry){d->devnum, (uint32_t)i};
        for (size_t j = 0; j < d->n_parts; j++)
            c->map[c->n_map++] = (struct devmap_entry){d->parts[j].devnum, (uint32_t)i};
    }
    qsort(c->map, c->n_map, sizeof(*c->map), cmp_map);
    qsort_r(c->sorted, c->n_sorted, sizeof(*c->sorted), cmp_name, c->devs);
}

/* ---- /proc/diskstats ---- */

static double rate(uint64_t now, uint64_t prev, double secs)
{
    return now >= prev && secs > 0 ? (double)(now - prev) * SECTOR_BYTES / secs : 0;
}

/* "nvme0c1n2" -> "nvme0n2". */
static bool path_head_name(const char *path, char *out, size_t size)
{
    unsigned sub, ctrl, ns;
    int end = 0;
    if (sscanf(path, "nvme%uc%un%u%n", &sub, &ctrl, &ns, &end) != 3 || path[end])
        return false;
    snprintf(out, size, "nvme%un%u", sub, ns);
    return true;
}

/* Native NVMe multipath: the I/O of a namespace is counted on its hidden
 * path devices, and on the head only when its iostats is on. A head that does
 * not count gets its paths' sums. When the set of paths changed, the heads'
 * sums jump: they start over (rate 0 for a tick). */
static void add_path_io(struct rt_disk_collector *c, bool paths_changed)
{
    for (size_t i = 0; i < c->n_devs; i++) {
        struct dev *p = &c->devs[i];
        char head[DEVNAME_LEN];
        if (p->kind != DEV_PATH || !path_head_name(p->name, head, sizeof(head)))
            continue;
        size_t hint = 0;
        struct dev *h = find_dev(c, head, &hint);
        if (!h || h->kind != DEV_DISK || h->own_iostats)
            continue;
        h->line_rd += p->line_rd;
        h->line_wr += p->line_wr;
        if (paths_changed)
            h->have_prev = false;
    }
}

/* Returns false when the file could not be read (state is left untouched,
 * so the next good read measures over both intervals). */
static bool read_diskstats(struct rt_disk_collector *c)
{
    ssize_t n = rt_readbuf_load(&c->stats, c->proc_fd, "diskstats");
    uint64_t now = c->hooks.mono_ns(c->hooks.ctx);
    if (n < 0) {
        rt_log_once(&c->warned_stats, LOG_WARNING, "disk: cannot read /proc/diskstats: %s; no disks reported",
                    strerror((int)-n));
        return false;
    }
    double secs = (double)rt_sat_sub(now, c->prev_ns) / 1e9;
    c->prev_ns = now;
    for (size_t i = 0; i < c->n_devs; i++)
        c->devs[i].seen = false;

    bool changed = false, paths_changed = false;
    size_t hint = 0;
    char *cur = c->stats.data, *line;
    while ((line = rt_next_line(&cur))) {
        const char *p = line;
        uint64_t maj, min, f[7];
        size_t len;
        if (!rt_scan_word(&p, &len))
            continue; /* blank line */
        p = line;
        const char *name = NULL;
        bool ok = rt_scan_u64(&p, &maj) && rt_scan_u64(&p, &min) && (name = rt_scan_word(&p, &len));
        for (int i = 0; ok && i < 7; i++)
            ok = rt_scan_u64(&p, &f[i]);
        if (!ok) {
            rt_log_once(&c->warned_line, LOG_WARNING, "disk: unparsable line in /proc/diskstats: %.60s", line);
            continue;
        }
        if (len >= DEVNAME_LEN) {
            rt_log_once(&c->warned_name, LOG_WARNING, "disk: device name too long: %.60s", name);
            continue;
        }
        char devname[DEVNAME_LEN];
        memcpy(devname, name, len);
        devname[len] = '\0';
        uint64_t devnum = mkdevnum(maj, min), rd = f[2], wr = f[6];

        struct dev *d = find_dev(c, devname, &hint);
        if (!d) {
            d = add_dev(c, devname, devnum);
            changed = true;
            paths_changed |= d->kind == DEV_PATH;
        } else if (d->devnum != devnum) {
            /* Same name, another device: start over. */
            d->devnum = devnum;
            d->have_prev = false;
            classify(c, d);
            changed = paths_changed = true;
        } else if (d->kind == DEV_EMPTY && d->have_prev && (rd != d->rd || wr != d->wr)) {
            /* I/O on an empty device: media inserted, or a dm table loaded. */
            classify(c, d);
            if (d->kind == DEV_DISK) {
                d->have_prev = false;
                changed = true;
            }
        }
        d->seen = true;
        d->line_rd = rd;
        d->line_wr = wr;
    }

    size_t keep = 0;
    for (size_t i = 0; i < c->n_devs; i++) {
        if (c->devs[i].seen) {
            c->devs[keep++] = c->devs[i];
        } else {
            paths_changed |= c->devs[i].kind == DEV_PATH;
            drop_identity(&c->devs[i]);
            changed = true;
        }
    }
    c->n_devs = keep;
    if (now - c->size_check_ns >= SIZE_CHECK_NS) {
        c->size_check_ns = now;
        changed |= recheck_sizes(c);
    }
    add_path_io(c, paths_changed);
    for (size_t i = 0; i < c->n_devs; i++) {
        struct dev *d = &c->devs[i];
        d->rd_rate = d->have_prev ? rate(d->line_rd, d->rd, secs) : 0;
        d->wr_rate = d->have_prev ? rate(d->line_wr, d->wr, secs) : 0;
        d->rd = d->line_rd;
        d->wr = d->line_wr;
        d->have_prev = true;
    }
    if (changed)
        rebuild(c);
    return true;
}

/* ---- mounts ---- */

/* Decimal digits in [p, end); false when empty, not all digits or too big. */
static bool parse_num(const char *p, const char *end, uint64_t *out)
{
    uint64_t v = 0;
    if (p == end || end - p > 9)
        return false;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *out = v;
    return true;
}

static bool is_under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static bool virtual_mount_point(const char *mp)
{
    return is_under(mp, "/proc") || is_under(mp, "/sys") || is_under(mp, "/dev") || is_under(mp, "/run");
}

static bool lookup_devnum(const struct rt_disk_collector *c, uint64_t devnum, uint32_t *dev)
{
    struct devmap_entry key = {devnum, 0};
    const struct devmap_entry *e = bsearch(&key, c->map, c->n_map, sizeof(*c->map), cmp_map);
    if (e)
        *dev = e->dev;
    return e != NULL;
}

/* Filesystems that report an anonymous device number (btrfs subvolumes) are
 * matched by their source, /dev/<disk or partition> or /dev/mapper/<dm name>. */
static bool lookup_source(const struct rt_disk_collector *c, const char *src, uint32_t *dev, uint64_t *key)
{
    if (!rt_str_starts_with(src, "/dev/"))
        return false;
    const char *name = src + 5;
    bool mapper = rt_str_starts_with(name, "mapper/");
    for (size_t i = 0; i < c->n_sorted; i++) {
        const struct dev *d = &c->devs[c->sorted[i]];
        if (mapper ? d->dm_name && strcmp(d->dm_name, name + 7) == 0 : strcmp(d->name, name) == 0) {
            *dev = c->sorted[i];
            *key = d->devnum;
            return true;
        }
        for (size_t j = 0; !mapper && j < d->n_parts; j++)
            if (strcmp(d->parts[j].name, name) == 0) {
                *dev = c->sorted[i];
                *key = d->parts[j].devnum;
                return true;
            }
    }
    return false;
}

static bool seen_key(const struct rt_disk_collector *c, uint64_t key)
{
    for (size_t i = 0; i < c->n_mnts; i++)
        if (c->mnts[i].key == key)
            return true;
    return false;
}

/* Its filesystem's size, use and room now; false when it cannot be told
 * (unmounted meanwhile, not ours to see, or of no size). */
static bool mount_space(struct rt_disk_collector *c, struct mnt *m)
{
    struct statvfs st;
    if (c->hooks.statvfs(m->mount_point, &st, c->hooks.ctx) < 0)
        return false;
    uint64_t bs = st.f_frsize ? st.f_frsize : st.f_bsize;
    m->total = (uint64_t)st.f_blocks * bs;
    m->used = rt_sat_sub(m->total, (uint64_t)st.f_bfree * bs);
    m->avail = (uint64_t)st.f_bavail * bs;
    return m->total > 0;
}

static void add_mount(struct rt_disk_collector *c, uint32_t dev, uint64_t key, const char *mp, const char *fstype)
{
    struct mnt m = {.dev = dev, .key = key, .mount_point = mp, .fstype = fstype};
    if (!mount_space(c, &m))
        return;
    if (c->n_mnts == c->cap_mnts) {
        c->cap_mnts = c->cap_mnts ? c->cap_mnts * 2 : 16;
        c->mnts = rt_xrealloc(c->mnts, c->cap_mnts * sizeof(*c->mnts));
    }
    c->mnts[c->n_mnts++] = m;
}

/* The same mounts as the last parse: only their space is read again. */
static bool refresh_mounts(struct rt_disk_collector *c)
{
    if (!c->mounts_known || rt_keptfile_changed(&c->mountinfo.file))
        return false;
    for (size_t i = 0; i < c->n_mnts; i++)
        if (!mount_space(c, &c->mnts[i]))
            return false; /* unmounted before its event was seen */
    return true;
}

/* One entry per filesystem: the first mount point of each block device
 * (bind mounts and further subvolumes of it are skipped). */
static void read_mounts(struct rt_disk_collector *c)
{
    if (refresh_mounts(c))
        return;
    c->n_mnts = 0;
    c->mounts_known = false;
    if (c->n_sorted == 0)
        return;
    ssize_t n = rt_readbuf_load(&c->mountinfo, c->proc_fd, "self/mountinfo");
    if (n < 0) {
        rt_log_once(&c->warned_mountinfo, LOG_WARNING, "disk: cannot read /proc/self/mountinfo: %s",
                    strerror((int)-n));
        return;
    }
    char *cur = c->mountinfo.data, *line;
    while ((line = rt_next_line(&cur))) {
        /* id parent major:minor root mount_point options [optional...] - fstype source super */
        const char *p = line, *w[6];
        size_t len[6], l;
        uint64_t id;
        bool ok = rt_scan_u64(&p, &id) && rt_scan_u64(&p, &id);
        for (int i = 0; ok && i < 4; i++)
            ok = (w[i] = rt_scan_word(&p, &len[i])) != NULL;
        const char *sep = NULL;
        while (ok && (sep = rt_scan_word(&p, &l)) && !(l == 1 && *sep == '-'))
            ;
        ok = ok && sep && (w[4] = rt_scan_word(&p, &len[4])) && (w[5] = rt_scan_word(&p, &len[5]));
        uint64_t maj, min;
        const char *colon = ok ? memchr(w[0], ':', len[0]) : NULL;
        if (!ok || !colon || !parse_num(w[0], colon, &maj) || !parse_num(colon + 1, w[0] + len[0], &min)) {
            rt_log_once(&c->warned_mountline, LOG_WARNING, "disk: unparsable line in mountinfo: %.60s", line);
            continue;
        }
        /* Scanning is done: the words can be cut in place. */
        char *mp = (char *)w[2], *fstype = (char *)w[4], *src = (char *)w[5];
        mp[len[2]] = fstype[len[4]] = src[len[5]] = '\0';
        uint32_t dev;
        uint64_t key = mkdevnum(maj, min);
        if (!lookup_devnum(c, key, &dev)) {
            rt_unescape_octal(src);
            if (!lookup_source(c, src, &dev, &key))
                continue; /* most lines: not on a disk of ours */
        }
        rt_unescape_octal(mp);
        if (virtual_mount_point(mp))
            continue;
        if (!seen_key(c, key))
            add_mount(c, dev, key, mp, fstype);
    }
    /* The parse holds while the table and the disks stay (a fixture's
     * file, opened each time, has no event: parsed every time). */
    c->mounts_known = c->mountinfo.file.fd >= 0;
}

/* ---- collect ---- */

static void fill(struct rt_disk_collector *c, struct rt_sample *s)
{
    struct rt_arena *a = &s->arena;
    s->n_disks = c->n_sorted;
    s->disks = rt_arena_alloc(a, (c->n_sorted ? c->n_sorted : 1) * sizeof(*s->disks));
    for (size_t i = 0; i < c->n_sorted; i++) {
        uint32_t idx = c->sorted[i];
        const struct dev *d = &c->devs[idx];
        struct rt_disk *o = &s->disks[i];
        o->device = rt_arena_strdup(a, d->name);
        o->model = rt_arena_strdup(a, d->model);
        o->vendor = rt_arena_strdup(a, d->vendor);
        o->serial = rt_arena_strdup(a, d->serial);
        o->device_type = d->type ? rt_arena_strdup(a, d->type) : NULL;
        o->has_capacity = d->capacity > 0;
        o->capacity_bytes = d->capacity;
        o->stacked = d->stacked;
        o->read_bytes_per_sec = d->rd_rate;
        o->write_bytes_per_sec = d->wr_rate;
        o->read_bytes_total = d->rd * SECTOR_BYTES;
        o->write_bytes_total = d->wr * SECTOR_BYTES;
        for (size_t j = 0; j < c->n_mnts; j++)
            o->n_mounts += c->mnts[j].dev == idx;
        if (!o->n_mounts)
            continue;
        o->mounts = rt_arena_alloc(a, o->n_mounts * sizeof(*o->mounts));
        size_t k = 0;
        for (size_t j = 0; j < c->n_mnts; j++) {
            const struct mnt *m = &c->mnts[j];
            if (m->dev != idx)
                continue;
            o->mounts[k++] = (struct rt_mount){
                .mount_point = rt_arena_strdup(a, m->mount_point),
                .filesystem = rt_arena_strdup(a, m->fstype),
                .total_bytes = m->total, .used_bytes = m->used, .available_bytes = m->avail,
                .used_pct = (double)m->used / (double)m->total * 100.0,
            };
        }
    }
}

struct rt_disk_collector *rt_disk_collector_new_hooks(const struct rt_roots *r,
                                                      const struct rt_collect_hooks *hooks)
{
    struct rt_disk_collector *c = rt_xcalloc(1, sizeof(*c));
    c->proc_fd = r->proc_fd;
    c->sys_fd = r->sys_fd;
    rt_collect_hooks_resolve(&c->hooks, hooks);
    rt_readbuf_init(&c->stats, 4096);
    c->stats.file.record_max = 512; /* a name and 20 counters */
    rt_readbuf_init(&c->mountinfo, 8192);
    c->prev_ns = c->size_check_ns = c->hooks.mono_ns(c->hooks.ctx);
    read_diskstats(c); /* baseline and identities */
    return c;
}

void rt_disk_collect(struct rt_disk_collector *c, struct rt_sample *s)
{
    s->disks = NULL;
    s->n_disks = 0;
    if (!read_diskstats(c))
        return;
    read_mounts(c);
    fill(c, s);
}

void rt_disk_collector_free(struct rt_disk_collector *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_devs; i++)
        drop_identity(&c->devs[i]);
    free(c->devs);
    free(c->sorted);
    free(c->map);
    free(c->mnts);
    rt_readbuf_free(&c->stats);
    rt_readbuf_free(&c->mountinfo);
    free(c);
}
