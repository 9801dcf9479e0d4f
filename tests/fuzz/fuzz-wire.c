/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The receive path's decoders, in the order the worker applies them to a datagram from the
 * network: GRE header, then a keepalive, path-status or feedback frame, or the inner IP packet. A
 * well-formed decode must describe memory inside the input, and a decoded keepalive or
 * path-status frame must re-encode to a frame of its size that decodes to the same values, and
 * encode to the same bytes again (so that an encoder that writes garbage cannot pass); a decoded
 * feedback frame must re-encode to one that decodes to the same values. */

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool keepalive_equal(const MptKeepalive *a, const MptKeepalive *b) {
        return a->ip_version == b->ip_version && address_equal(&a->src_tun, &b->src_tun) &&
               address_equal(&a->dst_tun, &b->dst_tun) && a->extended == b->extended && a->flags == b->flags &&
               a->receive_weight == b->receive_weight && a->session == b->session && a->seq == b->seq &&
               a->echo_seq == b->echo_seq && a->echo_delay_us == b->echo_delay_us && a->rx_count == b->rx_count &&
               a->path_token == b->path_token;
}

static bool path_status_equal(const MptPathStatus *a, const MptPathStatus *b) {
        return a->ip_version == b->ip_version && address_equal(&a->src_tun, &b->src_tun) &&
               address_equal(&a->dst_tun, &b->dst_tun) && a->session == b->session &&
               a->path_token == b->path_token && a->flags == b->flags;
}

/* A frame of kind decoded from out[0..n), as the receive path decodes it: -1, else a reason. */
static int redecode(const uint8_t *out, size_t n, MptFrameKind kind, MptFrame *ret) {
        int r = mpt_frame_decode(out, n, ret);

        if (r >= 0)
                return r;
        return ret->kind == kind && !ret->has_seq && ret->header_len == 4 ? -1 : MPT_DROP_BAD_KEEPALIVE;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint8_t *buf, out[256], again[256];
        MptFrame f, f2;
        size_t n;
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

                        if (mpt_keepalive_decode(&f, &ka) >= 0)
                                break;
                        n = mpt_keepalive_encode(out, sizeof out, &ka);
                        assert(n == (ka.extended ? MPT_KEEPALIVE_EXT_SIZE : MPT_KEEPALIVE_SIZE));
                        r = redecode(out, n, MPT_FRAME_KEEPALIVE, &f2);
                        assert(r < 0);
                        r = mpt_keepalive_decode(&f2, &ka2);
                        assert(r < 0);
                        assert(keepalive_equal(&ka, &ka2));
                        assert(mpt_keepalive_encode(again, sizeof again, &ka2) == n);
                        assert(memcmp(out, again, n) == 0);
                        break;
                }
                case MPT_FRAME_PATH_STATUS: {
                        MptPathStatus ps, ps2;

                        if (mpt_path_status_decode(&f, &ps) >= 0)
                                break;
                        n = mpt_path_status_encode(out, sizeof out, &ps);
                        assert(n == MPT_PATH_STATUS_SIZE);
                        r = redecode(out, n, MPT_FRAME_PATH_STATUS, &f2);
                        assert(r < 0);
                        r = mpt_path_status_decode(&f2, &ps2);
                        assert(r < 0);
                        assert(path_status_equal(&ps, &ps2));
                        assert(mpt_path_status_encode(again, sizeof again, &ps2) == n);
                        assert(memcmp(out, again, n) == 0);
                        break;
                }
                case MPT_FRAME_FEEDBACK: {
                        uint8_t fbuf[MPT_FEEDBACK_SIZE_MAX];
                        MptFeedback fb, fb2;

                        if (mpt_feedback_decode(&f, &fb) >= 0)
                                break;
                        /* Whatever decodes re-encodes (as version 2) and decodes to the same. */
                        n = mpt_feedback_encode(fbuf, sizeof fbuf, f.protocol, &fb);
                        assert(n > 0);
                        assert(mpt_frame_decode(fbuf, n, &f2) < 0 && f2.kind == MPT_FRAME_FEEDBACK);
                        assert(mpt_feedback_decode(&f2, &fb2) < 0);
                        assert(fb2.now == fb.now && fb2.n == fb.n);
                        for (unsigned i = 0; i < fb.n; i++)
                                assert(fb2.entries[i].path_id == fb.entries[i].path_id &&
                                       fb2.entries[i].lane == fb.entries[i].lane &&
                                       fb2.entries[i].sent == fb.entries[i].sent &&
                                       fb2.entries[i].packets == fb.entries[i].packets &&
                                       fb2.entries[i].bytes == fb.entries[i].bytes &&
                                       fb2.entries[i].marker == fb.entries[i].marker &&
                                       fb2.entries[i].arrival == fb.entries[i].arrival &&
                                       fb2.entries[i].peak_rate == fb.entries[i].peak_rate);
                        break;
                }
                case MPT_FRAME_REPAIR: {
                        uint8_t rbuf[MPT_REPAIR_SIZE_MAX];
                        MptRepair rp, rp2;

                        if (mpt_repair_decode(&f, &rp) >= 0)
                                break;
                        /* Whatever decodes re-encodes (as version 1) and decodes to the same. */
                        n = mpt_repair_encode(rbuf, sizeof rbuf, f.protocol, &rp);
                        assert(n == MPT_REPAIR_HEADER_SIZE + rp.n * MPT_REPAIR_ENTRY_SIZE);
                        assert(mpt_frame_decode(rbuf, n, &f2) < 0 && f2.kind == MPT_FRAME_REPAIR);
                        assert(mpt_repair_decode(&f2, &rp2) < 0);
                        assert(rp2.n == rp.n);
                        for (unsigned i = 0; i < rp.n; i++)
                                assert(rp2.entries[i].path_id == rp.entries[i].path_id &&
                                       rp2.entries[i].lane == rp.entries[i].lane &&
                                       rp2.entries[i].count == rp.entries[i].count &&
                                       rp2.entries[i].first == rp.entries[i].first);
                        break;
                }
                }
        } else
                assert(r >= 0 && r < _MPT_DROP_MAX);
        free(buf);
        return 0;
}
