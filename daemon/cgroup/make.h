/* Making cgroups where no systemd makes them (a host without systemd as
 * PID 1): a cgroup under a configured parent, in the v2 tree and in each v1
 * hierarchy the figures come from, so the one path holds in every hierarchy
 * (the hybrid rule, cgroup/hier.h). The caller is root's daemon: the
 * directories are root's, 0755, with no delegation to the user, so a process
 * inside cannot move itself out or change a limit (docs/cgroups.md, "Making
 * cgroups"). Errors are negative errno. */
#ifndef RT_CGROUP_MAKE_H
#define RT_CGROUP_MAKE_H

#include "cgroup/cgroup.h"

#include <sys/types.h>

/* Make cgroup `path` (any form rt_cg_path_normalize takes; not "/") in the
 * v2 tree and in the v1 memory, cpuacct, blkio and pids hierarchies that are
 * mounted. Not in a v1 cpu hierarchy of its own: a child there would get its
 * own CPU share and change how the command is scheduled (where cpu and
 * cpuacct share a hierarchy, the cpuacct cgroup is that child).
 * Missing parents are made as well. In the v2 tree the memory, io and pids
 * controllers are enabled for children (cgroup.subtree_control) from the
 * root down to the parent where available and not enabled yet; not cpu,
 * whose weights would change scheduling. 0; -EEXIST when it exists in one of
 * them (nothing is made); -ENOENT when no hierarchy is mounted or the path
 * lies outside a mounted subtree; -EINVAL for "/"; another -errno (the
 * cgroup is removed again where it was made; parents made stay). */
int rt_cg_make(const struct rt_cg_host *h, const char *path);

/* Move process `pid` into cg in every hierarchy cg is open in, v2 first
 * (writes to cgroup.procs). 0, or the first -errno; the process may then be
 * in some of them: the caller removes or kills. */
int rt_cg_attach(const struct rt_cgroup *cg, pid_t pid);

/* Remove cgroup `path` and the empty cgroups below it, deepest first, in
 * every hierarchy (not the parents). 0, also where it is gone already;
 * -EBUSY while a process is in it (the other hierarchies are still tried);
 * -EINVAL for "/". */
int rt_cg_remove(const struct rt_cg_host *h, const char *path);

#endif
