/* officeclock: LibreOffice's clock, which the desktop daemon can move forward while LibreOffice has nothing else
 * to do (LD_PRELOADed into soffice.bin only; inert in any other process).
 *
 * After a document loads, LibreOffice updates its toolbar states, ruler and status bar from timers: one armed
 * 300 ms out, then 20 ms steps, Calc's idle timer. The screen is final only once they ran: about a second of
 * waiting in which LibreOffice sleeps. The daemon (desktopd.py, op "office_fast_forward") instead moves this
 * process's clocks to the next timer's deadline each time LibreOffice's main thread sleeps in its main loop with
 * nothing else in flight (the desktop user's processes asleep, the X server included), and wakes it: the timers
 * run in the order and at the clock readings they would have had, without the waits, the same on a loaded host.
 *
 * What moves: every clock a process reads the time of day or the monotonic time from (clock_gettime of the
 * realtime, monotonic, boottime clocks and their coarse/raw forms, gettimeofday, time), by one offset in a file
 * the daemon maps too ($ENVGYM_OFFICE_CLOCK, struct shared below). Absolute deadlines handed back to the kernel
 * (timed condition waits, semaphores, mutex locks, clock_nanosleep with TIMER_ABSTIME) get the offset taken off, so
 * that no wait lasts longer than asked. The main thread's poll of two or more descriptors (GLib's main loop; a
 * poll of one is Xlib waiting for a reply) also watches a FIFO ($ENVGYM_OFFICE_CLOCK.wake) and records its
 * deadline on the moved clock: a byte written there wakes it, and it returns as if timed out.
 *
 * The offset only grows, and only while the daemon moves it (a reset's first observation: a few seconds). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

struct shared {
    volatile int64_t offset_ns;   /* added to every clock reading; written by the daemon only */
    volatile int64_t deadline_ns; /* the main loop's poll: its timeout on the moved monotonic clock; 0 when none */
    volatile int64_t polls;       /* main-loop polls entered so far */
};

static struct shared *shared;
static int wake_fd = -1;
static pid_t main_tid;

static int (*real_clock_gettime)(clockid_t, struct timespec *);
static int (*real_gettimeofday)(struct timeval *, void *);
static int (*real_poll)(struct pollfd *, nfds_t, int);
static int (*real_cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
static int (*real_cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *);
static int (*real_sem_timedwait)(sem_t *, const struct timespec *);
static int (*real_sem_clockwait)(sem_t *, clockid_t, const struct timespec *);
static int (*real_mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
static int (*real_mutex_clocklock)(pthread_mutex_t *, clockid_t, const struct timespec *);
static int (*real_clock_nanosleep)(clockid_t, int, const struct timespec *, struct timespec *);

/* the next definition of a symbol (libc's), looked up on first use: other libraries' constructors may run first */
#define REAL(name, sym) \
    do { \
        if (!name) \
            name = dlsym(RTLD_NEXT, sym); \
    } while (0)

static int64_t offset(void) { return shared ? shared->offset_ns : 0; }

static int moved(clockid_t clock) {
    return clock == CLOCK_REALTIME || clock == CLOCK_MONOTONIC || clock == CLOCK_MONOTONIC_RAW ||
           clock == CLOCK_REALTIME_COARSE || clock == CLOCK_MONOTONIC_COARSE || clock == CLOCK_BOOTTIME;
}

static struct timespec shift(const struct timespec *t, int64_t ns) {
    int64_t total = (int64_t)t->tv_sec * 1000000000 + t->tv_nsec + ns;
    struct timespec out = {total / 1000000000, total % 1000000000};
    if (out.tv_nsec < 0) {
        out.tv_nsec += 1000000000;
        out.tv_sec -= 1;
    }
    return out;
}

__attribute__((constructor)) static void start(void) {
    const char *path = getenv("ENVGYM_OFFICE_CLOCK");
    if (!path || strcmp(program_invocation_short_name, "soffice.bin") != 0)
        return; /* the soffice script, oosplash: pass-through, and they hand the variables on */
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    if (ftruncate(fd, sizeof(struct shared)) == 0) {
        void *map = mmap(NULL, sizeof(struct shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map != MAP_FAILED)
            shared = map;
    }
    close(fd);
    char wake[4096];
    snprintf(wake, sizeof wake, "%s.wake", path);
    if (mkfifo(wake, 0600) != 0 && errno != EEXIST)
        return;
    wake_fd = open(wake, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    main_tid = getpid();
    /* LibreOffice's own children (a second soffice, a helper) keep their own clocks */
    unsetenv("ENVGYM_OFFICE_CLOCK");
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
    REAL(real_clock_gettime, "clock_gettime");
    int rc = real_clock_gettime(clock, ts);
    if (rc == 0 && moved(clock) && offset())
        *ts = shift(ts, offset());
    return rc;
}

int gettimeofday(struct timeval *tv, void *tz) {
    REAL(real_gettimeofday, "gettimeofday");
    int rc = real_gettimeofday(tv, tz);
    if (rc == 0 && offset()) {
        int64_t us = (int64_t)tv->tv_sec * 1000000 + tv->tv_usec + offset() / 1000;
        tv->tv_sec = us / 1000000;
        tv->tv_usec = us % 1000000;
    }
    return rc;
}

time_t time(time_t *out) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out)
        *out = ts.tv_sec;
    return ts.tv_sec;
}

/* absolute deadlines read off a moved clock, handed to the kernel's own clock */
int pthread_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex, const struct timespec *at) {
    struct timespec real = shift(at, -offset());
    REAL(real_cond_timedwait, "pthread_cond_timedwait");
    return real_cond_timedwait(cond, mutex, &real);
}

int pthread_cond_clockwait(pthread_cond_t *cond, pthread_mutex_t *mutex, clockid_t clock, const struct timespec *at) {
    struct timespec real = moved(clock) ? shift(at, -offset()) : *at;
    REAL(real_cond_clockwait, "pthread_cond_clockwait");
    return real_cond_clockwait(cond, mutex, clock, &real);
}

int sem_timedwait(sem_t *sem, const struct timespec *at) {
    struct timespec real = shift(at, -offset());
    REAL(real_sem_timedwait, "sem_timedwait");
    return real_sem_timedwait(sem, &real);
}

int sem_clockwait(sem_t *sem, clockid_t clock, const struct timespec *at) {
    struct timespec real = moved(clock) ? shift(at, -offset()) : *at;
    REAL(real_sem_clockwait, "sem_clockwait");
    return real_sem_clockwait(sem, clock, &real);
}

int pthread_mutex_clocklock(pthread_mutex_t *mutex, clockid_t clock, const struct timespec *at) {
    struct timespec real = moved(clock) ? shift(at, -offset()) : *at;
    REAL(real_mutex_clocklock, "pthread_mutex_clocklock");
    return real_mutex_clocklock(mutex, clock, &real);
}

int pthread_mutex_timedlock(pthread_mutex_t *mutex, const struct timespec *at) {
    struct timespec real = shift(at, -offset());
    REAL(real_mutex_timedlock, "pthread_mutex_timedlock");
    return real_mutex_timedlock(mutex, &real);
}

int clock_nanosleep(clockid_t clock, int flags, const struct timespec *at, struct timespec *left) {
    if ((flags & TIMER_ABSTIME) && moved(clock)) {
        struct timespec real = shift(at, -offset());
        REAL(real_clock_nanosleep, "clock_nanosleep");
        return real_clock_nanosleep(clock, flags, &real, left);
    }
    REAL(real_clock_nanosleep, "clock_nanosleep");
    return real_clock_nanosleep(clock, flags, at, left);
}

int poll(struct pollfd *fds, nfds_t n, int timeout) {
    REAL(real_poll, "poll");
    if (!shared || wake_fd < 0 || n < 2 || n > 64 || syscall(SYS_gettid) != main_tid)
        return real_poll(fds, n, timeout);
    struct pollfd all[65];
    memcpy(all, fds, n * sizeof *fds);
    all[n] = (struct pollfd){.fd = wake_fd, .events = POLLIN};
    if (timeout > 0) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        shared->deadline_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec + (int64_t)timeout * 1000000;
    } else {
        shared->deadline_ns = 0;
    }
    __atomic_add_fetch(&shared->polls, 1, __ATOMIC_SEQ_CST);
    int rc = real_poll(all, n + 1, timeout);
    shared->deadline_ns = 0;
    if (rc > 0 && all[n].revents) {
        char drain[64];
        while (read(wake_fd, drain, sizeof drain) > 0)
            ;
        rc -= 1; /* woken: to GLib, the poll timed out (its timer is due on the moved clock) */
    }
    for (nfds_t i = 0; i < n; i++)
        fds[i].revents = all[i].revents;
    return rc;
}
