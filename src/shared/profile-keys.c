/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The one key table. The parser, verification, mptctl's key listing, the man page
 * mpt.conf(5) (generated from this table at build time) and the other front ends all read
 * it. A unit test fails when a key has no documentation. */

#include <assert.h>
#include <stddef.h>

#include "profile.h"

#define T(field) MPT_SECTION_TUNNEL, .offset = offsetof(MptTunnelConfig, field)
#define P(field) MPT_SECTION_PATH, .offset = offsetof(MptPathConfig, field)
#define R(field) MPT_SECTION_PEER, .offset = offsetof(MptPeerConfig, field)
#define MS USEC_PER_MSEC
#define S USEC_PER_SEC
/* The digits of a number's macro, for the documentation. */
#define STRINGIFY(x) #x
#define XSTRINGIFY(x) STRINGIFY(x)

const MptConfKey mpt_conf_keys[] = {
        /* [Tunnel] */
        [MPT_KEY_TUNNEL_NAME] = {
                .name = "Name", .section = T(name), .type = MPT_CONF_NAME,
                .syntax = "NAME",
                .default_doc = "the profile's file name without \".conf\"",
                .doc = "Name of the tunnel and of its TUN network interface: 1 to 15 characters from "
                       "letters, digits, \"_\", \".\" and \"-\". mptctl addresses the tunnel by this name, "
                       "and its control socket is /run/mpt/NAME.sock. If an interface of this name "
                       "already exists it must be a multi-queue TUN device without packet information "
                       "(for example one created by systemd-networkd); mptd attaches to it and leaves it "
                       "in place when it exits. Otherwise mptd creates the device and removes it on exit.",
        },
        [MPT_KEY_TUNNEL_MODE] = {
                .name = "Mode", .section = T(mode), .type = MPT_CONF_MODE,
                .def = MPT_MODE_SECURE, .syntax = "secure|compat",
                .doc = "\"secure\": every datagram, data and keepalives alike, is authenticated and "
                       "encrypted; forged, replayed and wrongly keyed datagrams are dropped and counted. "
                       "Secure mode needs keys: either a key pair for each end (PrivateKey= and the other "
                       "end's PublicKey=, optionally with PresharedKey=), with which the ends run a "
                       "handshake that gives every session keys of its own (forward secrecy, new keys "
                       "every 2 minutes), or a pre-shared key alone (Key= or KeyFile=), the simpler "
                       "scheme of earlier versions, whose keys last as long as the processes. The wire "
                       "format is described in mptd(8). \"compat\": the "
                       "plain GRE-in-UDP wire format of the original MPT, without integrity or "
                       "confidentiality, for talking to original MPT peers; it must be chosen explicitly "
                       "and takes no key. Both ends must use the same mode.",
        },
        [MPT_KEY_TUNNEL_KEY] = {
                .name = "Key", .section = T(key), .type = MPT_CONF_KEY,
                .flags = MPT_CONF_SECRET, .syntax = "KEY",
                .default_doc = "none",
                .doc = "The tunnel's pre-shared key, for secure mode without a handshake: the base64 text "
                       "of 32 random bytes, as \"mptctl genpsk\" prints it. Both ends need the same key; "
                       "use a different key for every tunnel. A tunnel with PrivateKey= takes no Key= (its "
                       "optional pre-shared key is PresharedKey=). It is never logged, and mptctl check and mptctl keys never print it. "
                       "Anyone who can read the profile can read the key, so prefer KeyFile= unless the "
                       "profile itself is private: mptd and mptctl check warn when its group or others can "
                       "read it (mptctl check --strict refuses it). Key= and KeyFile= exclude each other.",
        },
        [MPT_KEY_TUNNEL_KEY_FILE] = {
                .name = "KeyFile", .section = T(key_file), .type = MPT_CONF_PATH,
                .syntax = "PATH",
                .default_doc = "none",
                .doc = "A file that holds the pre-shared key (one line, the base64 text that "
                       "\"mptctl genkey\" prints). A relative name is taken relative to the directory "
                       "of the profile. The file must be a regular file that is not readable by everyone "
                       "(for example mode 0600, owned by root); otherwise the profile is refused.",
        },
        [MPT_KEY_TUNNEL_PRIVATE_KEY] = {
                .name = "PrivateKey", .section = T(private_key), .type = MPT_CONF_KEY,
                .flags = MPT_CONF_SECRET, .syntax = "KEY",
                .default_doc = "none",
                .doc = "This end's private key (an X25519 key, the base64 text that \"mptctl genkey\" "
                       "prints). With it, secure mode authenticates the two ends by their key pairs "
                       "in a handshake modelled on WireGuard's (Noise IKpsk2): each session gets keys "
                       "of its own from fresh ephemeral keys, so that recorded traffic stays secret "
                       "when a key leaks later, and the keys change every 2 minutes. Give the other "
                       "end this key's public key (\"mptctl pubkey\"). Never shown or logged; keep it "
                       "as private as Key= (mptd and mptctl check warn when others can read the "
                       "profile). PrivateKey= and PrivateKeyFile= exclude each other, and either "
                       "excludes Key= and KeyFile=.",
        },
        [MPT_KEY_TUNNEL_PRIVATE_KEY_FILE] = {
                .name = "PrivateKeyFile", .section = T(private_key_file), .type = MPT_CONF_PATH,
                .syntax = "PATH",
                .default_doc = "none",
                .doc = "A file that holds this end's private key (one line, as \"mptctl genkey\" "
                       "prints it), taken relative to the directory of the file that names it; a "
                       "regular file that not everyone can read, as for KeyFile=.",
        },
        [MPT_KEY_TUNNEL_PUBLIC_KEY] = {
                .name = "PublicKey", .section = T(public_key), .type = MPT_CONF_KEY,
                .syntax = "KEY",
                .default_doc = "none",
                .doc = "The other end's public key (\"mptctl pubkey\" prints it from that end's "
                       "private key). Required with PrivateKey=: only the end that holds the matching "
                       "private key can complete a handshake with this one, and this end answers "
                       "nobody who does not know its own public key. It is not secret. A hub (a tunnel "
                       "with [Peer] sections) has many other ends and takes none here: each [Peer] has "
                       "its own PublicKey=.",
        },
        [MPT_KEY_TUNNEL_PRESHARED_KEY] = {
                .name = "PresharedKey", .section = T(preshared_key), .type = MPT_CONF_KEY,
                .flags = MPT_CONF_SECRET, .syntax = "KEY",
                .default_doc = "none",
                .doc = "An optional symmetric key that both ends mix into the handshake (\"mptctl "
                       "genpsk\" makes one), as WireGuard's PresharedKey=: an extra layer should X25519 "
                       "ever be broken. Both ends must give the same one, or none. Needs PrivateKey=; "
                       "PresharedKey= and PresharedKeyFile= exclude each other. A hub gives it per peer, "
                       "in [Peer].",
        },
        [MPT_KEY_TUNNEL_PRESHARED_KEY_FILE] = {
                .name = "PresharedKeyFile", .section = T(preshared_key_file), .type = MPT_CONF_PATH,
                .syntax = "PATH",
                .default_doc = "none",
                .doc = "A file that holds PresharedKey= (one line), as KeyFile= holds Key=.",
        },
        [MPT_KEY_TUNNEL_ADDRESS] = {
                .name = "Address", .section = T(addresses), .type = MPT_CONF_PREFIX_LIST,
                .syntax = "ADDRESS[/PREFIXLEN]",
                .default_doc = "none",
                .doc = "An IPv4 or IPv6 address of the tunnel interface, with an optional prefix length "
                       "(default: a host address). May be given several times, for example once per "
                       "family; an empty value clears the list. The tunnel's IP versions are "
                       "independent of the paths' IP versions. Leave it empty when something else "
                       "(systemd-networkd, NetworkManager) configures the addresses.",
        },
        [MPT_KEY_TUNNEL_PEER] = {
                .name = "Peer", .section = T(peers), .type = MPT_CONF_PREFIX_LIST, .flags = MPT_CONF_HOST,
                .syntax = "ADDRESS",
                .default_doc = "none",
                .doc = "The tunnel address of the other end, at most one per family. It is written into "
                       "keepalive frames (which carry both tunnel addresses, as in the original MPT), and "
                       "keepalives that name a different pair of tunnel addresses are dropped.",
        },
        [MPT_KEY_TUNNEL_ROUTE] = {
                .name = "Route", .section = T(routes), .type = MPT_CONF_PREFIX_LIST,
                .syntax = "PREFIX/LENGTH",
                .default_doc = "none",
                .doc = "A destination network that is routed into the tunnel (a route on the tunnel "
                       "interface, added when the tunnel starts and removed when it stops). May be given "
                       "several times; an empty value clears the list.",
        },
        [MPT_KEY_TUNNEL_MTU] = {
                .name = "MTU", .section = T(mtu), .type = MPT_CONF_UINT32,
                .min = MPT_MTU_MIN, .max = MPT_MTU_MAX, .flags = MPT_CONF_AUTO,
                .syntax = "BYTES|auto",
                .default_doc = "auto",
                .doc = "MTU of the tunnel interface. \"auto\" takes the smallest link MTU of the paths' "
                       "interfaces minus that path's encapsulation overhead: outer IP header (20 bytes "
                       "for IPv4, 40 for IPv6), UDP (8), GRE (4) and the sequence number (4, when "
                       "ReorderWindow= is not 0). For 1500-byte links that is 1464 over IPv4 and 1444 "
                       "over IPv6. A tunnel with an IPv6 address needs at least " XSTRINGIFY(MPT_IPV6_MIN_MTU) ".",
        },
        [MPT_KEY_TUNNEL_LOCAL_PORT] = {
                .name = "LocalPort", .section = T(local_port), .type = MPT_CONF_PORT,
                .def = MPT_DEFAULT_PORT, .syntax = "PORT",
                .doc = "Local UDP port of every path socket (the data port). Keepalives use the same "
                       "port. The default is the IANA port for GRE-in-UDP.",
        },
        [MPT_KEY_TUNNEL_REMOTE_PORT] = {
                .name = "RemotePort", .section = T(remote_port), .type = MPT_CONF_PORT,
                .def = MPT_DEFAULT_PORT, .syntax = "PORT",
                .doc = "UDP port on the other end that data and keepalives are sent to, unless a path "
                       "sets its own RemotePort=.",
        },
        [MPT_KEY_TUNNEL_REORDER_WINDOW] = {
                .name = "ReorderWindow", .section = T(reorder_window), .type = MPT_CONF_UINT32,
                .min = 0, .max = 65536, .def = 4096, .syntax = "PACKETS",
                .doc = "Size of the receive reorder window in packets. When it is not 0 (and "
                       "the scheduler is not flow), every data packet carries a GRE sequence number and the receiver restores the sending order "
                       "of packets that took different paths: it waits for a missing packet while later "
                       "ones span fewer than this many sequence numbers, and at most ReorderMaxDelay=. A gap is skipped as soon as every active path has "
                       "delivered a later packet (each path keeps its order), so a lost packet costs no "
                       "waiting. 0 turns sequence numbers and reordering off.",
        },
        [MPT_KEY_TUNNEL_REORDER_MAX_DELAY] = {
                .name = "ReorderMaxDelay", .section = T(reorder_max_delay), .type = MPT_CONF_DURATION,
                .min = 1 * MS, .max = 10 * S, .def = 500 * MS, .syntax = "DURATION",
                .doc = "Longest time a packet is ever held in the reorder buffer while an earlier packet "
                       "is missing; after that the missing packet is given up (and delivered late should it "
                       "still arrive). mptd holds a packet for less: as long as the paths' delay spread "
                       "makes necessary (a packet on the slowest path arrives that much later than one sent "
                       "at the same time on the fastest), which it learns from the paths' round-trip times "
                       "(mptd(8), REORDERING). This is the bound.",
        },
        [MPT_KEY_TUNNEL_SCHEDULER] = {
                .name = "Scheduler", .section = T(scheduler), .type = MPT_CONF_SCHEDULER,
                .def = MPT_SCHEDULER_LEARNED, .syntax = "learned|weighted|flow",
                .default_doc = "learned (weighted in compat mode)",
                .doc = "How packets are spread over the paths that are up. \"learned\": packet by "
                       "packet, each path in proportion to what it delivers, which mptd learns by itself "
                       "from the other end's feedback and follows as it changes (mptd(8), SCHEDULING); "
                       "Weight= then only says which paths light traffic prefers. It needs secure mode, "
                       "and is the default there. \"weighted\": packet by packet, each path in proportion "
                       "to its Weight=, interleaved as evenly as possible (the sending vector of the "
                       "original MPT); the default in compat mode, where the other end sends no feedback. "
                       "\"flow\": every flow (addresses, protocol and ports of the inner packet) stays on "
                       "one path, and flows are spread by weight; no reordering is needed, but one flow "
                       "cannot use more than one path.",
        },
        [MPT_KEY_TUNNEL_POLICY] = {
                .name = "Policy", .section = T(policy), .type = MPT_CONF_POLICY_LIST,
                .syntax = "[proto P] [sport|dport|port PORTS] [dscp D] [from|to PREFIXES] aggregate|pinned PATHS|lowest-latency|redundant [K]",
                .default_doc = "none (everything aggregated)",
                .doc = "A per-flow rule: which packets written to the tunnel it matches, and how they "
                       "are sent. Rules are tried in the order given, and the first that matches "
                       "decides; a packet that no rule matches is sent as Scheduler= says. Matches, each "
                       "at most once, values separated by commas: \"proto\" (tcp, udp, icmp for ICMP "
                       "and ICMPv6, sctp, dccp, udplite, gre, esp, ah or a number), \"sport\", \"dport\" "
                       "and \"port\" (either; ports or ranges A-B, for TCP, UDP, UDP-Lite, SCTP and DCCP; "
                       "a later IP fragment has no ports and does not match), \"dscp\" (0..63 or CS0..CS7, "
                       "AF11..AF43, EF, VA, LE), \"from\" and \"to\" (addresses or prefixes of the "
                       "packet's source and destination). Then the mode: \"aggregate\" (the tunnel's "
                       "scheduler: exempts traffic from later rules), \"pinned\" and path names (the "
                       "packet goes over one of these paths that can send, a flow always the same one by "
                       "its hash; when none can, it is aggregated), \"lowest-latency\" (the path "
                       "that can send with the lowest round-trip time, which changes only when another "
                       "is faster by 2 ms and 10%), or \"redundant\" with an optional number of copies "
                       "K, 2 to 4, 2 by default (a copy over each of the K paths that can send with the "
                       "lowest round-trip times; the other end keeps the first to arrive and drops the "
                       "others as duplicates). The other end writes packets that its own rules send "
                       "lowest-latency, pinned or redundant to its TUN device at once, not held behind "
                       "other traffic for reordering: give both ends the same rules (\"port\" matches "
                       "both directions of a flow). The sending end lets lowest-latency and redundant "
                       "packets go ahead of traffic that waits for the paths' pace. Up to 32 rules; may be given several times, "
                       "several rules in one value separated by \";\"; an empty value clears the list. "
                       "Example: Policy=proto udp dport 3478-3481,5060 lowest-latency. mptctl show "
                       "counts each rule's packets, copies and duplicates and estimates their delay. Compat mode supports every mode between mpt ends; an "
                       "original MPT peer would deliver both copies of a redundant packet.",
        },
        [MPT_KEY_TUNNEL_WORKERS] = {
                .name = "Workers", .section = T(workers), .type = MPT_CONF_UINT32,
                .min = 1, .max = MPT_WORKERS_MAX, .flags = MPT_CONF_AUTO, .syntax = "NUMBER|auto",
                .default_doc = "auto",
                .doc = "Number of data-plane threads. Each owns one queue of the multi-queue TUN device "
                       "and its own socket per path. \"auto\" starts one per CPU the process may run on. "
                       "In secure mode at most 63 run (each sends on a lane of its own, and the main "
                       "thread on the last one); more are cut to 63 with a notice.",
        },

        [MPT_KEY_TUNNEL_FIREWALL] = {
                .name = "Firewall", .section = T(firewall), .type = MPT_CONF_BOOL,
                .def = 1, .syntax = "BOOLEAN",
                .doc = "Whether mptd keeps an nftables table \"inet mpt-NAME\" for the tunnel while it runs "
                       "(written with libnftnl in one atomic batch, deleted when mptd stops; it belongs to "
                       "mptd (flags owner, Linux 5.12), so the kernel deletes it also when mptd is killed, "
                       "and where it cannot, the next start replaces one left behind). Its input chain "
                       "(priority filter - 10) accepts, "
                       "counts and optionally marks (FirewallMark=) UDP datagrams to LocalPort= from the "
                       "configured and learned remote addresses, kept in the sets remote4 and remote6; its "
                       "forward and output chains clamp the MSS of TCP SYNs through the tunnel device to "
                       "the tunnel MTU minus 40 (IPv4) or 60 (IPv6). An accept in this table cannot overrule "
                       "a drop in another table (nftables evaluates every base chain of a hook, and any drop "
                       "is final): with a host firewall that drops by default, set FirewallMark= and accept "
                       "that mark in the host firewall, or accept the data port there (see mptd(8), "
                       "\"Firewall and MTU\"). \"no\" leaves nftables alone.",
        },
        [MPT_KEY_TUNNEL_FIREWALL_MARK] = {
                .name = "FirewallMark", .section = T(firewall_mark), .type = MPT_CONF_UINT32,
                .min = 0, .max = UINT32_MAX, .def = 0, .syntax = "MARK",
                .default_doc = "0 (no mark)",
                .doc = "Bits (a decimal number) that the firewall table ORs into the packet mark of data "
                       "datagrams it accepts from the tunnel's remotes, so that a host firewall that drops by "
                       "default can let exactly those in with one static rule, for example \"meta mark & "
                       "65536 == 65536 accept\" for FirewallMark=65536. Needs Firewall=yes. 0 sets no mark.",
        },

        /* [Path] */
        [MPT_KEY_PATH_NAME] = {
                .name = "Name", .section = P(name), .type = MPT_CONF_NAME,
                .syntax = "NAME",
                .default_doc = "the value of Interface=, or \"pathN\" (N counting from 0)",
                .doc = "Name of the path, unique within the tunnel. mptctl and the log use it.",
        },
        [MPT_KEY_PATH_INTERFACE] = {
                .name = "Interface", .section = P(interface), .type = MPT_CONF_IFNAME,
                .syntax = "IFNAME",
                .default_doc = "none",
                .doc = "Network interface the path uses. The path's socket is bound to it "
                       "(SO_BINDTODEVICE), so its packets leave through this interface whatever the "
                       "routing table says, and two paths may share a remote address. Either "
                       "Interface= or LocalAddress= must be set.",
        },
        [MPT_KEY_PATH_LOCAL_ADDRESS] = {
                .name = "LocalAddress", .section = P(local), .type = MPT_CONF_ADDRESS,
                .syntax = "ADDRESS",
                .default_doc = "an address of Interface= of the same family as Remote=",
                .doc = "Local address the path's socket is bound to. Its family must match Remote=. "
                       "When it is not set, mptd uses the first usable (global, then other) address of "
                       "the family of Remote= on Interface=.",
        },
        [MPT_KEY_PATH_REMOTE] = {
                .name = "Remote", .section = P(remote), .type = MPT_CONF_ADDRESS,
                .flags = MPT_CONF_REQUIRED, .syntax = "ADDRESS",
                .default_doc = "none: the path listens (secure mode only)",
                .doc = "Address of the other end of this path (an IPv4 or IPv6 address; host names are "
                       "not resolved). Required in compat mode. In secure mode a path without Remote= "
                       "listens, as a server's path for clients behind NAT does: it needs LocalAddress= "
                       "(the address the other end sends to), sends nothing until a datagram of the "
                       "other end authenticates on it, and from then on sends to where that came from "
                       "and follows the other end's address and port as they change (mptctl show: "
                       "state \"listening\" until then). Several listening paths may share one "
                       "LocalAddress= and LocalPort=: a new source is then given to one that is still "
                       "listening, or whose other end went silent for DeadTime=, when its keepalive "
                       "authenticates.",
        },
        [MPT_KEY_PATH_REMOTE_PORT] = {
                .name = "RemotePort", .section = P(remote_port), .type = MPT_CONF_PORT,
                .syntax = "PORT",
                .default_doc = "the tunnel's RemotePort=",
                .doc = "UDP port of the other end of this path.",
        },
        [MPT_KEY_PATH_WEIGHT] = {
                .name = "Weight", .section = P(weight), .type = MPT_CONF_UINT32,
                .min = 0, .max = MPT_WEIGHT_MAX, .def = 1, .syntax = "0..10000",
                .default_doc = "the weight the peer advertises for this path (its ReceiveWeight=), or 1",
                .doc = "With Scheduler=weighted (and flow): the share of the outgoing traffic this path "
                       "carries, relative to the other paths that are up: with weights 3 and 1, three "
                       "packets (or flows) of four take the first path. With Scheduler=learned (the default "
                       "in secure mode) it is a preference, not a share: while the tunnel needs less than its "
                       "paths carry, light traffic is split by Weight= and stays on the paths with the larger one "
                       "(a fixed line before a metered LTE link) as long as they carry it, spilling to the others "
                       "as the load grows; under a load that needs every path, each carries what it can, "
                       "whatever its Weight=. Equal weights (the default) split by the learned rates at any "
                       "load. 0 makes the path a backup path (see Backup=) with either "
                       "scheduler.",
        },
        [MPT_KEY_PATH_RECEIVE_WEIGHT] = {
                .name = "ReceiveWeight", .section = P(receive_weight), .type = MPT_CONF_UINT32,
                .min = 0, .max = MPT_WEIGHT_MAX, .def = 0, .syntax = "0..10000",
                .default_doc = "0 (nothing advertised)",
                .doc = "Weight this end asks the other end to use when it sends over this path. It is "
                       "advertised in keepalives, and the other end uses it for a path whose Weight= is "
                       "not set in its own profile. 0 advertises nothing.",
        },
        [MPT_KEY_PATH_KEEPALIVE_INTERVAL] = {
                .name = "KeepaliveInterval", .section = P(keepalive_interval), .type = MPT_CONF_DURATION,
                .min = 100 * MS, .max = 3600 * S, .def = 1 * S, .flags = MPT_CONF_ZERO_OFF,
                .syntax = "DURATION",
                .doc = "How often a keepalive frame is sent on the path (in the wire format of the "
                       "original MPT, section 3.6 of the protocol description, with an extension that "
                       "carries round-trip and loss measurements and the path's state, which original "
                       "MPT peers ignore). 0 turns keepalives off: the path is then up whenever it is usable "
                       "here (interface, link, address and route), since nothing tells whether the other "
                       "end hears it.",
        },
        [MPT_KEY_PATH_DEAD_TIME] = {
                .name = "DeadTime", .section = P(dead_time), .type = MPT_CONF_DURATION,
                .min = 300 * MS, .max = 24 * 3600 * S, .flags = MPT_CONF_ZERO_OFF,
                .syntax = "DURATION",
                .default_doc = "three times KeepaliveInterval=",
                .doc = "A path from which no keepalive arrived for this long is declared dead: it leaves "
                       "the schedule, its traffic moves to the other paths, and it comes back as soon as "
                       "keepalives arrive again. Must be longer than KeepaliveInterval=. 0 never declares "
                       "the path dead (for peers that send no keepalives).",
        },
        [MPT_KEY_PATH_BACKUP] = {
                .name = "Backup", .section = P(backup), .type = MPT_CONF_BOOL,
                .def = 0, .syntax = "BOOLEAN",
                .default_doc = "yes for a cellular (wwan) interface unless Weight= is set, otherwise no",
                .doc = "A backup path carries traffic only while no normal path is up. Weight=0 also "
                       "makes a path a backup path. Backup paths share the traffic by their weights "
                       "(equally, when all their weights are 0). When neither Backup= nor Weight= is set, "
                       "a path on a cellular modem (an interface that udev calls DEVTYPE=wwan, or that a "
                       "modem driver provides) is a backup path, because such links are usually metered; "
                       "mptctl show prints each path's device class.",
        },
        [MPT_KEY_PATH_PIN_REMOTE] = {
                .name = "PinRemote", .section = P(pin_remote), .type = MPT_CONF_BOOL,
                .def = 0, .syntax = "BOOLEAN",
                .doc = "By default, when well-formed traffic of this path starts arriving from a new address "
                       "or port (the other end roamed, or a NAT on the way changed its mapping), mptd "
                       "follows it: it sends to where the traffic comes from, as WireGuard does. In secure "
                       "mode only datagrams that authenticate count; in compat mode anyone who can send "
                       "such a datagram can redirect the path. Sites with static endpoints should set "
                       "PinRemote=yes: datagrams from anywhere but "
                       "Remote= and RemotePort= are then dropped (counted as unknown-source). Paths that "
                       "share a local socket (same interface and local address) follow a new source only "
                       "when a keepalive from it names the path by its token.",
        },
        [MPT_KEY_PATH_LOSS_THRESHOLD] = {
                .name = "LossThreshold", .section = P(loss_threshold), .type = MPT_CONF_PERCENT,
                .min = 0, .max = 1000, .def = 0, .syntax = "PERCENT",
                .default_doc = "0 (never demoted)",
                .doc = "When the loss of keepalives on this path (measured in both directions over about the "
                       "last 20 keepalives) exceeds this percentage, the path is demoted to a backup path "
                       "until the loss falls below half of it. 0 turns this off.",
        },

        /* [Peer] */
        [MPT_KEY_PEER_NAME] = {
                .name = "Name", .section = R(name), .type = MPT_CONF_NAME,
                .syntax = "NAME",
                .default_doc = "\"peerN\" (N counting from 0)",
                .doc = "Name of the peer, unique within the tunnel: 1 to 15 characters from letters, digits, "
                       "\"_\", \".\" and \"-\". mptctl and the log use it, and a [Peer] section of a "
                       "drop-in with this Name= changes this peer rather than adding one.",
        },
        [MPT_KEY_PEER_PUBLIC_KEY] = {
                .name = "PublicKey", .section = R(public_key), .type = MPT_CONF_KEY,
                .flags = MPT_CONF_REQUIRED, .syntax = "KEY",
                .default_doc = "none (required)",
                .doc = "The peer's public key (\"mptctl pubkey\" prints it from the peer's private key), "
                       "which identifies it: the hub answers a handshake only from a key of one of its "
                       "peers, and each peer's paths, sessions and counters are its own. Required; no two "
                       "peers may have the same key, and none may have the hub's own. The peer's profile "
                       "names the hub's public key in its [Tunnel] PublicKey=, as for a tunnel with one "
                       "other end.",
        },
        [MPT_KEY_PEER_ALLOWED_IPS] = {
                .name = "AllowedIPs", .section = R(allowed_ips), .type = MPT_CONF_PREFIX_LIST,
                .flags = MPT_CONF_REQUIRED, .syntax = "PREFIX[/LENGTH]...",
                .default_doc = "none (required)",
                .doc = "The inner addresses of the peer, as WireGuard's AllowedIPs=: IPv4 and IPv6 "
                       "prefixes (a bare address is a host), separated by spaces; may be given several "
                       "times, and an empty value clears the list. A packet written to the tunnel goes to "
                       "the peer whose prefixes hold its destination (one that no peer's hold is dropped), "
                       "and a packet a peer sends is delivered only if its source is within that peer's "
                       "prefixes. The "
                       "prefixes of two peers must not overlap (one within the other, or equal): each "
                       "address belongs to one peer. Up to 256 per peer.",
        },
        [MPT_KEY_PEER_PRESHARED_KEY] = {
                .name = "PresharedKey", .section = R(preshared_key), .type = MPT_CONF_KEY,
                .flags = MPT_CONF_SECRET, .syntax = "KEY",
                .default_doc = "none",
                .doc = "An optional symmetric key that the hub and this peer mix into their handshake, as "
                       "[Tunnel] PresharedKey= of a tunnel with one other end (the peer's profile gives "
                       "the same one there). Never shown or logged. PresharedKey= and PresharedKeyFile= "
                       "exclude each other.",
        },
        [MPT_KEY_PEER_PRESHARED_KEY_FILE] = {
                .name = "PresharedKeyFile", .section = R(preshared_key_file), .type = MPT_CONF_PATH,
                .syntax = "PATH",
                .default_doc = "none",
                .doc = "A file that holds this peer's PresharedKey= (one line), taken relative to the "
                       "directory of the file that names it; a regular file that not everyone can read, "
                       "as for KeyFile=.",
        },
};

const size_t mpt_conf_keys_n = ELEMENTSOF(mpt_conf_keys);
static_assert(ELEMENTSOF(mpt_conf_keys) == _MPT_KEY_MAX, "every MptKeyId has its entry in the key table");
