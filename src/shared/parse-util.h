/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "macro.h"

typedef uint64_t usec_t;
#define USEC_INFINITY ((usec_t) UINT64_MAX)
#define USEC_PER_SEC ((usec_t) 1000000ULL)
#define USEC_PER_MSEC ((usec_t) 1000ULL)
#define NSEC_PER_USEC ((uint64_t) 1000ULL)
#define NSEC_PER_SEC ((uint64_t) 1000000000ULL)

/* All parsers return 0 or a negative errno and leave *ret untouched on failure. Numbers are
 * decimal only: a leading '0' is not octal (the original MPT parsed "010" as 8). */
int safe_atou_full(const char *s, unsigned base, unsigned *ret);
int safe_atou64(const char *s, uint64_t *ret);
int safe_atou(const char *s, unsigned *ret);
int parse_boolean(const char *s); /* 1, 0 or -EINVAL */
/* "1.5s", "100ms", "2min", "500us", "1h"; a bare number is seconds. */
int parse_duration(const char *s, usec_t *ret);
/* Prints a duration the way parse_duration() reads it back, e.g. "1s", "250ms", "1.5s". */
const char *format_duration(usec_t u, char *buf, size_t size);
/* Network interface name rules of the kernel: 1..15 bytes, no '/', ':' or whitespace, not "." or "..". */
bool ifname_valid(const char *s) _pure_;
/* Names of tunnels and paths: 1..15 characters of [A-Za-z0-9_.-], not starting with '-' or '.'. */
bool object_name_valid(const char *s) _pure_;
/* Decimal port 1..65535. */
int parse_port(const char *s, uint16_t *ret);
/* Bytes with optional K/M/G (1024-based) suffix. */
int parse_size(const char *s, uint64_t *ret);

/* Levenshtein distance, for did-you-mean hints. */
unsigned string_distance(const char *a, const char *b) _pure_;
