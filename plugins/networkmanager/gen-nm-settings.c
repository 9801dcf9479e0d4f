/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Builds nm-settings-mpt(5) from its template and the key table (profile-keys.c).
 *
 *   gen-nm-settings TEMPLATE OUTPUT
 *
 * The template lines "@TUNNEL_ITEMS@" and "@PATH_ITEMS@" become one entry per key of that
 * section, named as the vpn.data item ("MTU", "PathN.Remote"), with the value syntax, the
 * table's text and the default. The pre-shared key (mpt_nm_key_is_secret()) is listed as a
 * vpn.secrets item. Text is escaped for roff as gen-man-keys does: backslashes, hyphens, a
 * leading '.' or '\'', and non-ASCII characters. */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

#include "mpt-nm-profile.h"

#define TEXT_WIDTH 80u

static void put_escaped(FILE *f, const char *s, bool line_start) {
        for (const unsigned char *c = (const unsigned char *) s; *c; c++) {
                if (line_start && (*c == '.' || *c == '\''))
                        fputs("\\&", f);
                line_start = false;
                if (*c == '\\')
                        fputs("\\e", f);
                else if (*c == '-')
                        fputs("\\-", f);
                else if (*c < 0x80)
                        fputc(*c, f);
                else {
                        /* UTF-8 to \[uXXXX] (the table uses 2- and 3-byte sequences at most). */
                        unsigned cp;
                        if ((*c & 0xe0) == 0xc0 && c[1]) {
                                cp = ((c[0] & 0x1fu) << 6) | (c[1] & 0x3fu);
                                c += 1;
                        } else if ((*c & 0xf0) == 0xe0 && c[1] && c[2]) {
                                cp = ((c[0] & 0x0fu) << 12) | ((c[1] & 0x3fu) << 6) | (c[2] & 0x3fu);
                                c += 2;
                        } else
                                cp = '?';
                        fprintf(f, "\\[u%04X]", cp);
                }
        }
}

/* Writes escaped text wrapped at TEXT_WIDTH bytes; a line that would start with '.' or '\''
 * gets "\&" first. */
static void put_wrapped(FILE *f, const char *text) {
        char *buf = NULL, *save = NULL;
        size_t size = 0, col = 0;
        FILE *m = open_memstream(&buf, &size);

        if (!m)
                exit(1);
        put_escaped(m, text, false);
        if (fclose(m) != 0)
                exit(1);
        for (char *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
                size_t len = strlen(w);
                if (col > 0 && col + 1 + len > TEXT_WIDTH) {
                        fputc('\n', f);
                        col = 0;
                }
                if (col > 0) {
                        fputc(' ', f);
                        col++;
                }
                if (col == 0 && (w[0] == '.' || w[0] == '\'')) {
                        fputs("\\&", f);
                        col += 2;
                }
                fputs(w, f);
                col += len;
        }
        if (col > 0)
                fputc('\n', f);
        free(buf);
}

/* One sentence per line, as man pages should. */
static void put_text(FILE *f, const char *text) {
        char *copy = strdup(text), *s = copy;

        if (!copy)
                exit(1);
        while (*s) {
                char *end = s;
                while (*end && !(end[0] == '.' && end[1] == ' ' && end > s))
                        end++;
                if (*end) {
                        end[1] = 0;
                        put_wrapped(f, s);
                        s = end + 2;
                        while (*s == ' ')
                                s++;
                } else {
                        put_wrapped(f, s);
                        break;
                }
        }
        free(copy);
}

static void put_default(FILE *f, const MptConfKey *k) {
        char *v = NULL;

        if (k->default_doc) {
                char *t = NULL;
                if (asprintf(&t, "Default: %s.", k->default_doc) < 0)
                        exit(1);
                put_wrapped(f, t);
                free(t);
                return;
        }
        fputs("Default: ", f);
        {
                /* The table's default as the parser writes it back. */
                MptProfile *p = profile_new();
                MptPathConfig *path = p ? profile_add_path(p, 0) : NULL;
                if (!path || profile_format_value(k, k->section == MPT_SECTION_PATH ? (void *) path : (void *) &p->tunnel,
                                                  &v) < 0)
                        exit(1);
                fputs("\\fB", f);
                put_escaped(f, v, false);
                fputs("\\fR", f);
                free(v);
                profile_free(p);
        }
        fputs(".\n", f);
}

static void put_items(FILE *f, MptSection section) {
        for (size_t i = 0; i < mpt_conf_keys_n; i++) {
                const MptConfKey *k = &mpt_conf_keys[i];
                bool secret = section == MPT_SECTION_TUNNEL && mpt_nm_key_is_secret(k->name);

                if (k->section != section)
                        continue;
                fputs(".TP\n", f);
                if (section == MPT_SECTION_PATH)
                        fprintf(f, "\\fBPath\\fR\\fIN\\fR\\fB.%s\\fR = \\fI", k->name);
                else
                        fprintf(f, "\\fB%s\\fR = \\fI", k->name);
                put_escaped(f, k->syntax, false);
                fputs("\\fR", f);
                if (secret)
                        fputs(" (in \\fBvpn.secrets\\fR)", f);
                fputc('\n', f);
                put_text(f, k->doc);
                fputs(".sp\n", f);
                put_default(f, k);
                fprintf(f, "The key \\fB%s=\\fR of the \\fB[%s]\\fR section in\n.BR mpt.conf (5).\n", k->name,
                        mpt_section_to_string(section));
        }
}

int main(int argc, char **argv) {
        char line[4096];
        FILE *in, *out;
        unsigned seen = 0;

        if (argc != 3) {
                fprintf(stderr, "usage: gen-nm-settings TEMPLATE OUTPUT\n");
                return 2;
        }
        in = fopen(argv[1], "re");
        out = fopen(argv[2], "we");
        if (!in || !out) {
                perror("gen-nm-settings");
                return 1;
        }
        while (fgets(line, sizeof line, in)) {
                if (streq(line, "@TUNNEL_ITEMS@\n")) {
                        put_items(out, MPT_SECTION_TUNNEL);
                        seen |= 1;
                } else if (streq(line, "@PATH_ITEMS@\n")) {
                        put_items(out, MPT_SECTION_PATH);
                        seen |= 2;
                } else
                        fputs(line, out);
        }
        fclose(in);
        if (fclose(out) != 0 || seen != 3) {
                fprintf(stderr, "gen-nm-settings: %s\n", seen != 3 ? "template lacks a placeholder" : "write error");
                remove(argv[2]);
                return 1;
        }
        return 0;
}
