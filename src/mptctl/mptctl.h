/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "ctl-protocol.h"
#include "macro.h"

extern bool arg_json;
/* Options of commands (parsed in main.c). */
extern double arg_interval; /* monitor --interval, seconds */
extern unsigned arg_count;  /* monitor --count; 0: until stopped */
extern bool arg_strict;     /* check --strict: warnings are problems */

/* client.c: talking to mptd. Errors are printed here, once. */
int client_connect(const char *tunnel, int *ret_fd);
int client_call(int fd, const CtlRequest *req, CtlReply *ret);
/* Both: one request to the tunnel's socket, then the connection is closed. */
int client_request(const char *tunnel, const CtlRequest *req, CtlReply *ret);
/* Names of the tunnels with a control socket in the runtime directory, sorted. */
int client_list_tunnels(char ***ret, size_t *ret_n);
void strv_free_n(char **l, size_t n);

/* output.c: one print path for text and JSON. */
/* An array of tunnel objects, each with its "paths" array. */
void output_json_records(FILE *f, const CtlRecord *records, size_t n);
void output_show_text(FILE *f, const CtlRecord *records, size_t n);
void format_bytes(uint64_t b, char *buf, size_t size);
void format_rate(uint64_t bps, char *buf, size_t size);
void json_string(FILE *f, const char *s);
void format_usec(const char *v, char *buf, size_t size);

/* One function per verb. */
int verb_show(int argc, char **argv);
int verb_path(int argc, char **argv);
int verb_check(int argc, char **argv);
int verb_monitor(int argc, char **argv);
int verb_keys(int argc, char **argv);
int verb_fields(int argc, char **argv);
int verb_showconf(int argc, char **argv);
int verb_reload(int argc, char **argv);
int verb_syncconf(int argc, char **argv);
int verb_genkey(int argc, char **argv);
int verb_genpsk(int argc, char **argv);
int verb_pubkey(int argc, char **argv);
