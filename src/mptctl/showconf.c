/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "mptctl.h"

/* mptctl showconf TUNNEL: the running configuration, as a profile (mptd's "line" records). */
int verb_showconf(int argc, char **argv) {
        CtlRequest req = { .command = CTL_COMMAND_SHOWCONF };
        CtlReply reply = {};
        int r;

        if (argc != 2) {
                fprintf(stderr, "mptctl: usage: mptctl showconf TUNNEL\n");
                return -EINVAL;
        }
        r = client_request(argv[1], &req, &reply);
        if (r < 0)
                return r;
        for (size_t i = 0; i < reply.n_records; i++)
                if (streq(reply.records[i].type, "line"))
                        printf("%s\n", strempty(ctl_record_get(&reply.records[i], "text")));
        ctl_reply_done(&reply);
        return 0;
}
