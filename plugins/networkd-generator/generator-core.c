/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "generator-core.h"
#include "netdev.h"

/* ---- networkd's search path ---- */

void netdev_file_list_done(NetdevFileList *l) {
        for (size_t i = 0; i < l->n; i++) {
                free(l->items[i].name);
                free(l->items[i].path);
        }
        free(l->items);
        *l = (NetdevFileList) {};
}

static bool list_has(const NetdevFileList *l, const char *name) {
        for (size_t i = 0; i < l->n; i++)
                if (streq(l->items[i].name, name))
                        return true;
        return false;
}

static int compare_files(const void *a, const void *b) {
        return strcmp(((const NetdevFile *) a)->name, ((const NetdevFile *) b)->name);
}

/* networkd's "null or empty": such an entry masks its name (systemd's null_or_empty()). */
static bool null_or_empty(const struct stat *st) {
        return (S_ISREG(st->st_mode) && st->st_size <= 0) || S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode);
}

static int scan_dir(const char *dir, NetdevFileList *l, MptDiagnostics *d) {
        DIR *dp;
        struct dirent *de;
        int r = 0;

        dp = opendir(dir);
        if (!dp) {
                if (errno == ENOENT || errno == ENOTDIR)
                        return 0;
                diag_add(d, dir, 0, "cannot read the directory, ignoring it: %s", strerror(errno));
                return 0;
        }
        while ((errno = 0, de = readdir(dp))) {
                NetdevFile f = {};
                struct stat st;
                NetdevFile *items;

                /* Hidden files are skipped, as systemd skips them. */
                if (de->d_name[0] == '.' || !netdev_filename(de->d_name))
                        continue;
                /* The first directory that has the name decides, whatever it holds. */
                if (list_has(l, de->d_name))
                        continue;
                if (fstatat(dirfd(dp), de->d_name, &st, 0) >= 0 && S_ISDIR(st.st_mode))
                        continue;
                if (l->n >= GENERATOR_FILES_MAX) {
                        diag_add(d, dir, 0, "more than %u .netdev files; ignoring the rest", GENERATOR_FILES_MAX);
                        break;
                }

                f.name = strdup(de->d_name);
                if (!f.name) {
                        r = -ENOMEM;
                        break;
                }
                /* A symlink to /dev/null or an empty file masks the name. What cannot be looked
                 * at (a dangling symlink, say) is left for the reader to report. */
                if (!(fstatat(dirfd(dp), de->d_name, &st, 0) >= 0 && null_or_empty(&st)) &&
                    asprintf(&f.path, "%s/%s", dir, de->d_name) < 0) {
                        free(f.name);
                        r = -ENOMEM;
                        break;
                }
                items = realloc(l->items, (l->n + 1) * sizeof(NetdevFile));
                if (!items) {
                        free(f.name);
                        free(f.path);
                        r = -ENOMEM;
                        break;
                }
                l->items = items;
                l->items[l->n++] = f;
        }
        if (r == 0 && errno != 0)
                diag_add(d, dir, 0, "cannot read the directory completely: %s", strerror(errno));
        closedir(dp);
        return r;
}

int generator_scan(const char *const *dirs, NetdevFileList *ret, MptDiagnostics *d) {
        NetdevFileList l = {};
        int r;

        for (const char *const *dir = dirs; *dir; dir++) {
                r = scan_dir(*dir, &l, d);
                if (r < 0) {
                        netdev_file_list_done(&l);
                        return r;
                }
        }
        if (l.n > 0)
                qsort(l.items, l.n, sizeof(NetdevFile), compare_files);
        *ret = l;
        return 0;
}

/* ---- unit names ---- */

#define UNIT_NAME_MAX 255u

static bool unit_char_valid(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ':' ||
               c == '_' || c == '.';
}

static char *escape_char(char *t, char c) {
        static const char hex[] = "0123456789abcdef";

        *t++ = '\\';
        *t++ = 'x';
        *t++ = hex[(unsigned char) c >> 4];
        *t++ = hex[(unsigned char) c & 15];
        return t;
}

static char *do_escape(const char *f, char *t) {
        /* No unit names with a leading '.'. */
        if (*f == '.')
                t = escape_char(t, *f++);
        for (; *f; f++) {
                if (*f == '/')
                        *t++ = '-';
                else if (!unit_char_valid(*f))
                        t = escape_char(t, *f);
                else
                        *t++ = *f;
        }
        *t = 0;
        return t;
}

int unit_name_escape(const char *s, char **ret) {
        char *e = malloc(strlen(s) * 4 + 1);

        if (!e)
                return -ENOMEM;
        do_escape(s, e);
        *ret = e;
        return 0;
}

int unit_name_path_escape(const char *path, char **ret) {
        _cleanup_free_ char *simple = malloc(strlen(path) + 1);
        char *t;
        const char *f;

        if (!simple)
                return -ENOMEM;
        /* Drop leading, trailing and repeated slashes. */
        t = simple;
        for (f = path; *f; f++) {
                if (*f == '/' && (t == simple || t[-1] == '/'))
                        continue;
                *t++ = *f;
        }
        if (t > simple && t[-1] == '/')
                t--;
        *t = 0;
        if (!*simple)
                return (*ret = strdup("-")) ? 0 : -ENOMEM;
        return unit_name_escape(simple, ret);
}

bool unit_name_valid(const char *s) {
        const char *dot, *at;
        size_t n = strlen(s);

        if (n == 0 || n > UNIT_NAME_MAX)
                return false;
        dot = strrchr(s, '.');
        if (!dot || dot == s || !dot[1])
                return false;
        for (const char *p = dot + 1; *p; p++)
                if (!(*p >= 'a' && *p <= 'z'))
                        return false;
        at = strchr(s, '@');
        if (at && (at == s || strchr(at + 1, '@') || at > dot))
                return false;
        for (const char *p = s; p < dot; p++)
                if (!unit_char_valid(*p) && *p != '-' && *p != '\\' && *p != '@')
                        return false;
        return true;
}

/* ---- the units ---- */

void generator_unit_done(GeneratorUnit *u) {
        free(u->service);
        free(u->device);
        free(u->dropin_dir);
        free(u->dropin_text);
        free(u->wants_dir);
        free(u->link_target);
        *u = (GeneratorUnit) {};
}

static bool printable_ascii(const char *s) {
        for (; *s; s++)
                if (*s < 0x20 || *s > 0x7e)
                        return false;
        return true;
}

/* A value for a setting that expands specifiers ("%i") and, with dollar, environment variables
 * ("$FOO", ExecStart=): '%' and '$' are doubled. As one ExecStart= word (word == true), it is
 * double-quoted when it holds anything but plain path characters, with '\' and '"' escaped. */
static int unit_value(const char *s, bool word, char **ret) {
        bool quote = false;
        char *v, *t;

        if (word)
                for (const char *p = s; *p; p++)
                        if (!unit_char_valid(*p) && !strchr("/-+,=@", *p))
                                quote = true;
        v = malloc(strlen(s) * 2 + 3);
        if (!v)
                return -ENOMEM;
        t = v;
        if (quote)
                *t++ = '"';
        for (const char *p = s; *p; p++) {
                if (*p == '%' || (word && *p == '$'))
                        *t++ = *p;
                else if (quote && (*p == '\\' || *p == '"'))
                        *t++ = '\\';
                *t++ = *p;
        }
        if (quote)
                *t++ = '"';
        *t = 0;
        *ret = v;
        return 0;
}

int generator_unit_new(const GeneratorPaths *paths, const char *ifname, const char *source, GeneratorUnit *ret,
                       char **reterr) {
        _cleanup_free_ char *escaped = NULL, *sys = NULL, *exec_mptd = NULL, *exec_source = NULL,
                            *source_path = NULL;
        GeneratorUnit u = {};
        int r;

        *reterr = NULL;
        assert(paths->mptd && paths->unitdir);

        /* The tunnel's name passed object_name_valid() (netdev.c): it is a valid instance name
         * as it is. Check anyway: a unit that systemd refuses helps no one. */
        if (!object_name_valid(ifname))
                FAIL("interface name '%s' cannot be a unit instance name", ifname);
        if (!printable_ascii(source))
                FAIL("the file name contains control or non-ASCII characters, which cannot go into a unit "
                     "file; rename the file");

        if (asprintf(&sys, "/sys/subsystem/net/devices/%s", ifname) < 0)
                return -ENOMEM;
        r = unit_name_path_escape(sys, &escaped);
        if (r < 0)
                return r;
        if (asprintf(&u.device, "%s.device", escaped) < 0 || asprintf(&u.service, "mptd@%s.service", ifname) < 0 ||
            asprintf(&u.dropin_dir, "%s.d", u.service) < 0 || asprintf(&u.wants_dir, "%s.wants", u.device) < 0 ||
            asprintf(&u.link_target, "%s/mptd@.service", paths->unitdir) < 0) {
                generator_unit_done(&u);
                return -ENOMEM;
        }
        if (!unit_name_valid(u.device) || !unit_name_valid(u.service)) {
                generator_unit_done(&u);
                FAIL("interface name '%s' does not give valid unit names", ifname);
        }

        if (unit_value(paths->mptd, true, &exec_mptd) < 0 || unit_value(source, true, &exec_source) < 0 ||
            unit_value(source, false, &source_path) < 0) {
                generator_unit_done(&u);
                return -ENOMEM;
        }
        if (asprintf(&u.dropin_text,
                     "# Automatically generated by " GENERATOR_NAME " from %s:\n"
                     "# mptd runs the tunnel '%s' that this .netdev describes (see mpt.netdev(5)).\n"
                     "\n"
                     "[Unit]\n"
                     "SourcePath=%s\n"
                     "Documentation=man:mpt.netdev(5)\n"
                     "BindsTo=%s\n"
                     "After=%s\n"
                     "After=systemd-networkd.service\n"
                     "\n"
                     "[Service]\n"
                     "# mptd runs as user mpt: it reads a .netdev that holds keys through the group\n"
                     "# systemd-networkd reads it through (chmod 640, group systemd-network).\n"
                     "SupplementaryGroups=systemd-network\n"
                     "ExecStart=\n"
                     "ExecStart=%s --log-target=journal --netdev %s\n",
                     source, ifname, source_path, u.device, u.device, exec_mptd, exec_source) < 0) {
                generator_unit_done(&u);
                return -ENOMEM;
        }
        *ret = u;
        return 0;
}

static int write_file_at(int dir_fd, const char *path, const char *text) {
        _cleanup_close_ int fd = -EBADF;
        size_t len = strlen(text), done = 0;

        fd = openat(dir_fd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0644);
        if (fd < 0)
                return -errno;
        while (done < len) {
                ssize_t k = write(fd, text + done, len - done);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                done += (size_t) k;
        }
        if (close(TAKE_FD(fd)) < 0)
                return -errno;
        return 0;
}

int generator_unit_write(int dir_fd, const GeneratorUnit *u) {
        _cleanup_free_ char *dropin = NULL, *link = NULL;
        int r;

        if (asprintf(&dropin, "%s/" GENERATOR_DROPIN, u->dropin_dir) < 0 ||
            asprintf(&link, "%s/%s", u->wants_dir, u->service) < 0)
                return -ENOMEM;

        if (mkdirat(dir_fd, u->dropin_dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        r = write_file_at(dir_fd, dropin, u->dropin_text);
        if (r < 0)
                return r;

        if (mkdirat(dir_fd, u->wants_dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        if (symlinkat(u->link_target, dir_fd, link) < 0) {
                if (errno != EEXIST)
                        return -errno;
                if (unlinkat(dir_fd, link, 0) < 0 || symlinkat(u->link_target, dir_fd, link) < 0)
                        return -errno;
        }
        return 0;
}
