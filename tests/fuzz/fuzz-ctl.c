/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The control protocol: the request parser (what mptd reads from any local client) and the
 * reply parser (what mptctl reads). A parsed request must format back to a request that parses
 * to the same thing. */

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "ctl-protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *err = NULL;
        CtlRequest req, req2;
        CtlReply reply = {};
        char *buf, out[MPT_CTL_REQUEST_MAX];
        int n;

        buf = malloc(size ?: 1);
        if (!buf)
                return 0;
        memcpy(buf, data, size);

        if (ctl_request_parse(buf, size, &req, &err) == 0) {
                n = ctl_request_format(&req, out, sizeof out);
                assert(n > 0);
                assert(ctl_request_parse(out, (size_t) n, &req2, &err) == 0);
                assert(req2.command == req.command && strcmp(req2.path, req.path) == 0 &&
                       req2.weight == req.weight);
        } else
                assert(err);

        if (ctl_reply_parse(buf, size, &reply) == 0) {
                for (size_t i = 0; i < reply.n_records; i++)
                        for (size_t j = 0; j < reply.records[i].n_fields; j++)
                                (void) ctl_record_get(&reply.records[i], reply.records[i].fields[j].key);
        }
        ctl_reply_done(&reply);
        free(buf);
        return 0;
}
