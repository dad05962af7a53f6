#ifndef SHEAF_CCURL_H
#define SHEAF_CCURL_H
/*
 * libcurl, loaded when first needed (dlopen) rather than linked: libsheaf.so does not NEED
 * libcurl.so.4, so one build runs wherever some libcurl 7.68 or later is installed (a Python
 * wheel can then pass auditwheel without carrying its own curl, OpenSSL and CA paths), and a
 * machine without libcurl gets a clear error naming the package to install instead of a library
 * that does not load. <curl/curl.h> gives the types and constants only; every call goes through
 * the scurl_* functions below, which call the loaded library.
 */
#include <curl/curl.h>

/* Loads and initialises libcurl once (pthread_once: thread-safe, and cheap after the first
 * call); NULL when it is usable, else why not (static text). */
const char *scurl_load(void);

CURL *scurl_easy_init(void);
void scurl_easy_cleanup(CURL *handle);
const char *scurl_easy_strerror(CURLcode code);
CURLM *scurl_multi_init(void);
CURLMcode scurl_multi_add_handle(CURLM *multi, CURL *handle);
CURLMcode scurl_multi_remove_handle(CURLM *multi, CURL *handle);
CURLMcode scurl_multi_perform(CURLM *multi, int *running);
CURLMcode scurl_multi_poll(CURLM *multi, struct curl_waitfd *extra, unsigned int count, int timeout_ms, int *ready);
CURLMcode scurl_multi_wakeup(CURLM *multi);
CURLMsg *scurl_multi_info_read(CURLM *multi, int *left);
CURLMcode scurl_multi_cleanup(CURLM *multi);
struct curl_slist *scurl_slist_append(struct curl_slist *list, const char *text);
void scurl_slist_free_all(struct curl_slist *list);
/* The loaded libcurl's version (CURLVERSION_NOW); NULL before it is loaded. */
const curl_version_info_data *scurl_version_info(void);

/* curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic, which Swift cannot
 * call: typed ones. */
CURLcode scurl_easy_setopt_long(CURL *h, CURLoption o, long v);
CURLcode scurl_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v);
CURLcode scurl_easy_setopt_ptr(CURL *h, CURLoption o, const void *v);
CURLcode scurl_easy_setopt_write(CURL *h, size_t (*f)(char *, size_t, size_t, void *));
CURLcode scurl_easy_setopt_header(CURL *h, size_t (*f)(char *, size_t, size_t, void *));
CURLcode scurl_easy_getinfo_long(CURL *h, CURLINFO i, long *v);
CURLcode scurl_easy_getinfo_ptr(CURL *h, CURLINFO i, void **v);
CURLcode scurl_easy_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v);
CURLMcode scurl_multi_setopt_long(CURLM *m, CURLMoption o, long v);
/* Restricts a handle to http and https (CURLOPT_PROTOCOLS_STR from 7.85, the bitmask before). */
CURLcode scurl_easy_restrict_to_http(CURL *h);
/* Lets removing a handle detach (not join) a threaded-resolver lookup still running (7.87+;
 * nothing before). */
CURLcode scurl_easy_allow_quick_exit(CURL *h);

/* The CURLcode of a CURLMSG_DONE message (the anonymous union is awkward from Swift). */
static inline CURLcode scurl_msg_result(const CURLMsg *m) { return m->data.result; }
/* Names the calling thread (shown by top, gdb, /proc); a no-op where unsupported. */
void scurl_name_current_thread(const char *name);
#endif
