#!/usr/bin/python3
"""Seed corpus for tests/fuzz/nat_pipeline_fuzz.cpp (format described there), built with scapy.

Run with Debian's Python:  /usr/bin/python3 tests/data/nat/make_nat_pipeline_seeds.py
Writes tests/fuzz/corpus/nat_pipeline/*.bin: sessions through the two-node NAT world
(tests/unit/dataplane/nat_world.hpp) that reach each path: tenant -> overlay -> NAT -> uplink,
replies, ICMP errors, port forwards, hairpins, expiry and reloads.
"""

import pathlib
import struct

from scapy.all import ICMP, IP, TCP, UDP, Ether, raw

OUT = pathlib.Path(__file__).resolve().parents[2] / "fuzz" / "corpus" / "nat_pipeline"
GATEWAY_MAC = "02:00:00:00:00:ff"
BLUE10_MAC, BLUE11_MAC, BLUE20_MAC = "02:00:00:00:00:10", "02:00:00:00:00:11", "02:00:00:00:00:20"
GREEN10_MAC = "02:00:00:c8:00:0a"
UPLINK_MAC, ROUTER_MAC = "02:00:00:00:b2:02", "02:00:00:00:b2:01"
NAT, REMOTE = "198.51.100.1", "203.0.113.7"
# Selectors: indexes into kPorts.
BLUE10, BLUE11, GREEN10, UNDERLAY, UPLINK, BLUE20 = 0, 1, 2, 3, 4, 5
RELOAD, TICK = b"\xff", b"\xfe"


def rec(selector, frame):
    data = raw(frame)
    return bytes([selector]) + struct.pack(">H", len(data)) + data


def tenant(selector, mac, pkt):
    return rec(selector, Ether(src=mac, dst=GATEWAY_MAC) / pkt)


def outside(pkt):
    return rec(UPLINK, Ether(src=ROUTER_MAC, dst=UPLINK_MAC) / pkt)


def seeds():
    # The first mapping of a 64-port range is not predictable, so replies try the range's start.
    udp = IP(src="10.0.0.10", dst=REMOTE, flags="DF") / UDP(sport=40000, dport=4242) / (b"x" * 40)
    yield "udp_round_trip", [tenant(BLUE10, BLUE10_MAC, udp),
                             outside(IP(src=REMOTE, dst=NAT) / UDP(sport=4242, dport=61000) / b"reply")]
    yield "frag_needed", [tenant(BLUE10, BLUE10_MAC, udp),
                          outside(IP(src="192.0.2.254", dst=NAT) / ICMP(type=3, code=4, nexthopmtu=1280) /
                                  raw(IP(src=NAT, dst=REMOTE, flags="DF") / UDP(sport=61000, dport=4242) / (b"x" * 40)))]
    syn = IP(src="10.0.0.11", dst=REMOTE) / TCP(sport=40001, dport=80, flags="S")
    yield "tcp_then_tick", [tenant(BLUE11, BLUE11_MAC, syn),
                            outside(IP(src=REMOTE, dst=NAT) / TCP(sport=80, dport=61000, flags="SA")),
                            TICK, tenant(BLUE11, BLUE11_MAC, syn)]
    ping = IP(src="10.0.0.10", dst=REMOTE) / ICMP(type=8, id=7, seq=1) / b"ping"
    yield "ping_green_and_blue", [tenant(BLUE10, BLUE10_MAC, ping), tenant(GREEN10, GREEN10_MAC, ping),
                                  outside(IP(src=REMOTE, dst="198.51.100.2") / ICMP(type=0, id=7, seq=1) / b"ping")]
    yield "forwards", [outside(IP(src=REMOTE, dst=NAT) / UDP(sport=7000, dport=5353) / b"query"),
                       outside(IP(src=REMOTE, dst=NAT) / TCP(sport=50000, dport=8080, flags="S")),
                       tenant(BLUE20, BLUE20_MAC, IP(src="10.0.0.20", dst=REMOTE) / UDP(sport=53, dport=7000) / b"a")]
    yield "hairpin", [tenant(BLUE10, BLUE10_MAC, IP(src="10.0.0.10", dst=NAT) / UDP(sport=41000, dport=5353) / b"h")]
    yield "reload", [tenant(BLUE10, BLUE10_MAC, udp), RELOAD,
                     outside(IP(src=REMOTE, dst=NAT) / UDP(sport=4242, dport=61000) / b"late"), RELOAD,
                     tenant(BLUE10, BLUE10_MAC, udp)]


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for name, records in seeds():
        (OUT / f"{name}.bin").write_bytes(b"\x80" + b"".join(records))
    # Single frames: byte 0 is the port index.
    (OUT / "single_uplink.bin").write_bytes(bytes([UPLINK]) + raw(Ether(src=ROUTER_MAC, dst=UPLINK_MAC) /
                                            IP(src=REMOTE, dst=NAT) / UDP(sport=1, dport=5353)))
    (OUT / "single_tenant.bin").write_bytes(bytes([BLUE10]) + raw(Ether(src=BLUE10_MAC, dst=GATEWAY_MAC) / udp_frame()))


def udp_frame():
    return IP(src="10.0.0.10", dst=REMOTE) / UDP(sport=5, dport=6)


if __name__ == "__main__":
    main()
