/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdio.h>

#include "macro.h"

/* Diagnostics collected while reading a profile: every problem, not just the first, each
 * tied to a file and (where there is one) a line. */
typedef struct MptDiag {
        char *file;
        unsigned line; /* 0: the problem concerns the whole file */
        char *message;
} MptDiag;

/* The most problems kept: far more than anyone reads, few enough that a hostile file cannot make
 * us allocate much. The rest are counted (n_dropped). */
#define DIAG_ITEMS_MAX 1000u

typedef struct MptDiagnostics {
        MptDiag *items;
        size_t n;
        size_t n_allocated;
        size_t n_dropped; /* problems beyond the bound on kept items: counted, not kept */
        bool oom;
} MptDiagnostics;

void diag_add(MptDiagnostics *d, const char *file, unsigned line, const char *fmt, ...) _printf_(4, 5);
void diag_done(MptDiagnostics *d);
static inline bool diag_has_errors(const MptDiagnostics *d) {
        return d->n > 0 || d->n_dropped > 0 || d->oom;
}
/* Problems reported so far, kept or not: compare before and after a step to see whether it
 * found any. */
static inline size_t diag_count(const MptDiagnostics *d) {
        return d->n + d->n_dropped;
}
/* For a parser that says why it refuses a value through its `char **reterr` argument (its caller
 * makes a diagnostic of the text): sets *reterr to the message (NULL when there is no memory for
 * it) and returns -EINVAL. */
int reterr_printf(char **reterr, const char *fmt, ...) _printf_(2, 3);
/* The same as a statement: returns from a parser whose argument is named reterr. */
#define FAIL(...) return reterr_printf(reterr, __VA_ARGS__)

/* "FILE:LINE: message" (or "FILE: message" when line is 0). */
int diag_format(const MptDiag *item, char **ret);
/* Writes every item, one per line, with an optional prefix such as "mptd: ". */
void diag_print(const MptDiagnostics *d, FILE *f, const char *prefix);
/* Parse and verify are separate passes, but problems are reported in line order all the same:
 * sorts the items from first on by line, whole-file problems (line 0) last. With file_rank (may be
 * NULL), by the rank it gives an item's file first (a profile's drop-ins come after the profile),
 * then by line. Stable: problems of one line keep the order they were found in. */
void diag_sort_by_line(MptDiagnostics *d, size_t first, size_t (*file_rank)(const char *file, const void *userdata),
                       const void *userdata);
