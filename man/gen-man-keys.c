/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Builds mpt.conf(5) from its template and the key table (profile-keys.c).
 *
 *   gen-man-keys [--netdev] TEMPLATE OUTPUT
 *
 * With --netdev it builds mpt.netdev(5): the sections are called [X-MPT], [X-MPTPath] and [X-MPTPeer], as in
 * a .netdev file, and the .netdev notes and defaults of netdev.c are added to the table's text.
 *
 * Every template line is copied as it is, except the lines "@TUNNEL_KEYS@", "@PATH_KEYS@" and "@PEER_KEYS@",
 * which must each appear exactly once on a line of their own. They become one entry per key of
 * that section: name and value syntax, the documentation text, the default and the accepted
 * range, all taken from the table. The entries are framed by the comments
 * '.\" BEGIN KEYS [Section]' and '.\" END KEYS [Section]', which the man-keys test looks for.
 *
 * The table's text is plain text, so everything that roff would interpret is escaped here:
 * backslashes, a '.' or '\'' at the start of an output line, every hyphen (as "\-", so that key
 * values, option names and program names render as the ASCII character users type and search
 * for), and non-ASCII characters (as \[uXXXX]). Mentions of a known key ("Weight=") are set in
 * bold, and every sentence starts on a new line, as man pages should.
 *
 * Fails (exit status 1, naming the key) when a key has no value syntax or no real
 * documentation: an undocumented key must not reach a release. */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>

#include "netdev.h"
#include "profile.h"

#define DOC_MIN 30u
#define TEXT_WIDTH 80u

static const char *arg_template, *arg_output;
static bool arg_netdev;

static const char *section_title(MptSection section) {
        return arg_netdev ? netdev_section_names[section] : mpt_section_to_string(section);
}

static void fail(const char *fmt, ...) _printf_(1, 2);
static void fail(const char *fmt, ...) {
        int saved = errno;
        va_list ap;

        fputs("gen-man-keys: ", stderr);
        errno = saved; /* for %m */
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
}

/* Length of the key mention ("Name=") that starts at s, or 0. Any section's keys count:
 * the text of a [Path] key may refer to a [Tunnel] key. */
static size_t key_mention(const char *s) {
        size_t best = 0;

        for (size_t i = 0; i < mpt_conf_keys_n; i++) {
                size_t n = strlen(mpt_conf_keys[i].name);
                if (strneq(s, mpt_conf_keys[i].name, n) && s[n] == '=' && n + 1 > best)
                        best = n + 1;
        }
        return best;
}

static bool is_word_char(char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* Whether the '.' at p ends an abbreviation such as "e.g." rather than a sentence. */
static bool after_abbreviation(const char *text, const char *p) {
        static const char *const abbreviations[] = { "e.g", "i.e", "etc", "cf", "vs" };

        for (size_t i = 0; i < ELEMENTSOF(abbreviations); i++) {
                size_t n = strlen(abbreviations[i]);
                if ((size_t) (p - text) >= n && strneq(p - n, abbreviations[i], n) &&
                    ((size_t) (p - text) == n || !is_word_char(p[-(ptrdiff_t) n - 1])))
                        return true;
        }
        return false;
}

/* Decodes one UTF-8 sequence at s (first byte >= 0x80). Returns its length, 0 if invalid. */
static size_t utf8_decode(const unsigned char *s, uint32_t *ret) {
        size_t n;
        uint32_t c;

        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                n = 2, c = s[0] & 0x1f;
        else if (s[0] >= 0xe0 && s[0] <= 0xef)
                n = 3, c = s[0] & 0x0f;
        else if (s[0] >= 0xf0 && s[0] <= 0xf4)
                n = 4, c = s[0] & 0x07;
        else
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                c = c << 6 | (s[i] & 0x3f);
        }
        if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) || (c >= 0xd800 && c <= 0xdfff))
                return 0;
        *ret = c;
        return n;
}

/* Writes plain text as roff text, one sentence per line. at_line_start: the output is at the
 * start of a line. Returns 0, or -EINVAL for text that cannot be represented (control
 * characters, bad UTF-8). */
static int roff_sentences(FILE *f, const char *text, bool at_line_start) {
        bool bol = at_line_start;

        for (const char *p = text; *p;) {
                unsigned char c = (unsigned char) *p;
                size_t n;

                if (bol) {
                        /* Leading blanks would force a break; a leading '.' or '\'' is a request. */
                        while (*p == ' ')
                                p++;
                        if (!*p)
                                break;
                        c = (unsigned char) *p;
                        if (c == '.' || c == '\'')
                                fputs("\\&", f);
                        bol = false;
                }

                if ((p == text || !is_word_char(p[-1])) && (n = key_mention(p)) > 0) {
                        fputs("\\fB", f);
                        fwrite(p, 1, n, f);
                        fputs("\\fR", f);
                        p += n;
                        continue;
                }

                if (c != 0 && strchr(".?!", c) && p[1] == ' ' && (is_word_char(p[2]) || p[2] == '"') &&
                    !after_abbreviation(text, p)) {
                        /* End of a sentence: the next one starts on a new line. */
                        fputc(c, f);
                        fputc('\n', f);
                        p += 2;
                        bol = true;
                        continue;
                }

                if (c == '\\')
                        fputs("\\e", f);
                else if (c == '-')
                        fputs("\\-", f);
                else if (c == '\t' || c == '\n')
                        fputc(' ', f);
                else if (c < 0x20 || c == 0x7f)
                        return -EINVAL;
                else if (c >= 0x80) {
                        uint32_t u;
                        n = utf8_decode((const unsigned char *) p, &u);
                        if (n == 0)
                                return -EINVAL;
                        fprintf(f, "\\[u%04" PRIX32 "]", u);
                        p += n;
                        continue;
                } else
                        fputc(c, f);
                p++;
        }
        return 0;
}

/* Writes one output line, broken at blanks into lines of at most TEXT_WIDTH bytes (mandoc's
 * style rule) where possible. col: where the line starts. A piece that would start with '.' or
 * '\'' gets "\&" in front, so that it is not read as a request. */
static void wrap_line(FILE *f, const char *l, size_t len, size_t col) {
        while (col + len > TEXT_WIDTH) {
                size_t cut = 0;

                for (size_t i = 1; i < len && col + i <= TEXT_WIDTH; i++)
                        if (l[i] == ' ')
                                cut = i;
                if (cut == 0)
                        break; /* one long word: leave it long */
                fwrite(l, 1, cut, f);
                fputc('\n', f);
                l += cut + 1;
                len -= cut + 1;
                while (len > 0 && l[0] == ' ') { /* a blank at a line start would break the line */
                        l++;
                        len--;
                }
                col = 0;
                if (len > 0 && (l[0] == '.' || l[0] == '\'')) {
                        fputs("\\&", f);
                        col = 2;
                }
        }
        fwrite(l, 1, len, f);
}

/* roff_sentences(), with every line wrapped; col: the column the text starts at. */
static int roff_text(FILE *f, const char *text, bool at_line_start, size_t col) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *m;
        int r;

        m = open_memstream(&buf, &size);
        if (!m)
                return -ENOMEM;
        r = roff_sentences(m, text, at_line_start);
        if (fclose(m) != 0)
                return -ENOMEM;
        if (r < 0)
                return r;
        for (const char *l = buf, *e; *l; l = e + 1) {
                e = strchrnul(l, '\n');
                wrap_line(f, l, (size_t) (e - l), col);
                col = 0;
                if (!*e)
                        break;
                fputc('\n', f);
        }
        return 0;
}

/* A value syntax such as "ADDRESS[/PREFIXLEN]" or "BYTES|auto": placeholders (upper case) in
 * italics, literal words and numbers in bold, punctuation in roman. Never at a line start. */
static void roff_syntax(FILE *f, const char *s) {
        while (*s) {
                size_t n;

                if (*s >= 'A' && *s <= 'Z') {
                        n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_");
                        fprintf(f, "\\fI%.*s\\fR", (int) n, s);
                } else if ((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')) {
                        n = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789");
                        fprintf(f, "\\fB%.*s\\fR", (int) n, s);
                } else {
                        n = 1;
                        if (*s == '-')
                                fputs("\\-", f);
                        else if (*s == '\\')
                                fputs("\\e", f);
                        else
                                fputc(*s, f);
                }
                s += n;
        }
}

/* Durations as a reader would write them: "24h", "1h", "100ms". */
static const char *pretty_duration(usec_t u, char *buf, size_t size) {
        if (u >= 3600 * USEC_PER_SEC && u % (3600 * USEC_PER_SEC) == 0)
                snprintf(buf, size, "%" PRIu64 "h", u / (3600 * USEC_PER_SEC));
        else if (u >= 60 * USEC_PER_SEC && u % (60 * USEC_PER_SEC) == 0)
                snprintf(buf, size, "%" PRIu64 "min", u / (60 * USEC_PER_SEC));
        else
                format_duration(u, buf, size);
        return buf;
}

/* Tenths of a percent as a reader would write them: "0%", "2.5%", "100%". */
static const char *pretty_percent(uint64_t permille, char *buf, size_t size) {
        if (permille % 10 == 0)
                snprintf(buf, size, "%" PRIu64 "%%", permille / 10);
        else
                snprintf(buf, size, "%" PRIu64 ".%" PRIu64 "%%", permille / 10, permille % 10);
        return buf;
}

static int write_default(FILE *f, const MptConfKey *k) {
        _cleanup_free_ char *v = NULL;
        int r;

        fputs("Default: ", f);
        if (arg_netdev && netdev_key_default_doc(k)) {
                r = roff_text(f, netdev_key_default_doc(k), false, STRLEN("Default: "));
                if (r < 0)
                        return r;
                fputs(".\n", f);
                return 0;
        }
        if (k->default_doc) {
                r = roff_text(f, k->default_doc, false, STRLEN("Default: "));
                if (r < 0)
                        return r;
                fputs(".\n", f);
                return 0;
        }

        /* The value a fresh profile has, printed the way the parser reads it back. */
        r = conf_key_default_text(k, &v);
        if (r < 0)
                return r;
        if (isempty(v))
                fputs("none.\n", f);
        else {
                fputs("\\fB", f);
                r = roff_text(f, v, false, STRLEN("Default: \\fB"));
                if (r < 0)
                        return r;
                fputs("\\fR.\n", f);
        }
        return 0;
}

static void write_range(FILE *f, const MptConfKey *k) {
        char lo[32], hi[32];

        switch (k->type) {
        case MPT_CONF_UINT32:
                fprintf(f, "Accepted values: %" PRIu64 " to %" PRIu64, k->min, k->max);
                break;
        case MPT_CONF_DURATION:
                fprintf(f, "Accepted values: %s to %s", pretty_duration(k->min, lo, sizeof lo),
                        pretty_duration(k->max, hi, sizeof hi));
                break;
        case MPT_CONF_PERCENT:
                /* Stored in tenths of a percent. */
                fprintf(f, "Accepted values: %s to %s", pretty_percent(k->min, lo, sizeof lo),
                        pretty_percent(k->max, hi, sizeof hi));
                break;
        default:
                return;
        }
        if (k->flags & MPT_CONF_AUTO)
                fputs(", or \\fBauto\\fR", f);
        if (k->flags & MPT_CONF_ZERO_OFF)
                fputs(", or \\fB0\\fR (off)", f);
        fputs(".\n", f);
}

static int check_key(const MptConfKey *k) {
        const char *section = mpt_section_to_string(k->section);

        if (!section) {
                fail("key %s= has no valid section", strna(k->name));
                return -EINVAL;
        }
        if (isempty(k->name)) {
                fail("a key of [%s] has no name", section);
                return -EINVAL;
        }
        if (isempty(k->syntax)) {
                fail("key [%s] %s= has no value syntax: set .syntax in src/shared/profile-keys.c", section, k->name);
                return -EINVAL;
        }
        if (!k->doc || strlen(k->doc) < DOC_MIN) {
                fail("key [%s] %s= is not documented: its .doc in src/shared/profile-keys.c is %s "
                     "(at least %u characters are needed)",
                     section, k->name, k->doc ? "too short" : "missing", DOC_MIN);
                return -EINVAL;
        }
        return 0;
}

static int write_keys(FILE *f, MptSection section) {
        const char *name = section_title(section);
        int r;

        fprintf(f, ".\\\" BEGIN KEYS [%s]: generated from src/shared/profile-keys.c\n", name);
        for (size_t i = 0; i < mpt_conf_keys_n; i++) {
                const MptConfKey *k = &mpt_conf_keys[i];
                _cleanup_free_ char *doc = NULL;

                if (k->section != section)
                        continue;
                fprintf(f, ".TP\n\\fB%s=\\fR", k->name);
                roff_syntax(f, k->syntax);
                fputc('\n', f);
                if (arg_netdev && netdev_key_doc(k))
                        doc = strdup(netdev_key_doc(k));
                else if (arg_netdev && netdev_key_note(k))
                        (void) asprintf(&doc, "%s %s", k->doc, netdev_key_note(k));
                else
                        doc = strdup(k->doc);
                if (!doc) {
                        fail("out of memory");
                        return -ENOMEM;
                }
                r = roff_text(f, doc, true, 0);
                if (r == -ENOMEM) {
                        fail("out of memory");
                        return r;
                }
                if (r < 0) {
                        fail("key [%s] %s=: the documentation contains control characters or invalid UTF-8",
                             name, k->name);
                        return r;
                }
                fputs("\n.IP\n", f);
                r = write_default(f, k);
                if (r == -ENOMEM) {
                        fail("out of memory");
                        return r;
                }
                if (r < 0) {
                        fail("key [%s] %s=: the default text contains control characters or invalid UTF-8",
                             name, k->name);
                        return r;
                }
                write_range(f, k);
        }
        fprintf(f, ".\\\" END KEYS [%s]\n", name);
        return 0;
}

static int generate(FILE *in, FILE *out) {
        static const struct {
                const char *placeholder;
                MptSection section;
        } slots[] = {
                { "@TUNNEL_KEYS@", MPT_SECTION_TUNNEL },
                { "@PATH_KEYS@", MPT_SECTION_PATH },
                { "@PEER_KEYS@", MPT_SECTION_PEER },
        };
        unsigned seen[ELEMENTSOF(slots)] = {};
        _cleanup_free_ char *line = NULL;
        size_t size = 0;
        unsigned lineno = 0;
        ssize_t n;
        int r;

        for (size_t i = 0; i < mpt_conf_keys_n; i++) {
                r = check_key(&mpt_conf_keys[i]);
                if (r < 0)
                        return r;
        }

        while ((n = getline(&line, &size, in)) >= 0) {
                bool replaced = false;

                lineno++;
                if (n > 0 && line[n - 1] == '\n')
                        line[--n] = 0;
                for (size_t i = 0; i < ELEMENTSOF(slots); i++) {
                        if (!strstr(line, slots[i].placeholder))
                                continue;
                        if (!streq(line, slots[i].placeholder)) {
                                fail("%s:%u: %s must stand alone on its line", arg_template, lineno,
                                     slots[i].placeholder);
                                return -EINVAL;
                        }
                        if (seen[i]++ > 0) {
                                fail("%s:%u: %s appears more than once", arg_template, lineno, slots[i].placeholder);
                                return -EINVAL;
                        }
                        r = write_keys(out, slots[i].section);
                        if (r < 0)
                                return r;
                        replaced = true;
                }
                if (!replaced)
                        fprintf(out, "%s\n", line);
        }
        if (ferror(in)) {
                fail("cannot read %s: %m", arg_template);
                return -EIO;
        }
        for (size_t i = 0; i < ELEMENTSOF(slots); i++)
                if (seen[i] == 0) {
                        fail("%s: the line %s is missing", arg_template, slots[i].placeholder);
                        return -EINVAL;
                }
        return 0;
}

static int run(int argc, char *argv[]) {
        _cleanup_fclose_ FILE *in = NULL;
        _cleanup_free_ char *tmp = NULL;
        FILE *out;
        int r;

        if (argc == 4 && streq(argv[1], "--netdev")) {
                arg_netdev = true;
                argv++;
                argc--;
        }
        if (argc != 3) {
                fprintf(stderr, "Usage: gen-man-keys [--netdev] TEMPLATE OUTPUT\n");
                return -EINVAL;
        }
        arg_template = argv[1];
        arg_output = argv[2];

        in = fopen(arg_template, "re");
        if (!in) {
                r = -errno;
                fail("cannot open %s: %m", arg_template);
                return r;
        }
        /* Write next to the output and rename: a failed run leaves no half-written page behind. */
        if (asprintf(&tmp, "%s.tmp", arg_output) < 0)
                return -ENOMEM;
        out = fopen(tmp, "we");
        if (!out) {
                r = -errno;
                fail("cannot create %s: %m", tmp);
                return r;
        }
        r = generate(in, out);
        if (fclose(out) != 0 && r >= 0) {
                fail("cannot write %s: %m", tmp);
                r = -EIO;
        }
        if (r >= 0 && rename(tmp, arg_output) < 0) {
                r = -errno;
                fail("cannot rename %s to %s: %m", tmp, arg_output);
        }
        if (r < 0)
                (void) unlink(tmp);
        return r;
}

int main(int argc, char *argv[]) {
        return run(argc, argv) < 0 ? 1 : 0;
}
