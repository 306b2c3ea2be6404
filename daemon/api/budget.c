#include "api/budget.h"

#include "rt/util.h"

#include <stdlib.h>

void rt_budget_free(struct rt_budget *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->v[i]);
    free(b->v);
    b->v = NULL;
    b->n = 0;
    b->held = 0;
}

struct rt_budget_user *rt_budget_find(const struct rt_budget *b, uid_t uid)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->v[i]->uid == uid)
            return b->v[i];
    return NULL;
}

struct rt_budget_user *rt_budget_join(struct rt_budget *b, uid_t uid)
{
    struct rt_budget_user *u = rt_budget_find(b, uid);
    if (!u) {
        u = rt_xcalloc(1, sizeof(*u));
        u->uid = uid;
        b->v = rt_xrealloc(b->v, (b->n + 1) * sizeof(*b->v));
        b->v[b->n++] = u;
    }
    u->conns++;
    return u;
}

void rt_budget_hold(struct rt_budget *b, struct rt_budget_user *u, size_t *held, size_t now)
{
    u->held = u->held - *held + now;
    b->held = b->held - *held + now;
    *held = now;
}

void rt_budget_leave(struct rt_budget *b, struct rt_budget_user *u, size_t *held)
{
    rt_budget_hold(b, u, held, 0);
    if (--u->conns)
        return;
    for (size_t i = 0; i < b->n; i++) {
        if (b->v[i] == u) {
            b->v[i] = b->v[--b->n];
            break;
        }
    }
    free(u);
}

struct rt_budget_user *rt_budget_over(const struct rt_budget *b, size_t per_user, size_t total)
{
    struct rt_budget_user *most = NULL;
    for (size_t i = 0; i < b->n; i++) {
        if (b->v[i]->held > per_user)
            return b->v[i];
        if (!most || b->v[i]->held > most->held)
            most = b->v[i];
    }
    return b->held > total ? most : NULL;
}
