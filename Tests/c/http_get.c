#define _GNU_SOURCE
#include "http_get.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct buffer {
    char *data;
    size_t length;
    size_t capacity;
} buffer;

static int buffer_append(buffer *b, const char *data, size_t length) {
    if (b->length + length + 1 > b->capacity) {
        size_t capacity = b->capacity ? b->capacity : 4096;
        while (capacity < b->length + length + 1) capacity *= 2;
        char *grown = realloc(b->data, capacity);
        if (grown == NULL) return 0;
        b->data = grown;
        b->capacity = capacity;
    }
    memcpy(b->data + b->length, data, length);
    b->length += length;
    b->data[b->length] = '\0';
    return 1;
}

static int buffer_appendf(buffer *b, const char *format, ...) {
    char stack[2048];
    va_list args;
    va_start(args, format);
    int n = vsnprintf(stack, sizeof stack, format, args);
    va_end(args);
    if (n < 0) return 0;
    if ((size_t)n < sizeof stack) return buffer_append(b, stack, (size_t)n);
    char *heap = malloc((size_t)n + 1);
    if (heap == NULL) return 0;
    va_start(args, format);
    vsnprintf(heap, (size_t)n + 1, format, args);
    va_end(args);
    int ok = buffer_append(b, heap, (size_t)n);
    free(heap);
    return ok;
}

static http_get_status fail_with(http_get_status status, char *error, size_t error_size,
                                 const char *format, ...) {
    if (error != NULL && error_size > 0) {
        va_list args;
        va_start(args, format);
        vsnprintf(error, error_size, format, args);
        va_end(args);
    }
    return status;
}

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Milliseconds left before `deadline` for poll(): -1 = no deadline, 0 = expired. */
static int remaining_ms(long long deadline) {
    if (deadline < 0) return -1;
    long long left = deadline - now_ms();
    if (left <= 0) return 0;
    return left > 1000000 ? 1000000 : (int)left;
}

/* Splits http://host[:port]/path?query; host may be [v6]. */
static int parse_url(const char *url, char *host, size_t host_size, char *port, size_t port_size,
                     const char **target) {
    const char *p;
    if (strncmp(url, "http://", 7) != 0) return 0;
    p = url + 7;
    const char *authority_end = p + strcspn(p, "/?#");
    const char *host_start = p, *host_end, *port_start = NULL;
    if (*p == '[') {
        host_start = p + 1;
        host_end = memchr(host_start, ']', (size_t)(authority_end - host_start));
        if (host_end == NULL) return 0;
        if (host_end + 1 < authority_end && host_end[1] == ':') port_start = host_end + 2;
    } else {
        host_end = memchr(p, ':', (size_t)(authority_end - p));
        if (host_end != NULL) port_start = host_end + 1; else host_end = authority_end;
    }
    size_t host_length = (size_t)(host_end - host_start);
    if (host_length == 0 || host_length >= host_size) return 0;
    memcpy(host, host_start, host_length);
    host[host_length] = '\0';
    if (port_start != NULL) {
        size_t port_length = (size_t)(authority_end - port_start);
        if (port_length == 0 || port_length >= port_size) return 0;
        memcpy(port, port_start, port_length);
        port[port_length] = '\0';
    } else {
        snprintf(port, port_size, "80");
    }
    *target = *authority_end == '/' || *authority_end == '?' ? authority_end : "/";
    return 1;
}

static int connect_to(const char *host, const char *port, long long deadline, http_get_status *status,
                      char *error, size_t error_size) {
    struct addrinfo hints, *addresses = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, port, &hints, &addresses);
    if (rc != 0) {
        *status = fail_with(HTTP_GET_DNS, error, error_size, "cannot resolve %s: %s", host, gai_strerror(rc));
        return -1;
    }
    int fd = -1, last_errno = 0;
    for (struct addrinfo *a = addresses; a != NULL && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
        if (fd < 0) { last_errno = errno; continue; }
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
            last_errno = errno;
            close(fd);
            fd = -1;
            continue;
        }
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        int ready = poll(&p, 1, remaining_ms(deadline));
        int so_error = 0;
        socklen_t length = sizeof so_error;
        if (ready <= 0) {
            last_errno = ready == 0 ? ETIMEDOUT : errno;
        } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &length) != 0 || so_error != 0) {
            last_errno = so_error ? so_error : errno;
        } else {
            break;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(addresses);
    if (fd < 0) {
        *status = fail_with(last_errno == ETIMEDOUT ? HTTP_GET_TIMEOUT : HTTP_GET_CONNECT, error, error_size,
                            "cannot connect to %s:%s: %s", host, port, strerror(last_errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static int send_all(int fd, const char *data, size_t length, long long deadline) {
    while (length > 0) {
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        if (poll(&p, 1, remaining_ms(deadline)) <= 0) return 0;
        ssize_t n = send(fd, data, length, MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (n <= 0) return 0;
        data += n;
        length -= (size_t)n;
    }
    return 1;
}

/* Decodes a chunked body in place; returns the decoded length or -1. */
static long decode_chunked(char *data, size_t length) {
    size_t in = 0, out = 0;
    for (;;) {
        char *line_end = memmem(data + in, length - in, "\r\n", 2);
        if (line_end == NULL) return -1;
        char *end;
        unsigned long size = strtoul(data + in, &end, 16);
        if (end == data + in) return -1;
        in = (size_t)(line_end - data) + 2;
        if (size == 0) return (long)out;
        if (in + size + 2 > length) return -1;
        memmove(data + out, data + in, size);
        out += size;
        in += size + 2;
    }
}

static http_get_status parse_response(buffer *raw, size_t max_body, http_response *response,
                                      char *error, size_t error_size) {
    char *head_end = raw->data ? strstr(raw->data, "\r\n\r\n") : NULL;
    if (head_end == NULL || strncmp(raw->data, "HTTP/1.", 7) != 0)
        return fail_with(HTTP_GET_PROTOCOL, error, error_size, "not an HTTP/1.x response");
    *head_end = '\0';
    char *body = head_end + 4;
    size_t body_length = raw->length - (size_t)(body - raw->data);

    char *line = raw->data, *save = NULL;
    char *status_line = strtok_r(line, "\r\n", &save);
    char *space = status_line ? strchr(status_line, ' ') : NULL;
    if (space == NULL) return fail_with(HTTP_GET_PROTOCOL, error, error_size, "bad status line");
    response->status = atoi(space + 1);
    if (response->status < 100 || response->status > 999)
        return fail_with(HTTP_GET_PROTOCOL, error, error_size, "bad status line");

    long content_length = -1;
    int chunked = 0;
    for (char *header = strtok_r(NULL, "\r\n", &save); header != NULL; header = strtok_r(NULL, "\r\n", &save)) {
        char *colon = strchr(header, ':');
        if (colon == NULL) continue;
        *colon = '\0';
        char *value = colon + 1;
        while (*value == ' ' || *value == '\t') value++;
        http_header *grown = realloc(response->headers, (response->header_count + 1) * sizeof *grown);
        if (grown == NULL) return fail_with(HTTP_GET_PROTOCOL, error, error_size, "out of memory");
        response->headers = grown;
        grown[response->header_count].name = strdup(header);
        grown[response->header_count].value = strdup(value);
        response->header_count++;
        if (strcasecmp(header, "Content-Length") == 0) content_length = atol(value);
        if (strcasecmp(header, "Transfer-Encoding") == 0 && strcasestr(value, "chunked")) chunked = 1;
    }
    if (chunked) {
        long decoded = decode_chunked(body, body_length);
        if (decoded < 0) return fail_with(HTTP_GET_PROTOCOL, error, error_size, "bad chunked body");
        body_length = (size_t)decoded;
    } else if (content_length >= 0) {
        if ((size_t)content_length > body_length)
            return fail_with(HTTP_GET_PROTOCOL, error, error_size, "body shorter than Content-Length");
        body_length = (size_t)content_length;
    }
    if (max_body > 0 && body_length > max_body)
        return fail_with(HTTP_GET_TOO_LARGE, error, error_size, "body of %zu bytes exceeds %zu", body_length, max_body);
    response->body = malloc(body_length + 1);
    if (response->body == NULL) return fail_with(HTTP_GET_PROTOCOL, error, error_size, "out of memory");
    memcpy(response->body, body, body_length);
    response->body[body_length] = '\0';
    response->body_length = body_length;
    return HTTP_GET_OK;
}

http_get_status http_get(const char *url, size_t header_count, const char *const *names,
                         const char *const *values, long timeout_ms, size_t max_body,
                         http_response *response, char *error, size_t error_size) {
    return http_send("GET", url, header_count, names, values, NULL, 0, timeout_ms, max_body, response, error, error_size);
}

http_get_status http_send(const char *method, const char *url, size_t header_count, const char *const *names,
                          const char *const *values, const char *body, size_t body_length, long timeout_ms,
                          size_t max_body, http_response *response, char *error, size_t error_size) {
    char host[256], port[16];
    const char *target;
    http_get_status status = HTTP_GET_OK;
    long long deadline = timeout_ms > 0 ? now_ms() + timeout_ms : -1;
    buffer request = {0}, raw = {0};

    memset(response, 0, sizeof *response);
    if (url == NULL || !parse_url(url, host, sizeof host, port, sizeof port, &target))
        return fail_with(HTTP_GET_BAD_URL, error, error_size, "not an http URL: %s", url ? url : "(null)");

    int fd = connect_to(host, port, deadline, &status, error, error_size);
    if (fd < 0) return status;

    /* Connection: close, so the answer ends where the connection does. */
    int ok = buffer_appendf(&request, "%s %.*s HTTP/1.1\r\nHost: %s%s%s:%s\r\nConnection: close\r\n", method,
                            (int)strcspn(target, "#"), target, strchr(host, ':') ? "[" : "", host,
                            strchr(host, ':') ? "]" : "", port);
    for (size_t i = 0; ok && i < header_count; i++) {
        if (strcasecmp(names[i], "Host") == 0 || strcasecmp(names[i], "Connection") == 0
            || strcasecmp(names[i], "Content-Length") == 0) continue;
        ok = buffer_appendf(&request, "%s: %s\r\n", names[i], values[i]);
    }
    if (ok && (body_length > 0 || strcmp(method, "GET") != 0)) ok = buffer_appendf(&request, "Content-Length: %zu\r\n", body_length);
    ok = ok && buffer_append(&request, "\r\n", 2);
    if (ok && body_length > 0) ok = buffer_append(&request, body, body_length);
    if (!ok || !send_all(fd, request.data, request.length, deadline)) {
        status = fail_with(remaining_ms(deadline) == 0 ? HTTP_GET_TIMEOUT : HTTP_GET_CONNECT, error, error_size,
                           "cannot send the request to %s", url);
        goto done;
    }

    for (;;) {
        char chunk[16384];
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int ready = poll(&p, 1, remaining_ms(deadline));
        if (ready == 0) {
            status = fail_with(HTTP_GET_TIMEOUT, error, error_size, "no complete answer from %s in %ld ms", url, timeout_ms);
            goto done;
        }
        if (ready < 0) {
            if (errno == EINTR) continue;
            status = fail_with(HTTP_GET_CONNECT, error, error_size, "poll: %s", strerror(errno));
            goto done;
        }
        ssize_t n = recv(fd, chunk, sizeof chunk, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (n < 0) {
            status = fail_with(HTTP_GET_CONNECT, error, error_size, "recv from %s: %s", url, strerror(errno));
            goto done;
        }
        if (n == 0) break;
        if (max_body > 0 && raw.length > max_body + 65536) {
            status = fail_with(HTTP_GET_TOO_LARGE, error, error_size, "answer from %s exceeds %zu bytes", url, max_body);
            goto done;
        }
        if (!buffer_append(&raw, chunk, (size_t)n)) {
            status = fail_with(HTTP_GET_PROTOCOL, error, error_size, "out of memory");
            goto done;
        }
    }
    status = parse_response(&raw, max_body, response, error, error_size);

done:
    close(fd);
    free(request.data);
    free(raw.data);
    if (status != HTTP_GET_OK) http_response_free(response);
    return status;
}

void http_response_free(http_response *response) {
    if (response == NULL) return;
    for (size_t i = 0; i < response->header_count; i++) {
        free(response->headers[i].name);
        free(response->headers[i].value);
    }
    free(response->headers);
    free(response->body);
    memset(response, 0, sizeof *response);
}

const char *http_response_header(const http_response *response, const char *name) {
    for (size_t i = 0; i < response->header_count; i++)
        if (strcasecmp(response->headers[i].name, name) == 0) return response->headers[i].value;
    return NULL;
}
