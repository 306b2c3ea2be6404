#include "proc/access.h"

static bool gid_ok(const struct rt_reader *r, gid_t g)
{
    return r->gid == RT_GID_UNKNOWN || g == r->gid;
}

bool rt_reader_ids_match(const struct rt_reader *r, const struct rt_pcreds *c)
{
    if (r->all)
        return true;
    for (int i = 0; i < 3; i++)
        if (c->uid[i] != r->uid || !gid_ok(r, c->gid[i]))
            return false;
    return true;
}

bool rt_reader_owns(const struct rt_reader *r, uid_t owner_uid, gid_t owner_gid)
{
    return r->all || (owner_uid == r->uid && gid_ok(r, owner_gid));
}

int rt_reader_may_read(const struct rt_reader *r, int proc_fd, int32_t pid)
{
    if (r->all)
        return 1;
    struct rt_pcreds c;
    uid_t ou;
    gid_t og;
    int e = rt_pcreds_read(proc_fd, pid, &c);
    if (e == 0)
        e = rt_pdump_owner(proc_fd, pid, &ou, &og);
    if (e < 0)
        return e;
    return rt_reader_ids_match(r, &c) && rt_reader_owns(r, ou, og);
}
