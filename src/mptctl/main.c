/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <getopt.h>

#include "mptctl.h"

bool arg_json;

static void help(void) {
        printf("Usage: mptctl [OPTIONS] COMMAND [ARGS]\n"
               "\n"
               "Shows and changes running mpt tunnels; checks profiles.\n"
               "\n"
               "Commands:\n"
               "  show [TUNNEL] [dump]               Paths, state, counters, drops by reason\n"
               "  monitor TUNNEL [--interval=S] [--count=N]\n"
               "                                     Live per-path rates\n"
               "  path TUNNEL PATH set weight N      Change a path's weight (0: backup)\n"
               "  path TUNNEL PATH up|down           Take a path out of or back into use\n"
               "  check FILE...                      Check profiles; every problem as FILE:LINE\n"
               "  keys                               List the profile keys\n"
               "  genkey                             Print a new random key for Key= or KeyFile=\n"
               "\n"
               "Options:\n"
               "  -j --json     JSON output\n"
               "  -h --help     Show this help\n"
               "     --version  Show the version\n"
               "\n"
               "Control sockets live in %s ($MPT_RUNTIME_DIR). See mptctl(8).\n",
               ctl_runtime_dir());
}

static const struct {
        const char *name;
        int (*run)(int argc, char **argv);
} verbs[] = {
        { "show", verb_show },
        { "monitor", verb_monitor },
        { "path", verb_path },
        { "check", verb_check },
        { "keys", verb_keys },
        { "genkey", verb_genkey },
};

int main(int argc, char *argv[]) {
        enum { ARG_VERSION = 0x100 };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "json", no_argument, NULL, 'j' },
                {}
        };
        int c;

        /* '+': stop at the command, whose own arguments may look like options. */
        while ((c = getopt_long(argc, argv, "+hj", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("mptctl " MPT_VERSION "\n");
                        return 0;
                case 'j':
                        arg_json = true;
                        break;
                default:
                        return 1;
                }

        if (optind >= argc) {
                /* Like wg: no command shows everything. */
                char *show[] = { (char *) "show", NULL };
                return verb_show(1, show) < 0 ? 1 : 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(argv[optind], verbs[i].name))
                        return verbs[i].run(argc - optind, argv + optind) < 0 ? 1 : 0;

        fprintf(stderr, "mptctl: unknown command '%s' (see mptctl --help)\n", argv[optind]);
        return 1;
}
