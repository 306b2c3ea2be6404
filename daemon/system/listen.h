#ifndef RT_LISTEN_H
#define RT_LISTEN_H

#include <stddef.h>
#include <sys/types.h>

/* Bind and listen on a Unix socket at path (non-blocking); with dirfd >= 0,
 * at its last component in that directory, reached through the descriptor.
 * A stale socket left by a dead daemon is replaced; a live one means another
 * daemon runs. Returns the fd, or -errno with a message in err. */
int rt_listen_unix(const char *path, int dirfd, mode_t mode, char *err, size_t errlen);

#endif
