/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Test vectors as hex strings, for the unit tests (GLib): included after <glib.h>. */

#include <stdio.h>
#include <string.h>

/* Writes the bytes that the hex string s spells (an even number of digits) to out, which holds
 * size; returns how many. */
static inline size_t unhex(const char *s, uint8_t *out, size_t size) {
        size_t n = strlen(s) / 2;

        g_assert_cmpuint(strlen(s) % 2, ==, 0);
        g_assert_cmpuint(n, <=, size);
        for (size_t i = 0; i < n; i++) {
                unsigned v;
                g_assert_cmpint(sscanf(s + 2 * i, "%2x", &v), ==, 1);
                out[i] = (uint8_t) v;
        }
        return n;
}
