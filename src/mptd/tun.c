/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <linux/if_tun.h>
#include <sys/ioctl.h>

#include "tun.h"

#define TUN_FLAGS (IFF_TUN | IFF_NO_PI | IFF_MULTI_QUEUE)

static int check_existing(const RtnlLink *l, char **reterr) {
        const char *why = NULL;

        if (!streq(l->kind, "tun"))
                return asprintf(reterr, "interface '%s' exists and is not a TUN device (kind '%s')",
                                l->ifname, isempty(l->kind) ? "none" : l->kind) < 0 ? -ENOMEM : -EEXIST;
        if (!l->tun.valid)
                why = "its TUN settings cannot be read";
        else if (l->tun.type != IFF_TUN)
                why = "it is a TAP device; a TUN device is needed";
        else if (l->tun.pi)
                why = "it has packet information enabled (PacketInfo=yes); set PacketInfo=no";
        else if (l->tun.vnet_hdr)
                why = "it has a virtio-net header enabled (VNetHeader=yes); set VNetHeader=no";
        else if (!l->tun.multi_queue)
                why = "it is not multi-queue; set MultiQueue=yes";
        else if (!l->tun.persist)
                why = "it is not persistent, so it belongs to a running program (another mptd?)";
        if (why)
                return asprintf(reterr, "TUN device '%s' does not match: %s", l->ifname, why) < 0 ? -ENOMEM
                                                                                              : -EMEDIUMTYPE;
        return 0;
}

static int open_queue(const char *name, char ret_name[IFNAMSIZ]) {
        _cleanup_close_ int fd = -EBADF;
        struct ifreq ifr = {};

        fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        ifr.ifr_flags = TUN_FLAGS;
        strscpy_ok(ifr.ifr_name, IFNAMSIZ, name);
        if (ioctl(fd, TUNSETIFF, &ifr) < 0)
                return -errno;
        if (ret_name)
                strscpy_ok(ret_name, IFNAMSIZ, ifr.ifr_name);
        return TAKE_FD(fd);
}

int tun_open(Rtnl *rtnl, const char *name, unsigned n_queues, TunDevice *ret, char **reterr) {
        TunDevice t = {};
        RtnlLink l;
        int r;

        assert(n_queues >= 1);
        *reterr = NULL;

        r = rtnl_link_get_by_name(rtnl, name, &l);
        if (r >= 0) {
                r = check_existing(&l, reterr);
                if (r < 0)
                        return r;
                t.persistent = true;
        } else if (r != -ENODEV)
                return asprintf(reterr, "cannot look up interface '%s': %s", name, strerror(-r)) < 0 ? -ENOMEM : r;

        t.fds = calloc(n_queues, sizeof(int));
        if (!t.fds)
                return -ENOMEM;
        for (unsigned i = 0; i < n_queues; i++) {
                r = open_queue(name, t.ifname);
                if (r < 0) {
                        const char *hint = "";
                        if (r == -EPERM)
                                hint = t.persistent ? " (the device belongs to another user or group)"
                                                    : " (CAP_NET_ADMIN is needed to create it)";
                        else if (r == -EINVAL && t.persistent)
                                hint = " (its flags do not match)";
                        else if (r == -EBUSY)
                                hint = " (too many queues attached already)";
                        else if (r == -ENOENT || r == -ENODEV)
                                hint = " (/dev/net/tun is missing: is the tun module available?)";
                        if (asprintf(reterr, "cannot %s queue %u of TUN device '%s': %s%s",
                                     t.persistent ? "attach" : "create", i, name, strerror(-r), hint) < 0)
                                *reterr = NULL;
                        t.n_fds = i;
                        tun_close(&t);
                        return r;
                }
                t.fds[i] = r;
                t.n_fds = i + 1;
        }
        t.created = !t.persistent;

        r = rtnl_link_get_by_name(rtnl, t.ifname, &l);
        if (r < 0) {
                if (asprintf(reterr, "TUN device '%s' vanished after it was opened: %s", t.ifname, strerror(-r)) < 0)
                        *reterr = NULL;
                tun_close(&t);
                return r;
        }
        t.ifindex = l.ifindex;
        *ret = t;
        return 0;
}

void tun_close(TunDevice *t) {
        for (unsigned i = 0; i < t->n_fds; i++)
                safe_close(t->fds[i]);
        free(t->fds);
        t->fds = NULL;
        t->n_fds = 0;
}
