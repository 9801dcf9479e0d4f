/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdlib.h>

#include "peer.h"

int peer_new(Tunnel *t, unsigned index, Peer **ret) {
        Peer *p;

        p = calloc(1, sizeof(Peer));
        if (!p)
                return -ENOMEM;
        p->tunnel = t;
        p->index = index;
        p->fastest = -1;
        pthread_mutex_init(&p->tx_lock, NULL);
        *ret = p;
        return 0;
}

Peer *peer_free(Peer *p) {
        if (!p)
                return NULL;
        /* the tunnel's receive buffer pool, which rx may lend buffers of, is freed after it */
        rx_shared_free(p->rx);
        pthread_mutex_destroy(&p->tx_lock);
        mpt_secure_keys_wipe(&p->tx_keys);
        return mfree(p);
}
