#include "notice/target.h"

#include "rt/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static int refuse(char *why, size_t whylen, const char *reason)
{
    snprintf(why, whylen, "%s", reason);
    return -EINVAL;
}

/* One plain address: LOCAL or LOCAL@DOMAIN; nothing a header or sendmail's
 * command line could take for more. */
static bool plain_address(const char *a)
{
    const char *at = strchr(a, '@');
    size_t local = at ? (size_t)(at - a) : strlen(a);
    if (local == 0 || local > 64 || a[0] == '-' || a[0] == '.')
        return false;
    for (size_t i = 0; i < local; i++)
        if (!isalnum((unsigned char)a[i]) && !strchr("._+-", a[i]))
            return false;
    if (!at)
        return true;
    const char *d = at + 1;
    size_t n = strlen(d);
    if (n == 0 || n > 253 || d[0] == '.' || d[0] == '-' || d[n - 1] == '.' || strstr(d, ".."))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)d[i]) && d[i] != '.' && d[i] != '-')
            return false;
    return true;
}

int rt_notice_target_check(const char *t, char *why, size_t whylen)
{
    size_t n = strlen(t);
    if (n == 0 || n > RT_NOTICE_TARGET_MAX)
        return refuse(why, whylen, "a target is a URL or mailto:ADDRESS of at most 2048 bytes");
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)t[i] <= 0x20 || t[i] == 0x7f)
            return refuse(why, whylen, "white space or a control character in the target");
    if (strncasecmp(t, "mailto:", 7) == 0) {
        if (!plain_address(t + 7))
            return refuse(why, whylen, "mailto: takes one plain address (user or user@domain.example)");
        return RT_NOTICE_MAIL;
    }
    const char *host = strncasecmp(t, "https://", 8) == 0 ? t + 8 : strncasecmp(t, "http://", 7) == 0 ? t + 7 : NULL;
    if (!host)
        return refuse(why, whylen, "a target is an http:// or https:// URL (a webhook) or mailto:ADDRESS");
    if (!*host || *host == '/' || *host == '?' || *host == '#')
        return refuse(why, whylen, "the URL has no host");
    return RT_NOTICE_WEBHOOK;
}

void rt_notice_target_redact(const char *t, char *out, size_t size)
{
    if (strncasecmp(t, "mailto:", 7) == 0) {
        rt_strlcpy(out, t, size);
        return;
    }
    const char *host = strstr(t, "://");
    host = host ? host + 3 : t;
    size_t end = strcspn(host, "/?#"), scheme = (size_t)(host - t);
    /* user:password@ is no host to show */
    const char *at = memchr(host, '@', end);
    if (at) {
        end -= (size_t)(at + 1 - host);
        host = at + 1;
    }
    snprintf(out, size, "%.*s%.*s/…", (int)scheme, t, (int)end, host);
}

const char *rt_notice_target_address(const char *t)
{
    return strncasecmp(t, "mailto:", 7) == 0 ? t + 7 : t;
}
