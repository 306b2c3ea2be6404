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
/* $XDG_STATE_HOME/resource-tracker, else ~/.local/state/resource-tracker. */
int rt_user_state_dir(char *buf, size_t size);
/* Create the socket's directory (and missing parents) for a user daemon: mode
 * 0700, owned by us. Refuses a directory someone else owns (-EPERM); then
 * rt_user_socket_path gives the fallback. An existing one of ours is made
 * 0700 only when others may write to it and it is not sticky. 0 or -errno. */
int rt_user_socket_dir_prepare(const char *socket_path);

#endif
