/* What a docker or podman container asked for: its CPU and memory limits
 * and the GPUs it was given, as its runtime recorded them, read from the
 * runtime's own state files without running its tools or talking to its
 * daemon. Which container a cgroup is, its name and image: the cgroup layer
 * (cgroup/container.h, cgroup/classify.h). Knows nothing of tracked jobs.
 *
 *   docker  ROOT/var/lib/docker/containers/ID/hostconfig.json: NanoCpus
 *           (--cpus), else CpuQuota/CpuPeriod, Memory (--memory), the GPUs of
 *           DeviceRequests with the "gpu" capability (--gpus)
 *   podman  ROOT/var/lib/containers/storage/DRIVER-containers/ID/userdata/config.json,
 *           the OCI spec it ran the container with: linux.resources.cpu
 *           quota/period, linux.resources.memory.limit, /dev/nvidiaN devices
 * Root's containers only (rootless podman keeps its state in the user's
 * home); the files must be root's. docs/admin.md, "Containers". */
#ifndef RT_FACTS_CONTAINER_REQUEST_H
#define RT_FACTS_CONTAINER_REQUEST_H

#include "rt/request.h"

#include <json-c/json.h>

/* Read the request of container id (64 hex digits) of runtime "docker" or
 * "podman" under state_root ("/" or NULL: the host; a fixture tree in
 * tests). *gpu_uuids: an array when the runtime names GPUs by UUID, else
 * NULL (the caller puts it). 0; -ENOENT when there is no such state;
 * -EINVAL when a file is not what the runtime writes (or not root's) or
 * the id is none; -EOPNOTSUPP for another runtime. */
int rt_container_request(const char *state_root, const char *runtime, const char *id, struct rt_request *out,
                         struct json_object **gpu_uuids);

#endif
