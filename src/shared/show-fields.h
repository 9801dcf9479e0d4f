/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The fields of `mptctl show` (the records that mptd's control socket sends: ctl_write_show() in
 * src/mptd/ctl.c), one table for all who need to know them:
 *   - mptd's writer checks every field it writes against it (ctl_writer_field(): a field that is
 *     not here is a bug, logged once, and the tests fail on it);
 *   - mptctl's JSON output takes each value's type from it, never from the text (a path named
 *     "1" is the string "1"; "yes" of a name stays "yes");
 *   - `mptctl fields` prints it, with --json for scripts;
 *   - man/test-man-keys checks it against mptctl(8), subsection Dump, and against ctl.c.
 * The text of `show dump` is unchanged: every value is text there. */

#include <stdbool.h>
#include <stddef.h>

typedef enum ShowType {
        SHOW_STRING,  /* JSON string: names, addresses, states, identifiers (0x... too) */
        SHOW_INTEGER, /* JSON number: a count, or a quantity in the unit the name ends with */
        SHOW_DECIMAL, /* JSON number with a fraction (loss ratios) */
        SHOW_BOOLEAN, /* "yes"/"no" in the text; JSON true/false */
        SHOW_LIST,    /* comma-separated in the text; JSON array of strings */
        _SHOW_TYPE_MAX,
} ShowType;

typedef struct ShowField {
        const char *record; /* "tunnel" or "path" */
        const char *name;   /* "group.*": every member of a group (drop.REASON, worker_rx.N) */
        ShowType type;
        const char *unit;   /* "us", "bit/s", "bytes", "packets", "permille", "ratio"; NULL: none */
} ShowField;

extern const ShowField show_fields[];
extern const size_t show_fields_n;

/* The field of that name in that record ("drop.mtu" finds "drop.*"); NULL if it has none. */
const ShowField *show_field_lookup(const char *record, const char *name);

const char *show_type_to_string(ShowType t);

/* Whether VALUE (the text of a field) is a valid value of its type: an integer is decimal digits
 * without a leading 0 (or "0"), a decimal has one dot, a boolean is yes or no; strings and lists
 * take anything. An empty value is "unknown" (JSON null) for every type. */
bool show_value_valid(ShowType type, const char *value);
