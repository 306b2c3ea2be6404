/* systemd credentials (LoadCredential=/SetCredential=): small secrets the
 * service manager puts in $CREDENTIALS_DIRECTORY, readable by this service
 * only. The unit passes the default Sentinel token this way. */
#ifndef RT_CREDENTIAL_H
#define RT_CREDENTIAL_H

#include <stddef.h>
#include <sys/types.h>

/* Read credential NAME into buf with surrounding whitespace removed. Returns
 * its length; 0 when there is no credentials directory, no such credential
 * or it is empty (the unit's SetCredential= fallback is a lone "\n", used
 * when the token file does not exist); -E2BIG when it does not fit in buf;
 * -EINVAL for a NAME that is not a file name; -errno when unreadable.
 * The content is never logged. Main thread only (reads the environment). */
ssize_t rt_credential_read(const char *name, char *buf, size_t size);

#endif
