/* libcurl, loaded at run time: see include/CCurl.h. */
#define CURL_DISABLE_DEPRECATION  /* CURLOPT_PROTOCOLS, for libcurl before 7.85 */
#include "CCurl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

/* The functions Sheaf calls, from the loaded library. */
static struct {
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    const char *(*easy_strerror)(CURLcode);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_setopt)(CURLM *, CURLMoption, ...);
    CURLMcode (*multi_add_handle)(CURLM *, CURL *);
    CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
    CURLMcode (*multi_perform)(CURLM *, int *);
    CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd *, unsigned int, int, int *);
    CURLMcode (*multi_wakeup)(CURLM *);
    CURLMsg *(*multi_info_read)(CURLM *, int *);
    CURLMcode (*multi_cleanup)(CURLM *);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    curl_version_info_data *(*version_info)(CURLversion);
} api;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *failure = "libcurl was not loaded";
static char failure_text[768];
static unsigned int version_num;

/* The names libcurl 4's ABI goes by: Debian and Ubuntu also ship a GnuTLS build of it; macOS. */
static const char *const library_names[] = {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl.4.dylib"};

static void load(void) {
    void *library = NULL;
    const char *name = NULL;
    char first_error[256] = "";
    for (size_t i = 0; i < sizeof library_names / sizeof *library_names && library == NULL; i++) {
        name = library_names[i];
        library = dlopen(name, RTLD_NOW | RTLD_LOCAL);   /* never closed: curl keeps global state */
        if (library == NULL && first_error[0] == '\0') {
            const char *error = dlerror();
            snprintf(first_error, sizeof first_error, "%s", error ? error : name);
        }
    }
    if (library == NULL) {
        snprintf(failure_text, sizeof failure_text,
                 "libcurl is not installed (%s): install libcurl 7.68 or later, e.g. the Debian or Ubuntu "
                 "package libcurl4, Fedora's or RHEL's libcurl, Alpine's libcurl", first_error);
        failure = failure_text;
        return;
    }
#define RESOLVE(field, symbol)                                                                    \
    if ((*(void **)&api.field = dlsym(library, symbol)) == NULL) {                                \
        snprintf(failure_text, sizeof failure_text, "%s has no %s: libcurl 7.68 or later is needed", \
                 name, symbol);                                                                   \
        failure = failure_text;                                                                   \
        return;                                                                                   \
    }
    RESOLVE(global_init, "curl_global_init")
    RESOLVE(easy_init, "curl_easy_init")
    RESOLVE(easy_cleanup, "curl_easy_cleanup")
    RESOLVE(easy_setopt, "curl_easy_setopt")
    RESOLVE(easy_getinfo, "curl_easy_getinfo")
    RESOLVE(easy_strerror, "curl_easy_strerror")
    RESOLVE(multi_init, "curl_multi_init")
    RESOLVE(multi_setopt, "curl_multi_setopt")
    RESOLVE(multi_add_handle, "curl_multi_add_handle")
    RESOLVE(multi_remove_handle, "curl_multi_remove_handle")
    RESOLVE(multi_perform, "curl_multi_perform")
    RESOLVE(multi_poll, "curl_multi_poll")
    RESOLVE(multi_wakeup, "curl_multi_wakeup")
    RESOLVE(multi_info_read, "curl_multi_info_read")
    RESOLVE(multi_cleanup, "curl_multi_cleanup")
    RESOLVE(slist_append, "curl_slist_append")
    RESOLVE(slist_free_all, "curl_slist_free_all")
    RESOLVE(version_info, "curl_version_info")
#undef RESOLVE
    const curl_version_info_data *version = api.version_info(CURLVERSION_NOW);
    version_num = version->version_num;
    if (version_num < 0x074400) {
        snprintf(failure_text, sizeof failure_text, "%s is libcurl %s: 7.68 or later is needed", name,
                 version->version);
        failure = failure_text;
        return;
    }
    /* Never undone (curl_global_cleanup): other code in the process may still use libcurl. */
    CURLcode initialised = api.global_init(CURL_GLOBAL_DEFAULT);
    if (initialised != CURLE_OK) {
        snprintf(failure_text, sizeof failure_text, "curl_global_init failed (curl error %d)", (int)initialised);
        failure = failure_text;
        return;
    }
    failure = NULL;
}

const char *scurl_load(void) {
    pthread_once(&once, load);
    return failure;
}

CURL *scurl_easy_init(void) { return api.easy_init(); }
void scurl_easy_cleanup(CURL *handle) { api.easy_cleanup(handle); }
const char *scurl_easy_strerror(CURLcode code) { return api.easy_strerror(code); }
CURLM *scurl_multi_init(void) { return api.multi_init(); }
CURLMcode scurl_multi_add_handle(CURLM *multi, CURL *handle) { return api.multi_add_handle(multi, handle); }
CURLMcode scurl_multi_remove_handle(CURLM *multi, CURL *handle) { return api.multi_remove_handle(multi, handle); }
CURLMcode scurl_multi_perform(CURLM *multi, int *running) { return api.multi_perform(multi, running); }
CURLMcode scurl_multi_poll(CURLM *multi, struct curl_waitfd *extra, unsigned int count, int timeout_ms, int *ready) {
    return api.multi_poll(multi, extra, count, timeout_ms, ready);
}
CURLMcode scurl_multi_wakeup(CURLM *multi) { return api.multi_wakeup(multi); }
CURLMsg *scurl_multi_info_read(CURLM *multi, int *left) { return api.multi_info_read(multi, left); }
CURLMcode scurl_multi_cleanup(CURLM *multi) { return api.multi_cleanup(multi); }
struct curl_slist *scurl_slist_append(struct curl_slist *list, const char *text) { return api.slist_append(list, text); }
void scurl_slist_free_all(struct curl_slist *list) { api.slist_free_all(list); }
const curl_version_info_data *scurl_version_info(void) {
    return scurl_load() == NULL ? api.version_info(CURLVERSION_NOW) : NULL;
}

CURLcode scurl_easy_setopt_long(CURL *h, CURLoption o, long v) { return api.easy_setopt(h, o, v); }
CURLcode scurl_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return api.easy_setopt(h, o, v); }
CURLcode scurl_easy_setopt_ptr(CURL *h, CURLoption o, const void *v) { return api.easy_setopt(h, o, v); }
CURLcode scurl_easy_setopt_write(CURL *h, size_t (*f)(char *, size_t, size_t, void *)) {
    return api.easy_setopt(h, CURLOPT_WRITEFUNCTION, f);
}
CURLcode scurl_easy_setopt_header(CURL *h, size_t (*f)(char *, size_t, size_t, void *)) {
    return api.easy_setopt(h, CURLOPT_HEADERFUNCTION, f);
}
CURLcode scurl_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return api.easy_getinfo(h, i, v); }
CURLcode scurl_easy_getinfo_ptr(CURL *h, CURLINFO i, void **v) { return api.easy_getinfo(h, i, v); }
CURLcode scurl_easy_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) { return api.easy_getinfo(h, i, v); }
CURLMcode scurl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return api.multi_setopt(m, o, v); }

/* The option numbers are the ABI's, so they are usable whatever headers this was built with. */
CURLcode scurl_easy_restrict_to_http(CURL *h) {
    if (version_num >= 0x075500) return api.easy_setopt(h, (CURLoption)(CURLOPTTYPE_STRINGPOINT + 318), "http,https");
    return api.easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
}

CURLcode scurl_easy_allow_quick_exit(CURL *h) {
    if (version_num >= 0x075700) return api.easy_setopt(h, (CURLoption)(CURLOPTTYPE_LONG + 322), 1L);
    return CURLE_OK;
}

void scurl_name_current_thread(const char *name) {
#ifdef __linux__
    (void)prctl(PR_SET_NAME, name, 0, 0, 0);
#else
    (void)name;
#endif
}
