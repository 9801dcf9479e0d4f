/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdarg.h>

#include "diag.h"

void diag_add(MptDiagnostics *d, const char *file, unsigned line, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL, *f = NULL;
        va_list ap;
        int r;

        if (!d)
                return;
        /* Bound what a hostile file can make us allocate. */
        if (d->n >= DIAG_ITEMS_MAX) {
                d->n_dropped++;
                return;
        }
        if (d->n >= d->n_allocated) {
                size_t n = MAX(d->n_allocated * 2, (size_t) 8);
                MptDiag *items = realloc(d->items, n * sizeof(MptDiag));
                if (!items) {
                        d->oom = true;
                        return;
                }
                d->items = items;
                d->n_allocated = n;
        }
        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0) {
                msg = NULL;
                d->oom = true;
                return;
        }
        f = strdup(file ?: "<input>");
        if (!f) {
                d->oom = true;
                return;
        }
        d->items[d->n++] = (MptDiag) { .file = TAKE_PTR(f), .line = line, .message = TAKE_PTR(msg) };
}

void diag_done(MptDiagnostics *d) {
        for (size_t i = 0; i < d->n; i++) {
                free(d->items[i].file);
                free(d->items[i].message);
        }
        free(d->items);
        *d = (MptDiagnostics) {};
}

int reterr_printf(char **reterr, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(reterr, fmt, ap) < 0)
                *reterr = NULL;
        va_end(ap);
        return -EINVAL;
}

int diag_format(const MptDiag *item, char **ret) {
        int r;

        if (item->line > 0)
                r = asprintf(ret, "%s:%u: %s", item->file, item->line, item->message);
        else
                r = asprintf(ret, "%s: %s", item->file, item->message);
        return r < 0 ? -ENOMEM : 0;
}

void diag_print(const MptDiagnostics *d, FILE *f, const char *prefix) {
        for (size_t i = 0; i < d->n; i++) {
                _cleanup_free_ char *s = NULL;
                if (diag_format(&d->items[i], &s) < 0)
                        continue;
                fprintf(f, "%s%s\n", strempty(prefix), s);
        }
        if (d->n_dropped > 0)
                fprintf(f, "%s... and %zu more problems\n", strempty(prefix), d->n_dropped);
        if (d->oom)
                fprintf(f, "%sout of memory while collecting errors\n", strempty(prefix));
}

void diag_sort_by_line(MptDiagnostics *d, size_t first, size_t (*file_rank)(const char *file, const void *userdata),
                       const void *userdata) {
        /* Insertion sort: stable, and the lists are short. */
        for (size_t i = first + 1; i < d->n; i++) {
                MptDiag t = d->items[i];
                size_t rank = file_rank ? file_rank(t.file, userdata) : 0;
                unsigned key = t.line ?: UINT_MAX;
                size_t j = i;

                for (; j > first; j--) {
                        size_t r = file_rank ? file_rank(d->items[j - 1].file, userdata) : 0;
                        if (r < rank || (r == rank && (d->items[j - 1].line ?: UINT_MAX) <= key))
                                break;
                        d->items[j] = d->items[j - 1];
                }
                d->items[j] = t;
        }
}
