/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <systemd/sd-daemon.h>

#include "ctl.h"
#include "log.h"
#include "netdev.h"
#include "reload.h"
#include "sandbox.h"
#include "tunnel.h"

static unsigned arg_workers;
static int arg_log_level = LOG_INFO;
static LogTarget arg_log_target = LOG_TARGET_AUTO;
static bool arg_check;
static const char *arg_profile;
static const char *arg_netdev;
static gid_t arg_control_group = (gid_t) -1;
/* --user: the user (and its primary group) mptd runs as once it is set up; (uid_t) -1: none. */
static uid_t arg_uid = (uid_t) -1;
static gid_t arg_gid = (gid_t) -1;
static const char *arg_user;

static void help(void) {
        printf("Usage: mptd [OPTIONS] PROFILE\n"
               "       mptd [OPTIONS] --netdev FILE\n"
               "\n"
               "Runs the data plane of one mpt multipath tunnel.\n"
               "PROFILE is a file, or a name looked up as " MPT_SYSCONFDIR "/NAME.conf.\n"
               "\n"
               "     --netdev=FILE        Read the tunnel from a systemd .netdev file and attach\n"
               "                          to the TUN device systemd-networkd created from it\n"
               "  -c --check              Check the profile and exit\n"
               "  -w --workers=N          Data-plane threads (overrides Workers=)\n"
               "     --control-group=GROUP  Members of GROUP may use the control socket too\n"
               "     --user=USER          Run as USER (and its group) once the profile is read,\n"
               "                          with only CAP_NET_ADMIN (mptd must start as root)\n"
               "     --log-level=LEVEL    err, warning, notice, info (default) or debug\n"
               "     --log-target=TARGET  auto (default), console or journal\n"
               "  -h --help               Show this help\n"
               "     --version            Show the version\n"
               "\n"
               "See mptd(8), mpt.conf(5) and mpt.netdev(5).\n");
}

static int parse_argv(int argc, char *argv[]) {
        enum { ARG_VERSION = 0x100, ARG_LOG_LEVEL, ARG_LOG_TARGET, ARG_NETDEV, ARG_CONTROL_GROUP, ARG_USER };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "check", no_argument, NULL, 'c' },
                { "workers", required_argument, NULL, 'w' },
                { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
                { "log-target", required_argument, NULL, ARG_LOG_TARGET },
                { "netdev", required_argument, NULL, ARG_NETDEV },
                { "control-group", required_argument, NULL, ARG_CONTROL_GROUP },
                { "user", required_argument, NULL, ARG_USER },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "hcw:", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("mptd " MPT_VERSION "\n");
                        return 0;
                case 'c':
                        arg_check = true;
                        break;
                case 'w':
                        if (safe_atou(optarg, &arg_workers) < 0 || arg_workers < 1 || arg_workers > MPT_WORKERS_MAX) {
                                fprintf(stderr, "mptd: invalid --workers '%s': expected 1..%u\n", optarg, MPT_WORKERS_MAX);
                                return -EINVAL;
                        }
                        break;
                case ARG_LOG_LEVEL:
                        arg_log_level = log_level_from_string(optarg);
                        if (arg_log_level < 0) {
                                fprintf(stderr, "mptd: invalid --log-level '%s'\n", optarg);
                                return -EINVAL;
                        }
                        break;
                case ARG_LOG_TARGET:
                        if (streq(optarg, "auto"))
                                arg_log_target = LOG_TARGET_AUTO;
                        else if (streq(optarg, "console"))
                                arg_log_target = LOG_TARGET_CONSOLE;
                        else if (streq(optarg, "journal"))
                                arg_log_target = LOG_TARGET_JOURNAL;
                        else {
                                fprintf(stderr, "mptd: invalid --log-target '%s'\n", optarg);
                                return -EINVAL;
                        }
                        break;
                case ARG_NETDEV:
                        arg_netdev = optarg;
                        break;
                case ARG_CONTROL_GROUP: {
                        struct group *g = getgrnam(optarg);
                        unsigned gid;

                        if (g)
                                arg_control_group = g->gr_gid;
                        else if (safe_atou(optarg, &gid) >= 0 && gid != (unsigned) -1)
                                arg_control_group = (gid_t) gid;
                        else {
                                fprintf(stderr, "mptd: invalid --control-group '%s': no such group\n", optarg);
                                return -EINVAL;
                        }
                        break;
                }
                case ARG_USER: {
                        /* By name, or a number that names a user of the user database: its
                         * primary group comes from there. */
                        struct passwd *pw = getpwnam(optarg);
                        unsigned uid;

                        if (!pw && safe_atou(optarg, &uid) >= 0 && uid != (unsigned) -1)
                                pw = getpwuid((uid_t) uid);
                        if (!pw) {
                                fprintf(stderr, "mptd: invalid --user '%s': no such user%s\n", optarg,
                                        streq(optarg, "mpt") ? " (systemd-sysusers creates it from sysusers.d/mpt.conf)"
                                                             : "");
                                return -EINVAL;
                        }
                        if (pw->pw_uid == 0) {
                                fprintf(stderr, "mptd: invalid --user '%s': that is root\n", optarg);
                                return -EINVAL;
                        }
                        arg_uid = pw->pw_uid;
                        arg_gid = pw->pw_gid;
                        arg_user = optarg;
                        break;
                }
                case '?':
                        return -EINVAL;
                default:
                        assert(false);
                }

        if (arg_netdev) {
                if (optind != argc) {
                        fprintf(stderr, "mptd: --netdev FILE takes the place of PROFILE: give one of them, "
                                "not both (see mptd --help)\n");
                        return -EINVAL;
                }
                return 1;
        }
        if (optind + 1 != argc) {
                fprintf(stderr, "mptd: expected exactly one PROFILE argument (see mptd --help)\n");
                return -EINVAL;
        }
        arg_profile = argv[optind];
        return 1;
}

/* A path (with a '/', or ending in ".conf"), else a tunnel name looked up in the profile directory. */
static int profile_filename(const char *arg, char **ret) {
        size_t l = strlen(arg);

        if (strchr(arg, '/') || (l > 5 && streq(arg + l - 5, ".conf")))
                return (*ret = strdup(arg)) ? 0 : -ENOMEM;
        if (!object_name_valid(arg))
                return -EINVAL;
        return asprintf(ret, "%s/%s.conf", MPT_SYSCONFDIR, arg) < 0 ? -ENOMEM : 0;
}

/* Reads the native profile or the .netdev named on the command line. Prints every problem;
 * returns 0 or -EINVAL (already reported). */
static int load_profile(MptProfile **ret, char **ret_filename) {
        _cleanup_(profile_freep) MptProfile *profile = NULL;
        _cleanup_free_ char *filename = NULL;
        MptDiagnostics diag = {};
        int r;

        if (arg_netdev) {
                filename = strdup(arg_netdev);
                if (!filename)
                        return log_oom();
                r = netdev_load_file(filename, &profile, NULL, &diag);
                if (r == 0) {
                        fprintf(stderr, "mptd: %s has no [" NETDEV_TUNNEL_SECTION "] section: it describes no mpt "
                                "tunnel (see mpt.netdev(5))\n", filename);
                        return -EINVAL;
                }
        } else {
                r = profile_filename(arg_profile, &filename);
                if (r < 0) {
                        fprintf(stderr, "mptd: '%s' is neither a file name nor a tunnel name\n", arg_profile);
                        return -EINVAL;
                }
                r = profile_load_file(filename, &profile, &diag);
        }
        if (r == -EINVAL) {
                diag_print(&diag, stderr, "");
                fprintf(stderr, "mptd: %s has %zu error%s; not starting the tunnel\n", filename, diag_count(&diag),
                        diag_count(&diag) == 1 ? "" : "s");
                if (!arg_netdev && netdev_filename(filename))
                        fprintf(stderr, "mptd: %s looks like a systemd .netdev file: use mptd --netdev %s\n",
                                filename, filename);
                diag_done(&diag);
                return -EINVAL;
        }
        diag_done(&diag);
        if (r == -EBADFD) {
                fprintf(stderr, "mptd: cannot read %s: not a regular file\n", filename);
                return -EINVAL;
        }
        if (r == -EACCES && geteuid() != 0) {
                struct passwd *pw = getpwuid(geteuid());
                struct group *gr = getgrgid(getegid());
                /* Most likely mptd@.service (User=mpt) and a profile made private to root. */
                fprintf(stderr, "mptd: cannot read %s: %s (mptd runs as user %s: let it read the profile and its "
                        "key files through its group, e.g. chown root:%s and chmod 640)\n", filename, strerror(-r),
                        pw ? pw->pw_name : "?", gr ? gr->gr_name : "mpt");
                return -EINVAL;
        }
        if (r < 0) {
                fprintf(stderr, "mptd: cannot read %s: %s\n", filename, strerror(-r));
                return -EINVAL;
        }
        profile_log_read(profile, arg_netdev != NULL);
        *ret = TAKE_PTR(profile);
        *ret_filename = TAKE_PTR(filename);
        return 0;
}

static bool have_cap_net_admin(void) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2] = {};

        if (syscall(SYS_capget, &h, d) < 0)
                return geteuid() == 0;
        return d[CAP_NET_ADMIN / 32].effective & (1u << (CAP_NET_ADMIN % 32));
}

/* Since Linux 5.7, SO_BINDTODEVICE on a socket not yet bound to a device needs no privilege. */
static bool kernel_needs_net_raw(void) {
        struct utsname u;
        unsigned major, minor;

        if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2)
                return true;
        return major < 5 || (major == 5 && minor < 7);
}

/* Becomes arg_uid/arg_gid (no supplementary groups) and keeps the permitted capabilities across
 * the change (their effective set is empty then; drop_privileges() raises what it keeps). */
static int switch_user(void) {
        int pdeathsig = 0;

        if (geteuid() != 0)
                return log_error_errno(SYNTHETIC_ERRNO(EPERM),
                                       "--user=%s: mptd must start as root to change its user (it runs as uid %u).",
                                       arg_user, (unsigned) geteuid());
        /* The parent-death signal (nm-mpt-service asks for one, so that mptd does not outlive it)
         * is cleared when the user changes: set it again after. */
        (void) prctl(PR_GET_PDEATHSIG, &pdeathsig, 0, 0, 0);
        if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
                return log_error_errno(errno, "Failed to keep capabilities across the user change: %m");
        if (setgroups(0, NULL) < 0)
                return log_error_errno(errno, "Failed to drop supplementary groups: %m");
        if (setresgid(arg_gid, arg_gid, arg_gid) < 0)
                return log_error_errno(errno, "Failed to change group to %u: %m%s", (unsigned) arg_gid,
                                       errno == EPERM ? " (CAP_SETGID is missing: a unit's CapabilityBoundingSet=?)" : "");
        if (setresuid(arg_uid, arg_uid, arg_uid) < 0)
                return log_error_errno(errno, "Failed to change user to %s (uid %u): %m%s", arg_user, (unsigned) arg_uid,
                                       errno == EPERM ? " (CAP_SETUID is missing: a unit's CapabilityBoundingSet=?)" : "");
        if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
                return log_error_errno(errno, "Failed to reset PR_SET_KEEPCAPS: %m");
        if (pdeathsig > 0) {
                if (prctl(PR_SET_PDEATHSIG, pdeathsig, 0, 0, 0) < 0)
                        return log_error_errno(errno, "Failed to set the parent-death signal again: %m");
                /* The parent may have gone in between. */
                if (getppid() == 1)
                        return log_error_errno(SYNTHETIC_ERRNO(ESRCH), "The process that started mptd is gone.");
        }
        log_info("Running as user %s (uid %u, gid %u) from now on.", arg_user, (unsigned) arg_uid, (unsigned) arg_gid);
        return 0;
}

/* What mptd needs while it runs: CAP_NET_ADMIN (rtnetlink: the TUN device, addresses, routes,
 * MTU; nftables; SO_RCVBUFFORCE) and, on kernels before 5.7, CAP_NET_RAW for SO_BINDTODEVICE
 * when a path binds again. Everything else goes, before any thread starts (capabilities are per
 * thread): from the bounding set (when we may change it), the ambient, inheritable, permitted
 * and effective sets; and no exec can ever gain privileges again (PR_SET_NO_NEW_PRIVS). With
 * --user, mptd becomes that user in between (after the bounding set, which needs CAP_SETPCAP;
 * before the sets are cut, which must leave CAP_SETUID and CAP_SETGID until then). */
static int drop_privileges(void) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2] = {};
        const uint64_t keep = (UINT64_C(1) << CAP_NET_ADMIN) |
                                   (kernel_needs_net_raw() ? UINT64_C(1) << CAP_NET_RAW : 0);
        uint64_t eff, perm;
        bool may_setpcap;

        if (syscall(SYS_capget, &h, d) < 0)
                return log_error_errno(errno, "Failed to read capabilities: %m");
        eff = d[0].effective | ((uint64_t) d[1].effective << 32);
        perm = d[0].permitted | ((uint64_t) d[1].permitted << 32);
        may_setpcap = eff & (UINT64_C(1) << CAP_SETPCAP);

        for (unsigned long cap = 0; cap < 64; cap++) {
                int r = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
                if (r < 0)
                        break; /* past the last capability the kernel knows */
                if (r == 0 || (keep & (UINT64_C(1) << cap)))
                        continue;
                if (!may_setpcap)
                        break; /* unprivileged: the bounding set cannot matter with no_new_privs */
                if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
                        return log_error_errno(errno, "Failed to drop capability %lu from the bounding set: %m", cap);
        }
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                return log_error_errno(errno, "Failed to clear the ambient capabilities: %m");
        if (arg_uid != (uid_t) -1) {
                int r = switch_user();
                if (r < 0)
                        return r;
                /* The user change emptied the effective set; what is kept comes back from the
                 * permitted one. */
                eff = perm;
        }

        eff &= keep;
        perm &= keep;
        d[0] = (struct __user_cap_data_struct) { .effective = (uint32_t) eff, .permitted = (uint32_t) perm };
        d[1] = (struct __user_cap_data_struct) { .effective = (uint32_t) (eff >> 32), .permitted = (uint32_t) (perm >> 32) };
        if (syscall(SYS_capset, &h, d) < 0)
                return log_error_errno(errno, "Failed to drop capabilities: %m");
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return log_error_errno(errno, "Failed to set no_new_privs: %m");
        log_debug("Dropped every capability but CAP_NET_ADMIN (and CAP_NET_RAW before Linux 5.7); have: %s%s.",
                  eff & (UINT64_C(1) << CAP_NET_ADMIN) ? "cap_net_admin " : "",
                  eff & (UINT64_C(1) << CAP_NET_RAW) ? "cap_net_raw" : "");
        return 0;
}

static unsigned default_workers(void) {
        cpu_set_t set;
        int n;

        if (sched_getaffinity(0, sizeof set, &set) < 0)
                return 1;
        n = CPU_COUNT(&set);
        return (unsigned) CLAMP(n, 1, (int) MPT_WORKERS_MAX);
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Tunnel *t = userdata;

        log_tunnel_info(t, "Received %s, shutting down.", strsignal((int) si->ssi_signo));
        (void) sd_notify(false, "STOPPING=1");
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

/* SIGHUP: read the profile again and apply what changed (reload.c); a refusal or an error keeps
 * the tunnel as it runs (both are logged). */
static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Tunnel *t = userdata;
        _cleanup_free_ char *msg = NULL;

        log_tunnel_info(t, "Received SIGHUP, reloading %s.", strna(t->reload_file));
        (void) tunnel_reload_file(t, NULL, &msg);
        return 0;
}

static int run(int argc, char *argv[]) {
        _cleanup_(profile_freep) MptProfile *profile = NULL;
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        _cleanup_(tunnel_freep) Tunnel *tunnel = NULL;
        _cleanup_(ctl_server_freep) CtlServer *ctl = NULL; /* freed before the tunnel it serves */
        _cleanup_free_ char *filename = NULL;
        unsigned workers;
        sigset_t mask;
        int r;

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? 1 : 0;
        log_setup(arg_log_target, arg_log_level);

        r = load_profile(&profile, &filename);
        if (r < 0)
                return 1;
        if (arg_check) {
                printf("%s: OK\n", filename);
                return 0;
        }

        if (!have_cap_net_admin()) {
                fprintf(stderr, "mptd: CAP_NET_ADMIN is needed to set up tunnel '%s' (run mptd as root)\n",
                        profile->tunnel.name);
                return 1;
        }

        workers = arg_workers ?: profile->tunnel.workers ?: default_workers();
        /* Secure mode: each worker sends on its own lane, and the main thread on the last one. */
        if (profile->tunnel.mode == MPT_MODE_SECURE && workers > MPT_SECURE_LANE_CONTROL) {
                log_notice("Secure mode runs at most %u workers (a lane each, and one for the control frames), "
                           "not %u.", MPT_SECURE_LANE_CONTROL, workers);
                workers = MPT_SECURE_LANE_CONTROL;
        }
        dataplane_options_load();

        r = sd_event_default(&event);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate event loop: %m"), 1;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGPIPE);
        sigprocmask(SIG_BLOCK, &mask, NULL);

        /* Claim the name first: a second mptd for the same tunnel stops here, before it touches
         * the first one's device. */
        r = ctl_server_new(event, profile->tunnel.name, arg_control_group, &ctl);
        if (r < 0)
                return 1;
        /* The profile is read and the control socket exists (chown needs CAP_CHOWN); from here on
         * nothing needs more than the network capabilities. Before tunnel_new() starts threads. */
        r = drop_privileges();
        if (r < 0)
                return 1;
        /* No program runs, no process starts, no privilege changes from here on, in any thread
         * (sandbox.h); each worker then narrows it to the data plane. */
        r = sandbox_install_process();
        if (r < 0)
                return 1;
        r = tunnel_new(event, profile, workers, &tunnel);
        if (r < 0)
                return 1;
        /* From here on the tunnel owns the profile: a reload replaces it. */
        tunnel->owns_profile = true;
        TAKE_PTR(profile);
        tunnel->reload_file = TAKE_PTR(filename);
        tunnel->reload_netdev = arg_netdev != NULL;
        ctl_server_attach(ctl, tunnel);

        r = sd_event_add_signal(event, NULL, SIGTERM, on_signal, tunnel);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGINT, on_signal, tunnel);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGHUP, on_sighup, tunnel);
        if (r < 0)
                return log_error_errno(r, "Failed to set up signal handling: %m"), 1;

        log_tunnel_info(tunnel, "Running with %u worker%s and %zu path%s.", workers, workers == 1 ? "" : "s",
                        tunnel->peers[0]->n_paths, tunnel->peers[0]->n_paths == 1 ? "" : "s");
        (void) sd_notifyf(false, "READY=1\nSTATUS=%s: %u of %zu paths up", tunnel->name, tunnel->peers[0]->paths_up,
                          tunnel->peers[0]->n_paths);

        r = sd_event_loop(event);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m"), 1;
        return 0;
}

int main(int argc, char *argv[]) {
        return run(argc, argv);
}
