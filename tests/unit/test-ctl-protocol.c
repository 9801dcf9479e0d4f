/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "ctl-protocol.h"

/* After the project headers: GLib #undefs and redefines MIN(), MAX() and CLAMP() the same way. */
#include <glib.h>

/* ---- requests ---- */

#define MALFORMED "malformed request (expected words of printable characters separated by single spaces)"
#define NO_MAGIC "request does not start with \"MPT/1 \""
#define EMPTY "empty or oversized request"
#define UNKNOWN "unknown command"
#define UNKNOWN_PATH "unknown path command (expected weight N, up or down)"
#define BAD_NAME "invalid path name"
#define BAD_WEIGHT "weight must be a number 0..10000"
#define BAD_FILE_WORD "malformed file name (expected one percent-encoded word)"
#define BAD_FILE "the file name must be absolute, and shorter than 1024 bytes"

typedef struct {
        const char *name;
        const char *input;
        size_t len; /* 0: strlen(input) */
        int r;
        CtlCommand command;
        const char *path;
        uint32_t weight;
        const char *error; /* *reterr for a refused request */
        const char *file;  /* syncconf's */
} RequestVector;

static const RequestVector request_vectors[] = {
        { "show", "MPT/1 show", 0, 0, CTL_COMMAND_SHOW, "" },
        { "show-newline", "MPT/1 show\n", 0, 0, CTL_COMMAND_SHOW, "" },
        { "showconf", "MPT/1 showconf", 0, 0, CTL_COMMAND_SHOWCONF, "" },
        { "weight", "MPT/1 path wan0 weight 5", 0, 0, CTL_COMMAND_PATH_WEIGHT, "wan0", 5 },
        { "weight-0", "MPT/1 path wan0 weight 0", 0, 0, CTL_COMMAND_PATH_WEIGHT, "wan0", 0 },
        { "weight-max", "MPT/1 path wan0 weight 10000", 0, 0, CTL_COMMAND_PATH_WEIGHT, "wan0", 10000 },
        { "weight-decimal", "MPT/1 path wan0 weight 010", 0, 0, CTL_COMMAND_PATH_WEIGHT, "wan0", 10 },
        { "up", "MPT/1 path lte up", 0, 0, CTL_COMMAND_PATH_UP, "lte" },
        { "down", "MPT/1 path a.b-c_1 down\n", 0, 0, CTL_COMMAND_PATH_DOWN, "a.b-c_1" },
        { "name-15", "MPT/1 path ABCDEFGHIJKLMNO up", 0, 0, CTL_COMMAND_PATH_UP, "ABCDEFGHIJKLMNO" },
        { "reload", "MPT/1 reload", 0, 0, CTL_COMMAND_RELOAD, "" },
        { "syncconf", "MPT/1 syncconf /etc/mpt/a%20b%25.conf\n", 0, 0, CTL_COMMAND_SYNCCONF, "", .file = "/etc/mpt/a b%.conf" },
        { "syncconf-utf8", "MPT/1 syncconf /t\xc3\xa4.conf", 0, 0, CTL_COMMAND_SYNCCONF, "", .file = "/t\xc3\xa4.conf" },
        { "syncconf-newline", "MPT/1 syncconf /a%0Ab", 0, 0, CTL_COMMAND_SYNCCONF, "", .file = "/a\nb" },

        { "empty", "", 0, -EINVAL, .error = EMPTY },
        { "only-newline", "\n", 0, -EINVAL, .error = EMPTY },
        { "no-magic", "show", 0, -EINVAL, .error = NO_MAGIC },
        { "magic-only", "MPT/1", 0, -EINVAL, .error = NO_MAGIC },
        { "magic-newline", "MPT/1\n", 0, -EINVAL, .error = NO_MAGIC },
        { "other-version", "MPT/2 show", 0, -EINVAL, .error = NO_MAGIC },
        { "magic-case", "mpt/1 show", 0, -EINVAL, .error = NO_MAGIC },
        { "double-space", "MPT/1  show", 0, -EINVAL, .error = MALFORMED },
        { "leading-space", " MPT/1 show", 0, -EINVAL, .error = MALFORMED },
        { "trailing-space", "MPT/1 show ", 0, -EINVAL, .error = MALFORMED },
        { "trailing-space-newline", "MPT/1 show \n", 0, -EINVAL, .error = MALFORMED },
        { "two-newlines", "MPT/1 show\n\n", 0, -EINVAL, .error = MALFORMED },
        { "crlf", "MPT/1 show\r\n", 0, -EINVAL, .error = MALFORMED },
        { "tab", "MPT/1\tshow", 0, -EINVAL, .error = MALFORMED },
        { "nul", "MPT/1 sh\0ow", 11, -EINVAL, .error = MALFORMED },
        { "nul-at-end", "MPT/1 show\0", 11, -EINVAL, .error = MALFORMED },
        { "control", "MPT/1 sh\x01ow", 0, -EINVAL, .error = MALFORMED },
        { "del", "MPT/1 show\x7f", 0, -EINVAL, .error = MALFORMED },
        { "non-ascii", "MPT/1 path w\xc3\xa4n up", 0, -EINVAL, .error = MALFORMED },
        { "nine-words", "MPT/1 path a weight 1 2 3 4 5", 0, -EINVAL, .error = MALFORMED },
        { "long-word", "MPT/1 path 0123456789012345678901234567890123456789012345678901234567890123 up", 0,
          -EINVAL, .error = MALFORMED },
        { "unknown", "MPT/1 frobnicate", 0, -EINVAL, .error = UNKNOWN },
        { "show-extra", "MPT/1 show all", 0, -EINVAL, .error = UNKNOWN },
        { "showconf-extra", "MPT/1 showconf lab", 0, -EINVAL, .error = UNKNOWN },
        { "show-case", "MPT/1 SHOW", 0, -EINVAL, .error = UNKNOWN },
        { "path-alone", "MPT/1 path", 0, -EINVAL, .error = UNKNOWN },
        { "path-no-command", "MPT/1 path wan0", 0, -EINVAL, .error = UNKNOWN },
        { "weight-missing", "MPT/1 path wan0 weight", 0, -EINVAL, .error = UNKNOWN_PATH },
        { "path-sideways", "MPT/1 path wan0 sideways", 0, -EINVAL, .error = UNKNOWN_PATH },
        { "up-extra", "MPT/1 path wan0 up now", 0, -EINVAL, .error = UNKNOWN_PATH },
        { "weight-extra", "MPT/1 path wan0 weight 5 6", 0, -EINVAL, .error = UNKNOWN_PATH },
        { "weight-10001", "MPT/1 path wan0 weight 10001", 0, -EINVAL, .error = BAD_WEIGHT },
        { "weight-negative", "MPT/1 path wan0 weight -1", 0, -EINVAL, .error = BAD_WEIGHT },
        { "weight-hex", "MPT/1 path wan0 weight 0x10", 0, -EINVAL, .error = BAD_WEIGHT },
        { "weight-huge", "MPT/1 path wan0 weight 99999999999", 0, -EINVAL, .error = BAD_WEIGHT },
        { "weight-word", "MPT/1 path wan0 weight heavy", 0, -EINVAL, .error = BAD_WEIGHT },
        { "name-dash", "MPT/1 path -wan up", 0, -EINVAL, .error = BAD_NAME },
        { "name-dot", "MPT/1 path .wan up", 0, -EINVAL, .error = BAD_NAME },
        { "name-16", "MPT/1 path ABCDEFGHIJKLMNOP up", 0, -EINVAL, .error = BAD_NAME },
        { "name-plus", "MPT/1 path wan+0 up", 0, -EINVAL, .error = BAD_NAME },
        { "reload-extra", "MPT/1 reload now", 0, -EINVAL, .error = UNKNOWN },
        { "syncconf-alone", "MPT/1 syncconf", 0, -EINVAL, .error = UNKNOWN },
        { "syncconf-trailing-space", "MPT/1 syncconf ", 0, -EINVAL, .error = MALFORMED },
        { "syncconf-relative", "MPT/1 syncconf a.conf", 0, -EINVAL, .error = BAD_FILE },
        { "syncconf-space", "MPT/1 syncconf /a b", 0, -EINVAL, .error = BAD_FILE_WORD },
        { "syncconf-tab", "MPT/1 syncconf /a\tb", 0, -EINVAL, .error = BAD_FILE_WORD },
        { "syncconf-del", "MPT/1 syncconf /a\x7f", 0, -EINVAL, .error = BAD_FILE_WORD },
        { "syncconf-short-escape", "MPT/1 syncconf /a%2", 0, -EINVAL, .error = BAD_FILE_WORD },
        { "syncconf-bad-escape", "MPT/1 syncconf /a%zz", 0, -EINVAL, .error = BAD_FILE_WORD },
        { "syncconf-nul", "MPT/1 syncconf /a%00", 0, -EINVAL, .error = BAD_FILE_WORD },
        { "name-slash", "MPT/1 path ../x up", 0, -EINVAL, .error = BAD_NAME },
};

static void test_request_parse(const void *data) {
        const RequestVector *v = data;
        CtlRequest req = { .command = 4242, .path = "untouched", .weight = 4242, .file = "" };
        const char *err = NULL;
        int r;

        r = ctl_request_parse(v->input, v->len ?: strlen(v->input), &req, &err);
        g_assert_cmpint(r, ==, v->r);
        if (r < 0) {
                g_assert_cmpstr(err, ==, v->error);
                /* A refused request leaves the result alone. */
                g_assert_cmpint(req.command, ==, 4242);
                g_assert_cmpstr(req.path, ==, "untouched");
                return;
        }
        g_assert_cmpint(req.command, ==, v->command);
        g_assert_cmpstr(req.path, ==, v->path);
        g_assert_cmpuint(req.weight, ==, v->weight);
        g_assert_cmpstr(req.file, ==, v->file ?: "");
}

static void test_request_oversized(void) {
        char *buf = g_malloc(MPT_CTL_REQUEST_MAX + 2);
        CtlRequest req;
        const char *err = NULL;

        /* One byte over the bound is refused as oversized, before anything else is looked at. */
        memset(buf, 'a', MPT_CTL_REQUEST_MAX + 2);
        g_assert_cmpint(ctl_request_parse(buf, MPT_CTL_REQUEST_MAX + 1, &req, &err), ==, -EINVAL);
        g_assert_cmpstr(err, ==, EMPTY);
        /* At the bound it is parsed (and refused for what it says). */
        g_assert_cmpint(ctl_request_parse(buf, MPT_CTL_REQUEST_MAX, &req, &err), ==, -EINVAL);
        g_assert_cmpstr(err, ==, MALFORMED);
        /* The tolerated newline does not count. */
        buf[MPT_CTL_REQUEST_MAX] = '\n';
        g_assert_cmpint(ctl_request_parse(buf, MPT_CTL_REQUEST_MAX + 1, &req, &err), ==, -EINVAL);
        g_assert_cmpstr(err, ==, MALFORMED);
        g_free(buf);
}

static void test_request_not_nul_terminated(void) {
        static const char text[] = "MPT/1 path wan0 up";
        char *buf = g_memdup2(text, STRLEN(text)); /* no terminating NUL: ASan sees an over-read */
        CtlRequest req;
        const char *err = NULL;

        g_assert_cmpint(ctl_request_parse(buf, STRLEN(text), &req, &err), ==, 0);
        g_assert_cmpint(req.command, ==, CTL_COMMAND_PATH_UP);
        g_assert_cmpstr(req.path, ==, "wan0");
        g_free(buf);
}

typedef struct {
        CtlRequest req;
        const char *text;
} FormatVector;

static const FormatVector format_vectors[] = {
        { { CTL_COMMAND_SHOW }, "MPT/1 show" },
        { { CTL_COMMAND_SHOWCONF }, "MPT/1 showconf" },
        { { CTL_COMMAND_PATH_WEIGHT, "wan0", 7 }, "MPT/1 path wan0 weight 7" },
        { { CTL_COMMAND_PATH_WEIGHT, "ABCDEFGHIJKLMNO", 10000 }, "MPT/1 path ABCDEFGHIJKLMNO weight 10000" },
        { { CTL_COMMAND_PATH_UP, "lte" }, "MPT/1 path lte up" },
        { { CTL_COMMAND_PATH_DOWN, "x.y-z_1" }, "MPT/1 path x.y-z_1 down" },
        { { CTL_COMMAND_RELOAD }, "MPT/1 reload" },
        { { .command = CTL_COMMAND_SYNCCONF, .file = "/etc/mpt/a b%\x7f\xc3\xa4.conf" },
          "MPT/1 syncconf /etc/mpt/a%20b%25%7F\xc3\xa4.conf" },
};

static void test_request_roundtrip(void) {
        bool covered[_CTL_COMMAND_MAX] = {};

        for (size_t i = 0; i < G_N_ELEMENTS(format_vectors); i++) {
                const FormatVector *v = &format_vectors[i];
                char buf[MPT_CTL_REQUEST_MAX];
                CtlRequest back = {};
                const char *err = NULL;
                int n;

                n = ctl_request_format(&v->req, buf, sizeof buf);
                g_assert_cmpint(n, ==, (int) strlen(v->text));
                g_assert_cmpstr(buf, ==, v->text);
                g_assert_cmpint(ctl_request_parse(buf, (size_t) n, &back, &err), ==, 0);
                g_assert_cmpint(back.command, ==, v->req.command);
                g_assert_cmpstr(back.path, ==, v->req.path);
                g_assert_cmpuint(back.weight, ==, v->req.weight);
                g_assert_cmpstr(back.file, ==, v->req.file);

                /* Exactly enough room (text and NUL) works; one byte less does not. */
                g_assert_cmpint(ctl_request_format(&v->req, buf, (size_t) n + 1), ==, n);
                g_assert_cmpint(ctl_request_format(&v->req, buf, (size_t) n), ==, -ENOBUFS);
                g_assert_cmpint(ctl_request_format(&v->req, buf, 0), ==, -ENOBUFS);

                covered[v->req.command] = true;
        }
        /* A new command without a round-trip vector fails here. */
        for (int c = 0; c < _CTL_COMMAND_MAX; c++)
                g_assert_true(covered[c]);

        {
                CtlRequest bad = { .command = _CTL_COMMAND_MAX };
                char buf[64];
                g_assert_cmpint(ctl_request_format(&bad, buf, sizeof buf), ==, -EINVAL);
        }
}

/* ---- replies ---- */

static char *finish(CtlWriter *w, size_t *ret_len) {
        char *buf = NULL, *copy;
        size_t len = 0;

        g_assert_cmpint(ctl_writer_finish(w, &buf, &len), ==, 0);
        g_assert_nonnull(buf);
        g_assert_cmpuint(strlen(buf), ==, len);
        copy = g_strdup(buf);
        free(buf);
        if (ret_len)
                *ret_len = len;
        return copy;
}

static void test_reply_ok(void) {
        CtlWriter w;
        CtlReply reply = {};
        g_autofree char *text = NULL;
        size_t len;

        g_assert_cmpint(ctl_writer_begin(&w, 0, "ignored for ok"), ==, 0);
        ctl_writer_record(&w, "tunnel");
        ctl_writer_field(&w, "name", "%s", "mpt0");
        ctl_writer_field(&w, "paths", "%u", 2u);
        ctl_writer_record(&w, "path");
        ctl_writer_field(&w, "name", "%s", "a");
        ctl_writer_field(&w, "state", "up");
        ctl_writer_field(&w, "rtt_us", "%d", 1234);
        ctl_writer_record(&w, "path");
        ctl_writer_field(&w, "name", "b");
        ctl_writer_field(&w, "note", "%s", "link down\tsince\nnow  ");
        ctl_writer_field(&w, "empty", "%s", "");
        ctl_writer_field(&w, "expr", "%s", "a=b");
        text = finish(&w, &len);

        /* The exact text of the header comment's grammar: whitespace and '%' percent-encoded. */
        g_assert_cmpstr(text, ==,
                        "MPT/1 ok\n"
                        "tunnel\tname=mpt0\tpaths=2\n"
                        "path\tname=a\tstate=up\trtt_us=1234\n"
                        "path\tname=b\tnote=link%20down%09since%0Anow%20%20\tempty=\texpr=a=b\n");

        g_assert_cmpint(ctl_reply_parse(text, len, &reply), ==, 0);
        g_assert_cmpint(reply.error, ==, 0);
        g_assert_null(reply.message);
        g_assert_cmpuint(reply.n_records, ==, 3);
        g_assert_cmpstr(reply.records[0].type, ==, "tunnel");
        g_assert_cmpuint(reply.records[0].n_fields, ==, 2);
        g_assert_cmpstr(ctl_record_get(&reply.records[0], "name"), ==, "mpt0");
        g_assert_cmpstr(ctl_record_get(&reply.records[0], "paths"), ==, "2");
        g_assert_null(ctl_record_get(&reply.records[0], "state"));
        g_assert_cmpstr(reply.records[1].type, ==, "path");
        g_assert_cmpstr(ctl_record_get(&reply.records[1], "state"), ==, "up");
        g_assert_cmpstr(ctl_record_get(&reply.records[1], "rtt_us"), ==, "1234");
        g_assert_cmpstr(ctl_record_get(&reply.records[2], "note"), ==, "link down\tsince\nnow  ");
        g_assert_cmpstr(ctl_record_get(&reply.records[2], "empty"), ==, "");
        g_assert_cmpstr(ctl_record_get(&reply.records[2], "expr"), ==, "a=b"); /* split at the first '=' */
        /* Fields keep their order. */
        g_assert_cmpstr(reply.records[2].fields[0].key, ==, "name");
        g_assert_cmpstr(reply.records[2].fields[3].key, ==, "expr");
        ctl_reply_done(&reply);
        g_assert_cmpuint(reply.n_records, ==, 0);
        g_assert_null(reply.records);
}

static void test_reply_error(void) {
        CtlWriter w;
        CtlReply reply = {};
        g_autofree char *text = NULL, *text2 = NULL, *text3 = NULL;
        size_t len;

        /* Negative or positive errno, the wire carries the positive number; tabs and newlines in the
         * message become spaces so that it stays on the first line. */
        g_assert_cmpint(ctl_writer_begin(&w, -ENOENT, "no such\tpath\nwan9"), ==, 0);
        text = finish(&w, &len);
        g_assert_cmpstr(text, ==, "MPT/1 error 2 no such path wan9\n");
        g_assert_cmpint(ctl_reply_parse(text, len, &reply), ==, 0);
        g_assert_cmpint(reply.error, ==, ENOENT);
        g_assert_cmpstr(reply.message, ==, "no such path wan9");
        g_assert_cmpuint(reply.n_records, ==, 0);
        ctl_reply_done(&reply);
        g_assert_null(reply.message);

        g_assert_cmpint(ctl_writer_begin(&w, EBUSY, "busy"), ==, 0);
        ctl_writer_record(&w, "hint");
        ctl_writer_field(&w, "retry", "yes");
        text2 = finish(&w, &len);
        g_assert_cmpstr(text2, ==, "MPT/1 error 16 busy\nhint\tretry=yes\n");
        g_assert_cmpint(ctl_reply_parse(text2, len, &reply), ==, 0);
        g_assert_cmpint(reply.error, ==, EBUSY);
        g_assert_cmpstr(reply.message, ==, "busy");
        g_assert_cmpuint(reply.n_records, ==, 1);
        g_assert_cmpstr(ctl_record_get(&reply.records[0], "retry"), ==, "yes");
        ctl_reply_done(&reply);

        /* No message: an empty one. */
        g_assert_cmpint(ctl_writer_begin(&w, -EINVAL, NULL), ==, 0);
        text3 = finish(&w, &len);
        g_assert_cmpstr(text3, ==, "MPT/1 error 22 \n");
        g_assert_cmpint(ctl_reply_parse(text3, len, &reply), ==, 0);
        g_assert_cmpint(reply.error, ==, EINVAL);
        g_assert_cmpstr(reply.message, ==, "");
        ctl_reply_done(&reply);
}

static void test_writer_abandon(void) {
        CtlWriter w;

        /* Abandoning frees everything (checked by the sanitizer build) and can be repeated. */
        g_assert_cmpint(ctl_writer_begin(&w, 0, NULL), ==, 0);
        ctl_writer_record(&w, "path");
        ctl_writer_field(&w, "name", "x");
        ctl_writer_abandon(&w);
        g_assert_null(w.f);
        g_assert_null(w.buf);
        ctl_writer_abandon(&w);
}

typedef struct {
        const char *name;
        const char *input;
        size_t len;
        int r;
        int error;
        const char *message;
        size_t n_records;
} ReplyVector;

static const ReplyVector reply_vectors[] = {
        { "ok-no-newline", "MPT/1 ok", 0, 0, 0, NULL, 0 },
        { "ok-newline", "MPT/1 ok\n", 0, 0, 0, NULL, 0 },
        { "blank-lines", "MPT/1 ok\n\n\nt\tk=v\n\n", 0, 0, 0, NULL, 1 },
        { "type-only", "MPT/1 ok\nt\n", 0, 0, 0, NULL, 1 },
        { "last-line-open", "MPT/1 ok\nt\tk=v\nu\tk=w", 0, 0, 0, NULL, 2 },
        { "error-no-message", "MPT/1 error 22", 0, 0, 22, NULL, 0 },
        { "error-max", "MPT/1 error 99999 x y", 0, 0, 99999, "x y", 0 },
        { "error-leading-zero", "MPT/1 error 007 m", 0, 0, 7, "m", 0 },

        { "empty", "", 0, -EBADMSG },
        { "no-magic", "ok", 0, -EBADMSG },
        { "other-version", "MPT/2 ok", 0, -EBADMSG },
        { "magic-case", "mpt/1 ok", 0, -EBADMSG },
        { "leading-space", " MPT/1 ok", 0, -EBADMSG },
        { "okay", "MPT/1 okay", 0, -EBADMSG },
        { "ok-extra", "MPT/1 ok extra", 0, -EBADMSG },
        { "ok-crlf", "MPT/1 ok\r\n", 0, -EBADMSG },
        { "unknown-status", "MPT/1 maybe", 0, -EBADMSG },
        { "error-bare", "MPT/1 error", 0, -EBADMSG },
        { "error-space", "MPT/1 error ", 0, -EBADMSG },
        { "error-word", "MPT/1 error x", 0, -EBADMSG },
        { "error-word-message", "MPT/1 error failed badly", 0, -EBADMSG },
        { "error-zero", "MPT/1 error 0 zero", 0, -EBADMSG },
        { "error-junk", "MPT/1 error 22x msg", 0, -EBADMSG },
        { "error-negative", "MPT/1 error -5 m", 0, -EBADMSG },
        { "error-huge", "MPT/1 error 100000 big", 0, -EBADMSG },
        { "error-newline-number", "MPT/1 error \n22", 0, -EBADMSG },
        { "field-without-equals", "MPT/1 ok\ntype\tnovalue", 0, -EBADMSG },
        { "field-empty-key", "MPT/1 ok\ntype\t=v", 0, -EBADMSG },
        { "record-empty-type", "MPT/1 ok\n\tk=v", 0, -EBADMSG },
        { "record-trailing-tab", "MPT/1 ok\ntype\t\n", 0, -EBADMSG },
        { "record-double-tab", "MPT/1 ok\ntype\tk=v\t\tk2=w\n", 0, -EBADMSG },
        { "bad-second-record", "MPT/1 ok\nt\tk=v\nu\tnovalue\n", 0, -EBADMSG },
        { "nul", "MPT/1 ok\nt\tk=v\0", 15, -EBADMSG },
        { "nul-in-message", "MPT/1 error 5 a\0b", 17, -EBADMSG },
};

static void test_reply_parse(const void *data) {
        const ReplyVector *v = data;
        size_t len = v->len ?: strlen(v->input);
        char *buf = g_memdup2(v->input, len ?: 1); /* exact size: ASan sees over-reads */
        CtlReply reply = {};
        int r;

        r = ctl_reply_parse(buf, len, &reply);
        g_assert_cmpint(r, ==, v->r);
        if (r < 0) {
                /* Nothing is handed out for a malformed reply. */
                g_assert_cmpint(reply.error, ==, 0);
                g_assert_null(reply.message);
                g_assert_null(reply.records);
                g_assert_cmpuint(reply.n_records, ==, 0);
        } else {
                g_assert_cmpint(reply.error, ==, v->error);
                g_assert_cmpstr(reply.message, ==, v->message);
                g_assert_cmpuint(reply.n_records, ==, v->n_records);
        }
        ctl_reply_done(&reply);
        g_free(buf);
}

static char *records_reply(size_t n_records, size_t n_fields, size_t *ret_len) {
        CtlWriter w;

        g_assert_cmpint(ctl_writer_begin(&w, 0, NULL), ==, 0);
        for (size_t i = 0; i < n_records; i++) {
                ctl_writer_record(&w, "r");
                for (size_t j = 0; j < n_fields; j++)
                        ctl_writer_field(&w, "k", "%zu", j);
        }
        return finish(&w, ret_len);
}

static void test_reply_limits(void) {
        CtlReply reply = {};
        size_t len;

        {
                g_autofree char *t = records_reply(MPT_CTL_RECORDS_MAX, 1, &len);
                g_assert_cmpint(ctl_reply_parse(t, len, &reply), ==, 0);
                g_assert_cmpuint(reply.n_records, ==, MPT_CTL_RECORDS_MAX);
                ctl_reply_done(&reply);
        }
        {
                g_autofree char *t = records_reply(MPT_CTL_RECORDS_MAX + 1, 1, &len);
                g_assert_cmpint(ctl_reply_parse(t, len, &reply), ==, -EBADMSG);
                g_assert_cmpuint(reply.n_records, ==, 0);
        }
        {
                g_autofree char *t = records_reply(1, MPT_CTL_FIELDS_MAX, &len);
                g_assert_cmpint(ctl_reply_parse(t, len, &reply), ==, 0);
                g_assert_cmpuint(reply.records[0].n_fields, ==, MPT_CTL_FIELDS_MAX);
                g_assert_cmpstr(reply.records[0].fields[MPT_CTL_FIELDS_MAX - 1].value, ==, "255");
                ctl_reply_done(&reply);
        }
        {
                g_autofree char *t = records_reply(1, MPT_CTL_FIELDS_MAX + 1, &len);
                g_assert_cmpint(ctl_reply_parse(t, len, &reply), ==, -EBADMSG);
        }

        /* Size: a single long record right at the bound is fine, one byte more is not. */
        {
                char *buf = g_malloc(MPT_CTL_REPLY_MAX + 1);
                size_t head = STRLEN("MPT/1 ok\nr\tk=");

                memcpy(buf, "MPT/1 ok\nr\tk=", head);
                memset(buf + head, 'v', MPT_CTL_REPLY_MAX + 1 - head);
                g_assert_cmpint(ctl_reply_parse(buf, MPT_CTL_REPLY_MAX, &reply), ==, 0);
                g_assert_cmpuint(strlen(ctl_record_get(&reply.records[0], "k")), ==, MPT_CTL_REPLY_MAX - head);
                ctl_reply_done(&reply);
                g_assert_cmpint(ctl_reply_parse(buf, MPT_CTL_REPLY_MAX + 1, &reply), ==, -EBADMSG);
                g_free(buf);
        }
}

/* Malformed percent escapes are rejected. */
static void test_reply_bad_escapes(void) {
        static const char *const bad[] = {
                "MPT/1 ok\npath\tx=%", "MPT/1 ok\npath\tx=%4", "MPT/1 ok\npath\tx=%zz",
                "MPT/1 ok\npath\tx=a%00b",
        };
        CtlReply reply = {};

        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
                g_assert_cmpint(ctl_reply_parse(bad[i], strlen(bad[i]), &reply), ==, -EBADMSG);
        g_assert_cmpint(ctl_reply_parse("MPT/1 ok\npath\tx=%25%41", strlen("MPT/1 ok\npath\tx=%25%41"), &reply), ==, 0);
        g_assert_cmpstr(ctl_record_get(&reply.records[0], "x"), ==, "%A");
        ctl_reply_done(&reply);
}

static void test_reply_random_roundtrip(void) {
        static const char alphabet[] = "abcXYZ019_-.:/+@%=";
        const int n_alpha = (int) STRLEN(alphabet);
        GRand *rand = g_rand_new_with_seed(1);

        /* Whatever keys (non-empty, without '=') and values (any text without NUL) we write, the
         * parser gives back exactly. */
        for (unsigned iter = 0; iter < 300; iter++) {
                g_autoptr(GPtrArray) keys = g_ptr_array_new_with_free_func(g_free);
                g_autoptr(GPtrArray) values = g_ptr_array_new_with_free_func(g_free);
                size_t n_rec = g_rand_int_range(rand, 0, 6), len, f = 0;
                g_autofree char *text = NULL;
                CtlReply reply = {};
                CtlWriter w;
                int err = g_rand_boolean(rand) ? 0 : g_rand_int_range(rand, 1, 200);

                g_assert_cmpint(ctl_writer_begin(&w, err, "m e\ts\ns"), ==, 0);
                for (size_t i = 0; i < n_rec; i++) {
                        size_t n_f = g_rand_int_range(rand, 0, 5);
                        ctl_writer_record(&w, i % 2 ? "path" : "tunnel");
                        for (size_t j = 0; j < n_f; j++) {
                                GString *k = g_string_new(NULL), *v = g_string_new(NULL), *expect;
                                size_t kl = g_rand_int_range(rand, 1, 10), vl = g_rand_int_range(rand, 0, 20);

                                /* keys: not the last character, '=' */
                                for (size_t c = 0; c < kl; c++)
                                        g_string_append_c(k, alphabet[g_rand_int_range(rand, 0, n_alpha - 1)]);
                                for (size_t c = 0; c < vl; c++) {
                                        int x = g_rand_int_range(rand, 0, n_alpha + 3);
                                        g_string_append_c(v, x < n_alpha ? alphabet[x] : " \t\n"[x - n_alpha]);
                                }
                                ctl_writer_field(&w, k->str, "%s", v->str);
                                expect = g_string_new(v->str);
                                g_ptr_array_add(keys, g_string_free(k, false));
                                g_ptr_array_add(values, g_string_free(expect, false));
                                g_string_free(v, true);
                        }
                }
                text = finish(&w, &len);
                g_assert_cmpint(ctl_reply_parse(text, len, &reply), ==, 0);
                g_assert_cmpint(reply.error, ==, err);
                if (err)
                        g_assert_cmpstr(reply.message, ==, "m e s s");
                g_assert_cmpuint(reply.n_records, ==, n_rec);
                for (size_t i = 0; i < reply.n_records; i++)
                        for (size_t j = 0; j < reply.records[i].n_fields; j++, f++) {
                                g_assert_cmpuint(f, <, keys->len);
                                g_assert_cmpstr(reply.records[i].fields[j].key, ==, keys->pdata[f]);
                                g_assert_cmpstr(reply.records[i].fields[j].value, ==, values->pdata[f]);
                        }
                g_assert_cmpuint(f, ==, keys->len);
                ctl_reply_done(&reply);
        }
        g_rand_free(rand);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);

        for (size_t i = 0; i < G_N_ELEMENTS(request_vectors); i++) {
                g_autofree char *p = g_strdup_printf("/mpt/ctl-protocol/request/%s", request_vectors[i].name);
                g_test_add_data_func(p, &request_vectors[i], test_request_parse);
        }
        g_test_add_func("/mpt/ctl-protocol/request/oversized", test_request_oversized);
        g_test_add_func("/mpt/ctl-protocol/request/not-nul-terminated", test_request_not_nul_terminated);
        g_test_add_func("/mpt/ctl-protocol/request/roundtrip", test_request_roundtrip);
        g_test_add_func("/mpt/ctl-protocol/reply/ok", test_reply_ok);
        g_test_add_func("/mpt/ctl-protocol/reply/error", test_reply_error);
        g_test_add_func("/mpt/ctl-protocol/reply/abandon", test_writer_abandon);
        for (size_t i = 0; i < G_N_ELEMENTS(reply_vectors); i++) {
                g_autofree char *p = g_strdup_printf("/mpt/ctl-protocol/reply/parse/%s", reply_vectors[i].name);
                g_test_add_data_func(p, &reply_vectors[i], test_reply_parse);
        }
        g_test_add_func("/mpt/ctl-protocol/reply/limits", test_reply_limits);
        g_test_add_func("/mpt/ctl-protocol/reply/random-roundtrip", test_reply_random_roundtrip);
        g_test_add_func("/mpt/ctl-protocol/reply/bad-escapes", test_reply_bad_escapes);

        return g_test_run();
}
