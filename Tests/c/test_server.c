#define _GNU_SOURCE
#include "test_server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "http_get.h"

enum { STARTUP_TIMEOUT_MS = 30000, STOP_TIMEOUT_MS = 5000, CONTROL_TIMEOUT_MS = 15000 };

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int test_server_start(test_server *server, const char *python, const char *script) {
    int to_child[2], from_child[2];
    memset(server, 0, sizeof *server);
    server->pid = -1;
    server->stdin_fd = server->stdout_fd = -1;
    /* O_CLOEXEC: a second server must not inherit the first one's stdin, or it never sees EOF. */
    if (pipe2(to_child, O_CLOEXEC) != 0) return 0;
    if (pipe2(from_child, O_CLOEXEC) != 0) {
        close(to_child[0]);
        close(to_child[1]);
        return 0;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        close(to_child[0]); close(to_child[1]); close(from_child[0]); close(from_child[1]);
        return 0;
    }
    if (pid == 0) {
        dup2(to_child[0], STDIN_FILENO);
        dup2(from_child[1], STDOUT_FILENO);
        char *argv[] = { (char *)python, (char *)script, "--port", "0", "--exit-on-stdin-eof", "--quiet", NULL };
        execvp(python, argv);
        fprintf(stderr, "exec %s: %s\n", python, strerror(errno));
        _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    server->pid = pid;
    server->stdin_fd = to_child[1];
    server->stdout_fd = from_child[0];

    char line[128];
    size_t length = 0;
    long long deadline = now_ms() + STARTUP_TIMEOUT_MS;
    while (length < sizeof line - 1) {
        long long left = deadline - now_ms();
        struct pollfd p = { .fd = server->stdout_fd, .events = POLLIN };
        int ready = left > 0 ? poll(&p, 1, (int)left) : 0;
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) {
            fprintf(stderr, "test server: no PORT line within %d ms\n", STARTUP_TIMEOUT_MS);
            break;
        }
        ssize_t n = read(server->stdout_fd, line + length, 1);
        if (n <= 0) {
            fprintf(stderr, "test server: exited before printing its port\n");
            break;
        }
        length++;
        if (line[length - 1] == '\n') {
            line[length] = '\0';
            if (sscanf(line, "PORT %d", &server->port) == 1 && server->port > 0) {
                snprintf(server->base_url, sizeof server->base_url, "http://127.0.0.1:%d", server->port);
                return 1;
            }
            fprintf(stderr, "test server: unexpected line: %s", line);
            break;
        }
    }
    test_server_stop(server);
    return 0;
}

void test_server_stop(test_server *server) {
    if (server->stdin_fd >= 0) close(server->stdin_fd);
    server->stdin_fd = -1;
    if (server->pid > 0) {
        int status;
        kill(server->pid, SIGTERM);
        long long deadline = now_ms() + STOP_TIMEOUT_MS;
        while (waitpid(server->pid, &status, WNOHANG) == 0) {
            if (now_ms() > deadline) {
                fprintf(stderr, "test server %d did not stop; killing it\n", (int)server->pid);
                kill(server->pid, SIGKILL);
                waitpid(server->pid, &status, 0);
                break;
            }
            usleep(10000);
        }
    }
    server->pid = -1;
    if (server->stdout_fd >= 0) close(server->stdout_fd);
    server->stdout_fd = -1;
}

json_t *test_server_get_json(const test_server *server, const char *path_and_query) {
    char url[4096], error[512];
    http_response response;
    snprintf(url, sizeof url, "%s%s", server->base_url, path_and_query);
    if (http_get(url, 0, NULL, NULL, CONTROL_TIMEOUT_MS, 0, &response, error, sizeof error) != HTTP_GET_OK) {
        fprintf(stderr, "    GET %s: %s\n", url, error);
        return NULL;
    }
    json_error_t json_error;
    json_t *json = json_loadb(response.body, response.body_length, 0, &json_error);
    if (json == NULL || response.status != 200) {
        fprintf(stderr, "    GET %s: status %d, body %.200s\n", url, response.status, response.body);
        json_decref(json);
        json = NULL;
    }
    http_response_free(&response);
    return json;
}

int test_server_reset(const test_server *server) {
    json_t *answer = test_server_get_json(server, "/_reset");
    json_decref(answer);
    return answer != NULL;
}

json_t *test_server_stats(const test_server *server) {
    return test_server_get_json(server, "/_stats");
}

long long stats_max_in_flight(const json_t *stats) {
    json_t *value = json_object_get(stats, "max_in_flight");
    return json_is_integer(value) ? (long long)json_integer_value(value) : -1;
}

static int query_has(const char *query, const char *param, const char *value) {
    size_t param_length = strlen(param), value_length = strlen(value);
    const char *p = query;
    while (p && *p) {
        size_t segment = strcspn(p, "&");
        if (segment == param_length + 1 + value_length && strncmp(p, param, param_length) == 0 &&
            p[param_length] == '=' && strncmp(p + param_length + 1, value, value_length) == 0)
            return 1;
        p += segment;
        if (*p == '&') p++;
    }
    return 0;
}

size_t stats_count_requests(const json_t *stats, const char *path, const char *param, const char *value) {
    size_t count = 0, index;
    json_t *entry;
    json_array_foreach(json_object_get(stats, "log"), index, entry) {
        const char *logged = json_string_value(json_object_get(entry, "path"));
        if (logged == NULL) continue;
        size_t path_length = strcspn(logged, "?");
        if (path != NULL ? (strlen(path) != path_length || strncmp(logged, path, path_length) != 0)
                         : strncmp(logged, "/_", 2) == 0)
            continue;
        const char *query = logged[path_length] == '?' ? logged + path_length + 1 : "";
        if (param == NULL || query_has(query, param, value)) count++;
    }
    return count;
}

size_t stats_count_authorization(const json_t *stats, const char *authorization) {
    size_t count = 0, index;
    json_t *entry;
    json_array_foreach(json_object_get(stats, "log"), index, entry) {
        const char *logged = json_string_value(json_object_get(entry, "authorization"));
        if (logged != NULL && (authorization == NULL || strcmp(logged, authorization) == 0)) count++;
    }
    return count;
}
