/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Checks that the man pages document what the code has, so that a new key, drop reason, path
 * state, device class, show field, command or option cannot be added without its documentation:
 *
 *   test-man-keys MPT_CONF_5 MPTD_8 MPTCTL_8 MPTCTL_MAIN_C MPTD MPTCTL MPTD_CTL_C MPT_NETDEV_5
 *
 * An entry is ".TP" followed by a tag line whose first bold word ("\fBword\fR...", ".B word",
 * ".BR word ...") is what it documents.
 *
 * - mpt.conf(5) (generated): every key of the key table has exactly one entry ("Key=") inside
 *   the generated block of its section, with a text and a default; no entry names a key that
 *   does not exist.
 * - mpt.netdev(5) (generated): the same for its [X-MPT] and [X-MPTPath] blocks.
 * - All pages: every key written in bold ("\fBKey=") is a key of the table, so a page
 *   cannot keep documenting a removed key.
 * - mptd(8): every drop reason of mpt_drop_reason_to_string() has an entry in DROP COUNTERS,
 *   every path state of path_state_to_string() one in PATHS AND KEEPALIVES, and every device
 *   class of mpt_devclass_to_string() one in DEVICE CLASSES; no entry there names something
 *   else. Every long option of "mptd --help" is in OPTIONS. The frame layouts in PATHS AND
 *   KEEPALIVES (the ".EX" tables of "OFFSET LENGTH what" rows) are contiguous, and the keepalive
 *   and path-status tables end at MPT_KEEPALIVE_EXT_SIZE and MPT_PATH_STATUS_SIZE, which the text
 *   states as "N bytes of UDP payload".
 * - mptctl(8): every command of the dispatch table in src/mptctl/main.c has an entry in
 *   COMMANDS, and every long option of "mptctl --help" appears in the page. Every field that
 *   ctl_write_show() in src/mptd/ctl.c writes (the literal keys of its ctl_writer_field() calls;
 *   "group.member" keys as the group's entry plus the member in bold) has an entry in OUTPUT,
 *   subsection Dump, and every entry there names a field that is written; every path state and
 *   device class is named there in bold.
 *
 * Prints every problem and exits 1 if there was any. */

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>

#include "conf-parser.h"
#include "devclass.h"
#include "netdev.h"
#include "profile.h"
#include "show-fields.h"
#include "tunnel.h"
#include "wire.h"

static unsigned n_problems;

static void problem(const char *fmt, ...) _printf_(1, 2);
static void problem(const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        n_problems++;
}

typedef struct Page {
        const char *filename;
        char **lines;
        size_t n;
} Page;

static int page_load(const char *filename, Page *ret) {
        _cleanup_free_ char *buf = NULL;
        size_t size;
        Page p = { .filename = filename };
        int r;

        r = read_full_file(filename, 4u * 1024u * 1024u, &buf, &size);
        if (r < 0) {
                fprintf(stderr, "cannot read %s: %s\n", filename, strerror(-r));
                return r;
        }
        for (char *s = buf, *e; *s; s = e + 1) {
                char **l;

                e = strchrnul(s, '\n');
                l = realloc(p.lines, (p.n + 1) * sizeof(char *));
                if (!l)
                        return -ENOMEM;
                p.lines = l;
                p.lines[p.n] = strndup(s, (size_t) (e - s));
                if (!p.lines[p.n])
                        return -ENOMEM;
                p.n++;
                if (!*e)
                        break;
        }
        *ret = p;
        return 0;
}

static void page_done(Page *p) {
        for (size_t i = 0; i < p->n; i++)
                free(p->lines[i]);
        free(p->lines);
}

/* The roff form of a word as the pages write it: every '-' as "\-". */
static char *roff_word(const char *s) {
        char *r = malloc(strlen(s) * 2 + 1), *q = r;

        if (!r)
                abort();
        for (; *s; s++) {
                if (*s == '-')
                        *q++ = '\\';
                *q++ = *s;
        }
        *q = 0;
        return r;
}

/* Lines [*ret_begin, *ret_end) of the section ".SH <name>" (quoted or not). */
static bool page_section(const Page *p, const char *name, size_t *ret_begin, size_t *ret_end) {
        for (size_t i = 0; i < p->n; i++) {
                const char *h = startswith(p->lines[i], ".SH ");
                size_t n = strlen(name);
                if (!h)
                        continue;
                if (*h == '"')
                        h++;
                if (!strneq(h, name, n) || !(h[n] == 0 || h[n] == '"'))
                        continue;
                *ret_begin = i + 1;
                for (i++; i < p->n && !startswith(p->lines[i], ".SH "); i++)
                        ;
                *ret_end = i;
                return true;
        }
        problem("%s: no section %s", p->filename, name);
        return false;
}

/* Lines [*ret_begin, *ret_end) between two exact marker lines. */
static bool page_block(const Page *p, const char *begin, const char *end, size_t *ret_begin, size_t *ret_end) {
        for (size_t i = 0; i < p->n; i++) {
                if (!streq(p->lines[i], begin))
                        continue;
                for (size_t j = i + 1; j < p->n; j++)
                        if (streq(p->lines[j], end)) {
                                *ret_begin = i + 1;
                                *ret_end = j;
                                return true;
                        }
                break;
        }
        problem("%s: no block between '%s' and '%s'", p->filename, begin, end);
        return false;
}

static bool is_macro(const char *l) {
        return l[0] == '.' || l[0] == '\'';
}

/* The first bold word of an entry's tag line: "\fBword\fR...", ".B word", ".BR word ...".
 * Returns its length (0: none) and sets *ret to its start. */
static size_t tag_word(const char *line, const char **ret) {
        const char *w;
        size_t n;

        if ((w = startswith(line, "\\fB"))) {
                const char *e = strstr(w, "\\fR");
                n = e ? (size_t) (e - w) : strlen(w);
        } else if ((w = startswith(line, ".B ")) || (w = startswith(line, ".BR ")) || (w = startswith(line, ".BI "))) {
                if (*w == '"') {
                        w++;
                        n = strcspn(w, "\"");
                } else
                        n = strcspn(w, " ");
        } else
                return 0;
        *ret = w;
        return n;
}

static bool tag_is(const char *line, const char *word) {
        const char *w;
        size_t n = tag_word(line, &w);

        return n > 0 && n == strlen(word) && strneq(w, word, n);
}

/* Counts the entries (".TP" followed by a tag line) in [begin, end) whose tag's first bold word
 * is word. When ret_body is given, it gets the number of text characters of the first such
 * entry, up to the next .TP/.SS/.SH. */
static unsigned count_entries(const Page *p, size_t begin, size_t end, const char *word, size_t *ret_body) {
        unsigned n = 0;

        for (size_t i = begin; i + 1 < end; i++) {
                if (!streq(p->lines[i], ".TP") || !tag_is(p->lines[i + 1], word))
                        continue;
                if (n++ == 0 && ret_body) {
                        size_t body = 0;
                        for (size_t j = i + 2; j < end; j++) {
                                const char *l = p->lines[j];
                                if (streq(l, ".TP") || startswith(l, ".SS") || startswith(l, ".SH"))
                                        break;
                                if (!is_macro(l) || startswith(l, ".B") || startswith(l, ".I"))
                                        body += strlen(l);
                        }
                        *ret_body = body;
                }
        }
        return n;
}

/* names: the section titles of the page (NULL: those of a native profile). */
static void check_conf_page(const Page *p, const char *const *names) {
        for (MptSection s = 0; s < _MPT_SECTION_MAX; s++) {
                const char *sname = names ? names[s] : mpt_section_to_string(s);
                _cleanup_free_ char *begin = NULL, *end = NULL;
                size_t b, e;

                if (asprintf(&begin, ".\\\" BEGIN KEYS [%s]: generated from src/shared/profile-keys.c", sname) < 0 ||
                    asprintf(&end, ".\\\" END KEYS [%s]", sname) < 0)
                        abort();
                if (!page_block(p, begin, end, &b, &e))
                        continue;

                for (size_t i = 0; i < mpt_conf_keys_n; i++) {
                        const MptConfKey *k = &mpt_conf_keys[i];
                        _cleanup_free_ char *word = NULL;
                        size_t body = 0;
                        unsigned n;

                        if (k->section != s)
                                continue;
                        if (asprintf(&word, "%s=", k->name) < 0)
                                abort();
                        n = count_entries(p, b, e, word, &body);
                        if (n == 0)
                                problem("%s: key [%s] %s= is not documented", p->filename, sname, k->name);
                        else if (n > 1)
                                problem("%s: key [%s] %s= is documented %u times", p->filename, sname, k->name, n);
                        else if (body < 30)
                                problem("%s: the entry of [%s] %s= has no real text", p->filename, sname, k->name);
                }

                /* Every entry of the block is a key of this section, and has a default. */
                for (size_t i = b; i + 1 < e; i++) {
                        const char *tag, *eq;
                        _cleanup_free_ char *name = NULL;
                        bool has_default = false;

                        if (!streq(p->lines[i], ".TP"))
                                continue;
                        tag = startswith(p->lines[i + 1], "\\fB");
                        eq = tag ? strstr(tag, "=\\fR") : NULL;
                        if (!eq) {
                                problem("%s:%zu: entry in the [%s] key block is not a key", p->filename, i + 2, sname);
                                continue;
                        }
                        name = strndup(tag, (size_t) (eq - tag));
                        if (!name)
                                abort();
                        if (!conf_key_lookup(s, name))
                                problem("%s:%zu: [%s] %s= is documented but is not a key", p->filename, i + 2, sname,
                                        name);
                        for (size_t j = i + 2; j < e && !streq(p->lines[j], ".TP"); j++)
                                if (startswith(p->lines[j], "Default: "))
                                        has_default = true;
                        if (!has_default)
                                problem("%s:%zu: [%s] %s= has no \"Default:\" line", p->filename, i + 2, sname, name);
                }
        }
}

/* Settings of other programs that the pages set in bold (systemd's notification protocol and
 * unit files, the kernel's uevent files); everything else that looks like "Key=" must be a key
 * of the table. */
static const char *const foreign_settings[] = {
        "READY", "STATUS", "STOPPING", "Type", /* sd_notify(3), systemd.service(5) */
        "DEVTYPE", "DRIVER",                   /* sysfs uevent properties (device classes) */
};

/* Checks the bold word at w (just after "\fB" or a bold macro) when it looks like "Word=". */
static void check_bold_word(const Page *p, size_t line, const char *w) {
        size_t n = 0;

        if (!(w[0] >= 'A' && w[0] <= 'Z'))
                return;
        while ((w[n] >= 'A' && w[n] <= 'Z') || (w[n] >= 'a' && w[n] <= 'z'))
                n++;
        if (w[n] != '=')
                return;
        for (size_t k = 0; k < mpt_conf_keys_n; k++)
                if (strlen(mpt_conf_keys[k].name) == n && strneq(mpt_conf_keys[k].name, w, n))
                        return;
        for (size_t k = 0; k < ELEMENTSOF(foreign_settings); k++)
                if (strlen(foreign_settings[k]) == n && strneq(foreign_settings[k], w, n))
                        return;
        problem("%s:%zu: '%.*s=' is set in bold like a key, but there is no such key", p->filename, line + 1,
                (int) n, w);
}

/* Every "\fBWord=", ".B Word=" or ".BR Word= ..." with a capitalised Word is a key of the table. */
static void check_bold_keys(const Page *p) {
        for (size_t i = 0; i < p->n; i++) {
                const char *l = p->lines[i], *w;

                if (startswith(l, ".\\\""))
                        continue;
                for (const char *s = strstr(l, "\\fB"); s; s = strstr(s + 1, "\\fB"))
                        check_bold_word(p, i, s + 3);
                if ((w = startswith(l, ".B ")) || (w = startswith(l, ".BR ")) || (w = startswith(l, ".BI ")))
                        check_bold_word(p, i, *w == '"' ? w + 1 : w);
        }
}

/* Every name has an entry (".TP" and a tag line naming it in bold) in section sect, and every
 * entry of that section is one of the names. */
static void check_entries(const Page *p, const char *sect, const char *what, const char *const *names, size_t n) {
        size_t b, e;

        if (!page_section(p, sect, &b, &e))
                return;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *w = roff_word(names[i]);
                size_t body = 0;

                if (count_entries(p, b, e, w, &body) == 0)
                        problem("%s: %s '%s' has no entry in %s", p->filename, what, names[i], sect);
                else if (body < 20)
                        problem("%s: the entry of %s '%s' in %s has no real text", p->filename, what, names[i], sect);
        }
        for (size_t i = b; i + 1 < e; i++) {
                bool known = false;

                if (!streq(p->lines[i], ".TP"))
                        continue;
                for (size_t k = 0; k < n; k++) {
                        _cleanup_free_ char *w = roff_word(names[k]);
                        if (tag_is(p->lines[i + 1], w))
                                known = true;
                }
                if (!known)
                        problem("%s:%zu: entry '%s' in %s is not a known %s", p->filename, i + 2, p->lines[i + 1], sect,
                                what);
        }
}

/* Long options ("--name") in the --help output of a program. */
static size_t help_options(const char *program, char ***ret) {
        _cleanup_free_ char *cmd = NULL, *line = NULL;
        char **l = NULL;
        size_t n = 0, size = 0;
        FILE *f;

        if (asprintf(&cmd, "'%s' --help", program) < 0)
                abort();
        f = popen(cmd, "re");
        if (!f) {
                problem("cannot run %s --help: %m", program);
                return 0;
        }
        while (getline(&line, &size, f) >= 0)
                for (char *s = strstr(line, "--"); s; s = strstr(s + 2, "--")) {
                        size_t k = strspn(s + 2, "abcdefghijklmnopqrstuvwxyz-");
                        if (k == 0)
                                continue;
                        l = realloc(l, (n + 1) * sizeof(char *));
                        if (!l || asprintf(&l[n], "--%.*s", (int) k, s + 2) < 0)
                                abort();
                        n++;
                }
        if (pclose(f) != 0)
                problem("%s --help failed", program);
        if (n == 0)
                problem("%s --help lists no options", program);
        *ret = l;
        return n;
}

static bool page_has(const Page *p, size_t b, size_t e, const char *s) {
        for (size_t i = b; i < e; i++)
                if (strstr(p->lines[i], s))
                        return true;
        return false;
}

static void check_options(const Page *p, const char *program, const char *sect) {
        char **opts = NULL;
        size_t n = help_options(program, &opts), b = 0, e = p->n;

        if (sect && !page_section(p, sect, &b, &e))
                b = 0, e = 0;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *w = roff_word(opts[i]);
                if (!page_has(p, b, e, w))
                        problem("%s: option %s of '%s --help' is not documented%s%s", p->filename, opts[i], program,
                                sect ? " in " : "", strempty(sect));
                free(opts[i]);
        }
        free(opts);
}

/* The command names of the dispatch table "verbs[] = { { "name", verb_... }, ... };". */
static size_t mptctl_commands(const char *main_c, char ***ret) {
        _cleanup_free_ char *buf = NULL;
        const char *s, *end;
        char **l = NULL;
        size_t n = 0, size;
        int r;

        r = read_full_file(main_c, 1024 * 1024, &buf, &size);
        if (r < 0) {
                problem("cannot read %s: %s", main_c, strerror(-r));
                return 0;
        }
        s = strstr(buf, "verbs[] = {");
        end = s ? strstr(s, "};") : NULL;
        if (!s || !end) {
                problem("%s: no dispatch table \"verbs[] = {\"", main_c);
                return 0;
        }
        for (s = strstr(s, "{ \""); s && s < end; s = strstr(s + 1, "{ \"")) {
                const char *q = strchr(s + 3, '"');
                if (!q || !startswith(q, "\", verb_"))
                        continue;
                l = realloc(l, (n + 1) * sizeof(char *));
                if (!l || !(l[n] = strndup(s + 3, (size_t) (q - s - 3))))
                        abort();
                n++;
        }
        if (n == 0)
                problem("%s: no commands found in the dispatch table", main_c);
        *ret = l;
        return n;
}

/* Lines [*ret_begin, *ret_end) of the subsection ".SS <name>" within [b, e). */
static bool page_subsection(const Page *p, size_t b, size_t e, const char *name, size_t *ret_begin, size_t *ret_end) {
        for (size_t i = b; i < e; i++) {
                const char *h = startswith(p->lines[i], ".SS ");
                size_t n = strlen(name);
                if (!h)
                        continue;
                if (*h == '"')
                        h++;
                if (!strneq(h, name, n) || !(h[n] == 0 || h[n] == '"'))
                        continue;
                *ret_begin = i + 1;
                for (i++; i < e && !startswith(p->lines[i], ".SS ") && !startswith(p->lines[i], ".SH "); i++)
                        ;
                *ret_end = i;
                return true;
        }
        problem("%s: no subsection %s", p->filename, name);
        return false;
}

typedef struct Words {
        char **w;
        size_t n;
} Words;

static void words_add(Words *l, const char *s, size_t len) {
        char *c = malloc(len + 1), *q = c;

        if (!c)
                abort();
        /* Plain text of a roff word: "\-" is "-", "\&" is nothing. */
        for (size_t i = 0; i < len; i++) {
                if (s[i] == '\\' && i + 1 < len && (s[i + 1] == '-' || s[i + 1] == '&')) {
                        if (s[++i] == '-')
                                *q++ = '-';
                        continue;
                }
                *q++ = s[i];
        }
        *q = 0;
        l->w = realloc(l->w, (l->n + 1) * sizeof(char *));
        if (!l->w)
                abort();
        l->w[l->n++] = c;
}

static bool words_has(const Words *l, const char *s) {
        for (size_t i = 0; i < l->n; i++)
                if (streq(l->w[i], s))
                        return true;
        return false;
}

static void words_done(Words *l) {
        for (size_t i = 0; i < l->n; i++)
                free(l->w[i]);
        free(l->w);
        *l = (Words) {};
}

/* The bold words of one line: the arguments of ".B", the odd arguments of ".BR"/".BI" (counting
 * from 1; quotes group), and every "\fBword\fR"/"\fBword\fI"/"\fBword\fP" in the line. */
static void bold_words(const char *l, Words *ret) {
        const char *a = NULL;
        bool all = false;

        if ((a = startswith(l, ".B ")))
                all = true;
        else if (!(a = startswith(l, ".BR ")) && !(a = startswith(l, ".BI ")))
                a = NULL;
        for (unsigned k = 0; a && *a; k++) {
                const char *start;
                size_t len;

                while (*a == ' ')
                        a++;
                if (!*a)
                        break;
                if (*a == '"') {
                        start = ++a;
                        len = strcspn(a, "\"");
                        a += len + (a[len] == '"');
                } else {
                        start = a;
                        len = strcspn(a, " ");
                        a += len;
                }
                if ((all || k % 2 == 0) && len > 0)
                        words_add(ret, start, len);
        }
        for (const char *s = strstr(l, "\\fB"); s; s = strstr(s + 3, "\\fB")) {
                const char *w = s + 3, *f = strstr(w, "\\f");
                size_t len = strcspn(w, " ");
                if (f && (size_t) (f - w) < len)
                        len = (size_t) (f - w);
                if (len > 0)
                        words_add(ret, w, len);
        }
}

/* Field keys that ctl_write_show() writes: the string literal after every "ctl_writer_field(w, ";
 * and the groups of keys built at run time from a format ("drop.%s", "worker_rx.%u"), as "drop.",
 * "worker_rx.". */
static size_t ctl_show_fields(const char *ctl_c, Words *ret, Words *ret_groups) {
        static const char call[] = "ctl_writer_field(w, \"";
        _cleanup_free_ char *buf = NULL;
        size_t size;
        int r;

        r = read_full_file(ctl_c, 1024 * 1024, &buf, &size);
        if (r < 0) {
                problem("cannot read %s: %s", ctl_c, strerror(-r));
                return 0;
        }
        for (const char *s = strstr(buf, call); s; s = strstr(s + 1, call)) {
                const char *k = s + STRLEN(call);
                size_t len = strcspn(k, "\"");
                _cleanup_free_ char *key = strndup(k, len);
                if (!key)
                        abort();
                if (len > 0 && !words_has(ret, key))
                        words_add(ret, k, len);
        }
        /* Keys built from a format: a string literal "<lowercase, digits, _>.%s" or ".%u". */
        for (const char *s = strstr(buf, ".%"); s; s = strstr(s + 1, ".%")) {
                const char *q = s;
                if (!(s[2] == 's' || s[2] == 'u') || s[3] != '"')
                        continue;
                while (q > buf && (islower((unsigned char) q[-1]) || isdigit((unsigned char) q[-1]) || q[-1] == '_'))
                        q--;
                if (q == s || q == buf || q[-1] != '"')
                        continue;
                {
                        _cleanup_free_ char *group = strndup(q, (size_t) (s - q) + 1);
                        if (!group)
                                abort();
                        if (!words_has(ret_groups, group))
                                words_add(ret_groups, q, (size_t) (s - q) + 1);
                }
        }
        if (ret->n == 0)
                problem("%s: no ctl_writer_field(w, \"...\") calls found", ctl_c);
        return ret->n;
}

static void check_show_fields(const Page *p, const char *ctl_c, const char *const *states, size_t n_states,
                              const char *const *classes, size_t n_classes) {
        Words fields = {}, groups = {}, tags = {}, bold = {};
        size_t b, e, sb, se;

        if (ctl_show_fields(ctl_c, &fields, &groups) == 0) {
                words_done(&groups);
                return;
        }
        if (!page_section(p, "OUTPUT", &b, &e) || !page_subsection(p, b, e, "Dump", &sb, &se)) {
                words_done(&fields);
                words_done(&groups);
                return;
        }
        for (size_t i = sb; i < se; i++) {
                bold_words(p->lines[i], &bold);
                if (i + 1 < se && streq(p->lines[i], ".TP"))
                        bold_words(p->lines[i + 1], &tags);
        }

        /* Code -> page. */
        for (size_t i = 0; i < fields.n; i++) {
                const char *f = fields.w[i], *dot = strchr(f, '.');
                if (dot) {
                        _cleanup_free_ char *group = strndup(f, (size_t) (dot - f) + 1);
                        if (!group)
                                abort();
                        if (!words_has(&tags, group))
                                problem("%s: show field group '%s' (field '%s') has no entry in OUTPUT/Dump",
                                        p->filename, group, f);
                        else if (!words_has(&bold, dot + 1))
                                problem("%s: show field '%s' is not named in OUTPUT/Dump ('%s' in bold)",
                                        p->filename, f, dot + 1);
                } else if (!words_has(&tags, f))
                        problem("%s: show field '%s' (written by %s) has no entry in OUTPUT/Dump", p->filename, f,
                                ctl_c);
        }
        for (size_t i = 0; i < groups.n; i++)
                if (!words_has(&tags, groups.w[i]))
                        problem("%s: show fields '%s*' (built from a format in %s) have no entry in OUTPUT/Dump",
                                p->filename, groups.w[i], ctl_c);
        /* Code <-> the table of show fields (show-fields.h), which gives mptctl's JSON its types. */
        for (size_t i = 0; i < fields.n; i++)
                if (!show_field_lookup("tunnel", fields.w[i]) && !show_field_lookup("path", fields.w[i]))
                        problem("%s: show field '%s' is not in the table of show fields (src/shared/show-fields.c)",
                                ctl_c, fields.w[i]);
        for (size_t i = 0; i < groups.n; i++) {
                char member[128];
                snprintf(member, sizeof member, "%sx", groups.w[i]);
                if (!show_field_lookup("tunnel", member) && !show_field_lookup("path", member))
                        problem("%s: show fields '%s*' are not in the table of show fields (src/shared/show-fields.c)",
                                ctl_c, groups.w[i]);
        }
        for (size_t i = 0; i < show_fields_n; i++) {
                const char *n = show_fields[i].name;
                size_t len = strlen(n);
                bool written;

                if (len >= 2 && streq(n + len - 2, ".*")) {
                        _cleanup_free_ char *group = strndup(n, len - 1);
                        if (!group)
                                abort();
                        written = words_has(&groups, group);
                        for (size_t k = 0; !written && k < fields.n; k++)
                                written = startswith(fields.w[k], group);
                } else
                        written = words_has(&fields, n);
                if (!written)
                        problem("src/shared/show-fields.c: the table has %s field '%s', but %s writes no such field",
                                show_fields[i].record, n, ctl_c);
        }
        /* Page -> code: nothing documented that is not written any more. */
        for (size_t i = 0; i < tags.n; i++) {
                const char *t = tags.w[i];
                bool known = words_has(&fields, t);
                if (!known && t[0] && t[strlen(t) - 1] == '.') {
                        known = words_has(&groups, t);
                        for (size_t k = 0; !known && k < fields.n; k++)
                                known = startswith(fields.w[k], t);
                }
                if (!known)
                        problem("%s: OUTPUT/Dump documents '%s', but %s writes no such field", p->filename, t, ctl_c);
        }
        for (size_t i = 0; i < n_states; i++)
                if (!words_has(&bold, states[i]))
                        problem("%s: path state '%s' is not named in OUTPUT/Dump", p->filename, states[i]);
        for (size_t i = 0; i < n_classes; i++)
                if (!words_has(&bold, classes[i]))
                        problem("%s: device class '%s' is not named in OUTPUT/Dump", p->filename, classes[i]);
        words_done(&fields);
        words_done(&groups);
        words_done(&tags);
        words_done(&bold);
}

/* The frame tables of a section: in every ".EX" block, the rows "OFFSET LENGTH ..." must follow
 * each other without gaps; returns the end (offset + length of the last row) of each block that
 * has rows. */
static size_t frame_tables(const Page *p, size_t b, size_t e, unsigned ends[], size_t max) {
        size_t n = 0;

        for (size_t i = b; i < e; i++) {
                unsigned next = 0, rows = 0;

                if (!streq(p->lines[i], ".EX"))
                        continue;
                for (i++; i < e && !streq(p->lines[i], ".EE"); i++) {
                        unsigned off, len;
                        char c;
                        if (sscanf(p->lines[i], " %u %u %c", &off, &len, &c) != 3)
                                continue;
                        if (off != next)
                                problem("%s:%zu: frame table row at offset %u, expected %u", p->filename, i + 1, off,
                                        next);
                        next = off + len;
                        rows++;
                }
                if (rows > 0 && n < max)
                        ends[n++] = next;
        }
        return n;
}

static void check_frames(const Page *p) {
        static const struct {
                const char *what;
                unsigned size;
        } frames[] = {
                { "keepalive", MPT_KEEPALIVE_EXT_SIZE },
                { "path-status frame", MPT_PATH_STATUS_SIZE },
        };
        unsigned ends[16];
        size_t b, e, n;

        if (!page_section(p, "PATHS AND KEEPALIVES", &b, &e))
                return;
        n = frame_tables(p, b, e, ends, ELEMENTSOF(ends));
        for (size_t f = 0; f < ELEMENTSOF(frames); f++) {
                char text[64];
                bool table = false;

                for (size_t i = 0; i < n; i++)
                        if (ends[i] == frames[f].size)
                                table = true;
                if (!table)
                        problem("%s: no frame table in PATHS AND KEEPALIVES ends at %u bytes (the %s)", p->filename,
                                frames[f].size, frames[f].what);
                snprintf(text, sizeof text, "%u bytes of UDP payload", frames[f].size);
                if (!page_has(p, b, e, text))
                        problem("%s: PATHS AND KEEPALIVES does not say \"%s\" (the %s)", p->filename, text,
                                frames[f].what);
        }
}

int main(int argc, char *argv[]) {
        Page conf = {}, mptd = {}, mptctl = {}, netdev = {};
        const char *reasons[_MPT_DROP_MAX], *states[_PATH_STATE_MAX], *classes[_MPT_DEVCLASS_MAX];
        char **commands = NULL;
        size_t n_commands;

        if (argc != 9) {
                fprintf(stderr, "Usage: test-man-keys MPT_CONF_5 MPTD_8 MPTCTL_8 MPTCTL_MAIN_C MPTD MPTCTL MPTD_CTL_C "
                        "MPT_NETDEV_5\n");
                return 2;
        }
        if (page_load(argv[1], &conf) < 0 || page_load(argv[2], &mptd) < 0 || page_load(argv[3], &mptctl) < 0)
                return 1;
        if (page_load(argv[8], &netdev) < 0)
                return 1;

        check_conf_page(&conf, NULL);
        check_conf_page(&netdev, netdev_section_names);
        check_bold_keys(&netdev);
        check_bold_keys(&conf);
        check_bold_keys(&mptd);
        check_bold_keys(&mptctl);

        for (MptDropReason r = 0; r < _MPT_DROP_MAX; r++) {
                reasons[r] = mpt_drop_reason_to_string(r);
                if (!reasons[r])
                        problem("drop reason %d has no name", r);
        }
        check_entries(&mptd, "DROP COUNTERS", "drop reason", reasons, _MPT_DROP_MAX);
        for (PathState s = 0; s < _PATH_STATE_MAX; s++)
                states[s] = path_state_to_string(s);
        check_entries(&mptd, "PATHS AND KEEPALIVES", "path state", states, _PATH_STATE_MAX);
        for (MptDevClass c = 0; c < _MPT_DEVCLASS_MAX; c++) {
                classes[c] = mpt_devclass_to_string(c);
                if (!classes[c])
                        problem("device class %d has no name", c);
        }
        check_entries(&mptd, "DEVICE CLASSES", "device class", classes, _MPT_DEVCLASS_MAX);
        check_frames(&mptd);
        check_options(&mptd, argv[5], "OPTIONS");

        n_commands = mptctl_commands(argv[4], &commands);
        check_entries(&mptctl, "COMMANDS", "mptctl command", (const char *const *) commands, n_commands);
        check_options(&mptctl, argv[6], NULL);
        check_show_fields(&mptctl, argv[7], states, _PATH_STATE_MAX, classes, _MPT_DEVCLASS_MAX);
        for (size_t i = 0; i < n_commands; i++)
                free(commands[i]);
        free(commands);

        page_done(&conf);
        page_done(&mptd);
        page_done(&mptctl);
        page_done(&netdev);

        if (n_problems > 0) {
                fprintf(stderr, "%u problem%s: the man pages do not document what the code has.\n", n_problems,
                        n_problems == 1 ? "" : "s");
                return 1;
        }
        printf("man pages document every key, drop reason, path state, device class, show field, command and "
               "option\n");
        return 0;
}
