/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The local control protocol between mptctl and mptd (documented in mptd(8), "CONTROL SOCKET").
 *
 * Transport: a SOCK_SEQPACKET Unix socket, $MPT_RUNTIME_DIR/TUNNEL.sock (default /run/mpt),
 * one request per message, one reply per request, several requests per connection allowed.
 *
 * Request:  "MPT/1 <command> [<argument>...]" (words separated by single spaces):
 *             MPT/1 show
 *             MPT/1 showconf
 *             MPT/1 path NAME weight N
 *             MPT/1 path NAME up|down
 *             MPT/1 reload            (read the profile again and apply it: root and mptd's user)
 *             MPT/1 syncconf FILE     (apply FILE, an absolute path, percent-encoded as values are)
 * Reply:    first line "MPT/1 ok" or "MPT/1 error ERRNO MESSAGE", then one record per line:
 *           "TYPE<TAB>key=value<TAB>key=value...". Keys contain no whitespace and no '='. Values
 *           are percent-encoded: every byte <= 0x20, 0x7f and '%' itself as %XX (upper-case hex);
 *           a value may be empty. Record types of "show": "tunnel" (one), "path" (one per path);
 *           of "showconf": "line" (one per line of the running configuration, as a profile: its
 *           field "text"); of "reload" and "syncconf": "line" (what changed), and with an error
 *           "problem" records (field "text", one per problem, "FILE:LINE: ...").
 */

#include "macro.h"

#define MPT_CTL_MAGIC "MPT/1"
#define MPT_CTL_REQUEST_MAX 4096u
#define MPT_CTL_REPLY_MAX (1024u * 1024u)
#define MPT_CTL_RECORDS_MAX 1024u
#define MPT_CTL_FIELDS_MAX 256u

typedef enum CtlCommand {
        CTL_COMMAND_SHOW,
        CTL_COMMAND_PATH_WEIGHT,
        CTL_COMMAND_PATH_UP,
        CTL_COMMAND_PATH_DOWN,
        CTL_COMMAND_SHOWCONF,
        CTL_COMMAND_RELOAD,
        CTL_COMMAND_SYNCCONF,
        _CTL_COMMAND_MAX,
        _CTL_COMMAND_INVALID = -EINVAL,
} CtlCommand;

typedef struct CtlRequest {
        CtlCommand command;
        char path[16];
        uint32_t weight;
        char file[MPT_CTL_REQUEST_MAX / 4]; /* syncconf: an absolute file name */
} CtlRequest;

/* Returns 0, or -EINVAL with *reterr set to a static explanation. */
int ctl_request_parse(const char *buf, size_t len, CtlRequest *ret, const char **reterr);
/* Returns the length written (without NUL), or -ENOBUFS. */
int ctl_request_format(const CtlRequest *req, char *buf, size_t size);

typedef struct CtlField {
        char *key;
        char *value;
} CtlField;

typedef struct CtlRecord {
        char *type;
        CtlField *fields;
        size_t n_fields;
} CtlRecord;

typedef struct CtlReply {
        int error; /* positive errno, 0 for ok */
        char *message;
        CtlRecord *records;
        size_t n_records;
} CtlReply;

/* Parses a reply; -EBADMSG when it is malformed (the reply is then empty). */
int ctl_reply_parse(const char *buf, size_t len, CtlReply *ret);
void ctl_reply_done(CtlReply *reply);
const char *ctl_record_get(const CtlRecord *rec, const char *key);

/* Building replies. ctl_writer_field() percent-encodes the value, and checks fields of the show
 * records ("tunnel", "path") against the table of show fields (show-fields.h): one it has not,
 * or a value not of the field's type, is counted in bad (the first one's key kept), for the
 * caller to report; it is written all the same. */
typedef struct CtlWriter {
        FILE *f;
        char *buf;
        size_t size;
        const char *record; /* the current record's type (a literal), NULL before the first */
        size_t bad;
        char bad_key[64];
} CtlWriter;

int ctl_writer_begin(CtlWriter *w, int error, const char *message);
void ctl_writer_record(CtlWriter *w, const char *type);
void ctl_writer_field(CtlWriter *w, const char *key, const char *fmt, ...) _printf_(3, 4);
/* Returns 0 and hands over the buffer, or -ENOMEM. */
int ctl_writer_finish(CtlWriter *w, char **ret, size_t *ret_len);
void ctl_writer_abandon(CtlWriter *w);

/* $MPT_RUNTIME_DIR, or the compiled-in default (/run/mpt). */
const char *ctl_runtime_dir(void);
/* RUNTIME_DIR/TUNNEL.sock; -EINVAL if the name is not a valid tunnel name or too long. */
int ctl_socket_path(const char *tunnel, char **ret);
