/* Disk collector against tests/fixtures/host: identity, 512-byte sectors on
 * a 4K drive, a dm device stacked over a partition, mounts (bind mounts,
 * btrfs subvolumes, escapes, virtual trees), appearing and vanishing devices,
 * counters going backwards and garbage input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "collect/disk.h"
#include "fixture.h"

#define EPS 1e-9

/* statvfs results by mount point (the fixture's mountinfo). */
static const struct fx_fs FS[] = {
    {"/", 4096, 4096, 25000000, 10000000, 9000000, 0},
    {"/boot", 1024, 1024, 500000, 400000, 375000, 0},
    {"/data", 0, 4096, 1000000, 250000, 200000, 0}, /* no f_frsize: f_bsize */
    {"/mnt/my disk", 4096, 4096, 100, 100, 100, 0},
    {"/home", 4096, 4096, 2000000, 1000000, 1000000, 0},
    {"/var/lib/containers", 4096, 4096, 2000000, 1000000, 1000000, 0},
    {"/srv/bind", 4096, 4096, 25000000, 10000000, 9000000, 0},
    {"/run/media/usb", 0, 4096, 1000000, 250000, 200000, 0},
    {"/snap/core", 4096, 4096, 100, 0, 0, 0},
    {"/mnt/new", 4096, 4096, 10, 5, 5, 0},
    {NULL, 0, 0, 0, 0, 0, 0},
};

/* The fixture's diskstats two seconds later: sda read +4000 sectors, dm-0
 * read and write +2000, nvme0n1 read +8000 and its write counter went
 * backwards (reset), the rest unchanged. */
static const char STATS2[] =
    "   7       0 loop0 9 0 900 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
    "   8       0 sda 300 0 6000 10 50 0 4000 20 0 30 30 0 0 0 0 0 0\n"
    "   8       1 sda1 10 0 200 1 5 0 400 2 0 3 3 0 0 0 0 0 0\n"
    "   8       2 sda2 190 0 5800 9 45 0 3600 18 0 27 27 0 0 0 0 0 0\n"
    "   8      16 sdb 10 0 1000 1 10 0 3000 2 0 3 3 0 0 0 0 0 0\n"
    "   8      17 sdb1 10 0 1000 1 10 0 3000 2 0 3 3 0 0 0 0 0 0\n"
    "  11       0 sr0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
    " 252       0 zram0 80 0 640 0 80 0 640 0 0 0 0 0 0 0 0 0 0\n"
    " 253       0 dm-0 190 0 3800 9 95 0 5600 18 0 27 27 0 0 0 0 0 0\n"
    " 259       0 nvme0n1 600 0 88000 50 1 0 100 40 0 90 90 0 0 0 0 0 0\n"
    " 259       1 nvme0n1p1 400 0 68000 30 1 0 100 30 0 60 60 0 0 0 0 0 0\n"
    " 259       2 nvme0n1p2 200 0 20000 20 0 0 0 10 0 30 30 0 0 0 0 0 0\n";

struct env {
    char *dir;
    struct rt_roots roots;
    struct rt_sample s;
    struct rt_disk_collector *c;
};

static struct env *env_new(void)
{
    struct env *e = rt_xcalloc(1, sizeof(*e));
    e->dir = fx_copy("host");
    fx_roots(&e->roots, e->dir);
    rt_sample_init(&e->s);
    fx_now_ns = 1000000000ULL;
    fx_fs_table = FS;
    e->c = rt_disk_collector_new_hooks(&e->roots, &fx_hooks);
    return e;
}

static void env_free(struct env *e)
{
    rt_disk_collector_free(e->c);
    rt_sample_free(&e->s);
    rt_roots_close(&e->roots);
    fx_rmtree(e->dir);
    free(e);
}

static void collect(struct env *e, uint64_t advance_ns)
{
    fx_now_ns += advance_ns;
    rt_sample_reset(&e->s);
    fx_statvfs_calls = 0;
    rt_disk_collect(e->c, &e->s);
}

static const struct rt_disk *disk(const struct rt_sample *s, const char *name)
{
    for (size_t i = 0; i < s->n_disks; i++)
        if (strcmp(s->disks[i].device, name) == 0)
            return &s->disks[i];
    fail_msg("no disk %s", name);
    return NULL;
}

static void assert_mount(const struct rt_mount *m, const char *mp, const char *fs, uint64_t total,
                         uint64_t used, uint64_t avail, double pct)
{
    assert_string_equal(m->mount_point, mp);
    assert_string_equal(m->filesystem, fs);
    assert_int_equal(m->total_bytes, total);
    assert_int_equal(m->used_bytes, used);
    assert_int_equal(m->available_bytes, avail);
    assert_float_equal(m->used_pct, pct, EPS);
}

static void test_fixture(void **state)
{
    (void)state;
    struct env *e = env_new();
    fx_write(e->dir, "proc/diskstats", STATS2);
    collect(e, 2000000000ULL);
    const struct rt_sample *s = &e->s;

    /* Sorted by name; loop0 and zram0 skipped by name, sr0 for its size 0,
     * partitions are not disks. */
    assert_int_equal(s->n_disks, 4);
    assert_string_equal(s->disks[0].device, "dm-0");
    assert_string_equal(s->disks[1].device, "nvme0n1");
    assert_string_equal(s->disks[2].device, "sda");
    assert_string_equal(s->disks[3].device, "sdb");

    const struct rt_disk *d = disk(s, "dm-0");
    assert_true(d->stacked);
    assert_null(d->model);
    assert_null(d->vendor);
    assert_null(d->serial);
    assert_string_equal(d->device_type, "ssd");
    assert_true(d->has_capacity);
    assert_int_equal(d->capacity_bytes, 209715200ULL * 512);
    assert_float_equal(d->read_bytes_per_sec, 2000 * 512 / 2.0, EPS);
    assert_float_equal(d->write_bytes_per_sec, 2000 * 512 / 2.0, EPS);
    assert_int_equal(d->read_bytes_total, 3800 * 512);
    assert_int_equal(d->write_bytes_total, 5600 * 512);
    /* The root filesystem lives on the dm device, once despite /srv/bind. */
    assert_int_equal(d->n_mounts, 1);
    assert_mount(&d->mounts[0], "/", "ext4", 102400000000ULL, 61440000000ULL, 36864000000ULL, 60.0);

    /* 4K-sector drive: diskstats still counts 512-byte sectors. */
    d = disk(s, "nvme0n1");
    assert_false(d->stacked);
    assert_string_equal(d->model, "Samsung SSD 990 PRO 4TB");
    assert_null(d->vendor);
    assert_string_equal(d->serial, "S7KGNU0X123456"); /* device/serial before wwid */
    assert_string_equal(d->device_type, "nvme");
    assert_int_equal(d->capacity_bytes, 7814037168ULL * 512);
    assert_float_equal(d->read_bytes_per_sec, 8000 * 512 / 2.0, EPS);
    assert_float_equal(d->write_bytes_per_sec, 0, 0); /* went backwards */
    assert_int_equal(d->read_bytes_total, 88000 * 512);
    assert_int_equal(d->write_bytes_total, 100 * 512);
    assert_int_equal(d->n_mounts, 2); /* /run/media/usb is skipped */
    assert_mount(&d->mounts[0], "/data", "ext4", 4096000000ULL, 3072000000ULL, 819200000ULL, 75.0);
    assert_mount(&d->mounts[1], "/mnt/my disk", "xfs", 409600, 0, 409600, 0.0);

    d = disk(s, "sda");
    assert_string_equal(d->model, "ST1000DM010-2EP102");
    assert_string_equal(d->vendor, "ATA");
    assert_string_equal(d->serial, "t10.ATA     ST1000DM010-2EP102                      Z9A1B2C3");
    assert_string_equal(d->device_type, "hdd");
    assert_int_equal(d->capacity_bytes, 1000204886016ULL);
    assert_float_equal(d->read_bytes_per_sec, 4000 * 512 / 2.0, EPS);
    assert_float_equal(d->write_bytes_per_sec, 0, 0);
    assert_int_equal(d->n_mounts, 1);
    assert_mount(&d->mounts[0], "/boot", "ext2", 512000000, 102400000, 384000000, 20.0);

    /* btrfs reports anonymous device numbers: matched by source, and the
     * second subvolume of the same filesystem is not counted again. */
    d = disk(s, "sdb");
    assert_null(d->model);
    assert_string_equal(d->device_type, "ssd");
    assert_int_equal(d->n_mounts, 1);
    assert_mount(&d->mounts[0], "/home", "btrfs", 8192000000ULL, 4096000000ULL, 4096000000ULL, 50.0);
    assert_float_equal(d->read_bytes_per_sec, 0, 0);

    /* statvfs only for the filesystems reported. */
    assert_int_equal(fx_statvfs_calls, 5);

    /* CSV byte columns leave the stacked dm-0 out: 2 s × (sda + nvme0n1). */
    e->s.has_interval = true;
    e->s.actual_interval_ms = 2000;
    assert_int_equal(rt_sample_disk_read_bytes(&e->s), (4000 + 8000) * 512);
    assert_int_equal(rt_sample_disk_write_bytes(&e->s), 0);
    env_free(e);
}

static void test_appear_and_vanish(void **state)
{
    (void)state;
    struct env *e = env_new();
    collect(e, 1000000000ULL);
    assert_int_equal(e->s.n_disks, 4);
    assert_float_equal(disk(&e->s, "sda")->read_bytes_per_sec, 0, 0);

    /* sdb is unplugged and sdc (with a mounted partition) plugged in. */
    fx_remove(e->dir, "sys/block/sdb");
    fx_write(e->dir, "sys/block/sdc/dev", "8:32\n");
    fx_write(e->dir, "sys/block/sdc/size", "1000\n");
    fx_write(e->dir, "sys/block/sdc/queue/rotational", "1\n");
    fx_write(e->dir, "sys/block/sdc/device/model", "NEWDISK\n");
    fx_write(e->dir, "sys/block/sdc/device/serial", "SN1\n");
    fx_write(e->dir, "sys/block/sdc/sdc1/dev", "8:33\n");
    const char *base = "   8       0 sda 100 0 2000 10 50 0 4000 20 0 30 30 0 0 0 0 0 0\n"
                       " 253       0 dm-0 90 0 1800 9 45 0 3600 18 0 27 27 0 0 0 0 0 0\n"
                       " 259       0 nvme0n1 500 0 80000 50 400 0 160000 40 0 90 90 0 0 0 0 0 0\n";
    char *stats = rt_xasprintf("%s   8      32 sdc 1 0 5000 0 1 0 7000 0 0 0 0 0 0 0 0 0 0\n"
                               "   8      33 sdc1 1 0 5000 0 1 0 7000 0 0 0 0 0 0 0 0 0 0\n", base);
    fx_write(e->dir, "proc/diskstats", stats);
    free(stats);
    fx_write(e->dir, "proc/self/mountinfo",
             "21 1 253:0 / / rw,relatime shared:1 - ext4 /dev/mapper/vg0-root rw\n"
             "40 21 8:33 / /mnt/new rw,relatime - ext4 /dev/sdc1 rw\n");
    collect(e, 1000000000ULL);
    assert_int_equal(e->s.n_disks, 4);
    assert_string_equal(e->s.disks[3].device, "sdc");
    const struct rt_disk *d = disk(&e->s, "sdc");
    assert_string_equal(d->model, "NEWDISK");
    assert_string_equal(d->serial, "SN1");
    assert_string_equal(d->device_type, "hdd");
    assert_int_equal(d->capacity_bytes, 512000);
    assert_float_equal(d->read_bytes_per_sec, 0, 0); /* first sample of a new device */
    assert_int_equal(d->read_bytes_total, 5000 * 512);
    assert_int_equal(d->n_mounts, 1);
    assert_mount(&d->mounts[0], "/mnt/new", "ext4", 40960, 20480, 20480, 50.0);

    /* sdb comes back with higher counters: a new device again, rate 0. And
     * sdc's partition is deleted. */
    fx_remove(e->dir, "sys/block/sdc/sdc1");
    fx_write(e->dir, "sys/block/sdb/dev", "8:16\n");
    fx_write(e->dir, "sys/block/sdb/size", "2000\n");
    stats = rt_xasprintf("%s   8      16 sdb 10 0 99000 0 1 0 99000 0 0 0 0 0 0 0 0 0 0\n"
                         "   8      32 sdc 2 0 6000 0 1 0 7000 0 0 0 0 0 0 0 0 0 0\n", base);
    fx_write(e->dir, "proc/diskstats", stats);
    free(stats);
    collect(e, 1000000000ULL);
    assert_int_equal(e->s.n_disks, 5);
    assert_float_equal(disk(&e->s, "sdb")->read_bytes_per_sec, 0, 0);
    assert_int_equal(disk(&e->s, "sdb")->capacity_bytes, 2000 * 512);
    assert_float_equal(disk(&e->s, "sdc")->read_bytes_per_sec, 1000 * 512, EPS);
    /* The partition map was rebuilt: 8:33 no longer belongs to sdc. */
    assert_int_equal(disk(&e->s, "sdc")->n_mounts, 0);
    env_free(e);
}

/* Names with a slash ("cciss/c0d0") are spelt with '!' in sysfs. */
static void test_slash_names(void **state)
{
    (void)state;
    struct env *e = env_new();
    fx_write(e->dir, "sys/block/cciss!c0d0/dev", "104:0\n");
    fx_write(e->dir, "sys/block/cciss!c0d0/size", "4000\n");
    fx_write(e->dir, "sys/block/cciss!c0d0/device/model", "LOGICAL VOLUME\n");
    fx_write(e->dir, "sys/block/cciss!c0d0/cciss!c0d0p1/dev", "104:1\n");
    fx_write(e->dir, "proc/diskstats", " 104       0 cciss/c0d0 1 0 10 0 1 0 20 0 0 0 0\n"
                                       " 104       1 cciss/c0d0p1 1 0 10 0 1 0 20 0 0 0 0\n");
    fx_write(e->dir, "proc/self/mountinfo",
             "21 1 0:99 / /srv rw - btrfs /dev/cciss/c0d0p1 rw\n"
             "22 1 104:1 / /srv2 rw - btrfs /dev/cciss/c0d0p1 rw\n");
    static const struct fx_fs fs[] = {{"/srv", 4096, 4096, 10, 5, 5, 0}, {NULL, 0, 0, 0, 0, 0, 0}};
    fx_fs_table = fs;
    collect(e, 1000000000ULL);
    assert_int_equal(e->s.n_disks, 1);
    const struct rt_disk *d = disk(&e->s, "cciss/c0d0");
    assert_string_equal(d->model, "LOGICAL VOLUME");
    assert_int_equal(d->capacity_bytes, 4000 * 512);
    assert_int_equal(d->read_bytes_total, 10 * 512); /* an 11-field (pre-4.18) line */
    assert_int_equal(d->n_mounts, 1);
    assert_string_equal(d->mounts[0].mount_point, "/srv");
    env_free(e);
}

/* An empty drive (size 0) is not reported until media shows up. */
static void test_media_inserted(void **state)
{
    (void)state;
    struct env *e = env_new();
    collect(e, 1000000000ULL);
    for (size_t i = 0; i < e->s.n_disks; i++)
        assert_string_not_equal(e->s.disks[i].device, "sr0");
    fx_write(e->dir, "sys/block/sr0/size", "8000\n");
    fx_write(e->dir, "proc/diskstats", "  11       0 sr0 5 0 64 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n");
    collect(e, 1000000000ULL);
    assert_int_equal(e->s.n_disks, 1);
    const struct rt_disk *d = disk(&e->s, "sr0");
    assert_string_equal(d->model, "DVD-ROM");
    assert_int_equal(d->capacity_bytes, 8000 * 512);
    assert_float_equal(d->read_bytes_per_sec, 0, 0);
    fx_write(e->dir, "proc/diskstats", "  11       0 sr0 9 0 128 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n");
    collect(e, 1000000000ULL);
    assert_float_equal(disk(&e->s, "sr0")->read_bytes_per_sec, 64 * 512, EPS);
    env_free(e);
}

/* Native NVMe multipath: the hidden path devices (nvmeXcYnZ) are not disks;
 * their I/O is the head's, unless the head counts its own (queue/iostats). */
static void multipath_stats(const char *dir, unsigned p1, unsigned p2, bool second_path, unsigned own)
{
    char *path2 = rt_xasprintf(" 259       7 nvme1c2n1 1 0 %u 0 1 0 0 0 0 0 0 0 0 0 0 0 0\n", p2);
    char *stats = rt_xasprintf(" 259       5 nvme1n1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
                               " 259       6 nvme1c1n1 1 0 %u 0 1 0 %u 0 0 0 0 0 0 0 0 0 0\n"
                               "%s"
                               " 259       8 nvme2n1 1 0 %u 0 1 0 0 0 0 0 0 0 0 0 0 0 0\n"
                               " 259       9 nvme2c2n1 1 0 %u 0 1 0 0 0 0 0 0 0 0 0 0 0 0\n",
                               p1, 2 * p1, second_path ? path2 : "", own, own);
    fx_write(dir, "proc/diskstats", stats);
    free(stats);
    free(path2);
}

static void test_nvme_multipath(void **state)
{
    (void)state;
    struct env *e = env_new();
    static const char *const heads[] = {"nvme1n1", "nvme2n1"};
    for (int i = 0; i < 2; i++) {
        char *p = rt_xasprintf("sys/block/%s/size", heads[i]);
        fx_write(e->dir, p, "2000\n");
        free(p);
    }
    fx_write(e->dir, "sys/block/nvme1n1/queue/iostats", "0\n");
    fx_write(e->dir, "sys/block/nvme2n1/queue/iostats", "1\n");
    static const char *const paths[] = {"nvme1c1n1", "nvme1c2n1", "nvme2c2n1"};
    for (int i = 0; i < 3; i++) {
        char *p = rt_xasprintf("sys/block/%s/hidden", paths[i]);
        fx_write(e->dir, p, "1\n");
        free(p);
        p = rt_xasprintf("sys/block/%s/size", paths[i]);
        fx_write(e->dir, p, "2000\n");
        free(p);
    }
    fx_write(e->dir, "proc/self/mountinfo", "");
    multipath_stats(e->dir, 100, 50, true, 40);
    collect(e, 1000000000ULL);
    multipath_stats(e->dir, 300, 150, true, 90);
    collect(e, 1000000000ULL);
    assert_int_equal(e->s.n_disks, 2); /* the heads only */
    const struct rt_disk *d = disk(&e->s, "nvme1n1");
    assert_int_equal(d->read_bytes_total, (300 + 150) * 512);
    assert_int_equal(d->write_bytes_total, 600 * 512);
    assert_float_equal(d->read_bytes_per_sec, (200 + 100) * 512, EPS);
    assert_float_equal(d->write_bytes_per_sec, 400 * 512, EPS);
    d = disk(&e->s, "nvme2n1"); /* iostats on: its own counters, paths not added */
    assert_int_equal(d->read_bytes_total, 90 * 512);
    assert_float_equal(d->read_bytes_per_sec, 50 * 512, EPS);

    /* A path goes away: the head's sum drops, so it starts over. */
    multipath_stats(e->dir, 400, 0, false, 90);
    collect(e, 1000000000ULL);
    d = disk(&e->s, "nvme1n1");
    assert_int_equal(d->read_bytes_total, 400 * 512);
    assert_float_equal(d->read_bytes_per_sec, 0, 0);
    multipath_stats(e->dir, 500, 0, false, 90);
    collect(e, 1000000000ULL);
    assert_float_equal(disk(&e->s, "nvme1n1")->read_bytes_per_sec, 100 * 512, EPS);
    env_free(e);
}

/* Sizes are re-read every 30 s: a disk grown online gets its new capacity,
 * one whose media is gone (size 0) leaves the list. */
static void test_resized(void **state)
{
    (void)state;
    struct env *e = env_new();
    collect(e, 1000000000ULL);
    uint64_t sda = disk(&e->s, "sda")->capacity_bytes;
    size_t n = e->s.n_disks;
    fx_write(e->dir, "sys/block/sda/size", "4000000\n");
    fx_write(e->dir, "sys/block/sdb/size", "0\n");
    collect(e, 1000000000ULL);
    assert_int_equal(disk(&e->s, "sda")->capacity_bytes, sda); /* not yet */
    collect(e, 30 * 1000000000ULL);
    assert_int_equal(disk(&e->s, "sda")->capacity_bytes, 4000000ULL * 512);
    assert_string_equal(disk(&e->s, "sda")->model, "ST1000DM010-2EP102"); /* identity read again */
    assert_int_equal(e->s.n_disks, n - 1);
    for (size_t i = 0; i < e->s.n_disks; i++)
        assert_string_not_equal(e->s.disks[i].device, "sdb");
    env_free(e);
}

/* Failing or empty statvfs results leave the mount out. */
static void test_statvfs_failures(void **state)
{
    (void)state;
    static const struct fx_fs failing[] = {
        {"/", 4096, 4096, 25000000, 10000000, 9000000, 0},
        {"/data", 0, 0, 0, 0, 0, -EACCES},
        {"/mnt/my disk", 4096, 4096, 0, 0, 0, 0},
        {"/run/media/usb", 4096, 4096, 10, 5, 5, 0},
        {NULL, 0, 0, 0, 0, 0, 0},
    };
    struct env *e = env_new();
    fx_fs_table = failing;
    collect(e, 1000000000ULL);
    assert_int_equal(disk(&e->s, "nvme0n1")->n_mounts, 0);
    assert_int_equal(disk(&e->s, "dm-0")->n_mounts, 1);
    assert_int_equal(disk(&e->s, "sda")->n_mounts, 0);
    env_free(e);
}

/* Truncated, garbage and missing files: no crash, one warning each. */
static void test_garbage(void **state)
{
    (void)state;
    struct env *e = env_new();
    fx_capture_start();
    for (int i = 0; i < 2; i++) {
        fx_write(e->dir, "proc/diskstats",
                 "this is not diskstats\n"
                 "   8       0 sda 300 0 6000 10 50 0 4000 20 0 30 30 0 0 0 0 0 0\n"
                 " 259       0 nvme0n1 600 0 88000 50\n"
                 "   8      16 sdb -1 0 x 1 10 0 3000 2 0 3 3\n"
                 "\n"
                 " 253       0 dm-0 190 0 38");
        fx_write(e->dir, "proc/self/mountinfo",
                 "garbage\n"
                 "21 1 253:0 / / rw,relatime shared:1\n"
                 "26 21 8:1 / /boot rw,relatime shared:29 - ext2 /dev/sda1 rw\n");
        collect(e, 1000000000ULL);
        assert_int_equal(e->s.n_disks, 1);
        const struct rt_disk *d = disk(&e->s, "sda");
        assert_float_equal(d->read_bytes_per_sec, i == 0 ? 4000 * 512 : 0, EPS);
        assert_int_equal(d->n_mounts, 1);
        assert_string_equal(d->mounts[0].mount_point, "/boot");
    }
    fx_remove(e->dir, "proc/self/mountinfo");
    collect(e, 1000000000ULL);
    assert_int_equal(e->s.n_disks, 1);
    assert_int_equal(e->s.disks[0].n_mounts, 0);
    fx_remove(e->dir, "proc/diskstats");
    for (int i = 0; i < 2; i++) {
        collect(e, 1000000000ULL);
        assert_int_equal(e->s.n_disks, 0);
    }
    /* Back again: the interval spans the unreadable ticks (4 s). */
    fx_write(e->dir, "proc/diskstats", "   8       0 sda 300 0 14000 10 50 0 4000 20 0 30 30 0 0 0 0 0 0\n");
    collect(e, 2000000000ULL);
    assert_float_equal(disk(&e->s, "sda")->read_bytes_per_sec, 8000 * 512 / 4.0, EPS);
    char *log = fx_capture_end();
    assert_int_equal(fx_count(log, "unparsable line in /proc/diskstats"), 1);
    assert_int_equal(fx_count(log, "unparsable line in mountinfo"), 1);
    assert_int_equal(fx_count(log, "cannot read /proc/self/mountinfo"), 1);
    assert_int_equal(fx_count(log, "cannot read /proc/diskstats"), 1);
    free(log);
    env_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture),         cmocka_unit_test(test_appear_and_vanish),
        cmocka_unit_test(test_slash_names),     cmocka_unit_test(test_media_inserted),  cmocka_unit_test(test_statvfs_failures),
        cmocka_unit_test(test_garbage),         cmocka_unit_test(test_nvme_multipath),
        cmocka_unit_test(test_resized),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
