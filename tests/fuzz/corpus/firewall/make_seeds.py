#!/usr/bin/env python3
"""Seeds for firewall_fuzz: byte 0 (endpoint in the low 2 bits, egress in bit 2), then an IPv4
packet: a TCP SYN to web:80 from app, a UDP query, an ICMP echo, a port unreachable quoting the
query, and the two halves of a fragmented datagram; then the same over IPv6 (ICMPv6 echo and
port unreachable, a fragment header's two halves). Plain struct packing: no scapy needed."""
import ipaddress
import os
import struct

def ip(src, dst, proto, payload, ident=1, flags_offset=0):
    a = bytes(map(int, src.split(".")))
    b = bytes(map(int, dst.split(".")))
    return struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident, flags_offset, 64, proto, 0, a, b) + payload

def tcp(sport, dport, flags=0x02):
    return struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 0x50, flags, 65535, 0, 0)

def udp(sport, dport, data=b"q" * 8):
    return struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data

def ip6(src, dst, proto, payload):
    a = ipaddress.IPv6Address(src).packed
    b = ipaddress.IPv6Address(dst).packed
    return struct.pack("!IHBB16s16s", 0x60000000, len(payload), proto, 64, a, b) + payload

def frag6(proto, offset, more, ident, data):
    return struct.pack("!BBHI", proto, 0, (offset << 3) | (1 if more else 0), ident) + data

def icmp(t, c, rest):
    return struct.pack("!BBHI", t, c, 0, 0x00070001) + rest

here = os.path.dirname(os.path.abspath(__file__))
query = ip("10.0.0.10", "10.0.0.20", 17, udp(5353, 53))
seeds = {
    "syn-app-to-web": bytes([0]) + ip("10.0.0.11", "10.0.0.10", 6, tcp(40000, 80)),
    "udp-egress": bytes([4]) + query,
    "echo-request": bytes([0]) + ip("10.0.0.20", "10.0.0.10", 1, icmp(8, 0, b"x" * 16)),
    "port-unreachable": bytes([0]) + ip("10.0.0.20", "10.0.0.10", 1, icmp(3, 3, query[:28])),
    "first-fragment": bytes([0]) + ip("10.0.0.11", "10.0.0.10", 6, tcp(40000, 80) + b"d" * 8, 9, 0x2000),
    "later-fragment": bytes([0]) + ip("10.0.0.11", "10.0.0.10", 6, b"d" * 16, 9, 4),
}
web6, app6, other6 = "fd00:0:0:100::10", "fd00:0:0:100::11", "fd00:0:0:100::20"
query6 = ip6(web6, other6, 17, udp(5353, 53))
seeds.update({
    "v6-syn-app-to-web": bytes([0]) + ip6(app6, web6, 6, tcp(40000, 80)),
    "v6-udp-egress": bytes([4]) + query6,
    "v6-echo-request": bytes([0]) + ip6(other6, web6, 58, icmp(128, 0, b"x" * 16)),
    "v6-port-unreachable": bytes([0]) + ip6(other6, web6, 58, icmp(1, 4, query6[:48])),
    "v6-first-fragment": bytes([0]) + ip6(app6, web6, 44, frag6(6, 0, True, 9, tcp(40000, 80) + b"d" * 4)),
    "v6-later-fragment": bytes([0]) + ip6(app6, web6, 44, frag6(6, 3, False, 9, b"d" * 16)),
})
for name, data in seeds.items():
    with open(os.path.join(here, name), "wb") as f:
        f.write(data)
