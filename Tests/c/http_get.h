/*
 * http_get.h - a tiny blocking HTTP/1.1 GET client over a plain socket, for loopback test servers
 * only (http, no TLS). The harness uses it to read the server's /_stats and /_reset, to walk a
 * list independently of Sheaf, and as the body of a blocking custom transport.
 */
#ifndef SHEAF_TEST_HTTP_GET_H
#define SHEAF_TEST_HTTP_GET_H

#include <stddef.h>

typedef enum http_get_status {
    HTTP_GET_OK = 0,
    HTTP_GET_BAD_URL,     /* not http://host[:port]/... */
    HTTP_GET_DNS,         /* the host did not resolve */
    HTTP_GET_CONNECT,     /* connection refused or reset */
    HTTP_GET_TIMEOUT,     /* no complete answer in time */
    HTTP_GET_PROTOCOL,    /* the answer is not HTTP/1.x */
    HTTP_GET_TOO_LARGE    /* the body exceeds the caller's cap */
} http_get_status;

typedef struct http_header {
    char *name;
    char *value;
} http_header;

typedef struct http_response {
    int status;
    http_header *headers;
    size_t header_count;
    char *body;            /* NUL-terminated for convenience; body_length excludes the NUL */
    size_t body_length;
} http_response;

/*
 * GETs `url` with the given extra request headers (`names[i]: values[i]`; a Host or Connection
 * header among them is replaced by the client's own). timeout_ms 0 = none; max_body 0 = no cap.
 * On HTTP_GET_OK *response owns its memory (http_response_free); otherwise `error` (if not NULL)
 * says what happened.
 */
http_get_status http_get(const char *url, size_t header_count, const char *const *names,
                         const char *const *values, long timeout_ms, size_t max_body,
                         http_response *response, char *error, size_t error_size);

/* As http_get, with `method` and a body of `body_length` bytes (sent with its Content-Length). */
http_get_status http_send(const char *method, const char *url, size_t header_count, const char *const *names,
                          const char *const *values, const char *body, size_t body_length, long timeout_ms,
                          size_t max_body, http_response *response, char *error, size_t error_size);

void http_response_free(http_response *response);

/* The value of the first header called `name` (case-insensitive), or NULL. */
const char *http_response_header(const http_response *response, const char *name);

#endif
