/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The native profile parser and verifier (what mptd, mptctl check and the generator read). A
 * profile that loads must print (profile_to_text) to a profile that loads again. */

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(profile_freep) MptProfile *p = NULL, *p2 = NULL;
        _cleanup_free_ char *text = NULL;
        MptDiagnostics d = {}, d2 = {};
        char *buf;
        int r;

        if (size > 256 * 1024)
                return 0;
        buf = malloc(size ?: 1);
        if (!buf)
                return 0;
        memcpy(buf, data, size);

        r = profile_load_buffer("fuzz.conf", buf, size, &p, &d);
        if (r == 0) {
                assert(p);
                if (profile_to_text(p, &text) >= 0) {
                        r = profile_load_buffer("fuzz.conf", text, strlen(text), &p2, &d2);
                        if (r != 0 && !d2.oom) {
                                diag_print(&d2, stderr, "");
                                fprintf(stderr, "--- printed profile that does not load again:\n%s", text);
                                abort();
                        }
                }
        } else
                assert(r == -ENOMEM || diag_count(&d) > 0 || d.oom);
        diag_done(&d);
        diag_done(&d2);
        free(buf);
        return 0;
}
