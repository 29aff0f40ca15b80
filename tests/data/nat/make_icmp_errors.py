#!/usr/bin/python3
"""Golden packets for the NAT's ICMP error translation, made by an independent implementation.

Run with Debian's Python, which has python3-scapy:  /usr/bin/python3 tests/data/nat/make_icmp_errors.py
Writes tests/data/nat/<name>.hex: one IPv4 packet per file (no Ethernet), lowercase hex on one line.
Every checksum (outer IPv4, ICMP, quoted IPv4, quoted UDP/TCP/ICMP) is computed by scapy.

The NAT under test: VPC VNI 100, NAT address 198.51.100.1 with the port range 61000-61000, so
the one port a tenant flow can be given is 61000 (no allocator choice to predict); a port
forward udp 198.51.100.1:5353 -> 10.0.0.20:53.

Scenarios (the test feeds the first packet of each through the NAT and expects the next ones):
  udp_*   a tenant's 1400-byte UDP packet with DF leaves (translated_udp); a router on the path
          sends Fragmentation Needed (MTU 1280) quoting 548 bytes of it (RFC 1812: as much as
          fits in 576) to the NAT address; the tenant must get it back with the quote restored.
  tcp_*   a tenant's TCP SYN leaves; a router sends Time Exceeded quoting only the IP header and
          8 bytes (RFC 792), so the quoted TCP checksum is absent and must not be touched.
  ping_*  a tenant's echo request leaves with its identifier translated; Time Exceeded comes
          back quoting it (traceroute -I); the quoted identifier and checksum are restored.
  fwd_*   a DNAT'd UDP packet reaches tenant 10.0.0.20:53, which answers Port Unreachable; the
          error leaves with the NAT address as source and the quote restored to what arrived.
"""

import pathlib

from scapy.all import ICMP, IP, TCP, UDP, raw

OUT = pathlib.Path(__file__).resolve().parent

TENANT = "10.0.0.10"
SERVER = "10.0.0.20"
NAT = "198.51.100.1"
NAT_PORT = 61000
REMOTE = "203.0.113.7"
ROUTER = "192.0.2.254"


def icmp_error(src, dst, type_, code, quote, **fields):
    return IP(src=src, dst=dst, id=0x0bad, ttl=250) / ICMP(type=type_, code=code, **fields) / quote


def packets():
    payload = bytes((i * 7 + 40000) & 0xff for i in range(1400 - 28))
    tenant_udp = IP(src=TENANT, dst=REMOTE, id=0x1111, flags="DF", ttl=64) / UDP(sport=40000, dport=4242) / payload
    translated_udp = IP(raw(tenant_udp))
    translated_udp[IP].src = NAT
    translated_udp[UDP].sport = NAT_PORT
    del translated_udp[IP].chksum, translated_udp[UDP].chksum
    yield "udp_tenant", tenant_udp
    yield "udp_translated", translated_udp
    yield "udp_frag_needed", icmp_error(ROUTER, NAT, 3, 4, raw(translated_udp)[:548], nexthopmtu=1280)
    yield "udp_frag_needed_to_tenant", icmp_error(ROUTER, TENANT, 3, 4, raw(tenant_udp)[:548], nexthopmtu=1280)

    tenant_tcp = IP(src=TENANT, dst=REMOTE, id=0x2222, flags="DF", ttl=1) / TCP(
        sport=40001, dport=80, seq=0x01020304, flags="S", window=64240,
        options=[("MSS", 1460), ("SAckOK", b""), ("Timestamp", (12345, 0)), ("NOP", None), ("WScale", 7)])
    translated_tcp = IP(raw(tenant_tcp))
    translated_tcp[IP].src = NAT
    translated_tcp[TCP].sport = NAT_PORT
    del translated_tcp[IP].chksum, translated_tcp[TCP].chksum
    yield "tcp_tenant", tenant_tcp
    yield "tcp_translated", translated_tcp
    yield "tcp_time_exceeded", icmp_error(ROUTER, NAT, 11, 0, raw(translated_tcp)[:28])
    yield "tcp_time_exceeded_to_tenant", icmp_error(ROUTER, TENANT, 11, 0, raw(tenant_tcp)[:28])

    tenant_ping = IP(src=TENANT, dst=REMOTE, id=0x3333, ttl=2) / ICMP(type=8, id=0x1234, seq=3) / (b"\x42" * 56)
    translated_ping = IP(raw(tenant_ping))
    translated_ping[IP].src = NAT
    translated_ping[ICMP].id = NAT_PORT
    del translated_ping[IP].chksum, translated_ping[ICMP].chksum
    yield "ping_tenant", tenant_ping
    yield "ping_translated", translated_ping
    yield "ping_time_exceeded", icmp_error(ROUTER, NAT, 11, 0, raw(translated_ping)[:28])
    yield "ping_time_exceeded_to_tenant", icmp_error(ROUTER, TENANT, 11, 0, raw(tenant_ping)[:28])

    inbound = IP(src=REMOTE, dst=NAT, id=0x4444, ttl=60) / UDP(sport=33333, dport=5353) / b"query?"
    delivered = IP(raw(inbound))
    delivered[IP].dst = SERVER
    delivered[UDP].dport = 53
    del delivered[IP].chksum, delivered[UDP].chksum
    yield "fwd_inbound", inbound
    yield "fwd_delivered", delivered
    yield "fwd_port_unreachable", icmp_error(SERVER, REMOTE, 3, 3, raw(delivered))
    yield "fwd_port_unreachable_translated", icmp_error(NAT, REMOTE, 3, 3, raw(inbound))


def main():
    for name, packet in packets():
        (OUT / f"{name}.hex").write_text(raw(packet).hex() + "\n")
        print(f"{name}: {len(raw(packet))} bytes")


if __name__ == "__main__":
    main()
