/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <linux/if_tun.h>
#include <sys/ioctl.h>

#include "offload.h"
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
        else if (!l->tun.multi_queue)
                why = "it is not multi-queue; set MultiQueue=yes";
        else if (!l->tun.persist)
                why = "it is not persistent, so it belongs to a running program (another mptd?)";
        if (why)
                return asprintf(reterr, "TUN device '%s' does not match: %s", l->ifname, why) < 0 ? -ENOMEM
                                                                                              : -EMEDIUMTYPE;
        return 0;
}

static int open_queue(const char *name, bool vnet_hdr, char ret_name[IFNAMSIZ]) {
        _cleanup_close_ int fd = -EBADF;
        struct ifreq ifr = {};
        int size = (int) VNET_HDR_LEN;

        fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        ifr.ifr_flags = TUN_FLAGS | (vnet_hdr ? IFF_VNET_HDR : 0);
        strscpy_ok(ifr.ifr_name, IFNAMSIZ, name);
        if (ioctl(fd, TUNSETIFF, &ifr) < 0)
                return -errno;
        if (vnet_hdr && ioctl(fd, TUNSETVNETHDRSZ, &size) < 0)
                return -errno;
        if (ret_name)
                strscpy_ok(ret_name, IFNAMSIZ, ifr.ifr_name);
        return TAKE_FD(fd);
}

/* The richest set of offloads the kernel accepts; USO needs Linux 6.2, TSO needs checksums. */
static unsigned enable_offloads(int fd) {
        static const unsigned sets[] = {
                TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN | TUN_F_USO4 | TUN_F_USO6,
                TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN,
                TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6,
                TUN_F_CSUM,
        };

        for (size_t i = 0; i < ELEMENTSOF(sets); i++)
                if (ioctl(fd, TUNSETOFFLOAD, (unsigned long) sets[i]) >= 0)
                        return sets[i];
        (void) ioctl(fd, TUNSETOFFLOAD, 0UL);
        return 0;
}

const char *tun_offloads_to_string(unsigned offloads, char *buf, size_t size) {
        static const struct {
                unsigned flag;
                const char *name;
        } names[] = {
                { TUN_F_CSUM, "csum" }, { TUN_F_TSO4, "tso4" }, { TUN_F_TSO6, "tso6" },
                { TUN_F_TSO_ECN, "tso-ecn" }, { TUN_F_USO4, "uso4" }, { TUN_F_USO6, "uso6" },
        };
        size_t n = 0;

        buf[0] = 0;
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (offloads & names[i].flag)
                        n += (size_t) snprintf(buf + n, size > n ? size - n : 0, "%s%s", n ? " " : "", names[i].name);
        if (n == 0)
                snprintf(buf, size, "none");
        return buf;
}

int tun_open(Rtnl *rtnl, const char *name, unsigned n_queues, bool want_offloads, TunDevice *ret, char **reterr) {
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
                /* Its flags are its maker's choice: attach with exactly those. */
                t.vnet_hdr = l.tun.vnet_hdr;
        } else if (r != -ENODEV)
                return asprintf(reterr, "cannot look up interface '%s': %s", name, strerror(-r)) < 0 ? -ENOMEM : r;

        t.fds = calloc(n_queues, sizeof(int));
        if (!t.fds)
                return -ENOMEM;
        if (!t.persistent)
                t.vnet_hdr = want_offloads;
        for (unsigned i = 0; i < n_queues; i++) {
                r = open_queue(name, t.vnet_hdr, t.ifname);
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
        if (t.vnet_hdr)
                t.offloads = enable_offloads(t.fds[0]);

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
