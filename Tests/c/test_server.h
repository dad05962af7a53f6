/*
 * test_server.h - runs Tests/server/api_server.py as a child process on a free loopback port and
 * talks to its control endpoints (/_stats, /_reset) with the harness's own HTTP client, so what
 * the server saw is checked independently of Sheaf.
 */
#ifndef SHEAF_TEST_SERVER_H
#define SHEAF_TEST_SERVER_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct test_server {
    pid_t pid;
    int stdin_fd;         /* closing it tells the server to exit (--exit-on-stdin-eof) */
    int stdout_fd;
    int port;
    char base_url[64];    /* "http://127.0.0.1:<port>" */
} test_server;

/* Starts the server and waits (bounded) for its "PORT <n>" line. Returns 1 on success. */
int test_server_start(test_server *server, const char *python, const char *script);

/* Closes its stdin, sends SIGTERM and reaps it (SIGKILL after a bounded wait). */
void test_server_stop(test_server *server);

/* GETs `path_and_query` from the server and parses the JSON body; NULL (and a message) on failure. */
json_t *test_server_get_json(const test_server *server, const char *path_and_query);

/* Clears the server's counters, log and injected-failure counts. Returns 1 on success. */
int test_server_reset(const test_server *server);

/* The server's /_stats object (free with json_decref), or NULL. */
json_t *test_server_stats(const test_server *server);

/* max_in_flight from a stats object (-1 if missing). */
long long stats_max_in_flight(const json_t *stats);

/*
 * Counts log entries for `path` (no query; NULL = any list path, i.e. not a "/_" control path)
 * whose query has `param`=`value` (param NULL = every entry of that path).
 */
size_t stats_count_requests(const json_t *stats, const char *path, const char *param, const char *value);

/* Counts log entries whose Authorization header is exactly `authorization` (NULL: any non-null). */
size_t stats_count_authorization(const json_t *stats, const char *authorization);

#endif
