/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* nm-mpt-service: NetworkManager's VPN service for mpt connections.
 *
 * NetworkManager spawns it per connection (--bus-name ...Connection_N). On Connect it builds the
 * profile from vpn.data/vpn.secrets (plugins/networkmanager/shared), writes it to a private file
 * (0600) in the runtime directory, and runs mptd on it as a supervised child. mptd tells us that
 * the tunnel is up the way it tells systemd: READY=1 on $NOTIFY_SOCKET, here an abstract socket
 * of ours that takes messages from that mptd only (nm-mpt-notify.h). Then we report Config
 * (tundev, MTU, gateway = the first path's Remote=) and the Ip4Config/Ip6Config of the tunnel
 * addresses and routes. mptd's death at any time is a failure
 * that NetworkManager sees; Disconnect, NetworkManager's exit (watch-peer) and SIGTERM stop mptd,
 * which removes the device it created, and the profile file. */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <pwd.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl-protocol.h"
#include "netdev.h"
#include "profile.h"

#include "mpt-nm-profile.h"
#include "nm-mpt-notify.h"
#include "nm-mpt-routes.h"

#include <gio/gio.h>
#include <glib-unix.h>

#define READY_TIMEOUT_SEC 60
#define STOP_TIMEOUT_MSEC 5000

typedef struct MptService {
        NMVpnServicePlugin parent;

        MptProfile *profile;
        char *profile_path;
        GPid pid;
        guint child_watch;
        int notify_fd;
        guint notify_source;
        guint ready_timeout;
        gboolean ready;
        guint notify_foreign; /* messages from other processes than mptd, dropped */
        GArray *host_routes; /* MptHostRoute we added, removed with the tunnel */
} MptService;

typedef struct MptServiceClass {
        NMVpnServicePluginClass parent;
} MptServiceClass;

GType mpt_service_get_type(void);
G_DEFINE_TYPE(MptService, mpt_service, NM_TYPE_VPN_SERVICE_PLUGIN)

#define MPT_NM_MPTD_USER_DEFAULT "mpt"

static const char *mptd_path(void) {
        /* The tests run the build tree's mptd; NetworkManager passes its environment on. */
        const char *e = g_getenv("MPT_NM_MPTD");
        return e && *e ? e : MPT_NM_MPTD_PATH;
}

/* The user mptd runs as once it has set the tunnel up (mptd --user): the system user "mpt"
 * (sysusers.d/mpt.conf makes it) when it exists, as in the unit; NULL: root (logged once). The
 * tests name another one with MPT_NM_MPTD_USER (empty: root). */
static const char *mptd_user(void) {
        static gboolean warned;
        const char *e = g_getenv("MPT_NM_MPTD_USER");

        if (e)
                return *e ? e : NULL;
        if (getpwnam(MPT_NM_MPTD_USER_DEFAULT))
                return MPT_NM_MPTD_USER_DEFAULT;
        if (!warned)
                g_message("no user '%s' (systemd-sysusers creates it from mpt.conf): mptd keeps running as root",
                          MPT_NM_MPTD_USER_DEFAULT);
        warned = TRUE;
        return NULL;
}

static void stop_watches(MptService *self) {
        g_clear_handle_id(&self->notify_source, g_source_remove);
        g_clear_handle_id(&self->ready_timeout, g_source_remove);
        if (self->notify_fd >= 0) {
                close(self->notify_fd);
                self->notify_fd = -1;
        }
}

static void remove_profile_file(MptService *self) {
        if (self->profile_path) {
                (void) unlink(self->profile_path);
                g_clear_pointer(&self->profile_path, g_free);
        }
}

static void remove_host_routes(MptService *self) {
        char buf[MPT_ADDRESS_STRLEN];

        for (guint i = 0; i < self->host_routes->len; i++) {
                const MptHostRoute *r = &g_array_index(self->host_routes, MptHostRoute, i);
                int k = mpt_host_route_del(r);
                if (k < 0 && k != -ESRCH)
                        g_warning("cannot remove the host route to %s: %s", address_to_string(&r->dst, buf),
                                  g_strerror(-k));
        }
        g_array_set_size(self->host_routes, 0);
}

/* Before the tunnel may take the default route: a host route for the remote of every path that
 * follows the routing table (no Interface=), through where it is reached now. The first path's
 * remote is NetworkManager's VPN gateway, which it routes itself. See nm-mpt-routes.h. */
static void add_host_routes(MptService *self) {
        const MptProfile *p = self->profile;
        char buf[MPT_ADDRESS_STRLEN], gw[MPT_ADDRESS_STRLEN], ifname[IF_NAMESIZE];

        for (size_t i = 0; i < p->n_paths; i++) {
                const MptPathConfig *c = &p->paths[i];
                MptHostRoute r;
                gboolean seen = address_equal(&c->remote, &p->paths[0].remote);
                int k;

                if (c->interface || seen)
                        continue;
                for (guint j = 0; j < self->host_routes->len && !seen; j++)
                        seen = address_equal(&g_array_index(self->host_routes, MptHostRoute, j).dst, &c->remote);
                if (seen)
                        continue;
                k = mpt_host_route_resolve(&c->remote, 0, &r);
                if (k < 0) {
                        g_message("path '%s': no route to %s now (%s); no host route", c->name,
                                  address_to_string(&c->remote, buf), g_strerror(-k));
                        continue;
                }
                k = mpt_host_route_add(&r);
                if (k < 0) {
                        g_message("path '%s': cannot add a host route to %s: %s", c->name,
                                  address_to_string(&c->remote, buf), g_strerror(-k));
                        continue;
                }
                g_message("path '%s': host route to %s%s%s dev %s, out of the tunnel", c->name,
                          address_to_string(&r.dst, buf), r.gateway.family ? " via " : "",
                          r.gateway.family ? address_to_string(&r.gateway, gw) : "",
                          if_indextoname((unsigned) r.ifindex, ifname) ?: "?");
                g_array_append_val(self->host_routes, r);
        }
}

/* Stops mptd and waits for it (bounded); SIGKILL if it does not go. */
static void stop_mptd(MptService *self) {
        int status;

        stop_watches(self);
        if (self->pid > 0) {
                /* We reap it ourselves from here on. */
                g_clear_handle_id(&self->child_watch, g_source_remove);
                (void) kill(self->pid, SIGTERM);
                for (int waited = 0;; waited += 20) {
                        pid_t r = waitpid(self->pid, &status, WNOHANG);
                        if (r == self->pid || (r < 0 && errno != EINTR))
                                break;
                        if (waited >= STOP_TIMEOUT_MSEC) {
                                g_warning("mptd (pid %d) did not stop within %d ms, killing it", self->pid,
                                          STOP_TIMEOUT_MSEC);
                                (void) kill(self->pid, SIGKILL);
                                (void) waitpid(self->pid, &status, 0);
                                break;
                        }
                        g_usleep(20 * 1000);
                }
                g_spawn_close_pid(self->pid);
                self->pid = 0;
        }
        remove_profile_file(self);
        remove_host_routes(self);
        g_clear_pointer(&self->profile, mpt_nm_profile_free);
        self->ready = FALSE;
        self->notify_foreign = 0;
}

static char *describe_status(int status) {
        if (WIFEXITED(status))
                return g_strdup_printf("exited with status %d", WEXITSTATUS(status));
        if (WIFSIGNALED(status))
                return g_strdup_printf("was killed by signal %d (%s)", WTERMSIG(status), g_strsignal(WTERMSIG(status)));
        return g_strdup_printf("ended (wait status %d)", status);
}

static void fail(MptService *self, NMVpnPluginFailure reason) {
        stop_mptd(self);
        nm_vpn_service_plugin_failure(NM_VPN_SERVICE_PLUGIN(self), reason);
}

static void on_child_exit(GPid pid, int status, gpointer data) {
        MptService *self = data;
        g_autofree char *how = describe_status(status);

        self->child_watch = 0;
        g_spawn_close_pid(pid);
        self->pid = 0;
        g_warning("mptd (pid %d) for tunnel '%s' %s %s", pid,
                  self->profile ? mpt_nm_profile_get_name(self->profile) : "?", how,
                  self->ready ? "while the tunnel was up" : "before the tunnel came up");
        fail(self, NM_VPN_PLUGIN_FAILURE_CONNECT_FAILED);
}

static gboolean on_ready_timeout(gpointer data) {
        MptService *self = data;

        self->ready_timeout = 0;
        g_warning("mptd did not report the tunnel up within %d s", READY_TIMEOUT_SEC);
        fail(self, NM_VPN_PLUGIN_FAILURE_CONNECT_FAILED);
        return G_SOURCE_REMOVE;
}

static GVariant *addr_variant(const MptAddress *a) {
        if (a->family == AF_INET)
                return g_variant_new_uint32(a->addr.in.s_addr);
        return g_variant_new_fixed_array(G_VARIANT_TYPE_BYTE, &a->addr.in6, 16, 1);
}

static guint32 tundev_mtu(const char *ifname) {
        struct ifreq ifr = {};
        int fd, r;

        fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return 0;
        g_strlcpy(ifr.ifr_name, ifname, sizeof ifr.ifr_name);
        r = ioctl(fd, SIOCGIFMTU, &ifr);
        close(fd);
        return r < 0 ? 0 : (guint32) ifr.ifr_mtu;
}

static const MptPrefix *first_of(const MptPrefixList *l, int family) {
        for (size_t i = 0; i < l->n; i++)
                if (l->items[i].family == family)
                        return &l->items[i];
        return NULL;
}

static void send_config(MptService *self) {
        NMVpnServicePlugin *plugin = NM_VPN_SERVICE_PLUGIN(self);
        const MptProfile *p = self->profile;
        const MptPrefix *a4 = first_of(&p->tunnel.addresses, AF_INET);
        const MptPrefix *a6 = first_of(&p->tunnel.addresses, AF_INET6);
        const MptPrefix *peer4 = first_of(&p->tunnel.peers, AF_INET);
        const char *name = mpt_nm_profile_get_name(p);
        g_autofree char *banner = NULL;
        GVariantBuilder b, routes;
        guint32 mtu = tundev_mtu(name);

        banner = g_strdup_printf("mpt tunnel %s over %zu path%s", name, p->n_paths, p->n_paths == 1 ? "" : "s");
        g_variant_builder_init(&b, G_VARIANT_TYPE_VARDICT);
        g_variant_builder_add(&b, "{sv}", NM_VPN_PLUGIN_CONFIG_TUNDEV, g_variant_new_string(name));
        /* NetworkManager routes the gateway through the base device; one per connection, so the
         * first path's remote stands for the peer. */
        g_variant_builder_add(&b, "{sv}", NM_VPN_PLUGIN_CONFIG_EXT_GATEWAY, addr_variant(&p->paths[0].remote));
        if (mtu > 0)
                g_variant_builder_add(&b, "{sv}", NM_VPN_PLUGIN_CONFIG_MTU, g_variant_new_uint32(mtu));
        g_variant_builder_add(&b, "{sv}", NM_VPN_PLUGIN_CONFIG_HAS_IP4, g_variant_new_boolean(a4 != NULL));
        g_variant_builder_add(&b, "{sv}", NM_VPN_PLUGIN_CONFIG_HAS_IP6, g_variant_new_boolean(a6 != NULL));
        g_variant_builder_add(&b, "{sv}", NM_VPN_PLUGIN_CONFIG_BANNER, g_variant_new_string(banner));
        nm_vpn_service_plugin_set_config(plugin, g_variant_builder_end(&b));

        if (a4) {
                g_variant_builder_init(&b, G_VARIANT_TYPE_VARDICT);
                g_variant_builder_add(&b, "{sv}", NM_VPN_PLUGIN_IP4_CONFIG_ADDRESS,
                                      g_variant_new_uint32(a4->addr.in.s_addr));
                g_variant_builder_add(&b, "{sv}", NM_VPN_PLUGIN_IP4_CONFIG_PREFIX, g_variant_new_uint32(a4->prefixlen));
                if (peer4 && a4->prefixlen == 32)
                        g_variant_builder_add(&b, "{sv}", NM_VPN_PLUGIN_IP4_CONFIG_PTP,
                                              g_variant_new_uint32(peer4->addr.in.s_addr));
                g_variant_builder_init(&routes, G_VARIANT_TYPE("aau"));
                for (size_t i = 0; i < p->tunnel.routes.n; i++) {
                        const MptPrefix *r = &p->tunnel.routes.items[i];
                        guint32 v[4] = { r->addr.in.s_addr, r->prefixlen, 0, 0 };
                        if (r->family != AF_INET)
                                continue;
                        g_variant_builder_add_value(&routes, g_variant_new_fixed_array(G_VARIANT_TYPE_UINT32, v, 4,
                                                                                       sizeof(guint32)));
                }
                g_variant_builder_add(&b, "{sv}", NM_VPN_PLUGIN_IP4_CONFIG_ROUTES, g_variant_builder_end(&routes));
                nm_vpn_service_plugin_set_ip4_config(plugin, g_variant_builder_end(&b));
        }
        if (a6) {
                g_variant_builder_init(&b, G_VARIANT_TYPE_VARDICT);
                g_variant_builder_add(&b, "{sv}", NM_VPN_PLUGIN_IP6_CONFIG_ADDRESS,
                                      g_variant_new_fixed_array(G_VARIANT_TYPE_BYTE, &a6->addr.in6, 16, 1));
                g_variant_builder_add(&b, "{sv}", NM_VPN_PLUGIN_IP6_CONFIG_PREFIX, g_variant_new_uint32(a6->prefixlen));
                g_variant_builder_init(&routes, G_VARIANT_TYPE("a(ayuayu)"));
                for (size_t i = 0; i < p->tunnel.routes.n; i++) {
                        const MptPrefix *r = &p->tunnel.routes.items[i];
                        static const guint8 zero[16];
                        if (r->family != AF_INET6)
                                continue;
                        g_variant_builder_add(&routes, "(@ayu@ayu)",
                                              g_variant_new_fixed_array(G_VARIANT_TYPE_BYTE, &r->addr.in6, 16, 1),
                                              (guint32) r->prefixlen,
                                              g_variant_new_fixed_array(G_VARIANT_TYPE_BYTE, zero, 16, 1), 0u);
                }
                g_variant_builder_add(&b, "{sv}", NM_VPN_PLUGIN_IP6_CONFIG_ROUTES, g_variant_builder_end(&routes));
                nm_vpn_service_plugin_set_ip6_config(plugin, g_variant_builder_end(&b));
        }
}

static gboolean on_notify(int fd, GIOCondition cond, gpointer data) {
        MptService *self = data;
        char buf[4096];
        ssize_t n;

        n = mpt_notify_recv(fd, self->pid, buf, sizeof buf);
        if (n == -EPERM) {
                /* Not from our mptd: anyone on the machine can send to the socket. Said once. */
                if (self->notify_foreign++ == 0)
                        g_warning("ignoring notifications that do not come from mptd (pid %d)",
                                  (int) self->pid);
                return G_SOURCE_CONTINUE;
        }
        if (n < 0)
                return n == -EAGAIN || n == -EINTR ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
        for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
                if (g_str_has_prefix(line, "STATUS="))
                        g_message("mptd: %s", line + strlen("STATUS="));
                if (streq(line, "READY=1") && !self->ready) {
                        self->ready = TRUE;
                        g_clear_handle_id(&self->ready_timeout, g_source_remove);
                        send_config(self);
                }
        }
        return G_SOURCE_CONTINUE;
}

static void child_setup(gpointer data) {
        /* mptd must not outlive us (a crash of this service must not leave the tunnel behind). */
        (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
}

static gboolean write_profile(MptService *self, GError **error) {
        const char *dir = ctl_runtime_dir();
        g_autofree char *text = NULL;
        size_t len, off = 0;
        int fd;

        if (g_mkdir_with_parents(dir, 0755) < 0) {
                g_set_error(error, NM_VPN_PLUGIN_ERROR, NM_VPN_PLUGIN_ERROR_LAUNCH_FAILED,
                            "cannot create %s: %s", dir, g_strerror(errno));
                return FALSE;
        }
        text = mpt_nm_profile_to_text(self->profile, error);
        if (!text)
                return FALSE;
        self->profile_path = g_strdup_printf("%s/%s.nm.conf", dir, mpt_nm_profile_get_name(self->profile));
        (void) unlink(self->profile_path);
        /* It may hold the pre-shared key: only root reads it. */
        fd = open(self->profile_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0) {
                g_set_error(error, NM_VPN_PLUGIN_ERROR, NM_VPN_PLUGIN_ERROR_LAUNCH_FAILED, "cannot create %s: %s",
                            self->profile_path, g_strerror(errno));
                g_clear_pointer(&self->profile_path, g_free);
                return FALSE;
        }
        len = strlen(text);
        while (off < len) {
                ssize_t n = write(fd, text + off, len - off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        g_set_error(error, NM_VPN_PLUGIN_ERROR, NM_VPN_PLUGIN_ERROR_LAUNCH_FAILED,
                                    "cannot write %s: %s", self->profile_path, g_strerror(errno));
                        close(fd);
                        remove_profile_file(self);
                        return FALSE;
                }
                off += (size_t) n;
        }
        explicit_bzero(text, len);
        close(fd);
        return TRUE;
}

/* A tunnel that NetworkManager starts creates its own device, and must not take the name of a
 * tunnel of the system's, running or not: an interface that exists (mptd would attach to a
 * persistent TUN device of that name and take over its traffic), a profile of mptd's
 * (MPT_SYSCONFDIR/NAME.conf: `mptd NAME`, mptd@NAME.service) or a .netdev file of networkd's. */
static gboolean check_tunnel_name(const char *name, GError **error) {
        g_autofree char *conf = g_strdup_printf(MPT_SYSCONFDIR "/%s.conf", name);
        g_autofree char *netdev = NULL;
        struct stat st;

        if (if_nametoindex(name) > 0) {
                g_set_error(error, NM_VPN_PLUGIN_ERROR, NM_VPN_PLUGIN_ERROR_BAD_ARGUMENTS,
                            "vpn.data: Name: an interface named '%s' exists already, and a NetworkManager tunnel "
                            "creates its own device: choose another Name=", name);
                return FALSE;
        }
        if (lstat(conf, &st) == 0) {
                g_set_error(error, NM_VPN_PLUGIN_ERROR, NM_VPN_PLUGIN_ERROR_BAD_ARGUMENTS,
                            "vpn.data: Name: '%s' is the name of the system tunnel %s: choose another Name=", name,
                            conf);
                return FALSE;
        }
        if (netdev_find_ifname(netdev_search_path, name, &netdev) > 0) {
                g_set_error(error, NM_VPN_PLUGIN_ERROR, NM_VPN_PLUGIN_ERROR_BAD_ARGUMENTS,
                            "vpn.data: Name: '%s' is the name of the device of %s: choose another Name=", name,
                            netdev);
                return FALSE;
        }
        return TRUE;
}

/* Builds and checks the profile of s (the connection's VPN setting, or a variant of it) as this
 * service, which runs as root, may: files only for a system connection (mpt-nm-profile.h), and a
 * tunnel name of its own. ret may be NULL. */
static gboolean check_setting(NMConnection *connection, NMSettingVpn *s, MptProfile **ret, GError **error) {
        g_autoptr(MptProfile) p = NULL;
        const char *user = NULL;
        MptNmOwner owner = mpt_nm_connection_owner(connection, &user);

        if (!mpt_nm_profile_from_setting_for(s, owner, user, &p, error))
                return FALSE;
        if (!check_tunnel_name(mpt_nm_profile_get_name(p), error))
                return FALSE;
        if (ret)
                *ret = g_steal_pointer(&p);
        return TRUE;
}

static gboolean real_connect(NMVpnServicePlugin *plugin, NMConnection *connection, GError **error) {
        MptService *self = (MptService *) plugin;
        NMSettingVpn *s = nm_connection_get_setting_vpn(connection);
        g_autoptr(GPtrArray) argv = g_ptr_array_new();
        g_autofree char *user_arg = NULL;
        g_auto(GStrv) envp = NULL;
        char notify_name[108];
        const char *lvl;

        if (!s) {
                g_set_error_literal(error, NM_VPN_PLUGIN_ERROR, NM_VPN_PLUGIN_ERROR_BAD_ARGUMENTS,
                                    "the connection has no VPN setting");
                return FALSE;
        }
        stop_mptd(self);
        if (!check_setting(connection, s, &self->profile, error)) {
                g_warning("%s", (*error)->message);
                return FALSE;
        }
        if (self->profile->tunnel.addresses.n == 0) {
                g_set_error_literal(error, NM_VPN_PLUGIN_ERROR, NM_VPN_PLUGIN_ERROR_BAD_ARGUMENTS,
                                    "vpn.data: Address: NetworkManager needs the tunnel's address: set Address=");
                g_warning("%s", (*error)->message);
                g_clear_pointer(&self->profile, mpt_nm_profile_free);
                return FALSE;
        }
        if (mpt_nm_profile_lacks_key(self->profile)) {
                if (g_str_equal(mpt_nm_secret_name(s), MPT_NM_PRIVATE_KEY))
                        g_set_error_literal(error, NM_VPN_PLUGIN_ERROR, NM_VPN_PLUGIN_ERROR_BAD_ARGUMENTS,
                                            "vpn.secrets: PrivateKey: the handshake needs this end's private key "
                                            "(vpn.secrets PrivateKey, create one with `mptctl genkey`) or "
                                            "PrivateKeyFile=");
                else
                        g_set_error_literal(error, NM_VPN_PLUGIN_ERROR, NM_VPN_PLUGIN_ERROR_BAD_ARGUMENTS,
                                            "vpn.secrets: Key: secure mode needs the pre-shared key (vpn.secrets "
                                            "Key, create one with `mptctl genpsk`) or KeyFile=, or a key pair "
                                            "(PrivateKey, PublicKey), or Mode=compat for original MPT peers");
                g_warning("%s", (*error)->message);
                g_clear_pointer(&self->profile, mpt_nm_profile_free);
                return FALSE;
        }
        if (!write_profile(self, error)) {
                g_clear_pointer(&self->profile, mpt_nm_profile_free);
                return FALSE;
        }
        add_host_routes(self);

        self->notify_fd = mpt_notify_socket_open(notify_name, sizeof notify_name);
        if (self->notify_fd < 0) {
                g_set_error(error, NM_VPN_PLUGIN_ERROR, NM_VPN_PLUGIN_ERROR_LAUNCH_FAILED,
                            "cannot open the notification socket: %s", g_strerror(-self->notify_fd));
                self->notify_fd = -1;
                stop_mptd(self);
                return FALSE;
        }
        self->notify_source = g_unix_fd_add(self->notify_fd, G_IO_IN, on_notify, self);

        g_ptr_array_add(argv, (char *) mptd_path());
        if (mptd_user())
                g_ptr_array_add(argv, user_arg = g_strdup_printf("--user=%s", mptd_user()));
        lvl = g_getenv("NM_VPN_LOG_LEVEL");
        if (lvl && atoi(lvl) >= 7)
                g_ptr_array_add(argv, (char *) "--log-level=debug");
        g_ptr_array_add(argv, self->profile_path);
        g_ptr_array_add(argv, NULL);
        envp = g_get_environ();
        envp = g_environ_setenv(envp, "NOTIFY_SOCKET", notify_name, TRUE);

        if (!g_spawn_async(NULL, (char **) argv->pdata, envp, G_SPAWN_DO_NOT_REAP_CHILD, child_setup, NULL,
                           &self->pid, error)) {
                g_prefix_error(error, "cannot start %s: ", mptd_path());
                g_warning("%s", (*error)->message);
                stop_mptd(self);
                return FALSE;
        }
        g_message("started mptd (pid %d) for tunnel '%s' with %zu path%s", self->pid,
                  mpt_nm_profile_get_name(self->profile), self->profile->n_paths,
                  self->profile->n_paths == 1 ? "" : "s");
        self->child_watch = g_child_watch_add(self->pid, on_child_exit, self);
        self->ready_timeout = g_timeout_add_seconds(READY_TIMEOUT_SEC, on_ready_timeout, self);
        return TRUE;
}

/* NetworkManager reports a failed Connect to its clients only as a reason code ("The VPN service
 * failed to start"); the message stays in its log. When the user's secret agent is there
 * (NetworkManager calls ConnectInteractive only then), a problem of vpn.data goes to the agent as
 * the message of a secrets request ("x-vpn-message:" hint): the agent runs nm-mpt-auth-dialog,
 * which shows it (nmcli: on stderr; GNOME Shell: in its dialog) and asks for nothing, or for the
 * key again when only the key is malformed. The answer comes back as NewSecrets. */
static gboolean real_connect_interactive(NMVpnServicePlugin *plugin, NMConnection *connection, GVariant *details,
                                         GError **error) {
        NMSettingVpn *s = nm_connection_get_setting_vpn(connection);
        g_autoptr(NMSettingVpn) data_only = NULL;
        g_autoptr(GError) problem = NULL;
        const char *none[] = { NULL }, *key[] = { NULL, NULL };

        if (!s || check_setting(connection, s, NULL, &problem))
                return real_connect(plugin, connection, error);
        g_warning("%s", problem->message);
        /* Only the key is wrong (malformed): the agent asks for it again. */
        key[0] = mpt_nm_secret_name(s);
        data_only = NM_SETTING_VPN(nm_setting_duplicate(NM_SETTING(s)));
        nm_setting_vpn_remove_secret(data_only, key[0]);
        nm_vpn_service_plugin_secrets_required(plugin, problem->message,
                                               check_setting(connection, data_only, NULL, NULL) ? key : none);
        return TRUE;
}

/* The agent's answer to the request above: with a usable key now, connect; else fail with the
 * problem. */
static gboolean real_new_secrets(NMVpnServicePlugin *plugin, NMConnection *connection, GError **error) {
        NMSettingVpn *s = nm_connection_get_setting_vpn(connection);

        if (s && !check_setting(connection, s, NULL, error)) {
                g_warning("%s", (*error)->message);
                return FALSE;
        }
        return real_connect(plugin, connection, error);
}

static gboolean real_need_secrets(NMVpnServicePlugin *plugin, NMConnection *connection, const char **setting_name,
                                  GError **error) {
        NMSettingVpn *s = nm_connection_get_setting_vpn(connection);
        NMSettingSecretFlags flags = NM_SETTING_SECRET_FLAG_NONE;
        g_autoptr(MptProfile) p = NULL;
        const char *user = NULL;
        MptNmOwner owner;

        if (!s)
                return FALSE;
        /* A connection that does not build is Connect()'s to report, with its message. */
        owner = mpt_nm_connection_owner(connection, &user);
        if (!mpt_nm_profile_from_setting_for(s, owner, user, &p, NULL))
                return FALSE;
        /* Compat mode takes no key; KeyFile= is read by the service itself. */
        if (!mpt_nm_profile_lacks_key(p))
                return FALSE;
        (void) nm_setting_get_secret_flags(NM_SETTING(s), mpt_nm_secret_name(s), &flags, NULL);
        if (flags & NM_SETTING_SECRET_FLAG_NOT_REQUIRED)
                return FALSE;
        *setting_name = NM_SETTING_VPN_SETTING_NAME;
        return TRUE;
}

static gboolean real_disconnect(NMVpnServicePlugin *plugin, GError **error) {
        MptService *self = (MptService *) plugin;

        if (self->pid > 0)
                g_message("stopping mptd (pid %d)", self->pid);
        stop_mptd(self);
        return TRUE;
}

static void mpt_service_init(MptService *self) {
        self->notify_fd = -1;
        self->host_routes = g_array_new(FALSE, TRUE, sizeof(MptHostRoute));
}

static void mpt_service_dispose(GObject *object) {
        stop_mptd((MptService *) object);
        G_OBJECT_CLASS(mpt_service_parent_class)->dispose(object);
}

static void mpt_service_finalize(GObject *object) {
        g_array_unref(((MptService *) object)->host_routes);
        G_OBJECT_CLASS(mpt_service_parent_class)->finalize(object);
}

static void mpt_service_class_init(MptServiceClass *klass) {
        NMVpnServicePluginClass *pc = NM_VPN_SERVICE_PLUGIN_CLASS(klass);

        G_OBJECT_CLASS(klass)->dispose = mpt_service_dispose;
        G_OBJECT_CLASS(klass)->finalize = mpt_service_finalize;
        pc->connect = real_connect;
        pc->connect_interactive = real_connect_interactive;
        pc->new_secrets = real_new_secrets;
        pc->need_secrets = real_need_secrets;
        pc->disconnect = real_disconnect;
}

static void on_quit(NMVpnServicePlugin *plugin, gpointer loop) {
        g_main_loop_quit(loop);
}

int main(int argc, char **argv) {
        g_autofree char *bus_name = NULL;
        gboolean persist = FALSE;
        GOptionEntry options[] = {
                { "bus-name", 0, 0, G_OPTION_ARG_STRING, &bus_name, "D-Bus name to own", "NAME" },
                { "persist", 0, 0, G_OPTION_ARG_NONE, &persist, "Do not quit when the VPN is disconnected", NULL },
                {}
        };
        g_autoptr(GOptionContext) ctx = g_option_context_new("- mpt VPN service for NetworkManager");
        g_autoptr(GError) error = NULL;
        g_autoptr(GMainLoop) loop = NULL;
        NMVpnServicePlugin *plugin;

        g_option_context_add_main_entries(ctx, options, NULL);
        if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
                g_printerr("nm-mpt-service: %s\n", error->message);
                return 1;
        }
        /* mptd's writes to a closed pipe must not kill us. */
        signal(SIGPIPE, SIG_IGN);

        plugin = g_initable_new(mpt_service_get_type(), NULL, &error,
                                NM_VPN_SERVICE_PLUGIN_DBUS_SERVICE_NAME, bus_name ?: MPT_NM_DBUS_SERVICE,
                                NM_VPN_SERVICE_PLUGIN_DBUS_WATCH_PEER, !persist, NULL);
        if (!plugin) {
                g_printerr("nm-mpt-service: cannot start: %s\n", error->message);
                return 1;
        }
        loop = g_main_loop_new(NULL, FALSE);
        if (!persist)
                g_signal_connect(plugin, "quit", G_CALLBACK(on_quit), loop);
        g_main_loop_run(loop);
        /* quit: SIGTERM/SIGINT, NetworkManager gone, or the connection stopped. */
        stop_mptd((MptService *) plugin);
        /* Signals still queued (a Failure and the state changes after mptd died) must reach
         * NetworkManager before our bus name goes away, or it sees only a vanished service. */
        {
                g_autoptr(GDBusConnection) bus = nm_vpn_service_plugin_get_connection(plugin);
                if (bus)
                        (void) g_dbus_connection_flush_sync(bus, NULL, NULL);
        }
        g_object_unref(plugin);
        return 0;
}
