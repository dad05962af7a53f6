/*
 * sheaf_bench.c - the C driver of Sheaf's benchmarks (bench/run.py runs it, one process per
 * measured run, so the peak RSS it reports belongs to that one run).
 *
 *   sheaf_bench fetch  --base URL --path PATH --expect N [list options] [--transport curl|blocking]
 *   sheaf_bench fetch  --transport memory --pages-file F --base URL --path PATH --expect N [list options]
 *   sheaf_bench stream --base URL --path PATH --expect N [list options] [--keep 0|1]
 *   sheaf_bench floor  --base URL --path PATH --pages P [--reps R] [--window W]
 *   sheaf_bench each   --base URL --path PARENT --template T --expect N [--child JSON] [--adaptive 0|1] [--window W]
 *
 * List options (the test API's /anchor by default):
 *   --window W (8; fixed unless --adaptive 1, then where it starts, up to --max-window, 64)
 *   --items PTR (/items)  --next PTR (/next_page; "" = none)
 *   --total PTR (/total; "" = none)  --page-param NAME (none: next links only)  --first-page K (1)
 *   --size-param NAME  --page-size S  --max-pages M  --identity PTR (none)
 * Connection options: --http auto|1.1|2 (SHEAF_OPT_HTTP_VERSION; auto) --ca PEM (a CA to trust) --token T (a bearer
 * token: the client sends a credential, so its first list asks a window ahead of page one)
 * --warm 1 (stream): first a one-page list on the same client, untimed (a client in use already)
 *        (fetch): first the whole list on the same client, untimed: the list then timed starts
 *        with the window its origin learnt (the server's counts include both)
 *
 * fetch   sheaf_list_fetch_all, timed from sheaf_list_new to its return.
 * stream  sheaf_list_start + a snapshot callback that consumes each delta (it scans the ids in
 *         it, the check below) + sheaf_list_wait, timed the same way. --keep 0 drops the items
 *         (sheaf_list_set_keep_items(0)); --keep 1 keeps them, and the prefix is read afterwards
 *         to compare the bytes handed to callbacks with the list's own JSON size.
 * floor   fetches pages 1..P once with a plain socket client (not Sheaf), then times jansson's
 *         json_loadb over all the bodies (parse only; each tree is freed outside the clock),
 *         --reps times; also times fetching the bodies alone over W keep-alive connections, the
 *         server-and-loopback part of a run (no parsing).
 *
 * memory  (a transport, for fetch and stream) answers from pages saved in a file instead of a
 *         server: the library's whole page path (reading, planning, assembling, its threads) at
 *         memory speed. The page asked for is the number in the URL's --page-param (page 1
 *         without one); past the file's last page it answers 404. The file holds the pages one
 *         after another, each as its length in decimal, a newline, then its bytes (bench/run.py
 *         writes it from the server). The body is copied once per answer (sheaf_exchange_respond
 *         copies it, as every transport's answer is).
 *
 * each    a fan-out (sheaf_group_add_each): the parent list at PATH (detected), a child list per
 *         parent item at TEMPLATE (detected, items not kept), every delta's items counted in the
 *         group's callback (--child: the children's description JSON, e.g. a bound, instead of
 *         detection); timed from sheaf_group_new to sheaf_group_wait's return. N is the
 *         items of all the children together; "lists" the group's lists, parent included.
 *
 * Every mode checks what it got: the list must be complete (SHEAF_OK, exactly N items) and in
 * order (item i has "id": i). The item check runs after the clock stops (fetch: a full jansson
 * parse of the result; stream: each delta's ids are scanned inside the callback, as a consumer
 * would read them). A failed check prints the reason on stderr and exits 3, so no time is
 * ever reported for a wrong result. Peak RSS (VmHWM; see peak_rss_kb) is read before the check.
 * --check 0 skips fetch's whole-list check (only to profile Sheaf alone, e.g. under
 * valgrind --tool=callgrind; the output then says "checked":false; bench/run.py never uses it).
 *
 * Output: one JSON object on stdout.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <jansson.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sheaf.h>

#include "blocking_transport.h"
#include "http_get.h"

/* ---- small helpers ------------------------------------------------------------------------ */

static double clock_s(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }

/* CPU time of the whole process (every thread: the library's too). */
static double cpu_s(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

/*
 * Peak RSS of this process in KiB: VmHWM from /proc/self/status, the high-water mark of this
 * address space. Not getrusage's ru_maxrss: Linux carries the parent's peak over fork + exec
 * into it (a child of a 200 MB Python process reports >= 200 MB), which would measure the
 * benchmark runner instead of the run. ru_maxrss is the fallback without /proc.
 */
static long peak_rss_kb(void) {
    FILE *status = fopen("/proc/self/status", "r");
    if (status != NULL) {
        char line[256];
        long kb = -1;
        while (fgets(line, sizeof line, status) != NULL)
            if (strncmp(line, "VmHWM:", 6) == 0) kb = strtol(line + 6, NULL, 10);
        fclose(status);
        if (kb > 0) return kb;
    }
    struct rusage usage;
    if (getrusage(RUSAGE_SELF, &usage) != 0) return -1;
    return usage.ru_maxrss;
}

static void die(int code, const char *format, const char *detail) {
    fprintf(stderr, "sheaf_bench: ");
    fprintf(stderr, format, detail ? detail : "");
    fputc('\n', stderr);
    exit(code);
}

#define EXIT_USAGE 2
#define EXIT_WRONG 3     /* the list is wrong: incomplete, out of order, or the run failed */
#define EXIT_SETUP 4     /* the library or the server could not be used */

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- options ------------------------------------------------------------------------------ */

typedef struct options {
    const char *mode;
    const char *base;
    const char *path;
    long long expect;
    int window;
    int adaptive;             /* --adaptive 1: the window adapts (from --window up to --max-window) */
    int max_window;
    const char *items;
    const char *next;
    const char *total;
    const char *page_param;
    int first_page;
    const char *size_param;
    int page_size;
    long long max_pages;
    const char *identity;
    const char *preset;       /* --preset NAME: the preset's shape instead of the options above */
    int detect;               /* --detect 1: only the signals given as flags are pinned; the rest, paging
                                 included, is detected */
    unsigned given;           /* which of --items, --next, --total were given (bits 1, 2, 4) */
    const char *transport;
    const char *pages_file;   /* --pages-file F (--transport memory) */
    int keep;
    int pages;
    int reps;
    int check;
    int http_version;         /* --http: a sheaf_http_version */
    int warm;                 /* --warm 1: a one-page list (stream) or the whole list (fetch) on the same client first, not timed */
    const char *ca_file;      /* --ca PEM: SHEAF_TLS_CA_FILE */
    const char *token;        /* --token T: a bearer token (the client then sends a credential) */
    const char *child_template; /* --template T (each) */
    const char *child_description; /* --child JSON (each): the children's description */
} options;

static void usage(void) {
    fprintf(stderr,
            "usage: sheaf_bench fetch|stream|floor --base URL --path PATH [--expect N] [--window W]\n"
            "       [--adaptive 0|1] [--max-window M]\n"
            "       [--items PTR] [--next PTR] [--total PTR] [--page-param NAME] [--first-page K]\n"
            "       [--size-param NAME] [--page-size S] [--max-pages M] [--identity PTR] [--preset NAME] [--detect 0|1]\n"
            "       [--transport curl|blocking|memory] [--pages-file F] [--keep 0|1] [--pages P] [--reps R] [--check 0|1]\n"
            "       [--http auto|1.1|2] [--ca PEM] [--token T] [--warm 0|1]\n"
            "       sheaf_bench each --base URL --path PARENT --template T --expect N [--adaptive 0|1] [--window W]\n");
    exit(EXIT_USAGE);
}

static long long number(const char *text, const char *name, long long lo, long long hi) {
    char *end;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < lo || value > hi)
        die(EXIT_USAGE, "bad value for %s", name);
    return value;
}

static options parse_options(int argc, char **argv) {
    options o = {
        .expect = -1, .window = 8, .max_window = 64, .items = "/items", .next = "/next_page", .total = "/total",
        .first_page = 1, .transport = "curl", .keep = 0, .reps = 5, .check = 1,
    };
    if (argc < 2) usage();
    o.mode = argv[1];
    for (int i = 2; i < argc; i += 2) {
        const char *name = argv[i];
        if (i + 1 >= argc) usage();
        const char *value = argv[i + 1];
        if (strcmp(name, "--base") == 0) o.base = value;
        else if (strcmp(name, "--path") == 0) o.path = value;
        else if (strcmp(name, "--expect") == 0) o.expect = number(value, name, 0, INT64_MAX / 2);
        else if (strcmp(name, "--window") == 0) o.window = (int)number(value, name, 1, 64);
        else if (strcmp(name, "--adaptive") == 0) o.adaptive = (int)number(value, name, 0, 1);
        else if (strcmp(name, "--max-window") == 0) o.max_window = (int)number(value, name, 1, 64);
        else if (strcmp(name, "--items") == 0) { o.items = value; o.given |= 1; }
        else if (strcmp(name, "--next") == 0) { o.next = value; o.given |= 2; }
        else if (strcmp(name, "--total") == 0) { o.total = value; o.given |= 4; }
        else if (strcmp(name, "--page-param") == 0) o.page_param = value;
        else if (strcmp(name, "--first-page") == 0) o.first_page = (int)number(value, name, 0, 1000000);
        else if (strcmp(name, "--size-param") == 0) o.size_param = value;
        else if (strcmp(name, "--page-size") == 0) o.page_size = (int)number(value, name, 1, 100000000);
        else if (strcmp(name, "--max-pages") == 0) o.max_pages = number(value, name, 1, INT64_MAX / 2);
        else if (strcmp(name, "--identity") == 0) o.identity = value;
        else if (strcmp(name, "--preset") == 0) o.preset = value;
        else if (strcmp(name, "--detect") == 0) o.detect = (int)number(value, name, 0, 1);
        else if (strcmp(name, "--transport") == 0) o.transport = value;
        else if (strcmp(name, "--pages-file") == 0) o.pages_file = value;
        else if (strcmp(name, "--keep") == 0) o.keep = (int)number(value, name, 0, 1);
        else if (strcmp(name, "--pages") == 0) o.pages = (int)number(value, name, 1, 10000000);
        else if (strcmp(name, "--reps") == 0) o.reps = (int)number(value, name, 1, 1000);
        else if (strcmp(name, "--check") == 0) o.check = (int)number(value, name, 0, 1);
        else if (strcmp(name, "--ca") == 0) o.ca_file = value;
        else if (strcmp(name, "--token") == 0) o.token = value;
        else if (strcmp(name, "--warm") == 0) o.warm = (int)number(value, name, 0, 1);
        else if (strcmp(name, "--template") == 0) o.child_template = value;
        else if (strcmp(name, "--child") == 0) o.child_description = value;
        else if (strcmp(name, "--http") == 0) {
            if (strcmp(value, "auto") == 0) o.http_version = SHEAF_HTTP_AUTO;
            else if (strcmp(value, "1.1") == 0) o.http_version = SHEAF_HTTP_1_1;
            else if (strcmp(value, "2") == 0) o.http_version = SHEAF_HTTP_2_PRIOR_KNOWLEDGE;
            else usage();
        }
        else usage();
    }
    if (o.base == NULL || o.path == NULL) usage();
    if (strcmp(o.transport, "curl") != 0 && strcmp(o.transport, "blocking") != 0 && strcmp(o.transport, "memory") != 0)
        usage();
    if ((strcmp(o.transport, "memory") == 0) != (o.pages_file != NULL)) usage();
    if (strcmp(o.mode, "floor") == 0) {
        if (o.pages <= 0) usage();
    } else if (strcmp(o.mode, "fetch") == 0 || strcmp(o.mode, "stream") == 0) {
        if (o.expect < 0) usage();
    } else if (strcmp(o.mode, "each") == 0) {
        if (o.expect < 0 || o.child_template == NULL) usage();
    } else {
        usage();
    }
    return o;
}

/* ---- describing the list ------------------------------------------------------------------ */

/* The message of the last failing call on this thread (static storage, for die()). */
static const char *last_message(void) {
    static char text[1024];
    sheaf_error *error = sheaf_last_error();
    snprintf(text, sizeof text, "%s", error ? error->message : "(no detail)");
    sheaf_error_free(error);
    return text;
}

/* The message of the list's outcome (static storage). */
static const char *list_message(const sheaf_list *list) {
    static char text[1024];
    sheaf_error *error = sheaf_list_error(list);
    snprintf(text, sizeof text, "%s", error ? error->message : "(no detail)");
    sheaf_error_free(error);
    return text;
}

/* ---- the memory transport ----------------------------------------------------------------- */

typedef struct memory_pages {
    char **body;
    size_t *length;
    long count;
    const char *param;        /* the page parameter's name, NULL: every request is page 1 */
} memory_pages;

static memory_pages memory;

static void load_pages(const char *path, const char *param) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) die(EXIT_SETUP, "cannot open the pages file %s", path);
    size_t length, capacity = 0;
    while (fscanf(file, "%zu", &length) == 1 && fgetc(file) == '\n') {
        if ((size_t)memory.count == capacity) {
            capacity = capacity ? 2 * capacity : 64;
            memory.body = realloc(memory.body, capacity * sizeof *memory.body);
            memory.length = realloc(memory.length, capacity * sizeof *memory.length);
            if (memory.body == NULL || memory.length == NULL) die(EXIT_SETUP, "out of memory%s", NULL);
        }
        char *body = malloc(length ? length : 1);
        if (body == NULL || fread(body, 1, length, file) != length) die(EXIT_SETUP, "%s ends inside a page", path);
        memory.body[memory.count] = body;
        memory.length[memory.count++] = length;
    }
    fclose(file);
    if (memory.count == 0) die(EXIT_SETUP, "%s holds no page", path);
    memory.param = param;
}

/* The value of query parameter `name` in `url` as a page number, 1 when absent. */
static long page_in(const char *url, const char *name) {
    const char *query = name ? strchr(url, '?') : NULL;
    size_t n = name ? strlen(name) : 0;
    for (const char *p = query; p != NULL; p = strchr(p + 1, '&'))
        if (strncmp(p + 1, name, n) == 0 && p[1 + n] == '=') return strtol(p + 2 + n, NULL, 10);
    return 1;
}

static void memory_transport(sheaf_exchange *exchange, void *user_data) {
    const memory_pages *pages = user_data;
    long page = page_in(sheaf_exchange_url(exchange), pages->param);
    if (page < 1 || page > pages->count) {
        sheaf_exchange_respond(exchange, 404, "{}", 2);
        return;
    }
    sheaf_exchange_respond(exchange, 200, pages->body[page - 1], pages->length[page - 1]);
}

static sheaf_client *make_client(const options *o, blocking_transport *transport) {
    sheaf_client *client = NULL;
    if (sheaf_client_new(&client, o->base) != SHEAF_OK) die(EXIT_SETUP, "sheaf_client_new: %s", last_message());
    if (sheaf_client_set_option(client, SHEAF_OPT_WINDOW, o->window) != SHEAF_OK ||
        sheaf_client_set_option(client, SHEAF_OPT_ADAPTIVE_WINDOW, o->adaptive) != SHEAF_OK ||
        sheaf_client_set_option(client, SHEAF_OPT_MAX_WINDOW, o->max_window) != SHEAF_OK)
        die(EXIT_SETUP, "window: %s", last_message());
    if (sheaf_client_set_option(client, SHEAF_OPT_HTTP_VERSION, o->http_version) != SHEAF_OK ||
        (o->ca_file != NULL && sheaf_client_set_tls_file(client, SHEAF_TLS_CA_FILE, o->ca_file) != SHEAF_OK))
        die(EXIT_SETUP, "connection: %s", last_message());
    if (o->token != NULL && sheaf_client_set_credential(client, SHEAF_AUTH_BEARER, NULL, o->token) != SHEAF_OK)
        die(EXIT_SETUP, "token: %s", last_message());
    if (o->max_pages > 0 && sheaf_client_set_option(client, SHEAF_OPT_MAX_PAGES, o->max_pages) != SHEAF_OK)
        die(EXIT_SETUP, "max pages: %s", last_message());
    if (strcmp(o->transport, "blocking") == 0 &&
        sheaf_client_set_transport(client, blocking_transport_get, transport, NULL) != SHEAF_OK)
        die(EXIT_SETUP, "transport: %s", last_message());
    if (strcmp(o->transport, "memory") == 0) {
        load_pages(o->pages_file, o->page_param);
        if (sheaf_client_set_transport(client, memory_transport, &memory, NULL) != SHEAF_OK)
            die(EXIT_SETUP, "transport: %s", last_message());
    }
    return client;
}

/* Reads `signal` from the body at `pointer`; "" or NULL: the list has no such signal. */
static int read_body(sheaf_list *list, sheaf_signal signal, const char *pointer) {
    int present = pointer != NULL && (pointer[0] != '\0' || signal == SHEAF_SIGNAL_ITEMS);
    return sheaf_list_set_signal(list, signal, present ? SHEAF_SOURCE_BODY : SHEAF_SOURCE_NONE, pointer) == SHEAF_OK;
}

/* The list as the options describe it: a preset, detection (--detect 1), or every part pinned
 * (page numbers with --page-param, else next links; what is not given is absent). */
static sheaf_list *make_list(const options *o, sheaf_client *client, int keep) {
    sheaf_list *list = NULL;
    if (sheaf_list_new(&list, client, o->path) != SHEAF_OK) die(EXIT_SETUP, "sheaf_list_new: %s", last_message());
    int ok = 1;
    if (o->preset != NULL) {
        ok = sheaf_list_use_preset(list, o->preset) == SHEAF_OK;
    } else if (o->detect) {
        if (o->given & 1) ok = read_body(list, SHEAF_SIGNAL_ITEMS, o->items);
        if (ok && (o->given & 2)) ok = read_body(list, SHEAF_SIGNAL_NEXT, o->next);
        if (ok && (o->given & 4)) ok = read_body(list, SHEAF_SIGNAL_TOTAL, o->total);
    } else {
        ok = read_body(list, SHEAF_SIGNAL_ITEMS, o->items);
        if (ok && o->page_param != NULL)
            ok = sheaf_list_set_paging(list, SHEAF_PAGING_PAGE_NUMBER, o->page_param, o->first_page, o->size_param,
                                       o->size_param ? o->page_size : 0) == SHEAF_OK;
        else if (ok)
            ok = sheaf_list_set_paging(list, SHEAF_PAGING_NEXT, NULL, 0, NULL, 0) == SHEAF_OK;
        if (ok) ok = read_body(list, SHEAF_SIGNAL_NEXT, o->next) && read_body(list, SHEAF_SIGNAL_TOTAL, o->total);
        for (int signal = SHEAF_SIGNAL_CURSOR; ok && signal <= SHEAF_SIGNAL_IS_LAST; signal++)
            if (signal != SHEAF_SIGNAL_TOTAL) ok = read_body(list, (sheaf_signal)signal, NULL);
    }
    if (ok && o->identity != NULL)
        ok = sheaf_list_set_signal(list, SHEAF_SIGNAL_IDENTITY, SHEAF_SOURCE_ITEM, o->identity) == SHEAF_OK;
    if (ok && !keep) ok = sheaf_list_set_keep_items(list, 0) == SHEAF_OK;
    if (!ok) die(EXIT_SETUP, "describing the list: %s", last_message());
    return list;
}

/* ---- checks ------------------------------------------------------------------------------- */

/* Full check of a whole list: a JSON array of exactly `expect` objects, item i with "id": i. */
static void check_whole_list(const char *json, size_t length, long long expect) {
    json_error_t error;
    json_t *items = json_loadb(json, length, 0, &error);
    if (items == NULL) die(EXIT_WRONG, "the list is not JSON: %s", error.text);
    if (!json_is_array(items)) die(EXIT_WRONG, "the list is not a JSON array%s", NULL);
    if ((long long)json_array_size(items) != expect) {
        fprintf(stderr, "sheaf_bench: %zu items, expected %lld\n", json_array_size(items), expect);
        exit(EXIT_WRONG);
    }
    for (size_t i = 0; i < json_array_size(items); i++) {
        json_t *id = json_object_get(json_array_get(items, i), "id");
        if (!json_is_integer(id) || json_integer_value(id) != (json_int_t)i) {
            fprintf(stderr, "sheaf_bench: item %zu does not have id %zu: out of order or wrong\n", i, i);
            exit(EXIT_WRONG);
        }
    }
    json_decref(items);
}

/*
 * Scans one delta (a compact JSON array of the test API's items) for its ids: each must be the
 * next expected one. Returns the number of items seen, or -1 (and a reason) when wrong.
 */
static long long scan_delta(const char *json, size_t length, long long *next_id, const char **why) {
    if (length < 2 || json[0] != '[' || json[length - 1] != ']') { *why = "a delta is not a JSON array"; return -1; }
    static const char key[] = "{\"id\":";
    const char *p = json, *end = json + length;
    long long seen = 0;
    for (;;) {
        const char *hit = memmem(p, (size_t)(end - p), key, sizeof key - 1);
        if (hit == NULL) break;
        char *after;
        long long id = strtoll(hit + sizeof key - 1, &after, 10);
        if (after == hit + sizeof key - 1) { *why = "an id is not a number"; return -1; }
        if (id != *next_id) { *why = "an item arrived out of order, twice or not at all"; return -1; }
        (*next_id)++;
        seen++;
        p = after;
    }
    return seen;
}

/* After a failure: which ids the items that did arrive skip or repeat (first few), on stderr. */
static void describe_gaps(const char *json, size_t length) {
    json_t *items = json ? json_loadb(json, length, 0, NULL) : NULL;
    if (!json_is_array(items)) { json_decref(items); return; }
    json_int_t expected = 0;
    int reported = 0;
    for (size_t i = 0; i < json_array_size(items) && reported < 10; i++) {
        json_t *id = json_object_get(json_array_get(items, i), "id");
        json_int_t value = json_is_integer(id) ? json_integer_value(id) : -1;
        if (value != expected) {
            fprintf(stderr, "sheaf_bench:   item %zu has id %lld where %lld was due (ids %lld..%lld missing)\n",
                    i, (long long)value, (long long)expected, (long long)expected, (long long)value - 1);
            reported++;
        }
        expected = value + 1;
    }
    fprintf(stderr, "sheaf_bench:   %zu items arrived, the last with id %lld\n", json_array_size(items),
            (long long)expected - 1);
    json_decref(items);
}

/* ---- fetch -------------------------------------------------------------------------------- */

/* The file the dynamic linker loaded libsheaf from (a plain path: no JSON escaping needed). */
static const char *library_file(void) {
    Dl_info info;
    if (dladdr((void *)sheaf_version_number, &info) == 0 || info.dli_fname == NULL) return "?";
    for (const char *p = info.dli_fname; *p; p++)
        if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20) return "?";
    return info.dli_fname;
}

static void print_common(const char *mode, const options *o, double seconds, double cpu_seconds,
                         int64_t requests, long rss_kb, const blocking_transport *transport) {
    printf("{\"mode\":\"%s\",\"ok\":true,\"library\":\"%s\",\"transport\":\"%s\",\"window\":%d,"
           "\"seconds\":%.6f,\"cpu_seconds\":%.6f,\"requests\":%lld,\"items\":%lld,\"peak_rss_kb\":%ld",
           mode, library_file(), o->transport, o->window, seconds, cpu_seconds, (long long)requests, o->expect,
           rss_kb);
    if (strcmp(o->transport, "blocking") == 0)
        printf(",\"transport_calls\":%d,\"transport_max_in_flight\":%d",
               atomic_load(&transport->calls), atomic_load(&transport->max_in_flight));
}

static int run_fetch(const options *o) {
    blocking_transport transport = {0};
    sheaf_client *client = make_client(o, &transport);
    char *json = NULL;
    size_t length = 0;
    if (o->warm) {
        sheaf_list *first = make_list(o, client, 0);
        if (!SHEAF_SUCCEEDED(sheaf_list_fetch_all(first, &json, NULL)))
            die(EXIT_SETUP, "the list run first: %s", list_message(first));
        sheaf_free(json);
        json = NULL;
        sheaf_list_free(first);
    }

    double start = now_s(), cpu_start = cpu_s();
    sheaf_list *list = make_list(o, client, 1);
    sheaf_result result = sheaf_list_fetch_all(list, &json, &length);
    double seconds = now_s() - start, cpu_seconds = cpu_s() - cpu_start;
    long rss = peak_rss_kb();

    if (result != SHEAF_OK) {
        fprintf(stderr, "sheaf_bench: fetch_all: %s: %s\n", sheaf_result_str(result), list_message(list));
        describe_gaps(json, length);
        exit(EXIT_WRONG);
    }
    int64_t requests = sheaf_list_requests_made(list);
    if (o->check) check_whole_list(json, length, o->expect);
    print_common("fetch", o, seconds, cpu_seconds, requests, rss, &transport);
    printf(",\"json_bytes\":%zu,\"checked\":%s}\n", length, o->check ? "true" : "false");
    sheaf_free(json);
    sheaf_list_free(list);
    sheaf_client_free(client);
    return 0;
}

/* ---- each --------------------------------------------------------------------------------- */

typedef struct each_count {
    long long items;
    int failed;      /* lists that ended with a failure */
} each_count;

static int on_each_delta(sheaf_group *group, const sheaf_group_delta *delta, void *user_data) {
    (void)group;
    each_count *count = user_data;   /* one delta at a time: no lock needed */
    count->items += (long long)delta->delta_items;
    if (delta->finished && delta->result != SHEAF_OK) count->failed++;
    return 0;
}

static int run_each(const options *o) {
    blocking_transport transport = {0};
    sheaf_client *client = make_client(o, &transport);
    each_count count = {0};
    double start = now_s(), cpu_start = cpu_s();
    sheaf_group *group = NULL;
    sheaf_list *parent = NULL, *child = NULL;
    if (sheaf_group_new(&group, client) != SHEAF_OK || sheaf_list_new(&parent, client, o->path) != SHEAF_OK
        || sheaf_list_new(&child, client, "/") != SHEAF_OK || sheaf_list_set_keep_items(child, 0) != SHEAF_OK
        || (o->child_description != NULL && sheaf_list_set_description(child, o->child_description) != SHEAF_OK))
        die(EXIT_SETUP, "the group: %s", last_message());
    const char *templates[] = {o->child_template};
    if (sheaf_group_add_each(group, parent, templates, 1, child, NULL) != SHEAF_OK
        || sheaf_group_start(group, on_each_delta, &count, NULL) != SHEAF_OK)
        die(EXIT_SETUP, "the fan-out: %s", last_message());
    sheaf_result result = sheaf_group_wait(group);
    double seconds = now_s() - start, cpu_seconds = cpu_s() - cpu_start;
    long rss = peak_rss_kb();
    if (result != SHEAF_OK) {
        sheaf_error *error = sheaf_group_error(group);
        fprintf(stderr, "sheaf_bench: each: %s: %s\n", sheaf_result_str(result), error ? error->message : "(no detail)");
        sheaf_error_free(error);
        exit(EXIT_WRONG);
    }
    if (count.items != o->expect) {
        fprintf(stderr, "sheaf_bench: each: %lld items, expected %lld\n", count.items, (long long)o->expect);
        exit(EXIT_WRONG);
    }
    int64_t requests = 0;
    size_t lists = sheaf_group_count(group);
    for (size_t k = 0; k < lists; k++) requests += sheaf_list_requests_made(sheaf_group_list(group, k));
    print_common("each", o, seconds, cpu_seconds, requests, rss, &transport);
    printf(",\"lists\":%zu}\n", lists);
    sheaf_group_free(group);
    sheaf_client_free(client);
    return 0;
}

/* ---- stream ------------------------------------------------------------------------------- */

typedef struct stream_state {
    double start;
    double first_items_at;        /* seconds from start to the first non-empty delta */
    long long next_id;
    size_t snapshots;
    size_t delta_bytes;           /* bytes handed to the callback (delta_length summed) */
    size_t list_bytes;            /* the compact JSON array the deltas add up to */
    size_t nonempty;
    size_t last_items;
    const char *wrong;            /* set when a delta fails the check; the callback then stops */
} stream_state;

static int on_snapshot(sheaf_list *list, const sheaf_snapshot *s, void *user_data) {
    (void)list;
    stream_state *st = user_data;
    if (s->version < 1) { st->wrong = "snapshot version"; return 1; }
    st->snapshots++;
    st->delta_bytes += s->delta_length;
    const char *why = NULL;
    long long seen = scan_delta(s->delta_json, s->delta_length, &st->next_id, &why);
    if (seen < 0) { st->wrong = why; return 1; }
    if ((size_t)seen != s->delta_items) { st->wrong = "delta_items disagrees with the delta"; return 1; }
    if (s->items != st->last_items + s->delta_items) { st->wrong = "items is not the sum of the deltas"; return 1; }
    st->last_items = s->items;
    if (seen > 0) {
        if (st->nonempty == 0) st->first_items_at = now_s() - st->start;
        st->list_bytes += s->delta_length - 2 + (st->nonempty > 0 ? 1 : 0);
        st->nonempty++;
    }
    return 0;
}

static int run_stream(const options *o) {
    blocking_transport transport = {0};
    sheaf_client *client = make_client(o, &transport);
    stream_state st = {0};
    if (o->warm) {
        /* A client in use already: libcurl and its TLS library initialised, a connection open. */
        sheaf_list *first = make_list(o, client, 0);
        char *json = NULL;
        sheaf_result budget = sheaf_list_set_budget(first, SHEAF_BUDGET_PAGES, 1);
        sheaf_result fetched = sheaf_list_fetch_all(first, &json, NULL);
        if (budget != SHEAF_OK || !SHEAF_SUCCEEDED(fetched))
            die(EXIT_SETUP, "the warm-up list: %s", list_message(first));
        sheaf_free(json);
        sheaf_list_free(first);
    }

    st.start = now_s();
    double cpu_start = cpu_s();
    sheaf_list *list = make_list(o, client, o->keep);
    sheaf_result result = sheaf_list_start(list, on_snapshot, &st, NULL);
    if (result == SHEAF_OK) result = sheaf_list_wait(list);
    double seconds = now_s() - st.start, cpu_seconds = cpu_s() - cpu_start;
    long rss = peak_rss_kb();

    if (st.wrong != NULL) die(EXIT_WRONG, "stream: %s", st.wrong);
    if (result != SHEAF_OK) {
        fprintf(stderr, "sheaf_bench: stream: %s: %s\n", sheaf_result_str(result), list_message(list));
        exit(EXIT_WRONG);
    }
    if (st.next_id != o->expect) {
        fprintf(stderr, "sheaf_bench: stream: %lld items, expected %lld\n", st.next_id, o->expect);
        exit(EXIT_WRONG);
    }
    st.list_bytes += 2;   /* the brackets of the whole array */
    size_t prefix_bytes = 0;
    if (o->keep) {
        char *json = NULL;
        if (sheaf_list_prefix(list, &json, &prefix_bytes) != SHEAF_OK)
            die(EXIT_WRONG, "prefix: %s", list_message(list));
        check_whole_list(json, prefix_bytes, o->expect);
        sheaf_free(json);
    }
    int64_t requests = sheaf_list_requests_made(list);
    print_common("stream", o, seconds, cpu_seconds, requests, rss, &transport);
    printf(",\"keep\":%d,\"snapshots\":%zu,\"nonempty_snapshots\":%zu,\"delta_bytes\":%zu,"
           "\"list_bytes\":%zu,\"prefix_bytes\":%zu,\"first_items_s\":%.6f}\n",
           o->keep, st.snapshots, st.nonempty, st.delta_bytes, st.list_bytes, prefix_bytes,
           st.first_items_at);
    sheaf_list_free(list);
    sheaf_client_free(client);
    return 0;
}

/* ---- floor: jansson over the same bytes, and the bodies alone over keep-alive sockets ----- */

typedef struct page_body {
    char *data;
    size_t length;
} page_body;

static char *page_url(const options *o, int page) {
    size_t size = strlen(o->base) + strlen(o->path) + (o->page_param ? strlen(o->page_param) : 4) + 96;
    char *url = malloc(size);
    if (url == NULL) die(EXIT_SETUP, "out of memory%s", NULL);
    const char *param = o->page_param ? o->page_param : "page";
    int n = snprintf(url, size, "%s%s%c%s=%d", o->base, o->path, strchr(o->path, '?') ? '&' : '?', param,
                     o->first_page + page - 1);
    /* The same request target Sheaf sends (page, then the size parameter), so a caching server
     * answers both from one entry. */
    if (o->size_param != NULL && n > 0 && (size_t)n < size)
        snprintf(url + n, size - (size_t)n, "&%.32s=%d", o->size_param, o->page_size);
    return url;
}

/* A minimal keep-alive HTTP/1.1 GET loop on one connection (the test API always sends
 * Content-Length). Pages first..last step `stride`; returns bytes of body read or -1. */
typedef struct keepalive_job {
    const options *o;
    const char *host;
    const char *port;
    int first, stride, last;
    long long bytes;
    int failed;
} keepalive_job;

static int read_some(int fd, char **buffer, size_t *length, size_t *capacity) {
    if (*capacity - *length < 65536) {
        size_t grown = *capacity ? *capacity * 2 : 131072;
        while (grown - *length < 65536) grown *= 2;
        char *p = realloc(*buffer, grown);
        if (p == NULL) return -1;
        *buffer = p;
        *capacity = grown;
    }
    struct pollfd p = { .fd = fd, .events = POLLIN };
    if (poll(&p, 1, 30000) <= 0) return -1;
    ssize_t n = recv(fd, *buffer + *length, *capacity - *length - 1, 0);   /* room for a NUL */
    if (n <= 0) return -1;
    *length += (size_t)n;
    return (int)n;
}

static void *keepalive_worker(void *arg) {
    keepalive_job *job = arg;
    struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *address = NULL;
    if (getaddrinfo(job->host, job->port, &hints, &address) != 0) { job->failed = 1; return NULL; }
    int fd = socket(address->ai_family, address->ai_socktype, address->ai_protocol);
    if (fd < 0 || connect(fd, address->ai_addr, address->ai_addrlen) != 0) {
        freeaddrinfo(address);
        if (fd >= 0) close(fd);
        job->failed = 1;
        return NULL;
    }
    freeaddrinfo(address);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char *buffer = NULL;
    size_t length = 0, capacity = 0;
    for (int page = job->first; page <= job->last && !job->failed; page += job->stride) {
        char *url = page_url(job->o, page);
        const char *target = strchr(url + strlen("http://"), '/');
        char request[4096];
        int n = snprintf(request, sizeof request, "GET %s HTTP/1.1\r\nHost: %s:%s\r\n\r\n",
                         target ? target : "/", job->host, job->port);
        free(url);
        if (n <= 0 || (size_t)n >= sizeof request || send(fd, request, (size_t)n, MSG_NOSIGNAL) != n) {
            job->failed = 1;
            break;
        }
        length = 0;
        char *head_end = NULL;
        while (head_end == NULL) {   /* bounded: read_some fails after 30 s of silence or on EOF */
            if (read_some(fd, &buffer, &length, &capacity) < 0) { job->failed = 1; break; }
            buffer[length] = '\0';
            head_end = memmem(buffer, length, "\r\n\r\n", 4);
        }
        if (job->failed) break;
        const char *cl = strcasestr(buffer, "\r\nContent-Length:");
        if (cl == NULL || cl > head_end || strncmp(buffer, "HTTP/1.1 200", 12) != 0) { job->failed = 1; break; }
        size_t body = (size_t)strtoull(cl + 17, NULL, 10);
        size_t need = (size_t)(head_end - buffer) + 4 + body;
        while (length < need)
            if (read_some(fd, &buffer, &length, &capacity) < 0) { job->failed = 1; break; }
        if (length != need) job->failed = 1;   /* no pipelining: nothing may follow */
        job->bytes += (long long)body;
    }
    free(buffer);
    close(fd);
    return NULL;
}

static double fetch_keepalive(const options *o, long long *bytes) {
    char host[256], port[16];
    const char *hs = o->base + strlen("http://");
    const char *colon = strchr(hs, ':');
    if (strncmp(o->base, "http://", 7) != 0 || colon == NULL || (size_t)(colon - hs) >= sizeof host)
        die(EXIT_USAGE, "floor needs --base http://HOST:PORT%s", NULL);
    memcpy(host, hs, (size_t)(colon - hs));
    host[colon - hs] = '\0';
    snprintf(port, sizeof port, "%.*s", (int)strcspn(colon + 1, "/"), colon + 1);

    int workers = o->window < o->pages ? o->window : o->pages;
    keepalive_job jobs[64];
    pthread_t threads[64];
    double start = now_s();
    for (int i = 0; i < workers; i++) {
        jobs[i] = (keepalive_job){ .o = o, .host = host, .port = port, .first = i + 1, .stride = workers,
                                   .last = o->pages };
        if (pthread_create(&threads[i], NULL, keepalive_worker, &jobs[i]) != 0)
            die(EXIT_SETUP, "pthread_create%s", NULL);
    }
    *bytes = 0;
    int failed = 0;
    for (int i = 0; i < workers; i++) {
        pthread_join(threads[i], NULL);
        *bytes += jobs[i].bytes;
        failed |= jobs[i].failed;
    }
    double seconds = now_s() - start;
    if (failed) die(EXIT_WRONG, "floor: a keep-alive fetch failed%s", NULL);
    return seconds;
}

static int run_floor(const options *o) {
    page_body *bodies = calloc((size_t)o->pages, sizeof *bodies);
    if (bodies == NULL) die(EXIT_SETUP, "out of memory%s", NULL);
    size_t total_bytes = 0;
    long long next_id = 0;
    for (int k = 1; k <= o->pages; k++) {
        char *url = page_url(o, k);
        http_response response;
        char error[512];
        http_get_status status = http_get(url, 0, NULL, NULL, 60000, 0, &response, error, sizeof error);
        if (status != HTTP_GET_OK) die(EXIT_SETUP, "floor: %s", error);
        if (response.status != 200) die(EXIT_SETUP, "floor: HTTP status for %s", url);
        free(url);
        bodies[k - 1].data = response.body;          /* taken over from the response */
        bodies[k - 1].length = response.body_length;
        response.body = NULL;
        http_response_free(&response);
        total_bytes += bodies[k - 1].length;
        /* Check the page: its items continue the list. */
        json_error_t jerror;
        json_t *page = json_loadb(bodies[k - 1].data, bodies[k - 1].length, 0, &jerror);
        json_t *items = page ? json_object_get(page, o->items[0] == '/' ? o->items + 1 : o->items) : NULL;
        if (!json_is_array(items)) die(EXIT_WRONG, "floor: page without items: %s", page ? "" : jerror.text);
        for (size_t i = 0; i < json_array_size(items); i++) {
            json_t *id = json_object_get(json_array_get(items, i), "id");
            if (!json_is_integer(id) || json_integer_value(id) != next_id)
                die(EXIT_WRONG, "floor: the pages are not the list in order%s", NULL);
            next_id++;
        }
        json_decref(page);
    }
    if (o->expect >= 0 && next_id != o->expect) die(EXIT_WRONG, "floor: the pages do not add up to the list%s", NULL);

    double *times = calloc((size_t)o->reps, sizeof *times);
    if (times == NULL) die(EXIT_SETUP, "out of memory%s", NULL);
    for (int r = 0; r < o->reps; r++) {
        double parse = 0;
        for (int k = 0; k < o->pages; k++) {
            json_error_t jerror;
            double t0 = now_s();
            json_t *page = json_loadb(bodies[k].data, bodies[k].length, 0, &jerror);
            parse += now_s() - t0;
            if (page == NULL) die(EXIT_WRONG, "floor: %s", jerror.text);
            json_decref(page);
        }
        times[r] = parse;
    }
    qsort(times, (size_t)o->reps, sizeof *times, compare_doubles);
    double median = o->reps % 2 ? times[o->reps / 2] : (times[o->reps / 2 - 1] + times[o->reps / 2]) / 2;

    long long fetched = 0;
    double *fetch_times = calloc((size_t)o->reps, sizeof *fetch_times);
    if (fetch_times == NULL) die(EXIT_SETUP, "out of memory%s", NULL);
    for (int r = 0; r < o->reps; r++) {
        fetch_times[r] = fetch_keepalive(o, &fetched);
        if ((size_t)fetched != total_bytes) die(EXIT_WRONG, "floor: the keep-alive fetch read other bytes%s", NULL);
    }
    qsort(fetch_times, (size_t)o->reps, sizeof *fetch_times, compare_doubles);
    double fetch_median = o->reps % 2 ? fetch_times[o->reps / 2]
                                      : (fetch_times[o->reps / 2 - 1] + fetch_times[o->reps / 2]) / 2;

    printf("{\"mode\":\"floor\",\"ok\":true,\"pages\":%d,\"items\":%lld,\"page_bytes\":%zu,"
           "\"reps\":%d,\"parse_seconds\":%.6f,\"parse_seconds_min\":%.6f,\"parse_mb_per_s\":%.1f,"
           "\"fetch_only_seconds\":%.6f,\"fetch_only_seconds_min\":%.6f,\"fetch_window\":%d,"
           "\"jansson\":\"%s\",\"peak_rss_kb\":%ld}\n",
           o->pages, next_id, total_bytes, o->reps, median, times[0], total_bytes / 1e6 / median,
           fetch_median, fetch_times[0], o->window < o->pages ? o->window : o->pages,
           JANSSON_VERSION, peak_rss_kb());
    for (int k = 0; k < o->pages; k++) free(bodies[k].data);
    free(bodies);
    free(times);
    free(fetch_times);
    return 0;
}

int main(int argc, char **argv) {
    options o = parse_options(argc, argv);
    if (strcmp(o.mode, "floor") != 0 && sheaf_version_number() != SHEAF_VERSION_NUMBER)
        die(EXIT_SETUP, "header and library versions differ (library %s)", sheaf_version_string());
    if (strcmp(o.mode, "fetch") == 0) return run_fetch(&o);
    if (strcmp(o.mode, "each") == 0) return run_each(&o);
    if (strcmp(o.mode, "stream") == 0) return run_stream(&o);
    return run_floor(&o);
}
