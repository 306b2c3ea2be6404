/* Test and developer tool (not installed): what the daemon's readers make of
 * a scheduler's job or a container, as one JSON object on stdout.
 *   rt_facts slurm PID              the Slurm job holding process PID
 *   rt_facts slurm --cgroup PATH    the Slurm job of a cgroup path (/proc/PID/cgroup's form)
 * Options before the kind: --proc-root DIR, --sys-root DIR (fixture trees).
 * Exit status 0, 1 when the reader fails (its errno in "error"), 2 on usage. */
#include "facts/slurm.h"
#include "rt/json.h"
#include "rt/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
    fprintf(stderr, "usage: rt_facts [--proc-root DIR] [--sys-root DIR] slurm PID|--cgroup PATH\n");
    return 2;
}

static int print(struct json_object *o, int rc)
{
    if (rc < 0)
        json_object_object_add(o, "error", json_object_new_string(strerror(-rc)));
    printf("%s\n", rt_json_plain(o));
    json_object_put(o);
    return rc < 0;
}

static int slurm(const struct rt_cg_host *h, const struct rt_roots *roots, int argc, char **argv)
{
    const char *cgroup = NULL;
    uint64_t pid = 0;
    if (argc == 2 && strcmp(argv[0], "--cgroup") == 0)
        cgroup = argv[1];
    else if (argc != 1 || !rt_parse_u64(argv[0], &pid) || pid == 0 || pid > INT32_MAX)
        return usage();
    struct rt_slurm_job j;
    int rc = rt_slurm_job_read(h, roots, cgroup, (pid_t)pid, &j);
    struct json_object *o = json_object_new_object();
    if (rc == 0) {
        json_object_object_add(o, "scheduler", rt_slurm_job_scheduler_json(&j));
        json_object_object_add(o, "request", rt_request_to_json(&j.request, j.gpu_uuids));
        json_object_object_add(o, "uid", j.has_uid ? json_object_new_int64(j.uid) : NULL);
        json_object_object_add(o, "gpu_ids", j.gpu_ids[0] ? json_object_new_string(j.gpu_ids) : NULL);
    }
    rt_slurm_job_free(&j);
    return print(o, rc);
}

int main(int argc, char **argv)
{
    const char *proc = NULL, *sys = NULL;
    int i = 1;
    for (; i + 1 < argc && rt_str_starts_with(argv[i], "--") && strcmp(argv[i], "--cgroup") != 0; i += 2) {
        if (strcmp(argv[i], "--proc-root") == 0)
            proc = argv[i + 1];
        else if (strcmp(argv[i], "--sys-root") == 0)
            sys = argv[i + 1];
        else
            return usage();
    }
    if (i >= argc)
        return usage();
    struct rt_roots roots;
    if (rt_roots_open(&roots, proc, sys) < 0) {
        perror("rt_facts: roots");
        return 1;
    }
    struct rt_cg_host h;
    if (rt_cg_host_open(&h, &roots) < 0) {
        perror("rt_facts: cgroup hierarchies");
        rt_roots_close(&roots);
        return 1;
    }
    int rc = strcmp(argv[i], "slurm") == 0 ? slurm(&h, &roots, argc - i - 1, argv + i + 1) : usage();
    rt_cg_host_close(&h);
    rt_roots_close(&roots);
    return rc;
}
