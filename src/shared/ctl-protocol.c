/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <ctype.h>
#include <stdarg.h>

#include "ctl-protocol.h"
#include "show-fields.h"
#include "parse-util.h"

#define MAX_WORDS 8

static int percent_decode(const char *s, size_t len, char **ret);

static int split_words(const char *buf, size_t len, char words[MAX_WORDS][64], size_t *ret_n) {
        size_t n = 0, i = 0;

        while (i < len) {
                size_t start = i, l;
                while (i < len && buf[i] != ' ')
                        i++;
                l = i - start;
                if (l == 0 || l >= 64 || n >= MAX_WORDS)
                        return -EINVAL;
                memcpy(words[n], buf + start, l);
                words[n][l] = 0;
                for (size_t k = 0; k < l; k++)
                        if (!isgraph((unsigned char) words[n][k]))
                                return -EINVAL;
                n++;
                if (i < len)
                        i++; /* the single separating space */
                if (i == len && buf[len - 1] == ' ')
                        return -EINVAL;
        }
        *ret_n = n;
        return 0;
}

int ctl_request_parse(const char *buf, size_t len, CtlRequest *ret, const char **reterr) {
        char words[MAX_WORDS][64];
        CtlRequest req = {};
        size_t n;

        /* Tolerate one trailing newline, as sent by hand-written clients. */
        if (len > 0 && buf[len - 1] == '\n')
                len--;
        if (len == 0 || len > MPT_CTL_REQUEST_MAX) {
                *reterr = "empty or oversized request";
                return -EINVAL;
        }
        if (len > STRLEN(MPT_CTL_MAGIC " syncconf ") &&
            memcmp(buf, MPT_CTL_MAGIC " syncconf ", STRLEN(MPT_CTL_MAGIC " syncconf ")) == 0) {
                const char *f = buf + STRLEN(MPT_CTL_MAGIC " syncconf ");
                size_t flen = len - STRLEN(MPT_CTL_MAGIC " syncconf ");
                _cleanup_free_ char *name = NULL;

                bool raw_ok = true;

                /* Blanks, control characters and DEL come encoded (non-ASCII bytes as they are). */
                for (size_t i = 0; i < flen; i++)
                        raw_ok = raw_ok && (unsigned char) f[i] > 0x20 && (unsigned char) f[i] != 0x7f;
                if (!raw_ok || percent_decode(f, flen, &name) < 0) {
                        *reterr = "malformed file name (expected one percent-encoded word)";
                        return -EINVAL;
                }
                if (name[0] != '/' || strlen(name) >= sizeof req.file) {
                        *reterr = "the file name must be absolute, and shorter than 1024 bytes";
                        return -EINVAL;
                }
                req.command = CTL_COMMAND_SYNCCONF;
                strcpy(req.file, name);
                *ret = req;
                return 0;
        }
        if (split_words(buf, len, words, &n) < 0) {
                *reterr = "malformed request (expected words of printable characters separated by single spaces)";
                return -EINVAL;
        }
        if (n < 2 || !streq(words[0], MPT_CTL_MAGIC)) {
                *reterr = "request does not start with \"" MPT_CTL_MAGIC " \"";
                return -EINVAL;
        }

        if (streq(words[1], "show") && n == 2)
                req.command = CTL_COMMAND_SHOW;
        else if (streq(words[1], "showconf") && n == 2)
                req.command = CTL_COMMAND_SHOWCONF;
        else if (streq(words[1], "reload") && n == 2)
                req.command = CTL_COMMAND_RELOAD;
        else if (streq(words[1], "path") && n >= 4) {
                if (!object_name_valid(words[2])) {
                        *reterr = "invalid path name";
                        return -EINVAL;
                }
                strcpy(req.path, words[2]);
                if (streq(words[3], "weight") && n == 5) {
                        unsigned w;
                        if (safe_atou(words[4], &w) < 0 || w > 10000) {
                                *reterr = "weight must be a number 0..10000";
                                return -EINVAL;
                        }
                        req.command = CTL_COMMAND_PATH_WEIGHT;
                        req.weight = w;
                } else if (streq(words[3], "up") && n == 4)
                        req.command = CTL_COMMAND_PATH_UP;
                else if (streq(words[3], "down") && n == 4)
                        req.command = CTL_COMMAND_PATH_DOWN;
                else {
                        *reterr = "unknown path command (expected weight N, up or down)";
                        return -EINVAL;
                }
        } else {
                *reterr = "unknown command";
                return -EINVAL;
        }
        *ret = req;
        return 0;
}

int ctl_request_format(const CtlRequest *req, char *buf, size_t size) {
        int r;

        switch (req->command) {
        case CTL_COMMAND_SHOW:
                r = snprintf(buf, size, MPT_CTL_MAGIC " show");
                break;
        case CTL_COMMAND_SHOWCONF:
                r = snprintf(buf, size, MPT_CTL_MAGIC " showconf");
                break;
        case CTL_COMMAND_RELOAD:
                r = snprintf(buf, size, MPT_CTL_MAGIC " reload");
                break;
        case CTL_COMMAND_SYNCCONF: {
                size_t o;

                r = snprintf(buf, size, MPT_CTL_MAGIC " syncconf ");
                if (r < 0 || (size_t) r >= size || req->file[0] != '/')
                        return -ENOBUFS;
                o = (size_t) r;
                for (const unsigned char *p = (const unsigned char *) req->file; *p; p++) {
                        bool esc = *p <= 0x20 || *p == 0x7f || *p == '%';
                        if (o + (esc ? 3 : 1) >= size)
                                return -ENOBUFS;
                        if (esc)
                                o += (size_t) snprintf(buf + o, size - o, "%%%02X", *p);
                        else
                                buf[o++] = (char) *p;
                }
                buf[o] = 0;
                r = (int) o;
                break;
        }
        case CTL_COMMAND_PATH_WEIGHT:
                r = snprintf(buf, size, MPT_CTL_MAGIC " path %s weight %u", req->path, req->weight);
                break;
        case CTL_COMMAND_PATH_UP:
                r = snprintf(buf, size, MPT_CTL_MAGIC " path %s up", req->path);
                break;
        case CTL_COMMAND_PATH_DOWN:
                r = snprintf(buf, size, MPT_CTL_MAGIC " path %s down", req->path);
                break;
        default:
                return -EINVAL;
        }
        if (r < 0 || (size_t) r >= size)
                return -ENOBUFS;
        return r;
}

void ctl_reply_done(CtlReply *reply) {
        for (size_t i = 0; i < reply->n_records; i++) {
                CtlRecord *rec = &reply->records[i];
                for (size_t j = 0; j < rec->n_fields; j++) {
                        free(rec->fields[j].key);
                        free(rec->fields[j].value);
                }
                free(rec->fields);
                free(rec->type);
        }
        free(reply->records);
        free(reply->message);
        *reply = (CtlReply) {};
}

static int parse_record(const char *line, size_t len, CtlRecord *rec) {
        size_t i = 0, start;

        *rec = (CtlRecord) {};
        while (i < len && line[i] != '\t')
                i++;
        if (i == 0)
                return -EBADMSG;
        rec->type = strndup(line, i);
        if (!rec->type)
                return -ENOMEM;
        while (i < len) {
                const char *eq;
                CtlField *fields;
                i++; /* tab */
                start = i;
                while (i < len && line[i] != '\t')
                        i++;
                eq = memchr(line + start, '=', i - start);
                if (!eq || eq == line + start)
                        return -EBADMSG;
                if (rec->n_fields >= MPT_CTL_FIELDS_MAX)
                        return -EBADMSG;
                fields = realloc(rec->fields, (rec->n_fields + 1) * sizeof(CtlField));
                if (!fields)
                        return -ENOMEM;
                rec->fields = fields;
                fields[rec->n_fields].key = strndup(line + start, eq - (line + start));
                fields[rec->n_fields].value = NULL;
                rec->n_fields++;
                if (!fields[rec->n_fields - 1].key)
                        return -ENOMEM;
                {
                        int r = percent_decode(eq + 1, (size_t) (line + i - eq - 1), &fields[rec->n_fields - 1].value);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int ctl_reply_parse(const char *buf, size_t len, CtlReply *ret) {
        CtlReply reply = {};
        const char *nl, *end = buf + len, *p;
        size_t first;
        int r;

        if (len == 0 || len > MPT_CTL_REPLY_MAX || memchr(buf, 0, len))
                return -EBADMSG;
        nl = memchr(buf, '\n', len);
        first = nl ? (size_t) (nl - buf) : len;

        if (first == STRLEN(MPT_CTL_MAGIC " ok") && strneq(buf, MPT_CTL_MAGIC " ok", first))
                reply.error = 0;
        else if (first > STRLEN(MPT_CTL_MAGIC " error ") && strneq(buf, MPT_CTL_MAGIC " error ", STRLEN(MPT_CTL_MAGIC " error "))) {
                const char *q = buf + STRLEN(MPT_CTL_MAGIC " error ");
                unsigned e = 0;
                while (q < buf + first && isdigit((unsigned char) *q) && e < 100000)
                        e = e * 10 + (unsigned) (*q++ - '0');
                if (e == 0 || e >= 100000 || (q < buf + first && *q != ' '))
                        return -EBADMSG;
                reply.error = (int) e;
                if (q < buf + first) {
                        reply.message = strndup(q + 1, buf + first - q - 1);
                        if (!reply.message)
                                return -ENOMEM;
                }
        } else
                return -EBADMSG;

        for (p = nl ? nl + 1 : end; p < end;) {
                const char *e = memchr(p, '\n', end - p);
                size_t l = e ? (size_t) (e - p) : (size_t) (end - p);
                CtlRecord *recs;

                if (l == 0) {
                        p += 1;
                        continue;
                }
                if (reply.n_records >= MPT_CTL_RECORDS_MAX) {
                        r = -EBADMSG;
                        goto fail;
                }
                recs = realloc(reply.records, (reply.n_records + 1) * sizeof(CtlRecord));
                if (!recs) {
                        r = -ENOMEM;
                        goto fail;
                }
                reply.records = recs;
                r = parse_record(p, l, &reply.records[reply.n_records]);
                reply.n_records++;
                if (r < 0)
                        goto fail;
                p += l + (e ? 1 : 0);
        }
        *ret = reply;
        return 0;
fail:
        ctl_reply_done(&reply);
        return r;
}

const char *ctl_record_get(const CtlRecord *rec, const char *key) {
        for (size_t i = 0; i < rec->n_fields; i++)
                if (streq(rec->fields[i].key, key))
                        return rec->fields[i].value;
        return NULL;
}

int ctl_writer_begin(CtlWriter *w, int error, const char *message) {
        *w = (CtlWriter) {};
        w->f = open_memstream(&w->buf, &w->size);
        if (!w->f)
                return -ENOMEM;
        if (error == 0)
                fputs(MPT_CTL_MAGIC " ok", w->f);
        else {
                fprintf(w->f, MPT_CTL_MAGIC " error %d ", ERRNO_VALUE(error));
                for (const char *p = strempty(message); *p; p++)
                        fputc(*p == '\n' || *p == '\t' ? ' ' : *p, w->f);
        }
        return 0;
}

void ctl_writer_record(CtlWriter *w, const char *type) {
        fprintf(w->f, "\n%s", type);
        w->record = type;
}

static void check_field(CtlWriter *w, const char *key, const char *value) {
        const ShowField *f;

        if (!w->record || (!streq(w->record, "tunnel") && !streq(w->record, "path")))
                return;
        f = show_field_lookup(w->record, key);
        if (f && show_value_valid(f->type, value))
                return;
        if (w->bad++ == 0)
                snprintf(w->bad_key, sizeof w->bad_key, "%s.%s%s", w->record, key, f ? " (value not of its type)" : "");
}

void ctl_writer_field(CtlWriter *w, const char *key, const char *fmt, ...) {
        _cleanup_free_ char *buf = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&buf, fmt, ap);
        va_end(ap);
        if (r < 0) {
                buf = NULL;
                return; /* the memstream fails too and ctl_writer_finish() reports it */
        }
        check_field(w, key, buf);
        fprintf(w->f, "\t%s=", key);
        /* Percent-encode what would break the framing, and '%' itself. */
        for (const unsigned char *p = (const unsigned char *) buf; *p; p++)
                if (*p <= ' ' || *p == '%' || *p == 0x7f)
                        fprintf(w->f, "%%%02X", *p);
                else
                        fputc(*p, w->f);
}

static int unhex(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* Decodes %XX; -EBADMSG on a malformed escape or an encoded NUL. */
static int percent_decode(const char *s, size_t len, char **ret) {
        char *out = malloc(len + 1), *o = out;

        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < len; i++) {
                if (s[i] != '%') {
                        *o++ = s[i];
                        continue;
                }
                if (i + 2 >= len) {
                        free(out);
                        return -EBADMSG;
                }
                {
                        int hi = unhex(s[i + 1]), lo = unhex(s[i + 2]);
                        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                                free(out);
                                return -EBADMSG;
                        }
                        *o++ = (char) (hi << 4 | lo);
                        i += 2;
                }
        }
        *o = 0;
        *ret = out;
        return 0;
}

int ctl_writer_finish(CtlWriter *w, char **ret, size_t *ret_len) {
        fputc('\n', w->f);
        if (fclose(w->f) != 0) {
                w->f = NULL;
                w->buf = mfree(w->buf);
                return -ENOMEM;
        }
        w->f = NULL;
        *ret = TAKE_PTR(w->buf);
        *ret_len = w->size;
        return 0;
}

void ctl_writer_abandon(CtlWriter *w) {
        if (w->f)
                fclose(w->f);
        w->f = NULL;
        w->buf = mfree(w->buf);
}

const char *ctl_runtime_dir(void) {
        const char *e = getenv("MPT_RUNTIME_DIR");
        return isempty(e) ? MPT_RUNTIME_DIR : e;
}

int ctl_socket_path(const char *tunnel, char **ret) {
        char *p;

        if (!object_name_valid(tunnel))
                return -EINVAL;
        if (asprintf(&p, "%s/%s.sock", ctl_runtime_dir(), tunnel) < 0)
                return -ENOMEM;
        /* sun_path holds 108 bytes. */
        if (strlen(p) >= 108) {
                free(p);
                return -ENAMETOOLONG;
        }
        *ret = p;
        return 0;
}
