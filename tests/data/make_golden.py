#!/usr/bin/python3
"""Golden frames for the wire-layer tests, made by an independent implementation (scapy).

Run with Debian's Python, which has python3-scapy:  /usr/bin/python3 tests/data/make_golden.py
Writes tests/data/golden/<name>.hex (one frame, lowercase hex on one line) and
tests/data/golden/manifest.json: for every frame, its layers outermost first with the field
values scapy put on the wire (checksums included), named as the C++ views name them.
"""

import json
import pathlib

from scapy.all import (ARP, ICMP, IP, IPv6, TCP, UDP, Dot1AD, Dot1Q, Ether, ICMPv6EchoReply,
                       ICMPv6EchoRequest, ICMPv6PacketTooBig, IPOption_RR, IPOption_Router_Alert,
                       IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop, IPv6ExtHdrRouting,
                       Padding, RouterAlert, raw)
from scapy.layers.vxlan import VXLAN

OUT = pathlib.Path(__file__).resolve().parent / "golden"

MAC_A = "02:00:00:00:00:0a"
MAC_B = "02:00:00:00:00:14"
MAC_GW = "02:aa:00:00:00:01"


def frames():
    """(name, description, scapy packet) for every golden frame."""
    yield ("ipv4_udp", "plain IPv4/UDP with checksum",
           Ether(dst=MAC_B, src=MAC_A) / IP(src="10.0.0.10", dst="10.0.0.20", id=0x1234, ttl=64, flags="DF")
           / UDP(sport=40000, dport=4242) / b"hello andromeda")
    yield ("ipv4_udp_padded", "short IPv4/UDP padded to the 60-byte Ethernet minimum, UDP checksum 0",
           Ether(dst=MAC_B, src=MAC_A) / IP(src="10.0.0.10", dst="10.0.0.20", id=1, tos=0xb9)
           / UDP(sport=53, dport=33333, chksum=0) / b"hi" / Padding(load=b"\x00" * 16))
    yield ("vlan_ipv4_tcp_options", "802.1Q tag, IPv4, TCP SYN with MSS/SACK/timestamps/window scale",
           Ether(dst=MAC_B, src=MAC_A) / Dot1Q(prio=5, id=1, vlan=100)
           / IP(src="192.168.1.1", dst="192.168.1.2", id=777, ttl=63, flags="DF")
           / TCP(sport=51000, dport=443, seq=0x01020304, ack=0, flags="S", window=64240,
                 options=[("MSS", 1460), ("SAckOK", b""), ("Timestamp", (12345, 0)), ("NOP", None),
                          ("WScale", 7)]))
    yield ("qinq_arp_request", "802.1ad + 802.1Q tags around an ARP request",
           Ether(dst="ff:ff:ff:ff:ff:ff", src=MAC_A) / Dot1AD(prio=3, vlan=200) / Dot1Q(vlan=10)
           / ARP(op=1, hwsrc=MAC_A, psrc="10.0.0.10", hwdst="00:00:00:00:00:00", pdst="10.0.0.1"))
    yield ("arp_reply", "ARP reply from the gateway, padded to 60 bytes",
           Ether(dst=MAC_A, src=MAC_GW)
           / ARP(op=2, hwsrc=MAC_GW, psrc="10.0.0.1", hwdst=MAC_A, pdst="10.0.0.10")
           / Padding(load=b"\x00" * 18))
    yield ("ipv4_options_icmp_echo", "IPv4 with record-route and router-alert options, ICMP echo request",
           Ether(dst=MAC_B, src=MAC_A)
           / IP(src="10.0.0.10", dst="10.0.0.1", id=42, ttl=64,
                options=[IPOption_RR(routers=["0.0.0.0", "0.0.0.0"]), IPOption_Router_Alert()])
           / ICMP(type=8, id=0x4242, seq=3) / (b"abcdefgh" * 4))
    yield ("ipv4_icmp_frag_needed", "ICMP fragmentation needed (MTU 1450) quoting the original datagram",
           Ether(dst=MAC_A, src=MAC_GW) / IP(src="10.0.0.1", dst="10.0.0.10", id=9, ttl=64)
           / ICMP(type=3, code=4, nexthopmtu=1450)
           / raw(IP(src="10.0.0.10", dst="10.0.0.20", id=5, flags="DF", len=1500)
                 / UDP(sport=40000, dport=4242, len=1480, chksum=0x1111)))
    yield ("ipv4_fragment", "IPv4 non-first fragment: MF set, offset 185",
           Ether(dst=MAC_B, src=MAC_A)
           / IP(src="10.0.0.10", dst="10.0.0.20", id=0xabcd, flags="MF", frag=185, proto=17)
           / (b"\x5a" * 24))
    yield ("ipv6_ext_udp", "IPv6 with hop-by-hop, routing, destination options and UDP",
           Ether(dst=MAC_B, src=MAC_A)
           / IPv6(src="fd00::a", dst="fd00::14", tc=0xb8, fl=0x12345, hlim=61)
           / IPv6ExtHdrHopByHop(options=[RouterAlert()])
           / IPv6ExtHdrRouting(addresses=["fd00::99"], segleft=1)
           / IPv6ExtHdrDestOpt()
           / UDP(sport=5000, dport=6000) / b"extension headers")
    yield ("ipv6_fragment_udp", "IPv6 first fragment of a UDP datagram",
           Ether(dst=MAC_B, src=MAC_A) / IPv6(src="fd00::a", dst="fd00::14")
           / IPv6ExtHdrFragment(id=0xdeadbeef, m=1, offset=0) / UDP(sport=1, dport=2) / (b"F" * 16))
    yield ("ipv6_icmpv6_echo", "ICMPv6 echo request",
           Ether(dst=MAC_B, src=MAC_A) / IPv6(src="fd00::a", dst="fd00::1", hlim=64)
           / ICMPv6EchoRequest(id=0x77, seq=9, data=b"ping6 payload"))
    yield ("ipv6_icmpv6_echo_reply", "ICMPv6 echo reply",
           Ether(dst=MAC_A, src=MAC_GW) / IPv6(src="fd00::1", dst="fd00::a", hlim=64)
           / ICMPv6EchoReply(id=0x77, seq=9, data=b"ping6 payload"))
    yield ("ipv6_icmpv6_packet_too_big", "ICMPv6 Packet Too Big (MTU 1400) quoting the original packet",
           Ether(dst=MAC_A, src=MAC_GW) / IPv6(src="fd00::1", dst="fd00::a")
           / ICMPv6PacketTooBig(mtu=1400)
           / raw(IPv6(src="fd00::a", dst="fd00::14", plen=1452) / UDP(sport=7, dport=8, len=1452, chksum=0x2222)))
    yield ("ipv6_tcp", "IPv6 TCP ACK with payload",
           Ether(dst=MAC_B, src=MAC_A) / IPv6(src="2001:db8::1", dst="2001:db8::2")
           / TCP(sport=22, dport=60000, seq=1000, ack=2000, flags="PA", window=501,
                 options=[("NOP", None), ("NOP", None), ("Timestamp", (1, 2))]) / b"ssh bytes")
    yield ("vxlan_ipv4_icmp", "VXLAN (UDP 4789, VNI 100) carrying an inner Ethernet/IPv4/ICMP echo",
           Ether(dst="02:00:00:00:a1:02", src="02:00:00:00:a1:01")
           / IP(src="192.168.1.1", dst="192.168.1.2", id=100, flags="DF", ttl=64)
           / UDP(sport=57553, dport=4789) / VXLAN(flags=0x08, vni=100)
           / Ether(dst=MAC_B, src=MAC_A) / IP(src="10.0.0.10", dst="10.0.0.20", id=7)
           / ICMP(type=8, id=1, seq=1) / b"inner")
    yield ("vxlan_vlan_ipv4_udp", "VXLAN without outer UDP checksum carrying a VLAN-tagged inner frame",
           Ether(dst="02:00:00:00:a1:02", src="02:00:00:00:a1:01")
           / IP(src="192.168.1.1", dst="192.168.1.2", id=101, flags="DF", ttl=64)
           / UDP(sport=49152, dport=4789, chksum=0) / VXLAN(flags=0x08, vni=0xabcdef)
           / Ether(dst=MAC_B, src=MAC_A) / Dot1Q(vlan=7) / IP(src="10.0.0.10", dst="10.0.0.20", id=8)
           / UDP(sport=1234, dport=5678) / b"inner udp")


def mac(m):
    return str(m).lower()


def describe(pkt):
    """The manifest layers of a dissected packet, outermost first."""
    layers = []
    layer = pkt
    while layer is not None and not isinstance(layer, (Padding,)) and layer.name != "Raw":
        if isinstance(layer, Ether):
            layers.append({"layer": "ethernet", "destination": mac(layer.dst), "source": mac(layer.src),
                           "ethertype": layer.type, "vlans": []})
        elif isinstance(layer, (Dot1Q, Dot1AD)):
            tpid = 0x88a8 if isinstance(layer, Dot1AD) else 0x8100
            eth = next(l for l in reversed(layers) if l["layer"] == "ethernet")
            eth["vlans"].append({"tpid": tpid, "priority": layer.prio, "drop_eligible": bool(layer.id),
                                 "vlan_id": layer.vlan})
            eth["ethertype"] = layer.type  # the view reports the innermost ethertype
        elif isinstance(layer, ARP):
            layers.append({"layer": "arp", "operation": layer.op, "sender_mac": mac(layer.hwsrc),
                           "sender_ip": layer.psrc, "target_mac": mac(layer.hwdst), "target_ip": layer.pdst})
        elif isinstance(layer, IP):
            layers.append({"layer": "ipv4", "ihl": layer.ihl, "dscp": layer.tos >> 2, "ecn": layer.tos & 3,
                           "total_length": layer.len, "identification": layer.id,
                           "dont_fragment": bool(layer.flags.DF), "more_fragments": bool(layer.flags.MF),
                           "fragment_offset": layer.frag, "ttl": layer.ttl, "protocol": layer.proto,
                           "checksum": layer.chksum, "source": layer.src, "destination": layer.dst,
                           "options_length": layer.ihl * 4 - 20})
            if layer.frag != 0:
                break  # a later fragment: the rest is opaque data
        elif isinstance(layer, IPv6):
            layers.append({"layer": "ipv6", "traffic_class": layer.tc, "flow_label": layer.fl,
                           "payload_length": layer.plen, "next_header": layer.nh, "hop_limit": layer.hlim,
                           "source": layer.src, "destination": layer.dst, "extension_headers": []})
        elif isinstance(layer, (IPv6ExtHdrHopByHop, IPv6ExtHdrRouting, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment)):
            ip6 = next(l for l in reversed(layers) if l["layer"] == "ipv6")
            kind = {IPv6ExtHdrHopByHop: 0, IPv6ExtHdrRouting: 43, IPv6ExtHdrDestOpt: 60,
                    IPv6ExtHdrFragment: 44}[type(layer)]
            ext = {"type": kind, "next_header": layer.nh, "length": len(raw(layer)) - len(raw(layer.payload))}
            if isinstance(layer, IPv6ExtHdrFragment):
                ext.update({"fragment_offset": layer.offset, "more_fragments": bool(layer.m),
                            "identification": layer.id})
            if isinstance(layer, IPv6ExtHdrRouting):
                ext["final_destination"] = layer.addresses[-1]
            ip6["extension_headers"].append(ext)
        elif isinstance(layer, UDP):
            layers.append({"layer": "udp", "source_port": layer.sport, "destination_port": layer.dport,
                           "length": layer.len, "checksum": layer.chksum})
            if layer.dport != 4789:
                break  # the payload is application data
        elif isinstance(layer, VXLAN):
            layers.append({"layer": "vxlan", "flags": int(layer.flags), "vni": layer.vni})
        elif isinstance(layer, TCP):
            layers.append({"layer": "tcp", "source_port": layer.sport, "destination_port": layer.dport,
                           "sequence": layer.seq, "acknowledgment": layer.ack, "data_offset": layer.dataofs,
                           "flags": int(layer.flags), "window": layer.window, "checksum": layer.chksum,
                           "urgent_pointer": layer.urgptr, "options_length": layer.dataofs * 4 - 20,
                           "payload_length": len(raw(layer.payload))})
            break
        elif isinstance(layer, ICMP):
            entry = {"layer": "icmpv4", "type": layer.type, "code": layer.code, "checksum": layer.chksum,
                     "body_length": len(raw(layer.payload))}
            if layer.type in (0, 8):
                entry.update({"identifier": layer.id, "sequence": layer.seq})
            if layer.type == 3 and layer.code == 4:
                entry["next_hop_mtu"] = layer.nexthopmtu
            layers.append(entry)
            break  # an error's quoted datagram is checked as opaque bytes
        elif isinstance(layer, (ICMPv6EchoRequest, ICMPv6EchoReply)):
            layers.append({"layer": "icmpv6", "type": layer.type, "code": layer.code, "checksum": layer.cksum,
                           "identifier": layer.id, "sequence": layer.seq, "body_length": len(layer.data)})
            break
        elif isinstance(layer, ICMPv6PacketTooBig):
            layers.append({"layer": "icmpv6", "type": layer.type, "code": layer.code, "checksum": layer.cksum,
                           "mtu": layer.mtu, "body_length": len(raw(layer.payload))})
            break
        else:
            raise ValueError(f"no manifest rule for {layer.name}")
        layer = layer.payload if layer.payload else None
    return layers


def main():
    OUT.mkdir(exist_ok=True)
    manifest = []
    for name, description, pkt in frames():
        wire = raw(pkt)
        dissected = Ether(wire)  # re-dissect so every computed field (lengths, checksums) is read back
        (OUT / f"{name}.hex").write_text(wire.hex() + "\n")
        manifest.append({"name": name, "file": f"{name}.hex", "description": description,
                         "length": len(wire), "layers": describe(dissected)})
    (OUT / "manifest.json").write_text(json.dumps({"frames": manifest}, indent=1) + "\n")
    print(f"wrote {len(manifest)} frames to {OUT}")


if __name__ == "__main__":
    main()
