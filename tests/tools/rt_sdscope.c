/* system/sdunit.h from the command line, for the systemd container test
 * (tests/systemd/scenarios-cgroup.sh).
 *   rt_sdscope [--user] start UNIT SLICE CMD…
 *       runs CMD (stdio on /dev/null) in transient scope UNIT under SLICE
 *       ("" for the manager's default): CMD waits until the scope holds it,
 *       then runs on after this tool exits. Prints "pid=PID cgroup=PATH
 *       member=yes|no" (member: the cgroup layer lists PID in that cgroup).
 *   rt_sdscope [--user] cgroup UNIT
 *       prints the unit's ControlGroup.
 * Exit 0, or 1 with "rt_sdscope: error (why)" on stderr. */
#include "cgroup/cgroup.h"
#include "system/sdunit.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define TIMEOUT_USEC (30 * 1000000ULL)

static int fail(int rc, char *why)
{
    fprintf(stderr, "rt_sdscope: %s%s%s%s\n", strerror(-rc), why ? " (" : "", why ? why : "", why ? ")" : "");
    free(why);
    return 1;
}

/* Whether the cgroup layer lists pid in cgroup `path`. */
static bool member(const char *path, pid_t pid)
{
    struct rt_roots roots;
    struct rt_cg_host h;
    struct rt_cgroup cg;
    bool found = false;
    if (rt_roots_open(&roots, NULL, NULL) < 0)
        return false;
    if (rt_cg_host_open(&h, &roots) == 0 && rt_cgroup_open(&cg, &h, path) == 0) {
        pid_t pids[64];
        size_t n = 0;
        rt_cgroup_pids(&cg, pids, 64, &n);
        for (size_t i = 0; i < n; i++)
            found |= pids[i] == pid;
        rt_cgroup_close(&cg);
    }
    rt_cg_host_close(&h);
    rt_roots_close(&roots);
    return found;
}

static int start(enum rt_sd_manager m, const char *unit, const char *slice, char **cmd)
{
    int gate[2];
    if (pipe2(gate, O_CLOEXEC) != 0)
        return fail(-errno, NULL);
    pid_t pid = fork();
    if (pid < 0)
        return fail(-errno, NULL);
    if (pid == 0) {
        char c;
        close(gate[1]);
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
        setsid();
        if (read(gate[0], &c, 1) != 1)
            _exit(127); /* the scope was not made */
        execvp(cmd[0], cmd);
        _exit(127);
    }
    close(gate[0]);
    char *cgroup = NULL, *why = NULL;
    int rc = rt_sd_start_scope(m, unit, slice[0] ? slice : NULL, "rt_sdscope test scope", &pid, 1, 0,
                               TIMEOUT_USEC, &cgroup, &why);
    if (rc < 0) {
        close(gate[1]);
        waitpid(pid, NULL, 0);
        return fail(rc, why);
    }
    printf("pid=%d cgroup=%s member=%s\n", (int)pid, cgroup, member(cgroup, pid) ? "yes" : "no");
    fflush(stdout);
    if (write(gate[1], "x", 1) != 1)
        rc = -errno;
    close(gate[1]);
    free(cgroup);
    free(why);
    return rc < 0 ? fail(rc, NULL) : 0;
}

int main(int argc, char **argv)
{
    enum rt_sd_manager m = RT_SD_SYSTEM;
    int i = 1;
    if (i < argc && strcmp(argv[i], "--user") == 0) {
        m = RT_SD_USER;
        i++;
    }
    if (argc - i >= 4 && strcmp(argv[i], "start") == 0)
        return start(m, argv[i + 1], argv[i + 2], argv + i + 3);
    if (argc - i == 2 && strcmp(argv[i], "cgroup") == 0) {
        char *cgroup, *why;
        int rc = rt_sd_unit_cgroup(m, argv[i + 1], TIMEOUT_USEC, &cgroup, &why);
        if (rc < 0)
            return fail(rc, why);
        printf("%s\n", cgroup);
        free(cgroup);
        free(why);
        return 0;
    }
    fprintf(stderr, "usage: rt_sdscope [--user] start UNIT SLICE CMD… | cgroup UNIT\n");
    return 2;
}
