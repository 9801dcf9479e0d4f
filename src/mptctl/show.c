/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "mptctl.h"

/* Collects the "show" records of each named tunnel (all running tunnels when none is named). */
static int collect(char **names, size_t n_names, CtlRecord **ret, size_t *ret_n, bool quiet_stale) {
        CtlRecord *all = NULL;
        size_t n_all = 0;
        int result = 0;

        for (size_t i = 0; i < n_names; i++) {
                _cleanup_close_ int fd = -EBADF;
                CtlRequest req = { .command = CTL_COMMAND_SHOW };
                CtlReply reply = {};
                CtlRecord *a;
                int r;

                r = client_connect(names[i], &fd);
                if (r < 0) {
                        if (!(quiet_stale && r == -ECONNREFUSED))
                                result = r;
                        continue;
                }
                r = client_call(fd, &req, &reply);
                if (r < 0) {
                        result = r;
                        continue;
                }
                a = realloc(all, (n_all + reply.n_records) * sizeof(CtlRecord));
                if (!a) {
                        ctl_reply_done(&reply);
                        result = -ENOMEM;
                        break;
                }
                all = a;
                /* Move the records over; the reply keeps nothing. */
                memcpy(all + n_all, reply.records, reply.n_records * sizeof(CtlRecord));
                n_all += reply.n_records;
                free(reply.records);
                reply.records = NULL;
                reply.n_records = 0;
                ctl_reply_done(&reply);
        }
        *ret = all;
        *ret_n = n_all;
        return result;
}

static void records_free(CtlRecord *r, size_t n) {
        CtlReply tmp = { .records = r, .n_records = n };
        ctl_reply_done(&tmp);
}

/* mptctl show [TUNNEL] [dump] */
int verb_show(int argc, char **argv) {
        char **names = NULL;
        size_t n_names = 0;
        CtlRecord *recs = NULL;
        size_t n_recs = 0;
        bool dump = false, named = false;
        int r;

        if (argc > 1 && !streq(argv[argc - 1], "dump") && argc > 2) {
                fprintf(stderr, "mptctl: usage: mptctl show [TUNNEL] [dump]\n");
                return -EINVAL;
        }
        if (argc > 1 && streq(argv[argc - 1], "dump")) {
                dump = true;
                argc--;
        }
        if (argc > 2) {
                fprintf(stderr, "mptctl: usage: mptctl show [TUNNEL] [dump]\n");
                return -EINVAL;
        }
        if (argc == 2) {
                names = malloc(sizeof(char *));
                if (!names || !(names[0] = strdup(argv[1])))
                        return -ENOMEM;
                n_names = 1;
                named = true;
        } else {
                r = client_list_tunnels(&names, &n_names);
                if (r < 0)
                        return r;
        }

        r = collect(names, n_names, &recs, &n_recs, !named);
        strv_free_n(names, n_names);

        if (dump) {
                for (size_t i = 0; i < n_recs; i++) {
                        fputs(recs[i].type, stdout);
                        for (size_t j = 0; j < recs[i].n_fields; j++)
                                printf("\t%s=%s", recs[i].fields[j].key, recs[i].fields[j].value);
                        fputc('\n', stdout);
                }
        } else if (arg_json)
                output_json_records(stdout, recs, n_recs);
        else if (n_recs == 0 && r >= 0 && !named)
                printf("no tunnels are running (no control sockets in %s)\n", ctl_runtime_dir());
        else
                output_show_text(stdout, recs, n_recs);
        records_free(recs, n_recs);
        return r;
}
