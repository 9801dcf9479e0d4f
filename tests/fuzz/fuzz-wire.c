/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The receive path's decoders, in the order the worker applies them to a datagram from the
 * network: GRE header, then a keepalive, path-status or feedback frame, or the inner IP packet. A
 * well-formed decode must describe memory inside the input, and re-encoding a decoded
 * keepalive or path-status frame must decode to the same values. */

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint8_t *buf, out[256];
        MptFrame f;
        int r;

        /* An exact-size copy, so that ASan sees any read past the datagram. */
        buf = malloc(size ?: 1);
        if (!buf)
                return 0;
        memcpy(buf, data, size);

        r = mpt_frame_decode(buf, size, &f); /* -1: good, else a drop reason */
        if (r < 0) {
                assert(f.header_len <= size);
                assert(f.payload >= buf && f.payload + f.payload_len <= buf + size);
                switch (f.kind) {
                case MPT_FRAME_DATA:
                        (void) mpt_inner_protocol(f.payload, f.payload_len);
                        (void) mpt_inner_validate(f.payload, f.payload_len, f.protocol);
                        break;
                case MPT_FRAME_KEEPALIVE: {
                        MptKeepalive ka, ka2;
                        MptFrame f2;
                        size_t n;

                        if (mpt_keepalive_decode(&f, &ka) >= 0)
                                break;
                        n = mpt_keepalive_encode(out, sizeof out, &ka);
                        if (n > 0 && mpt_frame_decode(out, n, &f2) < 0 && f2.kind == MPT_FRAME_KEEPALIVE &&
                            mpt_keepalive_decode(&f2, &ka2) < 0) {
                                assert(ka2.session == ka.session && ka2.seq == ka.seq);
                                assert(ka2.extended == ka.extended);
                        }
                        break;
                }
                case MPT_FRAME_PATH_STATUS: {
                        MptPathStatus ps;

                        if (mpt_path_status_decode(&f, &ps) < 0)
                                (void) mpt_path_status_encode(out, sizeof out, &ps);
                        break;
                }
                case MPT_FRAME_FEEDBACK: {
                        uint8_t fbuf[MPT_FEEDBACK_SIZE_MAX];
                        MptFeedback fb, fb2;
                        MptFrame f2;
                        size_t n;

                        if (mpt_feedback_decode(&f, &fb) >= 0)
                                break;
                        /* Whatever decodes re-encodes (as version 1) and decodes to the same. */
                        n = mpt_feedback_encode(fbuf, sizeof fbuf, f.protocol, &fb);
                        assert(n > 0);
                        assert(mpt_frame_decode(fbuf, n, &f2) < 0 && f2.kind == MPT_FRAME_FEEDBACK);
                        assert(mpt_feedback_decode(&f2, &fb2) < 0);
                        assert(fb2.now == fb.now && fb2.n == fb.n);
                        for (unsigned i = 0; i < fb.n; i++)
                                assert(fb2.entries[i].path_id == fb.entries[i].path_id &&
                                       fb2.entries[i].packets == fb.entries[i].packets &&
                                       fb2.entries[i].bytes == fb.entries[i].bytes &&
                                       fb2.entries[i].marker == fb.entries[i].marker &&
                                       fb2.entries[i].arrival == fb.entries[i].arrival &&
                                       fb2.entries[i].peak_rate == fb.entries[i].peak_rate);
                        break;
                }
                }
        } else
                assert(r >= 0 && r < _MPT_DROP_MAX);
        free(buf);
        return 0;
}
