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

static int reload(const char *tunnel, const CtlRequest *req) {
        CtlReply reply = {};
        int r;

        r = client_request(tunnel, req, &reply);
        if (r < 0)
                return r;
        for (size_t i = 0; i < reply.n_records; i++)
                if (streq(reply.records[i].type, "line"))
                        printf("%s: %s\n", tunnel, strempty(ctl_record_get(&reply.records[i], "text")));
        ctl_reply_done(&reply);
        return 0;
}

/* mptctl reload TUNNEL: mptd reads its profile again and applies what changed (mptd(8),
 * RELOADING); what cannot change live is refused, with FILE:LINE. */
int verb_reload(int argc, char **argv) {
        if (argc != 2) {
                fprintf(stderr, "mptctl: usage: mptctl reload TUNNEL\n");
                return -EINVAL;
        }
        return reload(argv[1], &(CtlRequest) { .command = CTL_COMMAND_RELOAD });
}

/* mptctl syncconf TUNNEL FILE: the same with another file (mptd reads it: an absolute name). */
int verb_syncconf(int argc, char **argv) {
        CtlRequest req = { .command = CTL_COMMAND_SYNCCONF };
        _cleanup_free_ char *abs = NULL;

        if (argc != 3) {
                fprintf(stderr, "mptctl: usage: mptctl syncconf TUNNEL FILE\n");
                return -EINVAL;
        }
        abs = realpath(argv[2], NULL);
        if (!abs) {
                fprintf(stderr, "mptctl: cannot read %s: %s\n", argv[2], strerror(errno));
                return -errno;
        }
        if (strlen(abs) >= sizeof req.file) {
                fprintf(stderr, "mptctl: %s: file name too long\n", argv[2]);
                return -ENAMETOOLONG;
        }
        strcpy(req.file, abs);
        return reload(argv[1], &req);
}
