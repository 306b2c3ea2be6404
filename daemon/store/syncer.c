#include "store/syncer.h"

#include "rt/util.h"
#include "system/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

struct item {
    struct item *next;
    int dirfd;
    char *name;
};

struct rt_syncer {
    pthread_mutex_t mu;
    pthread_cond_t work, idle;
    struct item *head, *tail;
    bool stop, started;
    uint64_t added, done;
    pthread_t thread;
};

static void sync_one(struct item *it)
{
    if (it->name) {
        int fd = rt_open_beneath(it->dirfd, it->name, O_RDONLY, 0); /* never a FIFO put in its place */
        if (fd >= 0) {
            if (fsync(fd) < 0)
                rt_warn("cannot sync %s to disk: %s", it->name, strerror(errno));
            close(fd);
        }
    }
    if (fsync(it->dirfd) < 0 && errno != EINVAL)
        rt_warn("cannot sync a directory of the state to disk: %s", strerror(errno));
    close(it->dirfd);
    free(it->name);
    free(it);
}

static void *run(void *arg)
{
    struct rt_syncer *y = arg;
    /* Behind the threads that answer calls and take samples: it only waits
     * for the disk, and nobody waits for it. */
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0);
    if (errno == 0)
        setpriority(PRIO_PROCESS, 0, nice + 10);
    pthread_mutex_lock(&y->mu);
    for (;;) {
        while (!y->head && !y->stop)
            pthread_cond_wait(&y->work, &y->mu);
        struct item *it = y->head;
        if (!it)
            break; /* stopping, nothing left */
        y->head = it->next;
        if (!y->head)
            y->tail = NULL;
        pthread_mutex_unlock(&y->mu);
        sync_one(it);
        pthread_mutex_lock(&y->mu);
        y->done++;
        pthread_cond_broadcast(&y->idle);
    }
    pthread_mutex_unlock(&y->mu);
    return NULL;
}

struct rt_syncer *rt_syncer_new(void)
{
    struct rt_syncer *y = rt_xcalloc(1, sizeof(*y));
    pthread_mutex_init(&y->mu, NULL);
    pthread_cond_init(&y->work, NULL);
    pthread_cond_init(&y->idle, NULL);
    return y;
}

/* The thread, once there is something to sync; without one (it cannot be
 * made) the caller syncs itself. Called with mu held. */
static bool start(struct rt_syncer *y)
{
    if (y->started)
        return true;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* signals are the main thread's */
    int r = pthread_create(&y->thread, NULL, run, y);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0) {
        rt_warn("cannot start the thread that syncs the state to disk: %s; syncing in place", strerror(r));
        return false;
    }
    pthread_setname_np(y->thread, "rt-syncer");
    y->started = true;
    return true;
}

void rt_syncer_add(struct rt_syncer *y, int dirfd, const char *name)
{
    struct item *it = rt_xcalloc(1, sizeof(*it));
    it->dirfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
    if (it->dirfd < 0) {
        rt_warn("cannot sync %s to disk: %s", name ? name : "a directory", strerror(errno));
        free(it);
        return;
    }
    it->name = name ? rt_xstrdup(name) : NULL;
    pthread_mutex_lock(&y->mu);
    y->added++;
    if (!start(y)) {
        pthread_mutex_unlock(&y->mu);
        sync_one(it);
        pthread_mutex_lock(&y->mu);
        y->done++;
        pthread_mutex_unlock(&y->mu);
        return;
    }
    if (y->tail)
        y->tail->next = it;
    else
        y->head = it;
    y->tail = it;
    pthread_cond_signal(&y->work);
    pthread_mutex_unlock(&y->mu);
}

void rt_syncer_wait(struct rt_syncer *y)
{
    pthread_mutex_lock(&y->mu);
    uint64_t target = y->added;
    while (y->done < target)
        pthread_cond_wait(&y->idle, &y->mu);
    pthread_mutex_unlock(&y->mu);
}

bool rt_syncer_idle(struct rt_syncer *y)
{
    pthread_mutex_lock(&y->mu);
    bool idle = y->done == y->added;
    pthread_mutex_unlock(&y->mu);
    return idle;
}

uint64_t rt_syncer_done(struct rt_syncer *y)
{
    pthread_mutex_lock(&y->mu);
    uint64_t n = y->done;
    pthread_mutex_unlock(&y->mu);
    return n;
}

void rt_syncer_free(struct rt_syncer *y)
{
    if (!y)
        return;
    pthread_mutex_lock(&y->mu);
    y->stop = true;
    pthread_cond_signal(&y->work);
    bool started = y->started;
    pthread_mutex_unlock(&y->mu);
    if (started)
        pthread_join(y->thread, NULL);
    pthread_cond_destroy(&y->work);
    pthread_cond_destroy(&y->idle);
    pthread_mutex_destroy(&y->mu);
    free(y);
}
