/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <ctype.h>
#include <dirent.h>
#include <libgen.h>

#include "conf-parser.h"

static char *strip(char *s) {
        char *e;

        while (*s == ' ' || *s == '\t')
                s++;
        e = s + strlen(s);
        while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
                *--e = 0;
        return s;
}

/* Well-formed UTF-8: no overlong forms, surrogates or code points above U+10FFFF. */
static bool utf8_valid(const char *s) {
        for (const unsigned char *p = (const unsigned char *) s; *p;) {
                unsigned n;
                uint32_t c;

                if (*p < 0x80) {
                        p++;
                        continue;
                }
                if (*p >= 0xc2 && *p <= 0xdf)
                        n = 1, c = *p & 0x1f;
                else if (*p >= 0xe0 && *p <= 0xef)
                        n = 2, c = *p & 0x0f;
                else if (*p >= 0xf0 && *p <= 0xf4)
                        n = 3, c = *p & 0x07;
                else
                        return false;
                for (unsigned i = 1; i <= n; i++) {
                        if ((p[i] & 0xc0) != 0x80)
                                return false; /* also stops at the terminating NUL */
                        c = (c << 6) | (p[i] & 0x3f);
                }
                if ((n == 2 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) || (n == 3 && (c < 0x10000 || c > 0x10ffff)))
                        return false;
                p += n + 1;
        }
        return true;
}

static bool has_control_chars(const char *s) {
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
                        return true;
        return false;
}

/* What conf_parse_buffer() carries from one logical line to the next. */
typedef struct ParseState {
        const char *filename;
        const ConfCallbacks *cb;
        void *userdata;
        MptDiagnostics *d;
        char *section;
        bool section_wanted, section_broken;
} ParseState;

/* One logical line (its continuation lines joined), which starts on line `line`. */
static void parse_line(ParseState *s, char *text, unsigned line) {
        char *l, *eq;

        l = strip(text);
        if (*l == 0 || *l == '#' || *l == ';')
                return;
        if (has_control_chars(l)) {
                diag_add(s->d, s->filename, line, "line contains control characters");
                return;
        }
        /* (Comments may be in any encoding: they are skipped before this.) */
        if (!utf8_valid(l)) {
                diag_add(s->d, s->filename, line, "line is not valid UTF-8");
                return;
        }

        if (*l == '[') {
                size_t k = strlen(l);
                if (k < 3 || l[k - 1] != ']') {
                        diag_add(s->d, s->filename, line, "invalid section header '%s'", l);
                        s->section = mfree(s->section);
                        s->section_wanted = false;
                        /* Its assignments belong to it: one error is enough. */
                        s->section_broken = true;
                        return;
                }
                l[k - 1] = 0;
                free(s->section);
                s->section = strdup(l + 1);
                if (!s->section) {
                        s->d->oom = true;
                        return;
                }
                s->section_broken = false;
                s->section_wanted = s->cb->section ? s->cb->section(s->userdata, s->section, line, s->d) : true;
                return;
        }

        eq = strchr(l, '=');
        if (!eq) {
                diag_add(s->d, s->filename, line, "missing '=' in '%s'", l);
                return;
        }
        if (!s->section) {
                if (!s->section_broken)
                        diag_add(s->d, s->filename, line, "assignment outside of a section");
                return;
        }
        if (!s->section_wanted)
                return;
        *eq = 0;
        {
                char *key = strip(l), *value = strip(eq + 1);
                if (*key == 0) {
                        diag_add(s->d, s->filename, line, "missing key name before '='");
                        return;
                }
                s->cb->assignment(s->userdata, s->section, key, value, line, s->d);
        }
}

/* Whether a physical line goes on in the next one: it ends in a backslash that is not itself
 * escaped (an odd number of them), before a CR of a CRLF line end. */
static bool line_continues(const char *l, size_t n) {
        size_t k = 0;

        if (n > 0 && l[n - 1] == '\r')
                n--;
        while (k < n && l[n - 1 - k] == '\\')
                k++;
        return k % 2 == 1;
}

static bool line_is_comment(const char *l, size_t n) {
        size_t i = 0;

        while (i < n && (l[i] == ' ' || l[i] == '\t'))
                i++;
        return i < n && (l[i] == '#' || l[i] == ';');
}

void conf_parse_buffer(const char *filename, const char *buf, size_t len, const ConfCallbacks *cb,
                       void *userdata, MptDiagnostics *d) {
        ParseState s = { .filename = filename, .cb = cb, .userdata = userdata, .d = d };
        char text[CONF_LINE_MAX + 1]; /* the logical line so far */
        size_t used = 0;
        unsigned line = 0, first = 0; /* first: the line where the logical line started */
        bool pending = false;         /* the logical line goes on in the next physical line */
        bool broken = false;          /* ... and has been reported already: skip the rest of it */
        size_t pos = 0;

        /* A UTF-8 byte order mark at the start of the file is no part of the first line (as for systemd). */
        if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0)
                pos = 3;

        while (pos < len && !d->oom) {
                const char *raw = buf + pos;
                size_t end = pos, n;
                bool cont;

                while (end < len && buf[end] != '\n')
                        end++;
                line++;
                n = end - pos;
                pos = end + 1;
                cont = line_continues(raw, n);

                /* A broken physical line breaks the logical line that it is part of: one error. */
                if (n > CONF_LINE_MAX) {
                        diag_add(d, filename, line, "line is longer than %u bytes", CONF_LINE_MAX);
                        pending = broken = cont;
                        continue;
                }
                if (memchr(raw, 0, n)) {
                        diag_add(d, filename, line, "line contains a NUL byte");
                        pending = broken = cont;
                        continue;
                }
                /* Comment lines are skipped, also between continued lines (systemd does the same); a
                 * comment never continues. */
                if (line_is_comment(raw, n))
                        continue;
                if (broken) {
                        pending = broken = cont;
                        continue;
                }
                if (!pending) {
                        used = 0;
                        first = line;
                }
                if (used + n > CONF_LINE_MAX) {
                        diag_add(d, filename, first, "line is longer than %u bytes with its continuation lines",
                                 CONF_LINE_MAX);
                        pending = broken = cont;
                        continue;
                }
                memcpy(text + used, raw, n);
                used += n;
                text[used] = 0;
                if (cont) {
                        /* The backslash becomes a blank; the next line follows as it is, with its
                         * leading blanks. */
                        if (text[used - 1] == '\r')
                                text[--used] = 0;
                        text[used - 1] = ' ';
                        pending = true;
                        continue;
                }
                pending = false;
                parse_line(&s, text, first);
        }
        /* The last line ended in a backslash: what there is counts. */
        if (pending && !broken && !d->oom)
                parse_line(&s, text, first);
        free(s.section);
}

int conf_parse_file(const char *filename, const ConfCallbacks *cb, void *userdata, MptDiagnostics *d) {
        _cleanup_free_ char *buf = NULL;
        size_t size;
        int r;

        r = read_full_file(filename, CONF_FILE_MAX, &buf, &size);
        if (r < 0)
                return r;
        conf_parse_buffer(filename, buf, size, cb, userdata, d);
        return 0;
}

static const char *base_of(const char *path) {
        const char *s = strrchr(path, '/');
        return s ? s + 1 : path;
}

static int compare_by_base(const void *a, const void *b) {
        return strcmp(base_of(*(char *const *) a), base_of(*(char *const *) b));
}

int conf_find_dropins(const char *filename, const char *const *dirs, char ***ret, size_t *ret_n) {
        char **l = NULL;
        size_t n = 0;

        for (size_t k = 0; dirs && dirs[k]; k++) {
                _cleanup_free_ char *dir = NULL;
                struct dirent *de;
                DIR *dp;

                if (asprintf(&dir, "%s/%s.d", dirs[k], base_of(filename)) < 0)
                        goto oom;
                dp = opendir(dir);
                if (!dp)
                        continue; /* none there (or not a directory): nothing to add */
                while ((de = readdir(dp))) {
                        size_t len = strlen(de->d_name);
                        bool hidden = false;
                        char **nl;

                        if (de->d_name[0] == '.' || len <= 5 || !streq(de->d_name + len - 5, ".conf"))
                                continue;
                        for (size_t i = 0; i < n && !hidden; i++)
                                hidden = streq(base_of(l[i]), de->d_name);
                        if (hidden)
                                continue; /* an earlier directory has it */
                        nl = reallocarray(l, n + 1, sizeof(char *));
                        if (!nl || asprintf(&nl[n], "%s/%s", dir, de->d_name) < 0) {
                                if (nl)
                                        l = nl;
                                closedir(dp);
                                goto oom;
                        }
                        l = nl;
                        n++;
                }
                closedir(dp);
        }
        if (n > 1)
                qsort(l, n, sizeof(char *), compare_by_base);
        *ret = l;
        *ret_n = n;
        return 0;
oom:
        for (size_t i = 0; i < n; i++)
                free(l[i]);
        free(l);
        return -ENOMEM;
}
