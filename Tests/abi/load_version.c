/*
 * load_version.c - the smallest C user of libsheaf.so: it links the library, calls
 * sheaf_version_number() and prints it. check_exports.sh runs it in an empty environment to show
 * the library loads with no Swift toolchain on any library path.
 */
#include <stdio.h>
#include <string.h>

#include "sheaf.h"

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
