/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "diag.h"
#include "fileio.h"

/* A systemd-style INI tokenizer: "[Section]" headers, "Key=Value" assignments, comments
 * starting with '#' or ';', blank lines. It knows nothing about what sections and keys mean:
 * it hands each element to the callbacks with its line number. Structural problems (text
 * outside a section, a line without '=', an unterminated header, control characters, an
 * over-long line) are reported as diagnostics and parsing goes on with the next line.
 *
 * As systemd's parser does, it skips a UTF-8 byte order mark at the start, and joins a line that
 * ends in a backslash with the next one (the backslash becomes a blank; comment lines in between
 * are skipped). A continued line is reported, and handed over, with the number of the line where
 * it starts; the numbers of the lines after it stay those of the file. */

#define CONF_LINE_MAX 4096u
#define CONF_FILE_MAX (1024u * 1024u)

typedef struct ConfCallbacks {
        /* Called for every section header. Return false to skip the section's assignments
         * silently (the callback has reported the problem, or the section is not ours). */
        bool (*section)(void *userdata, const char *section, unsigned line, MptDiagnostics *d);
        void (*assignment)(void *userdata, const char *section, const char *key, const char *value,
                           unsigned line, MptDiagnostics *d);
} ConfCallbacks;

/* buf need not be NUL-terminated. */
void conf_parse_buffer(const char *filename, const char *buf, size_t len, const ConfCallbacks *cb,
                       void *userdata, MptDiagnostics *d);
/* Reads the file (bounded by CONF_FILE_MAX) and parses it. Returns a negative errno when the
 * file cannot be read; parse problems go to the diagnostics. */
int conf_parse_file(const char *filename, const ConfCallbacks *cb, void *userdata, MptDiagnostics *d);
/* The drop-ins of a file as systemd finds them: the *.conf files of DIR/BASE.d/ (BASE: the file's
 * base name) for each of dirs (most important first), a name in an earlier directory hiding it in
 * the later ones, sorted by name. *ret: their paths (free each, and the array); 0 or -ENOMEM. */
int conf_find_dropins(const char *filename, const char *const *dirs, char ***ret, size_t *ret_n);
