/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <ctype.h>
#include <fcntl.h>
#include <sys/stat.h>

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

void conf_parse_buffer(const char *filename, const char *buf, size_t len, const ConfCallbacks *cb,
                       void *userdata, MptDiagnostics *d) {
        _cleanup_free_ char *section = NULL;
        bool section_wanted = false, section_broken = false;
        unsigned line = 0;
        size_t pos = 0;

        while (pos < len) {
                char text[CONF_LINE_MAX + 1];
                size_t end = pos, n;
                char *l, *eq;

                while (end < len && buf[end] != '\n')
                        end++;
                line++;
                n = end - pos;
                if (n > CONF_LINE_MAX) {
                        diag_add(d, filename, line, "line is longer than %u bytes", CONF_LINE_MAX);
                        pos = end + 1;
                        continue;
                }
                memcpy(text, buf + pos, n);
                text[n] = 0;
                pos = end + 1;

                if (memchr(text, 0, n)) {
                        diag_add(d, filename, line, "line contains a NUL byte");
                        continue;
                }
                l = strip(text);
                if (*l == 0 || *l == '#' || *l == ';')
                        continue;
                if (has_control_chars(l)) {
                        diag_add(d, filename, line, "line contains control characters");
                        continue;
                }
                /* (Comments may be in any encoding: they are skipped above.) */
                if (!utf8_valid(l)) {
                        diag_add(d, filename, line, "line is not valid UTF-8");
                        continue;
                }

                if (*l == '[') {
                        size_t k = strlen(l);
                        if (k < 3 || l[k - 1] != ']') {
                                diag_add(d, filename, line, "invalid section header '%s'", l);
                                section = mfree(section);
                                section_wanted = false;
                                /* Its assignments belong to it: one error is enough. */
                                section_broken = true;
                                continue;
                        }
                        l[k - 1] = 0;
                        free(section);
                        section = strdup(l + 1);
                        if (!section) {
                                d->oom = true;
                                return;
                        }
                        section_broken = false;
                        section_wanted = cb->section ? cb->section(userdata, section, line, d) : true;
                        continue;
                }

                eq = strchr(l, '=');
                if (!eq) {
                        diag_add(d, filename, line, "missing '=' in '%s'", l);
                        continue;
                }
                if (!section) {
                        if (section_broken)
                                continue;
                        diag_add(d, filename, line, "assignment outside of a section");
                        continue;
                }
                if (!section_wanted)
                        continue;
                *eq = 0;
                {
                        char *key = strip(l), *value = strip(eq + 1);
                        if (*key == 0) {
                                diag_add(d, filename, line, "missing key name before '='");
                                continue;
                        }
                        cb->assignment(userdata, section, key, value, line, d);
                }
        }
}

int read_full_file(const char *filename, size_t max, char **ret, size_t *ret_size) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, allocated = 0;
        struct stat st;

        fd = open(filename, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode))
                return -EBADFD;

        for (;;) {
                ssize_t k;

                if (size + 4096 + 1 > allocated) {
                        size_t n = MAX(allocated * 2, (size_t) 8192);
                        char *b = realloc(buf, n);
                        if (!b)
                                return -ENOMEM;
                        buf = b;
                        allocated = n;
                }
                k = read(fd, buf + size, allocated - size - 1);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                size += (size_t) k;
                if (size > max)
                        return -EFBIG;
        }
        buf[size] = 0;
        *ret = TAKE_PTR(buf);
        if (ret_size)
                *ret_size = size;
        return 0;
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
