/* systemd units through sd-bus (libsystemd): a transient scope around
 * running processes, as `systemd-run --scope` makes one, and the cgroup of a
 * unit. The calls block (a bus round trip, a job to wait for) up to the
 * caller's timeout: make them off the sampler thread. Errors are negative
 * errno; *why, where given, receives the manager's words for people (heap;
 * NULL when there are none). */
#ifndef RT_SYSTEM_SDUNIT_H
#define RT_SYSTEM_SDUNIT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Which service manager: the system's (for the root daemon) or the calling
 * user's own (for a per-user daemon). Each is reached through its private
 * socket where we may use it (/run/systemd/private as root,
 * $XDG_RUNTIME_DIR/systemd/private as the user: what systemctl does, no bus
 * daemon needed), else through the system or the user's bus. */
enum rt_sd_manager { RT_SD_SYSTEM, RT_SD_USER };

/* Start transient scope `unit` (a name ending in ".scope") holding the
 * processes `pids`, under `slice` (NULL: the manager's default), with
 * Description `description` (NULL: none), CollectMode inactive-or-failed
 * (the unit and its cgroup are gone once its processes are) and memory,
 * tasks and I/O accounting (the controllers the figures come from; flags
 * below for CPU); wait for the start job to finish (its JobRemoved signal), then read
 * the scope's ControlGroup into *cgroup (heap: "/user.slice/user-1000.slice/
 * NAME.scope"). Children the processes fork later stay in the scope. 0;
 * -EEXIST: a unit of that name exists; -ETIMEDOUT: no answer or no end of
 * the job within timeout_usec; -EIO: the job ended other than "done"; -EINVAL
 * for a bad name or no pids; another -errno (no manager to reach: -ENOENT,
 * -ECONNREFUSED; refused: -EACCES). */
int rt_sd_start_scope(enum rt_sd_manager m, const char *unit, const char *slice, const char *description,
                      const pid_t *pids, size_t npids, unsigned flags, uint64_t timeout_usec, char **cgroup,
                      char **why);
/* flags of rt_sd_start_scope: also CPUAccounting, for a host without a v2
 * tree (cgroup/hier.h RT_CG_MODE_LEGACY), where only the v1 cpuacct
 * hierarchy counts CPU; it puts the scope in a v1 cpu group of its own too. */
#define RT_SD_CPU_ACCOUNTING 1u

/* The ControlGroup of a loaded unit ("nginx.service", "x.scope", "y.slice",
 * a socket, mount or swap unit) into *cgroup (heap). -ENOENT: no such unit
 * loaded; -ENODATA: loaded, but it has no cgroup (not running); -EINVAL: not
 * a unit name of those kinds; another -errno as above. */
int rt_sd_unit_cgroup(enum rt_sd_manager m, const char *unit, uint64_t timeout_usec, char **cgroup, char **why);

#endif
