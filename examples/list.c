/*
 * list.c - fetch a paginated list with Sheaf, watch it grow, then print it.
 *
 *   usage: list BASE_URL [PATH [PRESET]]    e.g.  list http://127.0.0.1:8080 /anchor
 *
 * Without a preset the list is described by nothing: Sheaf detects from its first page where the
 * items are, how the next page is found and how many there are. With one (github, stripe, ...;
 * sheaf_preset_name lists them) the shape is pinned instead. Either way each item's "id"
 * de-duplicates. Progress goes to stderr (one line, rewritten), the whole list (one JSON array) to stdout.
 * A bearer token, if the server needs one, comes from the SHEAF_TOKEN environment variable; the
 * window (pages in flight at once, 1-64, default 8) from SHEAF_WINDOW.
 */
#include <stdio.h>
#include <stdlib.h>

#include <sheaf.h>

/* Called once per snapshot, in order, never two at once: report how far the list has come. */
static int print_progress(sheaf_list *list, const sheaf_snapshot *snapshot, void *user_data) {
    (void)list;
    (void)user_data;
    if (snapshot->expected_items >= 0)
        fprintf(stderr, "\r%zu of %lld items (%zu of %lld pages)", snapshot->items,
                (long long)snapshot->expected_items, snapshot->pages, (long long)snapshot->expected_pages);
    else
        fprintf(stderr, "\r%zu items (%zu pages)", snapshot->items, snapshot->pages);
    return 0;   /* non-zero would stop the list */
}

/* Prints the detail of the last failing call on this thread. */
static void print_last_error(const char *what) {
    sheaf_error *error = sheaf_last_error();
    fprintf(stderr, "%s: %s\n", what, error ? error->message : "(no detail)");
    sheaf_error_free(error);
}

/* Describes the list: a preset, if given; items de-duplicated by their "id". */
static sheaf_result describe_list(sheaf_list *list, const char *preset) {
    sheaf_result result;
    if (preset != NULL && (result = sheaf_list_use_preset(list, preset)) != SHEAF_OK) return result;
    return sheaf_list_set_signal(list, SHEAF_SIGNAL_IDENTITY, SHEAF_SOURCE_ITEM, "/id");
}

int main(int argc, char **argv) {
    sheaf_client *client = NULL;
    sheaf_list *list = NULL;
    char *json = NULL;
    size_t length = 0;
    sheaf_result result;
    int status = 1;

    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: %s BASE_URL [PATH [PRESET]]\n", argv[0]);
        return 2;
    }
    if (sheaf_version_number() != SHEAF_VERSION_NUMBER)
        fprintf(stderr, "warning: built against sheaf %s, running with %s\n", SHEAF_VERSION_STRING,
                sheaf_version_string());

    if (sheaf_client_new(&client, argv[1]) != SHEAF_OK) {
        print_last_error(argv[1]);
        return 1;
    }
    if (getenv("SHEAF_TOKEN") != NULL && sheaf_client_set_auth(client, SHEAF_AUTH_BEARER, getenv("SHEAF_TOKEN")) != SHEAF_OK) {
        print_last_error("SHEAF_TOKEN");
        goto done;
    }
    if (getenv("SHEAF_WINDOW") != NULL &&
        sheaf_client_set_option(client, SHEAF_OPT_WINDOW, atoll(getenv("SHEAF_WINDOW"))) != SHEAF_OK) {
        print_last_error("SHEAF_WINDOW");
        goto done;
    }
    if (sheaf_list_new(&list, client, argc > 2 ? argv[2] : "/anchor") != SHEAF_OK ||
        describe_list(list, argc > 3 ? argv[3] : NULL) != SHEAF_OK) {
        print_last_error("describing the list");
        goto done;
    }

    /*
     * Run the list in the background and wait for it; print_progress sees every snapshot.
     * (sheaf_list_fetch_all does the same in one call, without a callback.)
     */
    if ((result = sheaf_list_start(list, print_progress, NULL, NULL)) == SHEAF_OK)
        result = sheaf_list_wait(list);
    fputc('\n', stderr);
    if (result != SHEAF_OK) {
        sheaf_error *error = sheaf_list_error(list);
        fprintf(stderr, "%s: %s\n", sheaf_result_str(result), error ? error->message : "");
        if (error != NULL && error->hint[0] != '\0') fprintf(stderr, "try: %s\n", error->hint);
        sheaf_error_free(error);
    }

    /* Whatever arrived, in order; after a failure, the items before it. */
    if (sheaf_list_prefix(list, &json, &length) == SHEAF_OK) {
        fwrite(json, 1, length, stdout);
        fputc('\n', stdout);
    }
    sheaf_free(json);
    if (result == SHEAF_OK) status = 0;

done:
    sheaf_list_free(list);
    sheaf_client_free(client);
    return status;
}
