#!/usr/bin/python3
"""Seed corpus for tests/fuzz/nat_fuzz.cpp (format described there), built with scapy.

Run with Debian's Python:  /usr/bin/python3 tests/data/nat/make_fuzz_seeds.py
Writes tests/fuzz/corpus/nat/*.bin: short sessions that reach each NAT path, so the fuzzer starts
from translated flows rather than having to discover valid checksums by itself.
"""

import pathlib

from scapy.all import ICMP, IP, TCP, UDP, raw

OUT = pathlib.Path(__file__).resolve().parents[2] / "fuzz" / "corpus" / "nat"
NAT = "198.51.100.1"
TENANT = "10.0.0.10"
REMOTE = "203.0.113.7"


def rec(op, payload=b"", n=None):
    return bytes([op, len(payload) if n is None else n]) + payload


def out(pkt, vni_op=0):
    return rec(vni_op, raw(pkt))


def inn(pkt):
    return rec(2, raw(pkt))


def sessions():
    udp = IP(src=TENANT, dst=REMOTE) / UDP(sport=40000, dport=53) / b"q"
    yield "udp_round_trip", bytes([0]) + out(udp) + inn(IP(src=REMOTE, dst=NAT) / UDP(sport=53, dport=40000) / b"a") \
        + rec(6, n=10) + rec(3, n=200) + rec(4, n=10)
    syn = IP(src=TENANT, dst=REMOTE) / TCP(sport=40001, dport=80, flags="S")
    yield "tcp_handshake_fin", bytes([1]) + out(syn) \
        + inn(IP(src=REMOTE, dst=NAT) / TCP(sport=80, dport=40001, flags="SA")) \
        + out(IP(src=TENANT, dst=REMOTE) / TCP(sport=40001, dport=80, flags="A")) \
        + out(IP(src=TENANT, dst=REMOTE) / TCP(sport=40001, dport=80, flags="FA")) \
        + inn(IP(src=REMOTE, dst=NAT) / TCP(sport=80, dport=40001, flags="FA")) + rec(3, n=31) + rec(4, n=5)
    ping = IP(src=TENANT, dst=REMOTE) / ICMP(type=8, id=7, seq=1) / b"ping"
    translated = IP(src=NAT, dst=REMOTE) / ICMP(type=8, id=7, seq=1) / b"ping"
    yield "ping_and_time_exceeded", bytes([2]) + out(ping) \
        + inn(IP(src=REMOTE, dst=NAT) / ICMP(type=0, id=7, seq=1) / b"ping") \
        + inn(IP(src="192.0.2.1", dst=NAT) / ICMP(type=11, code=0) / raw(translated)[:28])
    udp_translated = IP(src=NAT, dst=REMOTE) / UDP(sport=40000, dport=53) / b"q"
    yield "frag_needed", bytes([4]) + out(udp) \
        + inn(IP(src="192.0.2.1", dst=NAT) / ICMP(type=3, code=4, nexthopmtu=1280) / raw(udp_translated))
    query = IP(src=REMOTE, dst=NAT) / UDP(sport=5000, dport=53) / b"dns"
    delivered = IP(src=REMOTE, dst="10.0.0.20") / UDP(sport=5000, dport=53) / b"dns"
    yield "forward_and_port_unreachable", bytes([3]) + inn(query) \
        + out(IP(src="10.0.0.20", dst=REMOTE) / ICMP(type=3, code=3) / raw(delivered)) \
        + inn(IP(src=REMOTE, dst=NAT) / TCP(sport=5001, dport=80, flags="S")) + rec(5, n=20) + rec(7)
    yield "exhaustion_and_hairpin", bytes([8 | 16]) + b"".join(
        out(IP(src=f"10.0.0.{h}", dst=REMOTE) / UDP(sport=40000, dport=53)) for h in range(1, 12)) \
        + out(IP(src=TENANT, dst=NAT) / TCP(sport=40005, dport=80, flags="S")) + rec(6, n=20)


def offload_sessions():
    """The same sessions with offload on (config bit 5), and a forward carried by the kernel."""
    for name, data in sessions():
        yield f"offload_{name}", bytes([data[0] | 32]) + data[1:]
    yield "offload_forward_established", bytes([32 | 1]) \
        + inn(IP(src=REMOTE, dst=NAT) / TCP(sport=5001, dport=80, flags="S")) \
        + out(IP(src="10.0.0.20", dst=REMOTE) / TCP(sport=8080, dport=5001, flags="SA")) \
        + inn(IP(src=REMOTE, dst=NAT) / TCP(sport=5001, dport=80, flags="A")) \
        + rec(6, n=10) + rec(3, n=100) + rec(7) + rec(6, n=10) + rec(3, n=255) + rec(4, n=10)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for name, data in [*sessions(), *offload_sessions()]:
        (OUT / f"{name}.bin").write_bytes(data)
        print(f"{name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
