/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Runs a fuzz target over files (its corpus and the regression inputs of past findings) without
 * libFuzzer, so that every build's test suite replays them, with any compiler. */

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "conf-parser.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
        char *buf = NULL;
        size_t n = 0;
        int r = read_full_file(path, 1024 * 1024, &buf, &n);

        if (r < 0) {
                fprintf(stderr, "%s: %s\n", path, strerror(-r));
                return 1;
        }
        LLVMFuzzerTestOneInput((const uint8_t *) buf, n);
        free(buf);
        return 0;
}

int main(int argc, char *argv[]) {
        unsigned n = 0;
        int fail = 0;

        for (int i = 1; i < argc; i++) {
                struct stat st;
                DIR *d;
                struct dirent *de;

                if (stat(argv[i], &st) < 0) {
                        perror(argv[i]);
                        return 1;
                }
                if (!S_ISDIR(st.st_mode)) {
                        fail |= run_file(argv[i]);
                        n++;
                        continue;
                }
                d = opendir(argv[i]);
                if (!d) {
                        perror(argv[i]);
                        return 1;
                }
                while ((de = readdir(d))) {
                        char *p;
                        if (de->d_name[0] == '.')
                                continue;
                        if (asprintf(&p, "%s/%s", argv[i], de->d_name) < 0)
                                return 1;
                        fail |= run_file(p);
                        n++;
                        free(p);
                }
                closedir(d);
        }
        printf("%u input%s replayed\n", n, n == 1 ? "" : "s");
        return fail;
}
