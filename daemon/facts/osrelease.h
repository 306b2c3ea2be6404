/* The operating system's name from os-release(5), for host facts. */
#ifndef RT_OSRELEASE_H
#define RT_OSRELEASE_H

#include <stdbool.h>
#include <stddef.h>

/* PRETTY_NAME of the os-release file at path, else "NAME VERSION_ID", else
 * NAME, unquoted (shell-like quoting with backslash escapes inside double
 * quotes). false when the file cannot be read or names nothing printable. */
bool rt_os_release_name(const char *path, char *out, size_t size);

#endif
