#include "facts/osrelease.h"

#include "rt/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* VALUE of a KEY=VALUE line, unquoted in place; NULL when malformed. */
static char *unquote(char *v)
{
    v = rt_trim(v);
    if (*v != '"' && *v != '\'')
        return v;
    char q = *v++, *out = v;
    for (char *p = v; *p; p++) {
        if (*p == q) {
            *out = '\0';
            return v;
        }
        if (q == '"' && *p == '\\' && p[1])
            p++;
        *out++ = *p;
    }
    return NULL; /* no closing quote */
}

static bool printable(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    return true;
}

bool rt_os_release_name(const char *path, char *out, size_t size)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    char pretty[256] = "", name[256] = "", version[256] = "";
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        char *eq = strchr(line, '=');
        if (!eq || line[0] == '#')
            continue;
        *eq = '\0';
        char *v = unquote(eq + 1);
        if (!v || !printable(v))
            continue;
        char *dst = strcmp(line, "PRETTY_NAME") == 0 ? pretty
                    : strcmp(line, "NAME") == 0      ? name
                    : strcmp(line, "VERSION_ID") == 0 ? version
                                                      : NULL;
        if (dst)
            rt_strlcpy(dst, v, sizeof(pretty));
    }
    free(line);
    fclose(f);
    if (pretty[0])
        rt_strlcpy(out, pretty, size);
    else if (name[0] && version[0])
        snprintf(out, size, "%s %s", name, version);
    else if (name[0])
        rt_strlcpy(out, name, size);
    else
        return false;
    return true;
}
