/* The host's cgroup hierarchies: the v2 (unified) tree and the v1
 * hierarchies of the controllers the tracker reads, found in
 * PROC/self/mountinfo under the configurable proc root (collect/roots.h), so
 * fixture trees stand in for a host in tests.
 *
 * A cgroup is named by one path for all hierarchies, relative to the cgroup
 * root ("/system.slice/docker-ID.scope"). On a hybrid host (v1 controllers
 * beside a v2 tree, or v1 only) the same path is looked up in each hierarchy:
 * that is how Slurm's cgroup/v1 plugin, the Docker and podman cgroupfs drivers
 * and the cgroups this tracker makes look (docs/cgroups.md, "Hybrid hosts").
 *
 * Nothing here knows what a job is. Errors are negative errno. */
#ifndef RT_CGROUP_HIER_H
#define RT_CGROUP_HIER_H

#include "collect/roots.h"

#include <stdbool.h>
#include <stddef.h>

/* The hierarchies a cgroup is opened in. On most v1 hosts cpu and cpuacct
 * share one hierarchy ("cpu,cpuacct"): both entries then name that mount. */
enum rt_cg_hier {
    RT_CG_V2,
    RT_CG_MEMORY,
    RT_CG_CPUACCT,
    RT_CG_CPU,
    RT_CG_BLKIO,
    RT_CG_PIDS,
    RT_CG_NHIER,
};

enum rt_cg_mode {
    RT_CG_MODE_NONE,    /* no cgroup file system mounted */
    RT_CG_MODE_UNIFIED, /* v2 only */
    RT_CG_MODE_HYBRID,  /* a v2 tree and v1 controller hierarchies */
    RT_CG_MODE_LEGACY,  /* v1 only */
};

struct rt_cg_mount {
    int fd;      /* the mount point (O_PATH|O_DIRECTORY); -1: not mounted */
    char *point; /* the mount point as mountinfo names it: "/sys/fs/cgroup/memory" */
    char *root;  /* the mounted subtree's path in its hierarchy: "/", unless
                    bind-mounted from inside the tree or in a cgroup namespace */
};

struct rt_cg_host {
    enum rt_cg_mode mode;
    struct rt_cg_mount m[RT_CG_NHIER];
    /* A cgroup file system mounted with favordynmods (or a kernel booted
     * with cgroup_favordynmods=true): moving a process into a cgroup does
     * not wait for an RCU grace period (the kernel's lock is one for all). */
    bool favor_dynmods;
};

/* Find the mounts. A mount point under /sys is opened under roots->sys (a
 * fixture's sys tree in tests); one elsewhere only when roots->sys is the real
 * /sys. Of several mounts of one hierarchy the first of its whole tree wins.
 * 0 (also when nothing is mounted: mode NONE), or -errno when mountinfo cannot
 * be read. */
int rt_cg_host_open(struct rt_cg_host *h, const struct rt_roots *roots);
void rt_cg_host_close(struct rt_cg_host *h);

/* "v2", "memory", "cpuacct", "cpu", "blkio", "pids". */
const char *rt_cg_hier_name(enum rt_cg_hier hier);

/* A cgroup path as callers give it, checked and written to out in its one
 * form: "/" or "/a/b" (no empty, "." or ".." components, no trailing '/').
 * An absolute path under one of the mount points ("/sys/fs/cgroup/memory/
 * slurm/uid_0") is taken as that cgroup ("/slurm/uid_0"); any other path is
 * relative to the cgroup root. -EINVAL for a path not starting with '/' or
 * with "." or ".." components, -ENAMETOOLONG when out is too small. */
int rt_cg_path_normalize(const struct rt_cg_host *h, const char *in, char *out, size_t size);

/* The components of a path one by one: the next one's name into name
 * (NUL-terminated), *p moved past it. 1; 0 at the end; -ENAMETOOLONG for a
 * component longer than NAME_MAX. */
int rt_cg_path_next(const char **p, char name[256]);

/* The part of cgroup `path` (normalised) below the mount of `hier`: "" for
 * the mounted subtree's root, "/a/b" below it; NULL when the hierarchy is
 * not mounted or the path lies outside its subtree. */
const char *rt_cg_path_in(const struct rt_cg_host *h, enum rt_cg_hier hier, const char *path);

/* The directory of cgroup `path` (normalised) in one hierarchy, opened
 * O_RDONLY|O_DIRECTORY one component at a time with O_NOFOLLOW, so no
 * symbolic link is followed. An fd, or -ENOENT when the hierarchy is not
 * mounted, the path lies outside its mounted subtree or does not exist;
 * -ENOTDIR or -ELOOP when a component is no directory or a link. */
int rt_cg_open_dir(const struct rt_cg_host *h, enum rt_cg_hier hier, const char *path);

#endif
