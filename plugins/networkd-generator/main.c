/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* mpt-netdev-generator: for every systemd-networkd .netdev file with an [X-MPT] section, an
 * instance of mptd@.service that the interface's device unit wants, with a drop-in that runs
 * mptd --netdev FILE. See mpt.netdev(5) and systemd.generator(7).
 *
 *   mpt-netdev-generator NORMAL_DIR [EARLY_DIR LATE_DIR]
 *
 * It runs early in boot and on every daemon-reload, in parallel with other generators: it reads
 * only small local files, never blocks (no D-Bus, no FIFOs), writes only into NORMAL_DIR, and
 * exits 0 whatever the files hold. A broken file gets no unit and a message on the kernel log
 * (when run by systemd) or standard error: "mpt-netdev-generator: FILE:LINE: message".
 *
 * Test hooks, not for production use: MPT_GENERATOR_SEARCH_PATH (colon-separated directories
 * that replace networkd's search path), MPT_GENERATOR_MPTD and MPT_GENERATOR_UNITDIR (replace
 * the compile-time location of mptd and of mptd@.service in what is written). */

#include <fcntl.h>
#include <stdarg.h>
#include <syslog.h>

#include "generator-core.h"
#include "netdev.h"

#ifndef MPT_SBINDIR
#error "MPT_SBINDIR must be defined"
#endif
#ifndef MPT_SYSTEMUNITDIR
#error "MPT_SYSTEMUNITDIR must be defined"
#endif

static int arg_log_level = LOG_NOTICE;
static int arg_kmsg_fd = -EBADF; /* >= 0: log to the kernel log */

static void log_open(void) {
        const char *level = getenv("SYSTEMD_LOG_LEVEL"), *target = getenv("SYSTEMD_LOG_TARGET");
        static const char *const levels[] = { "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug" };
        bool kmsg;

        for (size_t i = 0; level && i < ELEMENTSOF(levels); i++)
                if (streq(level, levels[i]))
                        arg_log_level = (int) i;

        /* As systemd's own generators: the kernel log when systemd runs us (there is no journal
         * yet, and standard error may go nowhere), standard error when run by hand. */
        if (target && (streq(target, "console") || streq(target, "stderr")))
                kmsg = false;
        else if (target && streq(target, "kmsg"))
                kmsg = true;
        else
                kmsg = getenv("SYSTEMD_SCOPE") != NULL;
        if (kmsg)
                arg_kmsg_fd = open("/dev/kmsg", O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
}

static void log_msg(int level, const char *fmt, ...) _printf_(2, 3);
static void log_msg(int level, const char *fmt, ...) {
        char msg[2048];
        va_list ap;

        if (level > arg_log_level)
                return;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        if (arg_kmsg_fd >= 0 &&
            dprintf(arg_kmsg_fd, "<%i>" GENERATOR_NAME "[%i]: %s\n", level, (int) getpid(), msg) > 0)
                return;
        fprintf(stderr, GENERATOR_NAME ": %s\n", msg);
}

static void log_diagnostics(int level, const MptDiagnostics *d) {
        for (size_t i = 0; i < d->n; i++) {
                _cleanup_free_ char *s = NULL;
                if (diag_format(&d->items[i], &s) >= 0)
                        log_msg(level, "%s", s);
        }
        if (d->n_dropped > 0)
                log_msg(level, "... and %zu more problems", d->n_dropped);
}

/* The tunnels' interface names seen so far, in networkd's reading order: the first file that
 * names an interface is the one networkd creates it from. */
typedef struct Seen {
        char *ifname;
        const char *path;
} Seen;

static int process_file(const GeneratorPaths *paths, int dir_fd, const NetdevFile *f, Seen *seen, size_t *n_seen) {
        _cleanup_(profile_freep) MptProfile *profile = NULL;
        _cleanup_(generator_unit_done) GeneratorUnit unit = {};
        _cleanup_free_ char *err = NULL;
        MptNetdevInfo info = {};
        MptDiagnostics d = {};
        const char *first = NULL;
        int r;

        r = netdev_load_file(f->path, &profile, &info, &d);
        if (r == -ENOMEM)
                goto oom;
        if (r < 0 && r != -EINVAL) {
                log_msg(LOG_ERR, "%s: cannot read it: %s; no unit.", f->path,
                        r == -EBADFD ? "not a regular file" : strerror(-r));
                goto done;
        }

        if (info.ifname) {
                for (size_t i = 0; i < *n_seen; i++)
                        if (streq(seen[i].ifname, info.ifname))
                                first = seen[i].path;
                if (!first) {
                        seen[*n_seen] = (Seen) { .ifname = TAKE_PTR(info.ifname), .path = f->path };
                        (*n_seen)++;
                }
        }

        if (r == 0) {
                log_msg(LOG_DEBUG, "%s: no [" NETDEV_TUNNEL_SECTION "] section, not an mpt tunnel.", f->path);
                goto done;
        }
        if (r == -EINVAL) {
                log_diagnostics(LOG_ERR, &d);
                log_msg(LOG_ERR, "%s: %zu problem%s; no unit for this tunnel (check it with: mptctl check %s).",
                        f->path, diag_count(&d), diag_count(&d) == 1 ? "" : "s", f->path);
                goto done;
        }
        if (first) {
                log_msg(LOG_WARNING,
                        "%s: interface '%s' is defined by %s already, which networkd reads first; "
                        "ignoring this file, no unit.", f->path, profile->tunnel.name, first);
                goto done;
        }

        {
                /* networkd reads the drop-ins of the .netdev, mpt does not: say so. */
                MptDiagnostics w = {};

                if (netdev_dropin_warnings(f->path, &w) < 0)
                        w.oom = true;
                log_diagnostics(LOG_WARNING, &w);
                diag_done(&w);
        }
        r = generator_unit_new(paths, profile->tunnel.name, f->path, &unit, &err);
        if (r == -ENOMEM)
                goto oom;
        if (r < 0) {
                log_msg(LOG_ERR, "%s: %s; no unit.", f->path, err ?: "cannot make a unit");
                goto done;
        }
        r = generator_unit_write(dir_fd, &unit);
        if (r < 0) {
                log_msg(LOG_ERR, "%s: failed to write %s: %s", f->path, unit.service, strerror(-r));
                goto done;
        }
        log_msg(LOG_DEBUG, "%s: wrote %s for tunnel '%s'.", f->path, unit.service, profile->tunnel.name);
done:
        netdev_info_done(&info);
        diag_done(&d);
        return 0;
oom:
        netdev_info_done(&info);
        diag_done(&d);
        return -ENOMEM;
}

/* As systemd decides it: $SYSTEMD_IN_INITRD, else whether /etc/initrd-release exists. */
static bool in_initrd(void) {
        const char *e = getenv("SYSTEMD_IN_INITRD");

        if (e && parse_boolean(e) >= 0)
                return parse_boolean(e) > 0;
        return access("/etc/initrd-release", F_OK) >= 0;
}

/* MPT_GENERATOR_SEARCH_PATH, split at ':' into a NULL-terminated vector of words in *ret_buf. */
static char **split_path(const char *s, char **ret_buf) {
        size_t n = 1;
        char **v, *copy;

        for (const char *p = s; *p; p++)
                if (*p == ':')
                        n++;
        v = calloc(n + 1, sizeof(char *));
        copy = strdup(s);
        if (!v || !copy) {
                free(v);
                free(copy);
                return NULL;
        }
        n = 0;
        for (char *save = NULL, *w = strtok_r(copy, ":", &save); w; w = strtok_r(NULL, ":", &save))
                v[n++] = w;
        *ret_buf = copy;
        return v;
}

static bool hook_ok(const char *name, const char *value) {
        if (value && value[0] != '/') {
                log_msg(LOG_ERR, "%s='%s' is not an absolute path.", name, value);
                return false;
        }
        return true;
}

static int run(int argc, char *argv[]) {
        const char *hook_dirs = getenv("MPT_GENERATOR_SEARCH_PATH");
        GeneratorPaths paths = {
                .mptd = getenv("MPT_GENERATOR_MPTD") ?: MPT_SBINDIR "/mptd",
                .unitdir = getenv("MPT_GENERATOR_UNITDIR") ?: MPT_SYSTEMUNITDIR,
        };
        _cleanup_close_ int dir_fd = -EBADF;
        _cleanup_free_ char **split = NULL;
        _cleanup_free_ char *split_buf = NULL;
        _cleanup_free_ Seen *seen = NULL;
        const char *const *dirs = netdev_search_path;
        NetdevFileList files = {};
        MptDiagnostics d = {};
        size_t n_seen = 0;
        int r;

        log_open();
        if (argc != 2 && argc != 4) {
                log_msg(LOG_ERR, "This program takes one or three arguments.");
                return 1;
        }
        if (!hook_ok("MPT_GENERATOR_MPTD", paths.mptd) || !hook_ok("MPT_GENERATOR_UNITDIR", paths.unitdir))
                return 1;
        /* mptd is not part of an initrd: a unit there could only fail. The tunnels come up
         * after the switch to the real root, where systemd runs the generators again. */
        if (in_initrd()) {
                log_msg(LOG_DEBUG, "In the initrd: no units.");
                return 0;
        }
        if (hook_dirs) {
                split = split_path(hook_dirs, &split_buf);
                if (!split)
                        goto oom;
                dirs = (const char *const *) split;
        }

        /* Only the normal directory is written to. */
        dir_fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0) {
                log_msg(LOG_ERR, "Cannot open the output directory %s: %s", argv[1], strerror(errno));
                return 0;
        }

        r = generator_scan(dirs, &files, &d);
        if (r < 0)
                goto oom;
        log_diagnostics(LOG_WARNING, &d);
        diag_done(&d);

        seen = calloc(MAX(files.n, (size_t) 1), sizeof(Seen));
        if (!seen)
                goto oom;
        for (size_t i = 0; i < files.n; i++) {
                if (!files.items[i].path) {
                        log_msg(LOG_DEBUG, "%s is masked.", files.items[i].name);
                        continue;
                }
                r = process_file(&paths, dir_fd, &files.items[i], seen, &n_seen);
                if (r < 0)
                        break;
        }
        for (size_t i = 0; i < n_seen; i++)
                free(seen[i].ifname);
        netdev_file_list_done(&files);
        if (r < 0)
                goto oom;
        return 0;
oom:
        log_msg(LOG_ERR, "Out of memory.");
        return 0;
}

int main(int argc, char *argv[]) {
        return run(argc, argv);
}
