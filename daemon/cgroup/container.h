/* Containers found without running container tools: by id in the cgroup
 * layouts of docker, podman, containerd and CRI-O (the known places only,
 * never a walk of the whole tree), and by name through the state files of
 * docker and podman, which also give a container's name and image
 * (docs/cgroups.md, "Containers"). Errors are negative errno. */
#ifndef RT_CGROUP_CONTAINER_H
#define RT_CGROUP_CONTAINER_H

#include "cgroup/hier.h"

struct rt_container {
    char id[65];      /* 64 hex digits */
    char runtime[16]; /* "docker", "podman", "containerd", "cri-o", "kubernetes" */
    char *cgroup;     /* its cgroup (normalised path), the same in every hierarchy */
    char *name;       /* from the runtime's state files; NULL where none is readable */
    char *image;      /* as the user named it ("nginx:1.25"); NULL likewise */
};

/* Find a running container (one with a cgroup) by its id, a unique prefix
 * of it of at least 12 hex digits, or its name (docker's and podman's,
 * root's or a user's whose manager runs podman containers). The state files
 * are read under state_root ("/" or NULL: the host; a fixture tree in
 * tests): docker's /var/lib/docker/containers/ID/config.v2.json, podman's
 * overlay-containers/containers.json (and volatile-containers.json) of
 * /var/lib/containers/storage and /run/containers/storage, and of
 * ~/.local/share/containers/storage and /run/user/UID/containers of a
 * rootless user (only files that user owns, never through a link).
 * 0; -ENOENT: none running; -ENOTUNIQ: the prefix or the name matches
 * several; -EINVAL: an empty key. Free with rt_container_free. */
int rt_container_find(const struct rt_cg_host *h, const char *state_root, const char *key, struct rt_container *out);
void rt_container_free(struct rt_container *c);

#endif
