/*
 * list.c - fetch a paginated list with Sheaf, watch it grow, then print it.
 *
 *   usage: list BASE_URL [PATH]        e.g.  list http://127.0.0.1:8080 /anchor
 *
 * The list is described as the test server's /anchor endpoint serves it:
 *   {"items": [...], "next_page": "<url>" | null, "total": <n>}, pages ?page=1,2,... &per_page=50.
 * Progress goes to stderr (one line, rewritten), the whole list (one JSON array) to stdout.
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

/* Describes the list: where the items, the next link, the total and each item's id are. */
static sheaf_result describe_list(sheaf_list *list) {
    sheaf_result result;
    if ((result = sheaf_list_set_items(list, "/items")) != SHEAF_OK) return result;
    if ((result = sheaf_list_set_page_number(list, "page", 1, "per_page", 50)) != SHEAF_OK) return result;
    if ((result = sheaf_list_set_next(list, SHEAF_NEXT_BODY_POINTER, "/next_page")) != SHEAF_OK) return result;
    if ((result = sheaf_list_set_total(list, SHEAF_TOTAL_BODY_POINTER, "/total")) != SHEAF_OK) return result;
    return sheaf_list_set_identity(list, "/id");
}

int main(int argc, char **argv) {
    sheaf_client *client = NULL;
    sheaf_list *list = NULL;
    char *json = NULL;
    size_t length = 0;
    sheaf_result result;
    int status = 1;

    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s BASE_URL [PATH]\n", argv[0]);
        return 2;
    }
    if (sheaf_version_number() != SHEAF_VERSION_NUMBER)
        fprintf(stderr, "warning: built against sheaf %s, running with %s\n", SHEAF_VERSION_STRING,
                sheaf_version_string());

    result = sheaf_client_new(&client, argv[1], getenv("SHEAF_TOKEN"));
    if (result != SHEAF_OK) {
        fprintf(stderr, "bad base URL %s: %s\n", argv[1], sheaf_result_str(result));
        return 1;
    }
    if (getenv("SHEAF_WINDOW") != NULL &&
        sheaf_client_set_option(client, SHEAF_OPT_WINDOW, atoll(getenv("SHEAF_WINDOW"))) != SHEAF_OK) {
        fprintf(stderr, "SHEAF_WINDOW: %s\n", sheaf_client_errmsg(client));
        goto done;
    }
    result = sheaf_list_new(&list, client, argc > 2 ? argv[2] : "/anchor");
    if (result != SHEAF_OK) {
        fprintf(stderr, "%s\n", sheaf_client_errmsg(client));
        goto done;
    }
    if ((result = describe_list(list)) != SHEAF_OK) {
        fprintf(stderr, "%s\n", sheaf_list_errmsg(list));
        goto done;
    }

    /*
     * Run the list in the background and wait for it; print_progress sees every snapshot.
     * (sheaf_list_fetch_all does the same in one call, without a callback.)
     */
    if ((result = sheaf_list_start(list, print_progress, NULL)) == SHEAF_OK)
        result = sheaf_list_wait(list);
    fputc('\n', stderr);
    if (result != SHEAF_OK && result != SHEAF_LIMIT_REACHED)
        fprintf(stderr, "%s: %s\n", sheaf_result_str(result), sheaf_list_errmsg(list));

    /* Whatever arrived, in order; after a failure, the items before it. */
    if (sheaf_list_prefix(list, &json, &length) == SHEAF_OK) {
        fwrite(json, 1, length, stdout);
        fputc('\n', stdout);
    }
    sheaf_free(json);
    if (result == SHEAF_OK || result == SHEAF_LIMIT_REACHED) status = 0;

done:
    sheaf_list_free(list);
    sheaf_client_free(client);
    return status;
}
