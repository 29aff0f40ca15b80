#!/usr/bin/python3
"""Seeds for underlay_pmtu_fuzz, made with scapy (an independent tool): ICMP fragmentation needed
from a router to node1 (192.168.1.1) about node1's outer packets to node2 (192.168.1.2, UDP
43481), and near misses; then the same over an IPv6 underlay as ICMPv6 Packet Too Big
(fd00:1::1 to fd00:1::2), which the target also reads. Byte 0 of each seed is the fuzz target's selector (the MTU it runs the
pipeline with: see underlay_pmtu_fuzz.cpp); the frame follows.

Run from this directory: /usr/bin/python3 make_seeds.py
"""
from scapy.all import Ether, IP, IPv6, UDP, ICMP, ICMPv6PacketTooBig, ICMPv6DestUnreach, Raw, Dot1Q

NODE1, NODE2, ROUTER = "192.168.1.1", "192.168.1.2", "192.168.1.254"
NODE1_MAC, ROUTER_MAC = "02:00:00:00:a1:01", "02:00:00:00:a1:fe"


def outer(src=NODE1, dst=NODE2, dport=43481, inner=1000):
    # An outer packet as node1 sends it: DF, UDP to the overlay port, the overlay header and
    # an inner frame (its bytes do not matter to the quote's reader).
    return IP(src=src, dst=dst, flags="DF", id=7) / UDP(sport=50000, dport=dport, chksum=0) / Raw(b"\x10\x00\x00\x00\x00\x00\x64\x40" + bytes(inner))


def report(quoted, mtu=1400, quote=28, type_=3, code=4, tagged=False):
    q = bytes(quoted)[:quote]
    icmp = ICMP(type=type_, code=code, nexthopmtu=mtu) if type_ == 3 else ICMP(type=type_, code=code)
    l2 = Ether(src=ROUTER_MAC, dst=NODE1_MAC)
    if tagged:
        l2 = l2 / Dot1Q(vlan=7)
    return bytes(l2 / IP(src=ROUTER, dst=NODE1) / icmp / Raw(q))


NODE1_6, NODE2_6, ROUTER_6 = "fd00:1::1", "fd00:1::2", "fd00:1::fe"


def outer6(src=NODE1_6, dst=NODE2_6, dport=43481, inner=1000):
    return IPv6(src=src, dst=dst) / UDP(sport=50000, dport=dport) / Raw(b"\x10\x00\x00\x00\x00\x00\x64\x40" + bytes(inner))


def report6(quoted, mtu=1400, quote=1232, too_big=True, tagged=False):
    q = bytes(quoted)[:quote]
    icmp = ICMPv6PacketTooBig(mtu=mtu) if too_big else ICMPv6DestUnreach(code=4)
    l2 = Ether(src=ROUTER_MAC, dst=NODE1_MAC)
    if tagged:
        l2 = l2 / Dot1Q(vlan=7)
    return bytes(l2 / IPv6(src=ROUTER_6, dst=NODE1_6) / icmp / Raw(q))


seeds = {
    "ours_1400": report(outer()),
    "ours_1400_whole_quote": report(outer(), quote=548),
    "ours_576": report(outer(), mtu=576),
    "ours_tagged": report(outer(), tagged=True),
    "mtu_575": report(outer(), mtu=575),
    "mtu_0": report(outer(), mtu=0),
    "mtu_9000": report(outer(), mtu=9000),
    "someone_elses_packet": report(outer(src="192.168.1.77")),
    "unknown_peer": report(outer(dst="192.168.1.99")),
    "not_overlay_port": report(outer(dport=53)),
    "quote_too_short": report(outer(), quote=27),
    "port_unreachable": report(outer(), type_=3, code=3),
    "echo_request": report(outer(), type_=8, code=0),
    "ptb6_ours_1400": report6(outer6()),
    "ptb6_ours_tagged": report6(outer6(), tagged=True),
    "ptb6_mtu_1279": report6(outer6(), mtu=1279),
    "ptb6_quote_48": report6(outer6(), quote=48),
    "ptb6_quote_47": report6(outer6(), quote=47),
    "ptb6_not_overlay_port": report6(outer6(dport=53)),
    "ptb6_someone_elses_packet": report6(outer6(src="fd00:1::77")),
    "ptb6_dest_unreach": report6(outer6(), too_big=False),
}
for name, frame in seeds.items():
    with open(name, "wb") as f:
        f.write(bytes([0]) + frame)
