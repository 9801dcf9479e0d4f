/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Most profile fixtures of the unit tests were written before Mode= and Key= existed, and are
 * about other keys: without a key they would all fail with "secure mode needs Key=". The load
 * helpers run such a fixture in compat mode instead: fixture_compat() inserts "Mode=compat" on a
 * new line right after the tunnel section's header, and fixture_unshift_*() map every line
 * number that the parser reports (diagnostics, "at line N" in messages, the profile's own line
 * fields) back to the fixture as written, so that the expected messages stay those of the
 * fixture. Fixtures that mention Mode=, Key= or KeyFile= themselves are loaded unchanged; the
 * tests of the key handling use those. */

#include <glib.h>

#include "profile.h"

/* Returns the text to load (a copy) and in *ret_line the line of the inserted "Mode=compat", or
 * 0 when the text is loaded unchanged. */
static inline char *fixture_compat(const char *text, const char *header, unsigned *ret_line) {
        g_autofree char *needle = g_strdup_printf("[%s]", header);
        const char *pos = text;
        unsigned line = 1;

        *ret_line = 0;
        if (strstr(text, "Mode=") || strstr(text, "Key=") || strstr(text, "KeyFile="))
                return g_strdup(text);
        for (;;) {
                const char *eol = strchr(pos, '\n');
                const char *start = pos + strspn(pos, " \t");
                if (g_str_has_prefix(start, needle) && eol) {
                        *ret_line = line + 1;
                        return g_strdup_printf("%.*sMode=compat\n%s", (int) (eol + 1 - text), text, eol + 1);
                }
                if (!eol)
                        return g_strdup(text);
                pos = eol + 1;
                line++;
        }
}

static inline unsigned fixture_line(unsigned line, unsigned inserted) {
        return inserted > 0 && line > inserted ? line - 1 : line;
}

static inline char *fixture_unshift_message(const char *msg, unsigned inserted) {
        g_autoptr(GRegex) re = g_regex_new("line ([0-9]+)", 0, 0, NULL);
        g_autoptr(GMatchInfo) m = NULL;
        GString *out = g_string_new(NULL);
        int last = 0;

        g_regex_match(re, msg, 0, &m);
        while (g_match_info_matches(m)) {
                int s, e;
                g_autofree char *num = g_match_info_fetch(m, 1);
                g_match_info_fetch_pos(m, 1, &s, &e);
                g_string_append_len(out, msg + last, s - last);
                g_string_append_printf(out, "%u", fixture_line((unsigned) atoi(num), inserted));
                last = e;
                g_match_info_next(m, NULL);
        }
        g_string_append(out, msg + last);
        return g_string_free(out, false);
}

static inline void fixture_unshift_diag(MptDiagnostics *d, unsigned inserted) {
        if (inserted == 0)
                return;
        for (size_t i = 0; i < d->n; i++) {
                char *m = fixture_unshift_message(d->items[i].message, inserted);
                d->items[i].line = fixture_line(d->items[i].line, inserted);
                free(d->items[i].message);
                d->items[i].message = strdup(m);
                g_free(m);
        }
}

static inline void fixture_unshift_lines(unsigned *key_line, unsigned *line, unsigned inserted) {
        *line = fixture_line(*line, inserted);
        for (size_t i = 0; i < MPT_KEYS_PER_SECTION_MAX; i++)
                key_line[i] = key_line[i] == inserted ? 0 : fixture_line(key_line[i], inserted);
}

static inline void fixture_unshift_profile(MptProfile *p, unsigned inserted) {
        if (!p || inserted == 0)
                return;
        /* The inserted Mode= counts as not set: what the fixture does not say is a default. */
        fixture_unshift_lines(p->tunnel.key_line, &p->tunnel.line, inserted);
        for (size_t i = 0; i < p->n_paths; i++)
                fixture_unshift_lines(p->paths[i].key_line, &p->paths[i].line, inserted);
}
