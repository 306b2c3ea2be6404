/* Where the daemon listens and keeps state, shared by daemon and client. */
#ifndef RT_PATHS_H
#define RT_PATHS_H

#include <stdbool.h>
#include <stddef.h>

#define RT_SOCKET_NAME "com.sparecores.ResourceTracker"
#define RT_SYSTEM_SOCKET "/run/resource-tracker/" RT_SOCKET_NAME
#define RT_SOCKET_ENV "RESOURCE_TRACKER_SOCKET"

/* $XDG_RUNTIME_DIR/resource-tracker/<name>, else /tmp/resource-tracker-<uid>/<name>.
 * When that directory exists but is not ours (another user created it in
 * /tmp first), <state dir>/run/<name>: a directory only we can create.
 * 0, or -1 when no usable path exists. */
int rt_user_socket_path(char *buf, size_t size);
/* <state dir>/run/<name>, the fallback (also when the first turns out not to
 * be ours only when it is used). 0, or -1. */
int rt_user_socket_fallback(char *buf, size_t size);
/* $XDG_STATE_HOME/resource-tracker, else ~/.local/state/resource-tracker. */
int rt_user_state_dir(char *buf, size_t size);
/* The directory of a user daemon's socket, opened without following a
 * symlink and checked through its descriptor to be a directory of ours
 * (O_DIRECTORY|O_NOFOLLOW, fstat): everything in it is then reached through
 * that descriptor (rt_fd_path), so that a directory another user renames
 * into the path meanwhile is never used. create: make it (and missing
 * parents) 0700 first; an existing one of ours is made 0700 only when others
 * may write to it and it is not sticky. The descriptor, or -EPERM (not ours,
 * not a directory, a symlink: rt_user_socket_path gives the fallback),
 * -ENOENT, -errno. */
int rt_user_socket_dir_open(const char *socket_path, bool create);
/* What follows the last '/' of path (all of it without one). */
const char *rt_path_base(const char *path);
/* The directory path is in (its symbolic links followed: the caller named
 * it), to open rt_path_base(path) in without following one there. The
 * descriptor, or -errno. */
int rt_open_parent(const char *path);
/* "/proc/self/fd/DIRFD/NAME": name in the directory dirfd, for calls that
 * take a path only (bind, connect). 0 or -ENAMETOOLONG. */
int rt_fd_path(char *buf, size_t size, int dirfd, const char *name);

#endif
