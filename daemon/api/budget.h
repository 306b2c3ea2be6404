/* What each user's connections hold: how many there are and the bytes of
 * their buffers (unread replies, partial input), so that no user takes the
 * daemon's memory or all of its connections. Main thread only. */
#ifndef RT_API_BUDGET_H
#define RT_API_BUDGET_H

#include <stddef.h>
#include <sys/types.h>

struct rt_budget_user {
    uid_t uid;
    unsigned conns;
    unsigned shared;           /* of conns, those in the pool open to all users (not an administrator's) */
    size_t held;               /* buffer bytes of its connections */
};

struct rt_budget {
    struct rt_budget_user **v; /* stable pointers: connections keep theirs */
    size_t n;
    size_t held;               /* all users */
};

void rt_budget_free(struct rt_budget *b);
/* The user's entry, NULL when it has no connection. */
struct rt_budget_user *rt_budget_find(const struct rt_budget *b, uid_t uid);
/* A connection of uid opens (the entry is created) or closes (its bytes are
 * released; the entry goes with the last connection). */
struct rt_budget_user *rt_budget_join(struct rt_budget *b, uid_t uid);
void rt_budget_leave(struct rt_budget *b, struct rt_budget_user *u, size_t *held);
/* A connection of u now holds `now` bytes instead of *held. */
void rt_budget_hold(struct rt_budget *b, struct rt_budget_user *u, size_t *held, size_t now);
/* The user to take bytes back from: one above per_user, else, when all users
 * together are above total, the one holding most. NULL when within both. */
struct rt_budget_user *rt_budget_over(const struct rt_budget *b, size_t per_user, size_t total);

#endif
