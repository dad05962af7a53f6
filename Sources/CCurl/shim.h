#ifndef SHEAF_CCURL_SHIM_H
#define SHEAF_CCURL_SHIM_H
#include <curl/curl.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

/* curl_easy_setopt and curl_multi_setopt are variadic, which Swift cannot call: typed wrappers. */
static inline CURLcode scurl_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode scurl_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode scurl_easy_setopt_ptr(CURL *h, CURLoption o, const void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode scurl_easy_setopt_write(CURL *h, size_t (*f)(char *, size_t, size_t, void *)) { return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, f); }
static inline CURLcode scurl_easy_setopt_header(CURL *h, size_t (*f)(char *, size_t, size_t, void *)) { return curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, f); }
static inline CURLcode scurl_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode scurl_easy_getinfo_ptr(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLMcode scurl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
static inline CURLcode scurl_easy_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }

/* CURL_GLOBAL_DEFAULT is a macro expression; a plain value for Swift. */
static inline long scurl_global_default_flags(void) { return CURL_GLOBAL_DEFAULT; }
static inline const curl_version_info_data *scurl_version_info(void) { return curl_version_info(CURLVERSION_NOW); }

/* The CURLcode of a CURLMSG_DONE message (the anonymous union is awkward from Swift). */
static inline CURLcode scurl_msg_result(const CURLMsg *m) { return m->data.result; }

/* Restricts a handle to http and https; CURLOPT_PROTOCOLS_STR exists from 7.85, the bitmask before. */
static inline CURLcode scurl_easy_restrict_to_http(CURL *h) {
#if LIBCURL_VERSION_NUM >= 0x075500
    return curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    return curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
}
/* Names the calling thread (shown by top, gdb, /proc); a no-op where unsupported. */
static inline void scurl_name_current_thread(const char *name) {
#ifdef __linux__
    (void)prctl(PR_SET_NAME, name, 0, 0, 0);
#else
    (void)name;
#endif
}
/* Lets removing a handle detach (not join) a threaded-resolver lookup still running (7.87+). */
static inline CURLcode scurl_easy_allow_quick_exit(CURL *h) {
#if LIBCURL_VERSION_NUM >= 0x075700
    return curl_easy_setopt(h, CURLOPT_QUICK_EXIT, 1L);
#else
    (void)h;
    return CURLE_OK;
#endif
}
#endif
