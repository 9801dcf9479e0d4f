/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* A binary trie per family, one bit per level: a lookup walks at most 32 (IPv4) or 128 (IPv6)
 * nodes and remembers the last value it passed, which is the longest prefix that covers the
 * address. Nodes hold no prefix text, only children and a value, so that a peer's prefix costs
 * at most its length in nodes and usually far less (prefixes share their leading bits). */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "allowed-ips.h"
#include "ip-header.h"

typedef struct Node {
        struct Node *child[2];
        uint32_t value; /* MPT_ALLOWED_IPS_NONE: no prefix ends here */
} Node;

struct MptAllowedIps {
        Node *root[2]; /* IPv4, IPv6 */
        size_t n;
};

static int family_slot(int family) {
        return family == AF_INET ? 0 : family == AF_INET6 ? 1 : -1;
}

static unsigned bit_at(const uint8_t *addr, unsigned i) {
        return addr[i / 8] >> (7 - i % 8) & 1;
}

static Node *node_new(void) {
        Node *n = calloc(1, sizeof(Node));

        if (n)
                n->value = MPT_ALLOWED_IPS_NONE;
        return n;
}

static void node_free(Node *n) {
        if (!n)
                return;
        node_free(n->child[0]);
        node_free(n->child[1]);
        free(n);
}

MptAllowedIps *mpt_allowed_ips_new(void) {
        return calloc(1, sizeof(MptAllowedIps));
}

MptAllowedIps *mpt_allowed_ips_free(MptAllowedIps *t) {
        if (!t)
                return NULL;
        node_free(t->root[0]);
        node_free(t->root[1]);
        free(t);
        return NULL;
}

/* A value other than v anywhere in the subtree of n, or MPT_ALLOWED_IPS_NONE. */
static uint32_t subtree_other(const Node *n, uint32_t v) {
        uint32_t o;

        if (!n)
                return MPT_ALLOWED_IPS_NONE;
        if (n->value != MPT_ALLOWED_IPS_NONE && n->value != v)
                return n->value;
        o = subtree_other(n->child[0], v);
        return o != MPT_ALLOWED_IPS_NONE ? o : subtree_other(n->child[1], v);
}

int mpt_allowed_ips_add(MptAllowedIps *t, const MptPrefix *p, uint32_t v, uint32_t *ret_other) {
        int slot = family_slot(p->family);
        unsigned bits = p->family == AF_INET ? 32 : 128;
        unsigned len = MIN((unsigned) p->prefixlen, bits);
        uint32_t other = MPT_ALLOWED_IPS_NONE;
        const Node *n;
        Node **link;

        if (slot < 0)
                return -EAFNOSUPPORT;
        if (v == MPT_ALLOWED_IPS_NONE)
                return -EINVAL;

        /* First the overlap check, without changing anything: a prefix on the way down covers
         * p; one below p's node is covered by it. */
        n = t->root[slot];
        for (unsigned i = 0; n && i < len && other == MPT_ALLOWED_IPS_NONE; i++) {
                if (n->value != MPT_ALLOWED_IPS_NONE && n->value != v)
                        other = n->value;
                n = n->child[bit_at(p->addr.bytes, i)];
        }
        if (other == MPT_ALLOWED_IPS_NONE)
                other = subtree_other(n, v);
        if (other != MPT_ALLOWED_IPS_NONE) {
                if (ret_other)
                        *ret_other = other;
                return -EEXIST;
        }
        if (t->n >= MPT_ALLOWED_IPS_MAX)
                return -E2BIG;

        /* Nodes made on the way stay when a later one fails: empty leaves are harmless to
         * lookups, and freeing the table frees them. */
        link = &t->root[slot];
        for (unsigned i = 0;; i++) {
                if (!*link) {
                        *link = node_new();
                        if (!*link)
                                return -ENOMEM;
                }
                if (i == len)
                        break;
                link = &(*link)->child[bit_at(p->addr.bytes, i)];
        }
        if ((*link)->value == MPT_ALLOWED_IPS_NONE)
                t->n++;
        (*link)->value = v;
        return 0;
}

/* Clears v below *link and frees the nodes that hold nothing any more. */
static size_t remove_value(Node **link, uint32_t v) {
        Node *n = *link;
        size_t k = 0;

        if (!n)
                return 0;
        k += remove_value(&n->child[0], v);
        k += remove_value(&n->child[1], v);
        if (n->value == v) {
                n->value = MPT_ALLOWED_IPS_NONE;
                k++;
        }
        if (n->value == MPT_ALLOWED_IPS_NONE && !n->child[0] && !n->child[1]) {
                free(n);
                *link = NULL;
        }
        return k;
}

size_t mpt_allowed_ips_remove_value(MptAllowedIps *t, uint32_t v) {
        size_t k;

        if (v == MPT_ALLOWED_IPS_NONE)
                return 0;
        k = remove_value(&t->root[0], v) + remove_value(&t->root[1], v);
        t->n -= k;
        return k;
}

uint32_t mpt_allowed_ips_lookup(const MptAllowedIps *t, int family, const void *addr) {
        int slot = family_slot(family);
        unsigned bits = family == AF_INET ? 32 : 128;
        uint32_t best = MPT_ALLOWED_IPS_NONE;
        const Node *n;

        if (slot < 0)
                return MPT_ALLOWED_IPS_NONE;
        n = t->root[slot];
        for (unsigned i = 0; n; i++) {
                if (n->value != MPT_ALLOWED_IPS_NONE)
                        best = n->value;
                if (i == bits)
                        break;
                n = n->child[bit_at(addr, i)];
        }
        return best;
}

uint32_t mpt_allowed_ips_lookup_packet(const MptAllowedIps *t, const uint8_t *pkt, size_t len, bool source) {
        if (len >= IP4_HEADER_MIN && pkt[0] >> 4 == 4)
                return mpt_allowed_ips_lookup(t, AF_INET, pkt + (source ? IP4_OFF_SRC : IP4_OFF_DST));
        if (len >= IP6_HEADER_LEN && pkt[0] >> 4 == 6)
                return mpt_allowed_ips_lookup(t, AF_INET6, pkt + (source ? IP6_OFF_SRC : IP6_OFF_DST));
        return MPT_ALLOWED_IPS_NONE;
}

size_t mpt_allowed_ips_size(const MptAllowedIps *t) {
        return t->n;
}
