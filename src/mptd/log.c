/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdarg.h>
#include <sys/stat.h>
#include <sys/uio.h>
#define SD_JOURNAL_SUPPRESS_LOCATION 1
#include <systemd/sd-journal.h>

#include "log.h"

static LogTarget log_target = LOG_TARGET_CONSOLE;
static int log_max_level = LOG_INFO;

static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long dev, ino;
        struct stat st;

        if (!e || sscanf(e, "%lu:%lu", &dev, &ino) != 2)
                return false;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return st.st_dev == dev && st.st_ino == ino;
}

/* sd_journal_sendv() reports success when there is no journal at all (ENOENT), so look first. */
static bool journal_available(void) {
        return access("/run/systemd/journal/socket", F_OK) >= 0;
}

void log_setup(LogTarget target, int max_level) {
        if (target == LOG_TARGET_AUTO)
                target = stderr_is_journal() ? LOG_TARGET_JOURNAL : LOG_TARGET_CONSOLE;
        log_target = target;
        log_max_level = max_level;
}

int log_get_max_level(void) {
        return log_max_level;
}

int log_level_from_string(const char *s) {
        static const char *const names[] = {
                [LOG_EMERG] = "emerg", [LOG_ALERT] = "alert", [LOG_CRIT] = "crit", [LOG_ERR] = "err",
                [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice", [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
        };
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (streq(s, names[i]))
                        return (int) i;
        if (streq(s, "error"))
                return LOG_ERR;
        return -EINVAL;
}

int log_internal(int level, int error, const char *tunnel, const char *path, const char *file, int line,
                 const char *func, const char *fmt, ...) {
        char msg[2048];
        va_list ap;
        int saved = errno;

        if (level > log_max_level)
                return -ERRNO_VALUE(error);

        errno = ERRNO_VALUE(error);
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);

        /* Without a journal to talk to (not started yet, or none at all, as in a container), the
         * message goes to stderr: it must not be lost. */
        if (log_target == LOG_TARGET_JOURNAL && journal_available()) {
                char f_msg[2200], f_prio[32], f_file[256], f_line[32], f_func[128], f_tunnel[64], f_path[64],
                        f_errno[32];
                struct iovec iov[8];
                int n = 0;

#define FIELD(buf, ...)                                                         \
        do {                                                                    \
                snprintf(buf, sizeof buf, __VA_ARGS__);                         \
                iov[n++] = (struct iovec) { .iov_base = buf, .iov_len = strlen(buf) }; \
        } while (0)
                FIELD(f_msg, "MESSAGE=%s%s%s%s%s%s", strempty(tunnel), tunnel ? ": " : "", path ? "path '" : "",
                      strempty(path), path ? "': " : "", msg);
                FIELD(f_prio, "PRIORITY=%i", level);
                FIELD(f_file, "CODE_FILE=%s", file);
                FIELD(f_line, "CODE_LINE=%i", line);
                FIELD(f_func, "CODE_FUNC=%s", func);
                if (tunnel)
                        FIELD(f_tunnel, "MPT_TUNNEL=%s", tunnel);
                if (path)
                        FIELD(f_path, "MPT_PATH=%s", path);
                if (error)
                        FIELD(f_errno, "ERRNO=%i", ERRNO_VALUE(error));
#undef FIELD
                if (sd_journal_sendv(iov, n) >= 0)
                        goto done;
        }

        /* Console: plain lines. Under systemd, stderr goes to the journal and the journal target
         * is chosen (JOURNAL_STREAM), which keeps priorities and fields. */
        fprintf(stderr, "%s%s%s%s%s%s\n", strempty(tunnel), tunnel ? ": " : "", path ? "path '" : "",
                strempty(path), path ? "': " : "", msg);
done:
        errno = saved;
        return -ERRNO_VALUE(error);
}
