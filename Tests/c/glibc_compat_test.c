/*
 * cmake/glibc_compat.c's wrappers do what the functions they stand for do. This program is linked
 * like libsheaf.so (the compat object and one --wrap per name), so every call below goes through
 * a wrapper to the old symbol version; the results are checked against values known without it.
 * A wrong symbol version fails at load time; a wrong stat structure version (the wrappers pass one
 * to __xstat) or a wrapper that loses an argument fails here.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int failures;

#define CHECK(condition)                                                                       \
    do {                                                                                       \
        if (!(condition)) {                                                                    \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #condition);              \
            failures++;                                                                        \
        }                                                                                      \
    } while (0)

/* Within a relative 1e-12 (double) or 1e-6 (float): the old and new versions differ at most in
 * the last bit and in how they report errors. volatile: the compiler must call the functions,
 * not fold the constants. */
static int close_to(double got, double want, double tolerance) {
    return fabs(got - want) <= tolerance * fabs(want);
}

static void check_libm(void) {
    volatile double one = 1.0, ten = 10.0;
    volatile float onef = 1.0f, tenf = 10.0f, threef = 3.0f, fourf = 4.0f, twof = 2.0f;
    CHECK(close_to(exp(one), 2.718281828459045, 1e-12));
    CHECK(close_to(exp2(ten), 1024.0, 1e-12));
    CHECK(close_to(log(ten), 2.302585092994046, 1e-12));
    CHECK(close_to(log2(ten), 3.321928094887362, 1e-12));
    CHECK(close_to(expf(onef), 2.7182817f, 1e-6));
    CHECK(close_to(exp2f(tenf), 1024.0f, 1e-6));
    CHECK(close_to(logf(tenf), 2.3025851f, 1e-6));
    CHECK(close_to(log2f(tenf), 3.3219281f, 1e-6));
    CHECK(close_to(powf(twof, tenf), 1024.0f, 1e-6));
    CHECK(close_to(hypotf(threef, fourf), 5.0f, 1e-6));
    CHECK(isinf(exp(1000.0 * one)) && log(0.0 * one) == -INFINITY);
}

static void check_stat(void) {
    char directory[] = "/tmp/sheaf-glibc-compat.XXXXXX";
    CHECK(mkdtemp(directory) != NULL);
    char file[64], link[64];
    snprintf(file, sizeof file, "%s/file", directory);
    snprintf(link, sizeof link, "%s/link", directory);
    int fd = open(file, O_CREAT | O_WRONLY | O_TRUNC, 0640);
    CHECK(fd >= 0);
    CHECK(write(fd, "twelve bytes", 12) == 12);
    CHECK(symlink("file", link) == 0);

    struct stat by_path, by_link, by_fd, of_link;
    memset(&by_path, 0xa5, sizeof by_path);
    CHECK(stat(file, &by_path) == 0);
    CHECK(stat(link, &by_link) == 0);
    CHECK(fstat(fd, &by_fd) == 0);
    CHECK(lstat(link, &of_link) == 0);
    CHECK(S_ISREG(by_path.st_mode) && (by_path.st_mode & 0777) == 0640);
    CHECK(by_path.st_size == 12 && by_path.st_nlink == 1 && by_path.st_uid == getuid());
    CHECK(by_link.st_ino == by_path.st_ino && by_fd.st_ino == by_path.st_ino);
    CHECK(by_fd.st_size == 12 && by_link.st_dev == by_path.st_dev);
    CHECK(S_ISLNK(of_link.st_mode) && of_link.st_size == 4 && of_link.st_ino != by_path.st_ino);
    CHECK(by_path.st_mtim.tv_sec > 1600000000);   /* after 2020: the times are where they belong */
    errno = 0;
    CHECK(stat("/nonexistent/sheaf", &by_path) == -1 && errno == ENOENT);

    close(fd);
    unlink(link);
    unlink(file);
    rmdir(directory);
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int once_runs;
static pthread_key_t key;
static sem_t semaphore;

static void run_once(void) { once_runs++; }

static void *worker(void *argument) {
    pthread_once(&once, run_once);
    CHECK(pthread_setspecific(key, argument) == 0);
    CHECK(pthread_getspecific(key) == argument);
    CHECK(sem_post(&semaphore) == 0);
    return (char *)argument + 1;
}

static void check_threads(void) {
    CHECK(pthread_key_create(&key, NULL) == 0);
    CHECK(sem_init(&semaphore, 0, 0) == 0);
    char marks[2];
    pthread_t threads[2];
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&threads[i], NULL, worker, &marks[i]) == 0);
    for (int i = 0; i < 2; i++) {
        void *result = NULL;
        CHECK(pthread_join(threads[i], &result) == 0 && result == &marks[i] + 1);
    }
    CHECK(once_runs == 1);
    CHECK(sem_wait(&semaphore) == 0 && sem_wait(&semaphore) == 0);
    pthread_t detached;
    CHECK(pthread_create(&detached, NULL, worker, &marks[0]) == 0 && pthread_detach(detached) == 0);
    CHECK(sem_wait(&semaphore) == 0);   /* the detached thread ran */
    struct timespec soon;
    clock_gettime(CLOCK_REALTIME, &soon);
    soon.tv_nsec += 20 * 1000 * 1000;
    if (soon.tv_nsec >= 1000000000) {
        soon.tv_sec++;
        soon.tv_nsec -= 1000000000;
    }
    errno = 0;
    CHECK(sem_timedwait(&semaphore, &soon) == -1 && errno == ETIMEDOUT);
    CHECK(sem_destroy(&semaphore) == 0);

    char name[64];
    snprintf(name, sizeof name, "/sheaf-compat-%d", (int)getpid());
    sem_t *named = sem_open(name, O_CREAT | O_EXCL, 0600, 1);
    CHECK(named != SEM_FAILED);
    if (named != SEM_FAILED) {
        CHECK(sem_wait(named) == 0);
        sem_close(named);
        sem_unlink(name);
    }

    pthread_mutexattr_t attributes;
    int type = -1;
    CHECK(pthread_mutexattr_init(&attributes) == 0);
    CHECK(pthread_mutexattr_settype(&attributes, PTHREAD_MUTEX_RECURSIVE) == 0);
    CHECK(pthread_mutexattr_gettype(&attributes, &type) == 0 && type == PTHREAD_MUTEX_RECURSIVE);
    CHECK(pthread_mutexattr_destroy(&attributes) == 0);

    pthread_condattr_t condition;
    clockid_t clock = CLOCK_REALTIME;
    CHECK(pthread_condattr_init(&condition) == 0);
    CHECK(pthread_condattr_setclock(&condition, CLOCK_MONOTONIC) == 0);
    CHECK(pthread_condattr_getclock(&condition, &clock) == 0 && clock == CLOCK_MONOTONIC);
    pthread_condattr_destroy(&condition);

    sigset_t blocked, before, now;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGUSR2);
    CHECK(pthread_sigmask(SIG_BLOCK, &blocked, &before) == 0);
    CHECK(pthread_sigmask(SIG_SETMASK, &before, &now) == 0 && sigismember(&now, SIGUSR2) == 1);
    CHECK(pthread_kill(pthread_self(), 0) == 0);

    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    CHECK(pthread_getaffinity_np(pthread_self(), sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) >= 1);
    char thread_name[16] = "";
    CHECK(pthread_setname_np(pthread_self(), "sheaf-compat") == 0);
    CHECK(pthread_getname_np(pthread_self(), thread_name, sizeof thread_name) == 0);
    CHECK(strcmp(thread_name, "sheaf-compat") == 0);
}

static void check_dl(void) {
    void *libm = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
    CHECK(libm != NULL);
    if (libm == NULL) return;
    double (*cosine)(double) = (double (*)(double))dlsym(libm, "cos");
    CHECK(cosine != NULL && cosine(0.0) == 1.0);
    Dl_info info;
    CHECK(dladdr((void *)cosine, &info) != 0 && strstr(info.dli_fname, "libm") != NULL);
    CHECK(dlsym(libm, "sheaf_no_such_symbol") == NULL && dlerror() != NULL);
    CHECK(dlopen("libsheaf-no-such-library.so", RTLD_NOW) == NULL && strstr(dlerror(), "no-such") != NULL);
    dlclose(libm);
}

int main(void) {
    check_libm();
    check_stat();
    check_threads();
    check_dl();
    if (failures) {
        fprintf(stderr, "glibc_compat: %d checks failed\n", failures);
        return 1;
    }
    printf("glibc_compat: every wrapped function behaves\n");
    return 0;
}
