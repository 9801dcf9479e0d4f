/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The systemd .netdev parser (what the networkd generator and mptd --netdev read). */

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "netdev.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(profile_freep) MptProfile *p = NULL;
        MptNetdevInfo info = {};
        MptDiagnostics d = {};
        char *buf;
        int r;

        if (size > 256 * 1024)
                return 0;
        buf = malloc(size ?: 1);
        if (!buf)
                return 0;
        memcpy(buf, data, size);

        r = netdev_load_buffer("fuzz.netdev", buf, size, &p, &info, &d);
        assert(r == 0 || r == 1 || r < 0);
        if (r == 1)
                assert(p);
        netdev_info_done(&info);
        diag_done(&d);
        free(buf);
        return 0;
}
