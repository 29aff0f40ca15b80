#!/usr/bin/python3
"""Golden IPv6 gateway frames: Neighbor Discovery (NS, NA, RS, RA with every option), ICMPv6 echo
and Packet Too Big, made by an independent implementation (scapy). A sibling of make_golden.py.

Run with Debian's Python, which has python3-scapy:  /usr/bin/python3 tests/data/make_golden_ndp.py
Writes tests/data/golden/ndp/<name>.hex (one frame, lowercase hex on one line), the seeds of
tests/fuzz/ndp_fuzz.cpp (tests/fuzz/corpus/ndp/: each frame behind a gateway selector byte) and
tests/data/golden/ndp/manifest.json:
  gateway     the gateway the answers come from (its MAC, prefix, addresses, MTU, DNS, RA settings);
  asker       the tenant endpoint that sends the requests;
  addressing  EUI-64, link-local, solicited-node and multicast-MAC vectors for a few MACs;
  frames      every frame with its layers outermost first, the field values scapy put on the wire
              (checksums included) named as the C++ views name them, and for a request the
              gateway's expected answer: the name of the answer frame, or null and the outcome.
"""

import json
import pathlib
import socket

from scapy.all import (Dot1Q, Ether, ICMPv6EchoReply, ICMPv6EchoRequest, ICMPv6ND_NA, ICMPv6ND_NS,
                       ICMPv6ND_RA, ICMPv6ND_RS, ICMPv6NDOptDNSSL, ICMPv6NDOptDstLLAddr, ICMPv6NDOptMTU,
                       ICMPv6NDOptPrefixInfo, ICMPv6NDOptRDNSS, ICMPv6NDOptSrcLLAddr, ICMPv6NDOptUnknown,
                       ICMPv6PacketTooBig, IPv6, UDP, in6_getnsma, in6_getnsmac, in6_mactoifaceid, raw)

OUT = pathlib.Path(__file__).resolve().parent / "golden" / "ndp"
# Seeds for tests/fuzz/ndp_fuzz.cpp: a gateway selector byte (see there), then the frame.
FUZZ_CORPUS = pathlib.Path(__file__).resolve().parent.parent / "fuzz" / "corpus" / "ndp"
FUZZ_GATEWAYS = {"": 0x05, "-link-local-only": 0x10, "-no-slaac": 0x2f}

MAC_GW = "02:aa:00:00:00:01"
MAC_A = "02:00:00:00:00:0a"   # the asking tenant
MAC_B = "02:00:00:00:00:14"   # another endpoint of the VPC

PREFIX = "fd00:0:0:1::"
PREFIX_LENGTH = 64
GW_GLOBAL = "fd00:0:0:1::1"
DNS = ["fd00:0:0:1::53", "2001:db8::53"]
MTU = 1450
RA = {"max_interval_s": 600, "min_interval_s": 0, "router_lifetime_s": 1800, "valid_lifetime_s": 2592000,
      "preferred_lifetime_s": 604800, "on_link": True, "autonomous": True, "managed": False,
      "other_configuration": False, "router_preference": 0, "current_hop_limit": 64, "reachable_time_ms": 0,
      "retrans_timer_ms": 0, "dns_lifetime_s": 0}
DNS_LIFETIME = 3 * RA["max_interval_s"]  # what dns_lifetime_s = 0 stands for (RFC 8106 5.1)

ALL_NODES = "ff02::1"
ALL_ROUTERS = "ff02::2"
MAC_ALL_NODES = "33:33:00:00:00:01"
MAC_ALL_ROUTERS = "33:33:00:00:00:02"


def ntop(b):
    return socket.inet_ntop(socket.AF_INET6, b)


def pton(a):
    return socket.inet_pton(socket.AF_INET6, a)


def link_local(mac):
    return ntop(pton("fe80::" + in6_mactoifaceid(mac).lower()))


def slaac(mac):
    """The SLAAC address in the /64: its first four groups, then the interface identifier."""
    return ntop(pton(":".join(PREFIX.split(":")[:4]) + ":" + in6_mactoifaceid(mac).lower()))


def solicited_node(address):
    return ntop(in6_getnsma(pton(address)))


def solicited_mac(address):
    return in6_getnsmac(in6_getnsma(pton(address)))


GW_LL = link_local(MAC_GW)
A_LL, A_GLOBAL = link_local(MAC_A), slaac(MAC_A)
B_GLOBAL = slaac(MAC_B)


def ra_options():
    return (ICMPv6NDOptSrcLLAddr(lladdr=MAC_GW) / ICMPv6NDOptMTU(mtu=MTU)
            / ICMPv6NDOptPrefixInfo(prefixlen=PREFIX_LENGTH, L=1, A=1, validlifetime=RA["valid_lifetime_s"],
                                    preferredlifetime=RA["preferred_lifetime_s"], prefix=PREFIX)
            / ICMPv6NDOptRDNSS(lifetime=DNS_LIFETIME, dns=DNS))


def gateway_ra():
    return (ICMPv6ND_RA(chlim=RA["current_hop_limit"], M=0, O=0, prf=0, routerlifetime=RA["router_lifetime_s"],
                        reachabletime=0, retranstimer=0) / ra_options())


def na(target, solicited, override, dst_mac, src, dst, tags=()):
    eth = Ether(dst=dst_mac, src=MAC_GW)
    for tag in tags:
        eth = eth / tag
    return (eth / IPv6(src=src, dst=dst, hlim=255) / ICMPv6ND_NA(R=1, S=solicited, O=override, tgt=target)
            / ICMPv6NDOptDstLLAddr(lladdr=MAC_GW))


def offending_packet():
    return IPv6(src=A_GLOBAL, dst=B_GLOBAL, hlim=64) / UDP(sport=40000, dport=4242) / (b"\x5a" * 1452)


def frames():
    """(name, description, scapy packet, answer) for every golden frame. `answer` is the name of
    the frame the gateway must answer a request with, a string outcome when it must not answer,
    or None for a frame that is not a request."""
    yield ("ns_for_peer", "NS from the tenant's global address for another endpoint, to its solicited-node group",
           Ether(dst=solicited_mac(B_GLOBAL), src=MAC_A) / IPv6(src=A_GLOBAL, dst=solicited_node(B_GLOBAL), hlim=255)
           / ICMPv6ND_NS(tgt=B_GLOBAL) / ICMPv6NDOptSrcLLAddr(lladdr=MAC_A), "na_for_peer")
    yield ("na_for_peer", "the gateway's proxied NA: router, solicited, no override, from its global address",
           na(B_GLOBAL, 1, 0, MAC_A, GW_GLOBAL, A_GLOBAL), None)
    yield ("ns_vlan_for_peer", "802.1Q-tagged NS for another endpoint",
           Ether(dst=solicited_mac(B_GLOBAL), src=MAC_A) / Dot1Q(prio=2, vlan=42)
           / IPv6(src=A_GLOBAL, dst=solicited_node(B_GLOBAL), hlim=255)
           / ICMPv6ND_NS(tgt=B_GLOBAL) / ICMPv6NDOptSrcLLAddr(lladdr=MAC_A), "na_vlan_for_peer")
    yield ("na_vlan_for_peer", "the proxied NA keeps the solicitation's tag",
           na(B_GLOBAL, 1, 0, MAC_A, GW_GLOBAL, A_GLOBAL, tags=[Dot1Q(prio=2, vlan=42)]), None)
    yield ("ns_for_gateway_link_local", "NS from the tenant's link-local address for the gateway's",
           Ether(dst=solicited_mac(GW_LL), src=MAC_A) / IPv6(src=A_LL, dst=solicited_node(GW_LL), hlim=255)
           / ICMPv6ND_NS(tgt=GW_LL) / ICMPv6NDOptSrcLLAddr(lladdr=MAC_A), "na_for_gateway_link_local")
    yield ("na_for_gateway_link_local", "the gateway's own NA: router, solicited, override, from the target",
           na(GW_LL, 1, 1, MAC_A, GW_LL, A_LL), None)
    yield ("ns_dad_gateway_global", "DAD probe (from ::, no options) for the gateway's global address",
           Ether(dst=solicited_mac(GW_GLOBAL), src=MAC_A) / IPv6(src="::", dst=solicited_node(GW_GLOBAL), hlim=255)
           / ICMPv6ND_NS(tgt=GW_GLOBAL), "na_defend_gateway_global")
    yield ("na_defend_gateway_global", "the gateway defends its address: NA to all-nodes, solicited clear",
           na(GW_GLOBAL, 0, 1, MAC_ALL_NODES, GW_GLOBAL, ALL_NODES), None)
    yield ("ns_dad_own_address", "DAD probe for the tenant's own SLAAC address: never answered",
           Ether(dst=solicited_mac(A_GLOBAL), src=MAC_A) / IPv6(src="::", dst=solicited_node(A_GLOBAL), hlim=255)
           / ICMPv6ND_NS(tgt=A_GLOBAL), "dad_probe")
    yield ("ns_dad_peer_address", "DAD probe for another endpoint's address: never answered",
           Ether(dst=solicited_mac(B_GLOBAL), src=MAC_A) / IPv6(src="::", dst=solicited_node(B_GLOBAL), hlim=255)
           / ICMPv6ND_NS(tgt=B_GLOBAL), "dad_probe")
    yield ("ns_outside_vpc", "NS for an address outside the VPC prefix: not answered",
           Ether(dst=solicited_mac("2001:db8::7"), src=MAC_A)
           / IPv6(src=A_GLOBAL, dst=solicited_node("2001:db8::7"), hlim=255)
           / ICMPv6ND_NS(tgt="2001:db8::7") / ICMPv6NDOptSrcLLAddr(lladdr=MAC_A), "outside_vpc")
    yield ("rs_from_link_local", "RS from the tenant's link-local address with its MAC",
           Ether(dst=MAC_ALL_ROUTERS, src=MAC_A) / IPv6(src=A_LL, dst=ALL_ROUTERS, hlim=255)
           / ICMPv6ND_RS() / ICMPv6NDOptSrcLLAddr(lladdr=MAC_A), "ra_unicast")
    yield ("ra_unicast", "the gateway's RA to the soliciting tenant: SLLA, MTU, prefix (L, A), RDNSS",
           Ether(dst=MAC_A, src=MAC_GW) / IPv6(src=GW_LL, dst=A_LL, hlim=255) / gateway_ra(), None)
    yield ("rs_from_unspecified", "RS from :: (no options allowed)",
           Ether(dst=MAC_ALL_ROUTERS, src=MAC_A) / IPv6(src="::", dst=ALL_ROUTERS, hlim=255) / ICMPv6ND_RS(),
           "ra_multicast")
    yield ("ra_multicast", "the gateway's RA to all-nodes: the answer to an RS from :: and the unsolicited RA",
           Ether(dst=MAC_ALL_NODES, src=MAC_GW) / IPv6(src=GW_LL, dst=ALL_NODES, hlim=255) / gateway_ra(), None)
    yield ("ra_every_option", "RA with M, O, high preference, timers, every option, DNSSL and an unknown option",
           Ether(dst=MAC_ALL_NODES, src="02:00:00:00:00:fe") / IPv6(src="fe80::fe", dst=ALL_NODES, hlim=255)
           / ICMPv6ND_RA(chlim=255, M=1, O=1, prf=1, routerlifetime=9000, reachabletime=30000, retranstimer=1000)
           / ICMPv6NDOptSrcLLAddr(lladdr="02:00:00:00:00:fe") / ICMPv6NDOptMTU(mtu=9000)
           / ICMPv6NDOptPrefixInfo(prefixlen=48, L=0, A=0, validlifetime=0xffffffff, preferredlifetime=0xffffffff,
                                   prefix="2001:db8:7::")
           / ICMPv6NDOptPrefixInfo(prefixlen=64, L=1, A=0, validlifetime=0, preferredlifetime=0, prefix="fd00:9::")
           / ICMPv6NDOptRDNSS(lifetime=0xffffffff, dns=["2001:db8::1", "2001:db8::2", "2001:db8::3"])
           / ICMPv6NDOptDNSSL(lifetime=600, searchlist=["example.com."])
           / ICMPv6NDOptUnknown(type=253, len=2, data=b"experiment\x00\x00\x00\x00"), None)
    yield ("na_unsolicited_from_tenant", "a tenant's unsolicited NA to all-nodes (override, not solicited)",
           Ether(dst=MAC_ALL_NODES, src=MAC_A) / IPv6(src=A_GLOBAL, dst=ALL_NODES, hlim=255)
           / ICMPv6ND_NA(R=0, S=0, O=1, tgt=A_GLOBAL) / ICMPv6NDOptDstLLAddr(lladdr=MAC_A), None)
    yield ("echo_to_gateway_global", "ICMPv6 echo request to the gateway's global address",
           Ether(dst=MAC_GW, src=MAC_A) / IPv6(src=A_GLOBAL, dst=GW_GLOBAL, hlim=64, tc=0x20)
           / ICMPv6EchoRequest(id=0x1d2c, seq=7, data=b"ping6 the gateway"), "echo_reply_from_gateway_global")
    yield ("echo_reply_from_gateway_global", "the gateway's echo reply from the address pinged",
           Ether(dst=MAC_A, src=MAC_GW) / IPv6(src=GW_GLOBAL, dst=A_GLOBAL, hlim=64, tc=0x20)
           / ICMPv6EchoReply(id=0x1d2c, seq=7, data=b"ping6 the gateway"), None)
    yield ("echo_to_gateway_link_local", "ICMPv6 echo request to the gateway's link-local address",
           Ether(dst=MAC_GW, src=MAC_A) / IPv6(src=A_LL, dst=GW_LL, hlim=64)
           / ICMPv6EchoRequest(id=1, seq=1, data=b"0123456789abcdef" * 4), "echo_reply_from_gateway_link_local")
    yield ("echo_reply_from_gateway_link_local", "the gateway's echo reply from its link-local address",
           Ether(dst=MAC_A, src=MAC_GW) / IPv6(src=GW_LL, dst=A_LL, hlim=64)
           / ICMPv6EchoReply(id=1, seq=1, data=b"0123456789abcdef" * 4), None)
    yield ("oversize_udp", "a 1500-byte IPv6 packet for another endpoint, over the VPC MTU of 1450",
           Ether(dst=MAC_GW, src=MAC_A) / offending_packet(), "packet_too_big")
    yield ("packet_too_big", "Packet Too Big (MTU 1450) from the gateway's global address, quoting 1232 bytes",
           Ether(dst=MAC_A, src=MAC_GW) / IPv6(src=GW_GLOBAL, dst=A_GLOBAL, hlim=64)
           / ICMPv6PacketTooBig(mtu=MTU) / raw(offending_packet())[:1280 - 48], None)


def mac(m):
    return str(m).lower()


def describe_option(option):
    entry = {"type": option.type, "length": len(raw(option)) - len(raw(option.payload))}
    if isinstance(option, (ICMPv6NDOptSrcLLAddr, ICMPv6NDOptDstLLAddr)):
        entry["mac"] = mac(option.lladdr)
    elif isinstance(option, ICMPv6NDOptMTU):
        entry["mtu"] = option.mtu
    elif isinstance(option, ICMPv6NDOptPrefixInfo):
        entry.update({"prefix_length": option.prefixlen, "on_link": bool(option.L), "autonomous": bool(option.A),
                      "valid_lifetime": option.validlifetime, "preferred_lifetime": option.preferredlifetime,
                      "prefix": option.prefix})
    elif isinstance(option, ICMPv6NDOptRDNSS):
        entry.update({"lifetime": option.lifetime, "addresses": list(option.dns)})
    else:  # carried as opaque bytes: the data after type and length
        entry["data"] = raw(option)[2:entry["length"]].hex()
    return entry


def describe_ndp(layer):
    entry = {"layer": "ndp", "type": layer.type, "code": layer.code, "checksum": layer.cksum}
    if isinstance(layer, ICMPv6ND_RA):
        entry.update({"current_hop_limit": layer.chlim, "managed": bool(layer.M),
                      "other_configuration": bool(layer.O), "router_preference": layer.prf,
                      "router_lifetime": layer.routerlifetime, "reachable_time": layer.reachabletime,
                      "retrans_timer": layer.retranstimer})
    if isinstance(layer, (ICMPv6ND_NS, ICMPv6ND_NA)):
        entry["target"] = layer.tgt
    if isinstance(layer, ICMPv6ND_NA):
        entry.update({"router": bool(layer.R), "solicited": bool(layer.S), "override": bool(layer.O)})
    options = []
    option = layer.payload
    while option and option.name != "Raw" and option.name != "Padding":
        options.append(describe_option(option))
        option = option.payload
    # scapy stops dissecting after some options (DNSSL): what follows is listed from its bytes.
    rest = raw(option) if option and option.name == "Raw" else b""
    while rest:
        length = rest[1] * 8
        options.append({"type": rest[0], "length": length, "data": rest[2:length].hex()})
        rest = rest[length:]
    entry["options"] = options
    return entry


def describe(pkt):
    """The manifest layers of a dissected frame, outermost first."""
    layers = []
    eth = {"layer": "ethernet", "destination": mac(pkt.dst), "source": mac(pkt.src), "ethertype": pkt.type,
           "vlans": []}
    layers.append(eth)
    layer = pkt.payload
    while isinstance(layer, Dot1Q):
        eth["vlans"].append({"tpid": 0x8100, "priority": layer.prio, "drop_eligible": bool(layer.id),
                             "vlan_id": layer.vlan})
        eth["ethertype"] = layer.type
        layer = layer.payload
    ip = layer
    layers.append({"layer": "ipv6", "traffic_class": ip.tc, "flow_label": ip.fl, "payload_length": ip.plen,
                   "next_header": ip.nh, "hop_limit": ip.hlim, "source": ip.src, "destination": ip.dst})
    message = ip.payload
    if isinstance(message, (ICMPv6ND_NS, ICMPv6ND_NA, ICMPv6ND_RS, ICMPv6ND_RA)):
        layers.append(describe_ndp(message))
    elif isinstance(message, (ICMPv6EchoRequest, ICMPv6EchoReply)):
        layers.append({"layer": "icmpv6", "type": message.type, "code": message.code, "checksum": message.cksum,
                       "identifier": message.id, "sequence": message.seq, "body_length": len(message.data)})
    elif isinstance(message, ICMPv6PacketTooBig):
        layers.append({"layer": "icmpv6", "type": message.type, "code": message.code, "checksum": message.cksum,
                       "mtu": message.mtu, "body_length": len(raw(message.payload))})
    elif isinstance(message, UDP):
        layers.append({"layer": "udp", "source_port": message.sport, "destination_port": message.dport,
                       "length": message.len, "checksum": message.chksum})
    else:
        raise ValueError(f"no manifest rule for {message.name}")
    return layers


def addressing_vectors():
    vectors = []
    for m in [MAC_GW, MAC_A, "00:1b:21:3c:9d:f8", "fc:ff:ff:ff:ff:ff"]:
        ll = link_local(m)
        vectors.append({"mac": m, "interface_id": in6_mactoifaceid(m).lower(), "link_local": ll,
                        "eui64_address": slaac(m), "solicited_node": solicited_node(ll),
                        "solicited_node_mac": mac(solicited_mac(ll))})
    return vectors


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    FUZZ_CORPUS.mkdir(parents=True, exist_ok=True)
    manifest_frames = []
    for name, description, pkt, answer in frames():
        wire = raw(pkt)
        dissected = Ether(wire)  # re-dissect so every computed field (lengths, checksums) is read back
        (OUT / f"{name}.hex").write_text(wire.hex() + "\n")
        for suffix, selector in FUZZ_GATEWAYS.items():
            (FUZZ_CORPUS / f"{name}{suffix}").write_bytes(bytes([selector]) + wire)
        entry = {"name": name, "file": f"{name}.hex", "description": description, "length": len(wire),
                 "layers": describe(dissected)}
        if answer is not None:
            is_frame = any(answer == n for n, *_ in frames())
            entry["answer"] = answer if is_frame else None
            entry["outcome"] = None if is_frame else answer
        manifest_frames.append(entry)
    gateway = {"mac": MAC_GW, "prefix": PREFIX, "prefix_length": PREFIX_LENGTH, "global_address": GW_GLOBAL,
               "link_local": GW_LL, "mtu": MTU, "dns_servers": DNS, "router_advertisements": RA,
               "dns_lifetime": DNS_LIFETIME}
    asker = {"mac": MAC_A, "addresses": [A_GLOBAL], "link_local": A_LL}
    manifest = {"gateway": gateway, "asker": asker, "addressing": addressing_vectors(), "frames": manifest_frames}
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {len(manifest_frames)} frames to {OUT}")


if __name__ == "__main__":
    main()
