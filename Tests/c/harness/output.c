/*
 * output.c - output written by the library: sheaf_list_start_write to a function and
 * sheaf_list_start_write_fd to a file descriptor, in both formats, stopped and failing.
 */
#include "harness.h"

#include <fcntl.h>
#include <unistd.h>

/* Collects what sheaf_list_start_write hands over; stops after `stop_after` calls (0: never). */
struct collected { char *bytes; size_t length; int calls, stop_after; atomic_int destroyed; };

static int collect_output(const char *bytes, size_t length, void *user_data) {
    struct collected *c = user_data;
    char *grown = realloc(c->bytes, c->length + length);
    if (grown == NULL) return 1;
    memcpy(grown + c->length, bytes, length);
    c->bytes = grown;
    c->length += length;
    return ++c->calls == c->stop_after;
}

static void destroy_collected(void *user_data) { atomic_fetch_add(&((struct collected *)user_data)->destroyed, 1); }

/* The items of JSON lines, as one array (NULL when a line is not JSON). */
static json_t *parse_lines(const char *text, size_t length) {
    json_t *items = json_array();
    for (size_t start = 0; start < length;) {
        const char *end = memchr(text + start, '\n', length - start);
        if (end == NULL) { json_decref(items); return NULL; }   /* every line ends with "\n" */
        json_t *item = json_loadb(text + start, (size_t)(end - text) - start, 0, NULL);
        if (item == NULL) { json_decref(items); return NULL; }
        json_array_append_new(items, item);
        start = (size_t)(end - text) + 1;
    }
    return items;
}

void lists_write_their_items_to_a_function_or_a_file_descriptor(void) {
    sheaf_client *client = client_for(&g_server, NULL);
    /* To a function, in both formats; an indented server (items span lines) included. */
    for (int indented = 0; indented < 2; indented++) {
        for (int format = SHEAF_FORMAT_JSON; format <= SHEAF_FORMAT_JSON_LINES; format++) {
            struct collected out = { 0 };
            sheaf_list *list = standard_list(client, indented ? "&indent=1" : "");
            if (list == NULL) continue;
            CHECK_LIST_RESULT(list, sheaf_list_start_write(list, (sheaf_format)format, collect_output, &out, destroy_collected),
                              SHEAF_OK);
            CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_OK);
            /* The library's threads let go of their last references just after: wait (bounded). */
            for (int i = 0; i < 200 && atomic_load(&out.destroyed) == 0; i++) sleep_ms(10);
            CHECK_INT(atomic_load(&out.destroyed), 1);
            json_t *items = format == SHEAF_FORMAT_JSON ? parse_array(out.bytes, out.length) : parse_lines(out.bytes, out.length);
            CHECK_ITEMS(items, 0, list_size());
            CHECK(out.length > 0 && out.bytes[out.length - 1] == '\n');
            char *prefix = (char *)0x1;
            CHECK_LIST_RESULT(list, sheaf_list_prefix(list, &prefix, NULL), SHEAF_E_STATE);   /* not kept */
            sheaf_list_status status = status_of(list);
            CHECK_INT(status.items, list_size());
            CHECK_INT(status.state, SHEAF_LIST_ENDED);
            json_decref(items);
            free(out.bytes);
            sheaf_list_free(list);
        }
    }
    /* A function that asks to stop: SHEAF_E_STOPPED, with a well-formed array of what came before. */
    struct collected stopping = { .stop_after = 2 };
    sheaf_list *list = standard_list(client, "&latency_ms=5");
    if (list != NULL) {
        CHECK_LIST_RESULT(list, sheaf_list_start_write(list, SHEAF_FORMAT_JSON, collect_output, &stopping, NULL), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_E_STOPPED);
        CHECK_INT(stopping.calls, 2);
        free(stopping.bytes);
        sheaf_list_free(list);
    }
    /* To a file descriptor; then one that cannot be written: SHEAF_E_IO with the system's reason. */
    FILE *file = tmpfile();
    list = standard_list(client, "");
    if (file != NULL && list != NULL) {
        CHECK_LIST_RESULT(list, sheaf_list_start_write_fd(list, fileno(file), SHEAF_FORMAT_JSON_LINES), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_OK);
        fseek(file, 0, SEEK_END);
        long size = ftell(file);
        char *text = size > 0 ? malloc((size_t)size) : NULL;
        rewind(file);
        CHECK(text != NULL && fread(text, 1, (size_t)size, file) == (size_t)size);
        json_t *items = text != NULL ? parse_lines(text, (size_t)size) : NULL;
        CHECK_ITEMS(items, 0, list_size());
        json_decref(items);
        free(text);
    }
    sheaf_list_free(list);
    if (file != NULL) fclose(file);
    int read_only = open("/dev/null", O_RDONLY);
    list = standard_list(client, "");
    if (list != NULL && read_only >= 0) {
        CHECK_LIST_RESULT(list, sheaf_list_start_write_fd(list, read_only, SHEAF_FORMAT_JSON), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_E_IO);
        sheaf_error *error = sheaf_list_error(list);
        CHECK(error != NULL && strstr(error->message, "could not be written") != NULL);
        sheaf_error_free(error);
    }
    sheaf_list_free(list);
    if (read_only >= 0) close(read_only);
    /* Misuse: a NULL function, a bad descriptor or format, a list started twice. */
    list = standard_list(client, "");
    if (list != NULL) {
        CHECK_LIST_RESULT(list, sheaf_list_start_write(list, SHEAF_FORMAT_JSON, NULL, NULL, NULL), SHEAF_E_INVALID_ARGUMENT);
        CHECK_LIST_RESULT(list, sheaf_list_start_write_fd(list, -1, SHEAF_FORMAT_JSON), SHEAF_E_INVALID_ARGUMENT);
        CHECK_LIST_RESULT(list, sheaf_list_start_write_fd(list, 1, (sheaf_format)7), SHEAF_E_INVALID_ARGUMENT);
        struct collected once = { 0 };
        CHECK_LIST_RESULT(list, sheaf_list_start_write(list, SHEAF_FORMAT_JSON, collect_output, &once, NULL), SHEAF_OK);
        CHECK_LIST_RESULT(list, sheaf_list_start_write_fd(list, 1, SHEAF_FORMAT_JSON), SHEAF_E_STATE);
        CHECK_LIST_RESULT(list, sheaf_list_wait(list), SHEAF_OK);
        free(once.bytes);
    }
    sheaf_list_free(list);
    sheaf_client_free(client);
}
