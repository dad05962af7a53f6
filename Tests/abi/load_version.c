/*
 * load_version.c - the smallest C user of libsheaf.so: it links the library, calls
 * sheaf_version_number() and prints it. check_exports.sh runs it in an empty environment to show
 * the library loads with no Swift toolchain on any library path. It also checks, as it compiles,
 * that SHEAF_VERSION_CHECK agrees with the header's version.
 */
#include <stdio.h>
#include <string.h>

#include "sheaf.h"

/* The version check agrees with the header's own version: true for it and older, false past it. */
#if !SHEAF_VERSION_CHECK(SHEAF_VERSION_MAJOR, SHEAF_VERSION_MINOR, SHEAF_VERSION_PATCH) \
    || !SHEAF_VERSION_CHECK(0, 0, 0) \
    || SHEAF_VERSION_CHECK(SHEAF_VERSION_MAJOR, SHEAF_VERSION_MINOR, SHEAF_VERSION_PATCH + 1) \
    || SHEAF_VERSION_CHECK(SHEAF_VERSION_MAJOR, SHEAF_VERSION_MINOR + 1, 0) \
    || SHEAF_VERSION_CHECK(SHEAF_VERSION_MAJOR + 1, 0, 0)
#error "SHEAF_VERSION_CHECK disagrees with SHEAF_VERSION_NUMBER"
#endif

int main(void) {
    int number = sheaf_version_number();
    const char *text = sheaf_version_string();
    printf("%d\n", number);
    if (number != SHEAF_VERSION_NUMBER) {
        fprintf(stderr, "header says %d, library says %d\n", SHEAF_VERSION_NUMBER, number);
        return 1;
    }
    if (text == NULL || strcmp(text, SHEAF_VERSION_STRING) != 0) {
        fprintf(stderr, "header says \"%s\", library says \"%s\"\n", SHEAF_VERSION_STRING,
                text ? text : "(null)");
        return 1;
    }
    return 0;
}
