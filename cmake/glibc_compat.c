/*
 * Lets libsheaf.so, built on a current glibc, load on glibc 2.17 and later (the manylinux2014
 * baseline). The linker binds every libc/libm call to the newest version of that symbol in the
 * glibc it links against: `exp@GLIBC_2.29`, `pthread_once@GLIBC_2.34` (when libpthread moved into
 * libc), `stat@GLIBC_2.33`. An older glibc lacks those versions and refuses to load the library.
 * Every such function also exists under an older version with the same behaviour, so the build
 * links with `--wrap=NAME` for each name below (CMakeLists.txt reads the names from this file):
 * the calls go to `__wrap_NAME`, which jumps to `NAME@OLD_VERSION`.
 *
 * On glibc before 2.34 the pthread, semaphore and dl functions live in libpthread.so.0 and
 * libdl.so.2, so the library also NEEDs those two (on a current glibc they are empty stubs).
 * The build checks the result (cmake/check_glibc_versions.cmake) and names any symbol a newer
 * toolchain adds, which then gets its line here.
 */
#include <sys/stat.h>

#if !defined(__linux__) || !defined(__GLIBC__)
#error "glibc_compat.c is for glibc on Linux only"
#endif

/* x86_64's oldest symbol versions are GLIBC_2.2.5 (a few functions came later, named below);
 * aarch64's glibc began at 2.17, so all its versions are GLIBC_2.17. */
#if defined(__x86_64__)
#define SHEAF_JUMP(target) "jmp " target "@PLT"
#define SHEAF_VERSION(x86_64_version) x86_64_version
#define SHEAF_STAT_VER 1
#elif defined(__aarch64__)
#define SHEAF_JUMP(target) "b " target
#define SHEAF_VERSION(x86_64_version) "GLIBC_2.17"
#define SHEAF_STAT_VER 0
#else
#error "glibc_compat.c knows the symbol versions of x86_64 and aarch64 only"
#endif

/* __wrap_NAME: a tail jump to NAME@VERSION, so every argument and the result pass through
 * untouched, whatever the function's signature. Hidden: nothing outside the library sees it. */
#define SHEAF_OLD(name, x86_64_version)                                                        \
    __asm__(".symver sheaf_old_" #name ", " #name "@" SHEAF_VERSION(x86_64_version) "\n"       \
            ".text\n"                                                                          \
            ".globl __wrap_" #name "\n"                                                        \
            ".hidden __wrap_" #name "\n"                                                       \
            ".type __wrap_" #name ", @function\n"                                              \
            "__wrap_" #name ":\n"                                                              \
            "    " SHEAF_JUMP("sheaf_old_" #name) "\n"                                         \
            ".size __wrap_" #name ", . - __wrap_" #name "\n")

#define SHEAF_OWN_DATA(name, type) __attribute__((visibility("hidden"))) type __wrap_##name

/* libm: new versions in 2.27 (float), 2.29 (double) and 2.35 (hypotf) only drop the SVID
 * error handling of the old ones; the results are the same. */
SHEAF_OLD(exp, "GLIBC_2.2.5");
SHEAF_OLD(exp2, "GLIBC_2.2.5");
SHEAF_OLD(log, "GLIBC_2.2.5");
SHEAF_OLD(log2, "GLIBC_2.2.5");
SHEAF_OLD(expf, "GLIBC_2.2.5");
SHEAF_OLD(exp2f, "GLIBC_2.2.5");
SHEAF_OLD(logf, "GLIBC_2.2.5");
SHEAF_OLD(log2f, "GLIBC_2.2.5");
SHEAF_OLD(powf, "GLIBC_2.2.5");
SHEAF_OLD(hypotf, "GLIBC_2.2.5");

/* libpthread before 2.34 (2.32 for pthread_sigmask and pthread_getaffinity_np). */
SHEAF_OLD(pthread_create, "GLIBC_2.2.5");
SHEAF_OLD(pthread_detach, "GLIBC_2.2.5");
SHEAF_OLD(pthread_join, "GLIBC_2.2.5");
SHEAF_OLD(pthread_kill, "GLIBC_2.2.5");
SHEAF_OLD(pthread_once, "GLIBC_2.2.5");
SHEAF_OLD(pthread_key_create, "GLIBC_2.2.5");
SHEAF_OLD(pthread_getspecific, "GLIBC_2.2.5");
SHEAF_OLD(pthread_setspecific, "GLIBC_2.2.5");
SHEAF_OLD(pthread_mutexattr_init, "GLIBC_2.2.5");
SHEAF_OLD(pthread_mutexattr_settype, "GLIBC_2.2.5");
SHEAF_OLD(pthread_mutexattr_destroy, "GLIBC_2.2.5");
SHEAF_OLD(pthread_condattr_setclock, "GLIBC_2.3.3");
SHEAF_OLD(pthread_sigmask, "GLIBC_2.2.5");
SHEAF_OLD(pthread_getaffinity_np, "GLIBC_2.3.4");
SHEAF_OLD(pthread_setname_np, "GLIBC_2.12");
SHEAF_OLD(sem_open, "GLIBC_2.2.5");
SHEAF_OLD(sem_init, "GLIBC_2.2.5");
SHEAF_OLD(sem_destroy, "GLIBC_2.2.5");
SHEAF_OLD(sem_post, "GLIBC_2.2.5");
SHEAF_OLD(sem_wait, "GLIBC_2.2.5");
SHEAF_OLD(sem_timedwait, "GLIBC_2.2.5");

/* libdl before 2.34. */
SHEAF_OLD(dlopen, "GLIBC_2.2.5");
SHEAF_OLD(dlsym, "GLIBC_2.2.5");
SHEAF_OLD(dlerror, "GLIBC_2.2.5");
SHEAF_OLD(dladdr, "GLIBC_2.2.5");

/* stat, lstat and fstat became functions in 2.33; before, <sys/stat.h> turned them into calls
 * of __xstat, __lxstat and __fxstat with the structure's version, which every glibc still has. */
#define SHEAF_OLD_STAT(name, old, first_parameter)                                             \
    int sheaf_old_##old(int, first_parameter, struct stat *);                                  \
    __asm__(".symver sheaf_old_" #old ", " #old "@" SHEAF_VERSION("GLIBC_2.2.5"));              \
    __attribute__((visibility("hidden"))) int __wrap_##name(first_parameter file, struct stat *buf); \
    int __wrap_##name(first_parameter file, struct stat *buf) {                                \
        return sheaf_old_##old(SHEAF_STAT_VER, file, buf);                                     \
    }

SHEAF_OLD_STAT(stat, __xstat, const char *)
SHEAF_OLD_STAT(lstat, __lxstat, const char *)
SHEAF_OLD_STAT(fstat, __fxstat, int)

/* libstdc++ is linked statically (the system's may be older than the one the runtime was built
 * with); GCC 11's reads glibc 2.32's __libc_single_threaded to skip atomic reference counting in
 * a process with one thread. Zero means "maybe more than one thread": always atomic, which is
 * what it does on a glibc without the variable. */
SHEAF_OWN_DATA(__libc_single_threaded, char) = 0;
