/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <syslog.h>

#include "macro.h"

typedef enum LogTarget {
        LOG_TARGET_AUTO,    /* journal when stderr is connected to it, else console */
        LOG_TARGET_CONSOLE, /* stderr, one line per message */
        LOG_TARGET_JOURNAL, /* sd_journal_send() with structured fields */
} LogTarget;

void log_setup(LogTarget target, int max_level);
int log_get_max_level(void);
int log_level_from_string(const char *s); /* "debug", "info", ... or -EINVAL */

/* Logs and returns -ERRNO_VALUE(error) (or 0 when error is 0), so callers can
 * `return log_error_errno(r, "...: %m")`. tunnel/path add MPT_TUNNEL=/MPT_PATH= journal fields
 * and a "tunnel: path 'x': " prefix on the console. %m expands to strerror(error). */
int log_internal(int level, int error, const char *tunnel, const char *path, const char *file, int line,
                 const char *func, const char *fmt, ...) _printf_(8, 9);

#define log_full_errno(level, error, tunnel, path, ...) \
        log_internal(level, error, tunnel, path, __FILE__, __LINE__, __func__, __VA_ARGS__)

#define log_debug(...) log_full_errno(LOG_DEBUG, 0, NULL, NULL, __VA_ARGS__)
#define log_info(...) log_full_errno(LOG_INFO, 0, NULL, NULL, __VA_ARGS__)
#define log_notice(...) log_full_errno(LOG_NOTICE, 0, NULL, NULL, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, NULL, NULL, __VA_ARGS__)
#define log_error(...) log_full_errno(LOG_ERR, 0, NULL, NULL, __VA_ARGS__)
#define log_debug_errno(e, ...) log_full_errno(LOG_DEBUG, e, NULL, NULL, __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, e, NULL, NULL, __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, e, NULL, NULL, __VA_ARGS__)

#define log_tunnel_full(level, e, t, ...) log_full_errno(level, e, (t)->name, NULL, __VA_ARGS__)
#define log_tunnel_debug(t, ...) log_tunnel_full(LOG_DEBUG, 0, t, __VA_ARGS__)
#define log_tunnel_info(t, ...) log_tunnel_full(LOG_INFO, 0, t, __VA_ARGS__)
#define log_tunnel_notice(t, ...) log_tunnel_full(LOG_NOTICE, 0, t, __VA_ARGS__)
#define log_tunnel_warning(t, ...) log_tunnel_full(LOG_WARNING, 0, t, __VA_ARGS__)
#define log_tunnel_warning_errno(t, e, ...) log_tunnel_full(LOG_WARNING, e, t, __VA_ARGS__)
#define log_tunnel_error_errno(t, e, ...) log_tunnel_full(LOG_ERR, e, t, __VA_ARGS__)

#define log_path_full(level, e, p, ...) log_full_errno(level, e, (p)->peer->tunnel->name, (p)->name, __VA_ARGS__)
#define log_path_debug(p, ...) log_path_full(LOG_DEBUG, 0, p, __VA_ARGS__)
#define log_path_info(p, ...) log_path_full(LOG_INFO, 0, p, __VA_ARGS__)
#define log_path_notice(p, ...) log_path_full(LOG_NOTICE, 0, p, __VA_ARGS__)
#define log_path_warning(p, ...) log_path_full(LOG_WARNING, 0, p, __VA_ARGS__)
#define log_path_warning_errno(p, e, ...) log_path_full(LOG_WARNING, e, p, __VA_ARGS__)
#define log_path_error_errno(p, e, ...) log_path_full(LOG_ERR, e, p, __VA_ARGS__)

#define log_oom() log_error_errno(ENOMEM, "Out of memory.")
#define log_oom_tunnel(t) log_tunnel_error_errno(t, ENOMEM, "Out of memory.")
