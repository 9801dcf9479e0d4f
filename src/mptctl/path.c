/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "mptctl.h"
#include "parse-util.h"
#include "profile.h"

/* mptctl path TUNNEL PATH set weight N | up | down */
int verb_path(int argc, char **argv) {
        CtlRequest req = {};
        CtlReply reply = {};
        int r;

        if (argc < 4) {
                fprintf(stderr, "mptctl: usage: mptctl path TUNNEL PATH set weight N | up | down\n");
                return -EINVAL;
        }
        if (!object_name_valid(argv[2])) {
                fprintf(stderr, "mptctl: '%s' is not a valid path name\n", argv[2]);
                return -EINVAL;
        }
        strcpy(req.path, argv[2]);

        if (argc == 4 && streq(argv[3], "up"))
                req.command = CTL_COMMAND_PATH_UP;
        else if (argc == 4 && streq(argv[3], "down"))
                req.command = CTL_COMMAND_PATH_DOWN;
        else if (argc == 6 && streq(argv[3], "set") && streq(argv[4], "weight")) {
                unsigned w;
                if (safe_atou(argv[5], &w) < 0 || w > MPT_WEIGHT_MAX) {
                        fprintf(stderr, "mptctl: invalid weight '%s': expected 0..%u (0: backup)\n", argv[5],
                                MPT_WEIGHT_MAX);
                        return -EINVAL;
                }
                req.command = CTL_COMMAND_PATH_WEIGHT;
                req.weight = w;
        } else {
                fprintf(stderr, "mptctl: usage: mptctl path TUNNEL PATH set weight N | up | down\n");
                return -EINVAL;
        }

        r = client_request(argv[1], &req, &reply);
        if (r < 0)
                return r;
        ctl_reply_done(&reply);
        return 0;
}
