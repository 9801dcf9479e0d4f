/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <sys/stat.h>

#include "conf-parser.h"
#include "diag.h"

/* After the project headers: GLib #undefs and redefines MIN(), MAX() and CLAMP() the same way. */
#include <glib.h>
#include <glib/gstdio.h>

/* The tokenizer's output as one string per event, in order:
 *   "S<line>:[section]"         section header
 *   "A<line>:section:key=value" assignment
 *   "E:<diag_format() text>"    diagnostic
 * Diagnostics and callbacks are interleaved as they happen. */
typedef struct Recorder {
        GPtrArray *events;
        MptDiagnostics *d;
        size_t n_diag_seen;
        const char *reject_section; /* the section callback returns false for it */
} Recorder;

static void flush_diag(Recorder *rec) {
        for (; rec->n_diag_seen < rec->d->n; rec->n_diag_seen++) {
                char *s = NULL;
                g_assert_cmpint(diag_format(&rec->d->items[rec->n_diag_seen], &s), ==, 0);
                g_ptr_array_add(rec->events, g_strdup_printf("E:%s", s));
                free(s);
        }
}

static bool on_section(void *userdata, const char *section, unsigned line, MptDiagnostics *d) {
        Recorder *rec = userdata;

        g_assert_true(d == rec->d);
        flush_diag(rec);
        g_ptr_array_add(rec->events, g_strdup_printf("S%u:[%s]", line, section));
        return !(rec->reject_section && g_str_equal(section, rec->reject_section));
}

static void on_assignment(void *userdata, const char *section, const char *key, const char *value,
                          unsigned line, MptDiagnostics *d) {
        Recorder *rec = userdata;

        g_assert_true(d == rec->d);
        flush_diag(rec);
        g_ptr_array_add(rec->events, g_strdup_printf("A%u:%s:%s=%s", line, section, key, value));
}

static const ConfCallbacks callbacks = {
        .section = on_section,
        .assignment = on_assignment,
};

/* Parses buf[0..len) and returns the events, NULL-terminated, for comparison. */
static char **parse_events(const char *buf, size_t len, const char *reject_section) {
        MptDiagnostics d = {};
        Recorder rec = { .events = g_ptr_array_new(), .d = &d, .reject_section = reject_section };

        conf_parse_buffer("f.conf", buf, len, &callbacks, &rec, &d);
        flush_diag(&rec);
        g_assert_false(d.oom);
        diag_done(&d);
        g_ptr_array_add(rec.events, NULL);
        return (char **) g_ptr_array_free(rec.events, false);
}

static void assert_events(char **got, const char *const *expect) {
        size_t n_got = g_strv_length(got), n_expect = 0;

        while (expect[n_expect])
                n_expect++;
        for (size_t i = 0; i < MIN(n_got, n_expect); i++)
                g_assert_cmpstr(got[i], ==, expect[i]);
        if (n_got != n_expect) {
                g_autofree char *s = g_strjoinv("\n", got);
                g_test_message("events:\n%s", s);
        }
        g_assert_cmpuint(n_got, ==, n_expect);
}

typedef struct {
        const char *name;
        const char *input;
        size_t len; /* 0: strlen(input) */
        const char *reject_section;
        const char *expect[12];
} TokenVector;

static const TokenVector token_vectors[] = {
        { "basic", "[A]\nk=v\n",
          .expect = { "S1:[A]", "A2:A:k=v" } },
        { "no-final-newline", "[A]\nk=v",
          .expect = { "S1:[A]", "A2:A:k=v" } },
        { "empty", "", .expect = { NULL } },
        { "only-newlines", "\n\n\n", .expect = { NULL } },
        { "whitespace", "  [A]  \n\t k \t=  v  w \t\n",
          .expect = { "S1:[A]", "A2:A:k=v  w" } },
        { "empty-value", "[A]\nk=\nk2 =   \n",
          .expect = { "S1:[A]", "A2:A:k=", "A3:A:k2=" } },
        { "equals-in-value", "[A]\nk=a=b\n",
          .expect = { "S1:[A]", "A2:A:k=a=b" } },
        { "tab-in-value", "[A]\nk=a\tb\n",
          .expect = { "S1:[A]", "A2:A:k=a\tb" } },
        { "comments", "# c\n; c\n  # indented\n[A]\n#k=v\n;k=v\nk=v # not a comment\n",
          .expect = { "S4:[A]", "A7:A:k=v # not a comment" } },
        { "comment-control-chars", "#\x01\x02\n[A]\n", .expect = { "S2:[A]" } },
        { "sections", "[A]\na=1\n\n[B]\nb=2\n[A]\nc=3\n",
          .expect = { "S1:[A]", "A2:A:a=1", "S4:[B]", "A5:B:b=2", "S6:[A]", "A7:A:c=3" } },
        { "section-case-kept", "[tUNnel]\n", .expect = { "S1:[tUNnel]" } },
        { "crlf", "[A]\r\nk=v\r\n\r\n# c\r\nk2 = w \r\n",
          .expect = { "S1:[A]", "A2:A:k=v", "A5:A:k2=w" } },
        { "cr-inside", "[A]\nk=a\rb\nk=c\n",
          .expect = { "S1:[A]", "E:f.conf:2: line contains control characters", "A3:A:k=c" } },
        { "missing-equals", "[A]\nfoo\nk=v\n",
          .expect = { "S1:[A]", "E:f.conf:2: missing '=' in 'foo'", "A3:A:k=v" } },
        { "missing-equals-stripped", "[A]\n  foo bar  \n",
          .expect = { "S1:[A]", "E:f.conf:2: missing '=' in 'foo bar'" } },
        { "outside-section", "k=v\n\n[A]\nk=w\n",
          .expect = { "E:f.conf:1: assignment outside of a section", "S3:[A]", "A4:A:k=w" } },
        { "outside-section-no-equals", "junk\n",
          .expect = { "E:f.conf:1: missing '=' in 'junk'" } },
        { "empty-key", "[A]\n=v\n  = v\n",
          .expect = { "S1:[A]", "E:f.conf:2: missing key name before '='",
                      "E:f.conf:3: missing key name before '='" } },
        { "control-chars", "[A]\nk=v\x01\nk=\x1b[1m\nk=\x7f\nk=ok\n",
          .expect = { "S1:[A]", "E:f.conf:2: line contains control characters",
                      "E:f.conf:3: line contains control characters",
                      "E:f.conf:4: line contains control characters", "A5:A:k=ok" } },
        { "control-in-header", "[A\x01]\nk=v\n",
          .expect = { "E:f.conf:1: line contains control characters",
                      "E:f.conf:2: assignment outside of a section" } },
        { "nul-byte", "[A]\nk=v\0w\nk=x\n", 14,
          .expect = { "S1:[A]", "E:f.conf:2: line contains a NUL byte", "A3:A:k=x" } },
        { "nul-in-comment", "[A]\n#\0\nk=x\n", 11,
          .expect = { "S1:[A]", "E:f.conf:2: line contains a NUL byte", "A3:A:k=x" } },
        { "nul-at-end", "[A]\nk=x\0", 8,
          .expect = { "S1:[A]", "E:f.conf:2: line contains a NUL byte" } },
        { "bad-header-unterminated", "[A\nk=v\n",
          /* The broken section's assignments are skipped: one error, not a cascade. */
          .expect = { "E:f.conf:1: invalid section header '[A'" } },
        { "bad-header-empty", "[]\n", .expect = { "E:f.conf:1: invalid section header '[]'" } },
        { "bad-header-trailing", "[A] x\n", .expect = { "E:f.conf:1: invalid section header '[A] x'" } },
        { "bad-header-resets-section", "[A]\nk=1\n[B\nk=2\n",
          .expect = { "S1:[A]", "A2:A:k=1", "E:f.conf:3: invalid section header '[B'" } },
        { "rejected-section", "[A]\nk=1\n[X]\nk=2\nnoeq\n[A]\nk=3\n", 0, "X",
          .expect = { "S1:[A]", "A2:A:k=1", "S3:[X]", "E:f.conf:5: missing '=' in 'noeq'", "S6:[A]",
                      "A7:A:k=3" } },
        { "length-bounded", "[A]\nk=v\nk=ignored\n", 8,
          .expect = { "S1:[A]", "A2:A:k=v" } },
        /* Line continuation and the byte order mark, as systemd's parser has them. A continued line
         * is reported with the line where it starts; the lines after it keep their numbers. */
        { "continuation", "[A]\nk=a \\\n  b\nk2=c\n",
          .expect = { "S1:[A]", "A2:A:k=a    b", "A4:A:k2=c" } },
        { "continuation-no-blank", "[A]\nk=a\\\nb\n",
          .expect = { "S1:[A]", "A2:A:k=a b" } },
        { "continuation-several", "[A]\nk=1\\\n2\\\n3\nk2=x\n",
          .expect = { "S1:[A]", "A2:A:k=1 2 3", "A5:A:k2=x" } },
        { "continuation-crlf", "[A]\r\nk=a\\\r\nb\r\nk2=c\r\n",
          .expect = { "S1:[A]", "A2:A:k=a b", "A4:A:k2=c" } },
        { "continuation-comment-between", "[A]\nk=a\\\n# comment \\\n  ; another\nb\nk2=c\n",
          .expect = { "S1:[A]", "A2:A:k=a b", "A6:A:k2=c" } },
        { "continuation-blank-line-ends", "[A]\nk=a\\\n\nk2=c\n",
          .expect = { "S1:[A]", "A2:A:k=a", "A4:A:k2=c" } },
        { "continuation-at-eof", "[A]\nk=a\\", .expect = { "S1:[A]", "A2:A:k=a" } },
        { "continuation-escaped-backslash", "[A]\nk=a\\\\\nk2=b\n",
          .expect = { "S1:[A]", "A2:A:k=a\\\\", "A3:A:k2=b" } },
        { "continuation-three-backslashes", "[A]\nk=a\\\\\\\nb\n",
          .expect = { "S1:[A]", "A2:A:k=a\\\\ b" } },
        { "continuation-blank-after-backslash", "[A]\nk=a\\ \nk2=b\n",
          /* Not a continuation: the backslash is not the last character (systemd's rule too). */
          .expect = { "S1:[A]", "A2:A:k=a\\", "A3:A:k2=b" } },
        { "continuation-header", "[A\\\n]\nk=v\n", .expect = { "S1:[A ]", "A3:A :k=v" } },
        { "continuation-key", "[A]\nlong\\\nkey=v\n",
          .expect = { "S1:[A]", "A2:A:long key=v" } },
        { "continuation-errors-after", "[A]\nk=a\\\nb\\\nc\nbad\nk=\x01\n",
          .expect = { "S1:[A]", "A2:A:k=a b c", "E:f.conf:5: missing '=' in 'bad'",
                      "E:f.conf:6: line contains control characters" } },
        { "continuation-error-in-continued", "[A]\nk=a\\\n\x01\nnext\n",
          .expect = { "S1:[A]", "E:f.conf:2: line contains control characters",
                      "E:f.conf:4: missing '=' in 'next'" } },
        { "continuation-nul-breaks-it", "[A]\nk=a\\\nb\0\\\nc\nk2=d\n", 20,
          .expect = { "S1:[A]", "E:f.conf:3: line contains a NUL byte", "A5:A:k2=d" } },
        { "continuation-comment-not-continued", "[A]\n# c \\\nk=v\n",
          .expect = { "S1:[A]", "A3:A:k=v" } },
        { "bom", "\xef\xbb\xbf[A]\nk=v\n", .expect = { "S1:[A]", "A2:A:k=v" } },
        { "bom-comment", "\xef\xbb\xbf# c\n[A]\n", .expect = { "S2:[A]" } },
        { "bom-only", "\xef\xbb\xbf", .expect = { NULL } },
        { "bom-not-at-start", "[A]\n\xef\xbb\xbfk=v\n",
          /* U+FEFF elsewhere is text like any other: part of the key here. */
          .expect = { "S1:[A]", "A2:A:\xef\xbb\xbfk=v" } },
        { "bom-twice", "\xef\xbb\xbf\xef\xbb\xbf[A]\n",
          .expect = { "E:f.conf:1: missing '=' in '\xef\xbb\xbf[A]'" } },
        { "all-errors", "x=1\n[A\n[A]\nbad\n=2\nk=\x02\nk=ok\n",
          .expect = { "E:f.conf:1: assignment outside of a section", "E:f.conf:2: invalid section header '[A'",
                      "S3:[A]", "E:f.conf:4: missing '=' in 'bad'", "E:f.conf:5: missing key name before '='",
                      "E:f.conf:6: line contains control characters", "A7:A:k=ok" } },
};

static void test_tokenizer(const void *data) {
        const TokenVector *v = data;
        g_auto(GStrv) got = parse_events(v->input, v->len ?: strlen(v->input), v->reject_section);

        assert_events(got, v->expect);
}

static char *make_line(const char *prefix, size_t total, const char *suffix) {
        GString *s = g_string_new(prefix);

        /* A line of exactly `total` bytes (without the newline) after the prefix. */
        while (s->len < total)
                g_string_append_c(s, 'x');
        g_string_append(s, suffix);
        return g_string_free(s, false);
}

static void test_overlong_line(void) {
        g_autofree char *ok = make_line("[A]\nk=", 4 + CONF_LINE_MAX, "\nk2=y\n");
        g_autofree char *bad = make_line("[A]\nk=", 4 + CONF_LINE_MAX + 1, "\nk2=y\n");
        g_autofree char *bad_comment = make_line("[A]\n#", 4 + CONF_LINE_MAX + 1, "\nk2=y\n");
        g_auto(GStrv) ev_ok = parse_events(ok, strlen(ok), NULL);
        g_auto(GStrv) ev_bad = parse_events(bad, strlen(bad), NULL);
        g_auto(GStrv) ev_comment = parse_events(bad_comment, strlen(bad_comment), NULL);
        g_autofree char *msg = g_strdup_printf("E:f.conf:2: line is longer than %u bytes", CONF_LINE_MAX);

        /* CONF_LINE_MAX bytes are fine, one more is reported, and parsing goes on after it. */
        g_assert_cmpuint(g_strv_length(ev_ok), ==, 3);
        g_assert_true(g_str_has_prefix(ev_ok[1], "A2:A:k=xxx"));
        g_assert_cmpuint(strlen(ev_ok[1]), ==, STRLEN("A2:A:") + CONF_LINE_MAX);
        g_assert_cmpstr(ev_ok[2], ==, "A3:A:k2=y");

        g_assert_cmpuint(g_strv_length(ev_bad), ==, 3);
        g_assert_cmpstr(ev_bad[1], ==, msg);
        g_assert_cmpstr(ev_bad[2], ==, "A3:A:k2=y");

        /* Even a comment may not be longer. */
        g_assert_cmpuint(g_strv_length(ev_comment), ==, 3);
        g_assert_cmpstr(ev_comment[1], ==, msg);
}

static void test_overlong_last_line(void) {
        g_autofree char *bad = make_line("[A]\nk=", 4 + 3 * CONF_LINE_MAX, "");
        g_auto(GStrv) ev = parse_events(bad, strlen(bad), NULL);
        g_autofree char *msg = g_strdup_printf("E:f.conf:2: line is longer than %u bytes", CONF_LINE_MAX);

        g_assert_cmpuint(g_strv_length(ev), ==, 2);
        g_assert_cmpstr(ev[1], ==, msg);
}

static void test_overlong_continued(void) {
        /* Two halves of CONF_LINE_MAX / 2 + 1 bytes: each fits, together they do not. */
        g_autofree char *half = make_line("", CONF_LINE_MAX / 2 + 1, "");
        g_autofree char *bad = g_strdup_printf("[A]\n%s\\\n%s\\\n%s\nk2=y\n", half, half, half);
        g_autofree char *fit = g_strdup_printf("[A]\nk=%.*s\\\n%.*s\nk2=y\n", (int) (CONF_LINE_MAX / 2 - 2), half,
                                               (int) (CONF_LINE_MAX / 2 - 1), half);
        g_auto(GStrv) ev_bad = parse_events(bad, strlen(bad), NULL);
        g_auto(GStrv) ev_fit = parse_events(fit, strlen(fit), NULL);
        g_autofree char *msg = g_strdup_printf("E:f.conf:2: line is longer than %u bytes with its continuation lines",
                                               CONF_LINE_MAX);

        /* Reported once, where it starts; the rest of it is skipped, the next line parsed. */
        g_assert_cmpuint(g_strv_length(ev_bad), ==, 3);
        g_assert_cmpstr(ev_bad[1], ==, msg);
        g_assert_cmpstr(ev_bad[2], ==, "A5:A:k2=y");

        /* Exactly CONF_LINE_MAX bytes, the blank that took the backslash's place included. */
        g_assert_cmpuint(g_strv_length(ev_fit), ==, 3);
        g_assert_cmpuint(strlen(ev_fit[1]), ==, STRLEN("A2:A:") + CONF_LINE_MAX);
        g_assert_cmpstr(ev_fit[2], ==, "A4:A:k2=y");
}

static void test_not_nul_terminated(void) {
        /* The buffer need not be NUL-terminated: give exactly the bytes, on the heap, so that an
         * over-read shows up under AddressSanitizer. */
        static const char text[] = "[A]\nk=v";
        char *buf = g_malloc(STRLEN(text));
        g_auto(GStrv) ev = NULL;

        memcpy(buf, text, STRLEN(text));
        ev = parse_events(buf, STRLEN(text), NULL);
        g_assert_cmpuint(g_strv_length(ev), ==, 2);
        g_assert_cmpstr(ev[1], ==, "A2:A:k=v");
        g_free(buf);
}

static void test_no_section_callback(void) {
        static const ConfCallbacks cb = { .assignment = on_assignment };
        MptDiagnostics d = {};
        Recorder rec = { .events = g_ptr_array_new_with_free_func(g_free), .d = &d };

        /* Without a section callback every section is wanted. */
        conf_parse_buffer("f.conf", "[A]\nk=v\n", 8, &cb, &rec, &d);
        g_assert_cmpuint(rec.events->len, ==, 1);
        g_assert_cmpstr(rec.events->pdata[0], ==, "A2:A:k=v");
        g_assert_cmpuint(d.n, ==, 0);
        g_ptr_array_free(rec.events, true);
}

/* ---- files ---- */

static char *write_temp(const char *content, size_t len) {
        g_autoptr(GError) error = NULL;
        char *path = NULL;
        int fd;

        fd = g_file_open_tmp("mpt-test-XXXXXX.conf", &path, &error);
        g_assert_no_error(error);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(write(fd, content, len), ==, (ssize_t) len);
        close(fd);
        return path;
}

static void test_parse_file(void) {
        g_autofree char *path = write_temp("[A]\nk=v\nbad\n", 12);
        g_autofree char *expect = g_strdup_printf("%s:3: missing '=' in 'bad'", path);
        MptDiagnostics d = {};
        Recorder rec = { .events = g_ptr_array_new_with_free_func(g_free), .d = &d };
        char *s = NULL;

        g_assert_cmpint(conf_parse_file(path, &callbacks, &rec, &d), ==, 0);
        g_assert_cmpuint(rec.events->len, ==, 2);
        g_assert_cmpstr(rec.events->pdata[1], ==, "A2:A:k=v");
        /* Messages name the file as given. */
        g_assert_cmpuint(d.n, ==, 1);
        g_assert_cmpint(diag_format(&d.items[0], &s), ==, 0);
        g_assert_cmpstr(s, ==, expect);
        free(s);
        diag_done(&d);
        g_ptr_array_free(rec.events, true);
        g_unlink(path);
}

static void test_parse_file_errors(void) {
        g_autofree char *dir = g_dir_make_tmp("mpt-test-XXXXXX", NULL);
        g_autofree char *missing = g_build_filename(dir, "missing.conf", NULL);
        MptDiagnostics d = {};
        Recorder rec = { .events = g_ptr_array_new_with_free_func(g_free), .d = &d };

        g_assert_nonnull(dir);
        g_assert_cmpint(conf_parse_file(missing, &callbacks, &rec, &d), ==, -ENOENT);
        g_assert_cmpint(conf_parse_file(dir, &callbacks, &rec, &d), ==, -EISDIR);
        g_assert_cmpuint(rec.events->len, ==, 0);
        g_assert_cmpuint(d.n, ==, 0);
        g_ptr_array_free(rec.events, true);
        g_rmdir(dir);
}

static void test_read_full_file(void) {
        g_autofree char *big = g_malloc(CONF_FILE_MAX + 1);
        g_autofree char *path = NULL, *path_big = NULL, *path_max = NULL;
        char *buf = NULL;
        size_t size = 0;

        path = write_temp("abc\0def", 7);
        g_assert_cmpint(read_full_file(path, 100, &buf, &size), ==, 0);
        g_assert_cmpuint(size, ==, 7);
        g_assert_cmpmem(buf, 8, "abc\0def", 8); /* NUL-terminated after the content */
        free(buf);
        buf = NULL;
        /* Too big for the given bound. */
        g_assert_cmpint(read_full_file(path, 6, &buf, &size), ==, -EFBIG);
        g_assert_null(buf);
        g_assert_cmpint(read_full_file(path, 7, &buf, NULL), ==, 0);
        free(buf);
        buf = NULL;
        g_unlink(path);

        /* conf_parse_file() bounds the file at CONF_FILE_MAX. */
        memset(big, '#', CONF_FILE_MAX + 1);
        path_max = write_temp(big, CONF_FILE_MAX);
        path_big = write_temp(big, CONF_FILE_MAX + 1);
        g_assert_cmpint(read_full_file(path_max, CONF_FILE_MAX, &buf, &size), ==, 0);
        g_assert_cmpuint(size, ==, CONF_FILE_MAX);
        free(buf);
        buf = NULL;
        {
                MptDiagnostics d = {};
                Recorder rec = { .events = g_ptr_array_new_with_free_func(g_free), .d = &d };
                g_assert_cmpint(conf_parse_file(path_big, &callbacks, &rec, &d), ==, -EFBIG);
                g_ptr_array_free(rec.events, true);
                diag_done(&d);
        }
        g_unlink(path_max);
        g_unlink(path_big);

        g_assert_cmpint(read_full_file("/nonexistent/mpt", 100, &buf, &size), ==, -ENOENT);
        g_assert_null(buf);
}

/* What each flag of read_full_file_full() refuses, and that the reads agree where it reads. */
static void test_read_full_file_flags(void) {
        g_autofree char *path = write_temp("key\n", 4), *dir = g_dir_make_tmp("mpt-fileio-XXXXXX", NULL);
        g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
        static const ReadFullFileFlags regular[] = { READ_FULL_FILE_REGULAR, READ_FULL_FILE_CHECK_FIRST };
        struct stat st;
        char *buf = NULL;
        size_t size = 0;
        int fd;

        g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
        for (size_t i = 0; i < G_N_ELEMENTS(regular); i++) {
                g_assert_cmpint(read_full_file_full(fifo, 100, regular[i], &buf, &size, &st), ==, -EBADFD);
                g_assert_null(buf);
                g_assert_cmpint(read_full_file_full(path, 100, regular[i] | READ_FULL_FILE_SECURE, &buf, &size, &st),
                                ==, 0);
                g_assert_cmpstr(buf, ==, "key\n");
                g_assert_cmpuint(size, ==, 4);
                g_assert_true(S_ISREG(st.st_mode));
                free(buf);
                buf = NULL;
                /* Larger than the bound: refused, not cut short. */
                g_assert_cmpint(read_full_file_full(path, 3, regular[i], &buf, &size, NULL), ==, -EFBIG);
                g_assert_null(buf);
        }
        /* A directory: -EISDIR, but not a regular file to CHECK_FIRST. */
        g_assert_cmpint(read_full_file_full(dir, 100, READ_FULL_FILE_REGULAR, &buf, &size, NULL), ==, -EISDIR);
        g_assert_cmpint(read_full_file_full(dir, 100, READ_FULL_FILE_CHECK_FIRST, &buf, &size, NULL), ==, -EBADFD);

        /* The two steps, as a caller that reports each in its own words takes them. */
        fd = read_full_file_open(path, READ_FULL_FILE_CHECK_FIRST, &st);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(read_full_fd(fd, 3, READ_FULL_FILE_SECURE, &buf, &size), ==, -EFBIG);
        g_assert_cmpint(lseek(fd, 0, SEEK_SET), ==, 0);
        g_assert_cmpint(read_full_fd(fd, 4, READ_FULL_FILE_SECURE, &buf, &size), ==, 0);
        g_assert_cmpstr(buf, ==, "key\n");
        free(buf);
        close(fd);

        g_unlink(fifo);
        g_unlink(path);
        g_rmdir(dir);
}

/* ---- diag ---- */

static void test_diag_format(void) {
        MptDiagnostics d = {};
        char *s = NULL;

        diag_add(&d, "a.conf", 7, "bad %s %d", "value", 42);
        diag_add(&d, "a.conf", 0, "whole file");
        diag_add(&d, NULL, 3, "no name");
        g_assert_cmpuint(d.n, ==, 3);
        g_assert_true(diag_has_errors(&d));

        g_assert_cmpint(diag_format(&d.items[0], &s), ==, 0);
        g_assert_cmpstr(s, ==, "a.conf:7: bad value 42");
        free(s);
        g_assert_cmpint(diag_format(&d.items[1], &s), ==, 0);
        g_assert_cmpstr(s, ==, "a.conf: whole file");
        free(s);
        g_assert_cmpint(diag_format(&d.items[2], &s), ==, 0);
        g_assert_cmpstr(s, ==, "<input>:3: no name");
        free(s);

        diag_done(&d);
        g_assert_cmpuint(d.n, ==, 0);
        g_assert_null(d.items);
        g_assert_false(diag_has_errors(&d));

        /* A NULL collector is allowed and ignores everything. */
        diag_add(NULL, "a", 1, "x");
}

static void test_diag_print(void) {
        MptDiagnostics d = {};
        char *buf = NULL;
        size_t size = 0;
        FILE *f;

        diag_add(&d, "a.conf", 1, "one");
        diag_add(&d, "a.conf", 0, "two");
        f = open_memstream(&buf, &size);
        g_assert_nonnull(f);
        diag_print(&d, f, "mptd: ");
        diag_print(&d, f, NULL);
        d.oom = true;
        diag_print(&d, f, "p: ");
        fclose(f);
        g_assert_cmpstr(buf, ==,
                        "mptd: a.conf:1: one\nmptd: a.conf: two\n"
                        "a.conf:1: one\na.conf: two\n"
                        "p: a.conf:1: one\np: a.conf: two\np: out of memory while collecting errors\n");
        free(buf);
        diag_done(&d);
        g_assert_false(d.oom);
}

static void test_diag_bound(void) {
        MptDiagnostics d = {};
        char *buf = NULL;
        size_t size = 0;
        FILE *f;

        /* A hostile file cannot make us keep more than 1000 messages, but problems beyond that
         * are still counted, so that a caller comparing counts still sees them. */
        for (unsigned i = 1; i <= 1005; i++)
                diag_add(&d, "a", i, "problem %u", i);
        g_assert_cmpuint(d.n, ==, 1000);
        g_assert_cmpuint(d.n_dropped, ==, 5);
        g_assert_cmpuint(diag_count(&d), ==, 1005);
        g_assert_cmpstr(d.items[999].message, ==, "problem 1000");
        g_assert_true(diag_has_errors(&d));

        f = open_memstream(&buf, &size);
        diag_print(&d, f, NULL);
        fclose(f);
        g_assert_true(g_str_has_suffix(buf, "a:1000: problem 1000\n... and 5 more problems\n"));
        free(buf);
        diag_done(&d);
        g_assert_cmpuint(diag_count(&d), ==, 0);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);

        for (size_t i = 0; i < G_N_ELEMENTS(token_vectors); i++) {
                g_autofree char *path = g_strdup_printf("/mpt/conf-parser/tokenizer/%s", token_vectors[i].name);
                g_test_add_data_func(path, &token_vectors[i], test_tokenizer);
        }
        g_test_add_func("/mpt/conf-parser/overlong-line", test_overlong_line);
        g_test_add_func("/mpt/conf-parser/overlong-last-line", test_overlong_last_line);
        g_test_add_func("/mpt/conf-parser/overlong-continued", test_overlong_continued);
        g_test_add_func("/mpt/conf-parser/not-nul-terminated", test_not_nul_terminated);
        g_test_add_func("/mpt/conf-parser/no-section-callback", test_no_section_callback);
        g_test_add_func("/mpt/conf-parser/parse-file", test_parse_file);
        g_test_add_func("/mpt/conf-parser/parse-file-errors", test_parse_file_errors);
        g_test_add_func("/mpt/conf-parser/read-full-file", test_read_full_file);
        g_test_add_func("/mpt/conf-parser/read-full-file-flags", test_read_full_file_flags);
        g_test_add_func("/mpt/conf-parser/diag-format", test_diag_format);
        g_test_add_func("/mpt/conf-parser/diag-print", test_diag_print);
        g_test_add_func("/mpt/conf-parser/diag-bound", test_diag_bound);

        return g_test_run();
}
