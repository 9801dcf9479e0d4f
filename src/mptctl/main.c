/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <getopt.h>

#include "mptctl.h"
#include "parse-util.h"

/* monitor --interval's range in seconds, as mptctl(8) gives it. */
#define MONITOR_INTERVAL_MIN 0.05
#define MONITOR_INTERVAL_MAX 3600.0

bool arg_json;
double arg_interval = 1.0;
unsigned arg_count;
bool arg_strict;

/* Options of mptctl itself and of its commands: one number space, one switch in parse_verb_options(). */
enum {
        ARG_VERSION = 0x100,
        ARG_INTERVAL,
        ARG_COUNT,
        ARG_STRICT,
};

static void help(void) {
        printf("Usage: mptctl [OPTIONS] COMMAND [ARGS]\n"
               "\n"
               "Shows and changes running mpt tunnels; checks profiles.\n"
               "\n"
               "Commands:\n"
               "  show [TUNNEL] [dump]               Paths, state, counters, drops by reason\n"
               "  showconf TUNNEL                    The running configuration, as a profile\n"
               "  reload TUNNEL                      Read the profile again, apply what changed\n"
               "  syncconf TUNNEL FILE               Apply FILE to the running tunnel, as a reload\n"
               "  monitor TUNNEL [--interval=S] [--count=N]\n"
               "                                     Live per-path rates\n"
               "  path TUNNEL PATH set weight N      Change a path's weight (0: backup)\n"
               "  path TUNNEL PATH up|down           Take a path out of or back into use\n"
               "  check [--strict] FILE...           Check profiles; every problem as FILE:LINE\n"
               "  keys                               List the profile keys\n"
               "  fields                             List the fields of show, with types and units\n"
               "  genkey                             Print a new private key (X25519), as wg genkey\n"
               "  pubkey                             Print the public key of the private key on stdin\n"
               "  genpsk                             Print a new pre-shared key for Key= or KeyFile=\n"
               "\n"
               "Options:\n"
               "  -j --json     JSON output\n"
               "  -h --help     Show this help\n"
               "     --version  Show the version\n"
               "\n"
               "Control sockets live in %s ($MPT_RUNTIME_DIR). See mptctl(8).\n",
               ctl_runtime_dir());
}

static const struct option monitor_options[] = {
        { "interval", required_argument, NULL, ARG_INTERVAL },
        { "count", required_argument, NULL, ARG_COUNT },
        {}
};

static const struct option check_options[] = {
        { "strict", no_argument, NULL, ARG_STRICT },
        {}
};

static const struct {
        const char *name;
        int (*run)(int argc, char **argv);
        /* The command's own options, which come after it; NULL: it takes none, and its arguments are
         * taken as they are (a weight of -1 is a bad weight, not an unknown option). */
        const struct option *options;
} verbs[] = {
        { "show", verb_show, NULL },
        { "showconf", verb_showconf, NULL },
        { "reload", verb_reload, NULL },
        { "syncconf", verb_syncconf, NULL },
        { "monitor", verb_monitor, monitor_options },
        { "path", verb_path, NULL },
        { "check", verb_check, check_options },
        { "keys", verb_keys, NULL },
        { "fields", verb_fields, NULL },
        { "genkey", verb_genkey, NULL },
        { "genpsk", verb_genpsk, NULL },
        { "pubkey", verb_pubkey, NULL },
};

static const char *option_name(const struct option *options, int val) {
        for (const struct option *o = options; o->name; o++)
                if (o->val == val)
                        return o->name;
        return NULL;
}

/* A bad option of a command, reported after getopt_long() returned '?' (opterr is off). */
static int bad_verb_option(const char *verb, const struct option *options, char **argv) {
        const char *arg = argv[optind - 1], *name = option_name(options, optopt);

        if (name) /* a value given to an option that takes none: "--strict=yes" */
                fprintf(stderr, "mptctl: %s: option '--%s' takes no value\n", verb, name);
        else if (optopt > 0 && optopt < 0x100)
                fprintf(stderr, "mptctl: %s: unknown option '-%c'%s\n", verb, optopt,
                        strchr("hj", optopt) ? "; mptctl's own options come before the command" : " (see mptctl --help)");
        else if (startswith(arg, "--json") || startswith(arg, "--help") || startswith(arg, "--version"))
                fprintf(stderr, "mptctl: %s: unknown option '%s'; mptctl's own options come before the command\n",
                        verb, arg);
        else
                fprintf(stderr, "mptctl: %s: unknown option '%s' (see mptctl --help)\n", verb, arg);
        return -EINVAL;
}

/* Parses the options of a command with getopt_long() (argv[0] is the command): before, between or
 * after its arguments, as --name=VALUE or --name VALUE; "--" ends them. Sets the arg_* globals and
 * returns the command with its other arguments, in order, in *ret_argv (the strings are argv's).
 * Bad options are reported here. */
static int parse_verb_options(const char *verb, const struct option *options, int argc, char **argv,
                              int *ret_argc, char ***ret_argv) {
        _cleanup_free_ char **args = NULL;
        int n = 0, c;

        args = calloc((size_t) argc + 1, sizeof(char *));
        if (!args)
                return -ENOMEM;
        args[n++] = argv[0];

        /* Afresh: main's getopt_long() left its state behind (glibc starts over at optind 0). '-':
         * arguments come back in order, as 1, even with POSIXLY_CORRECT set; ':': a missing value as
         * ':'. opterr off: the messages are ours, and name the command. */
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "-:", options, NULL)) >= 0)
                switch (c) {
                case 1:
                        args[n++] = optarg;
                        break;
                case ARG_INTERVAL: {
                        char *end;

                        errno = 0;
                        arg_interval = strtod(optarg, &end);
                        /* (Written so that NaN fails too.) */
                        if (errno != 0 || end == optarg || *end ||
                            !(arg_interval >= MONITOR_INTERVAL_MIN && arg_interval <= MONITOR_INTERVAL_MAX)) {
                                fprintf(stderr, "mptctl: invalid --interval '%s': expected %g..%g seconds\n",
                                        optarg, MONITOR_INTERVAL_MIN, MONITOR_INTERVAL_MAX);
                                return -EINVAL;
                        }
                        break;
                }
                case ARG_COUNT:
                        if (safe_atou(optarg, &arg_count) < 0) {
                                fprintf(stderr, "mptctl: invalid --count '%s'\n", optarg);
                                return -EINVAL;
                        }
                        break;
                case ARG_STRICT:
                        arg_strict = true;
                        break;
                case ':':
                        fprintf(stderr, "mptctl: %s: option '%s' needs a value\n", verb, argv[optind - 1]);
                        return -EINVAL;
                default:
                        return bad_verb_option(verb, options, argv);
                }
        while (optind < argc) /* after "--" */
                args[n++] = argv[optind++];

        *ret_argc = n;
        *ret_argv = TAKE_PTR(args);
        return 0;
}

static int run_verb(size_t i, int argc, char **argv) {
        _cleanup_free_ char **args = NULL;
        int n, r;

        if (!verbs[i].options)
                return verbs[i].run(argc, argv);
        r = parse_verb_options(verbs[i].name, verbs[i].options, argc, argv, &n, &args);
        if (r == -ENOMEM)
                fprintf(stderr, "mptctl: out of memory\n");
        if (r < 0)
                return r;
        return verbs[i].run(n, args);
}

int main(int argc, char *argv[]) {
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
                        return run_verb(i, argc - optind, argv + optind) < 0 ? 1 : 0;

        fprintf(stderr, "mptctl: unknown command '%s' (see mptctl --help)\n", argv[optind]);
        return 1;
}
