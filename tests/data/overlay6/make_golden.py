#!/usr/bin/python3
"""Golden overlay packets over an IPv6 underlay, made by scapy (an implementation independent of
ours), for tests/unit/overlay/ipv6_underlay_test.cpp, and the IPv6 seeds of the inspect fuzz target
(the one that runs decapsulate()).

Run with Debian's Python, which has python3-scapy:  /usr/bin/python3 tests/data/overlay6/make_golden.py
Writes tests/data/overlay6/<name>.hex (the whole outer frame, lowercase hex on one line),
tests/data/overlay6/manifest.json (for every frame, what the encapsulating template and overlay
fields were: the test encapsulates the inner frame with them and must produce the frame byte for
byte) and tests/fuzz/corpus/inspect/underlay6-<name>.bin (the frames, and a few that decap refuses).

The outer IPv6 header is written from docs/wire-format.md ("IPv6 underlay"): flow label
hash << 4 | hash >> 12, payload length = UDP length, next header 17, and the UDP checksum left to
scapy (over the IPv6 pseudo-header, a computed 0 sent as 0xffff).
"""

import json
import pathlib
import struct

from scapy.all import IP, UDP, Dot1Q, Ether, IPv6, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop, raw

HERE = pathlib.Path(__file__).resolve().parent
SEEDS = HERE.parent.parent / "fuzz" / "corpus" / "inspect"

SRC_MAC = "02:00:00:00:a1:01"
DST_MAC = "02:00:00:00:a1:02"
SRC_IP6 = "fd00:1::1"
DST_IP6 = "fd00:1::2"


def flow_label(flow_hash):
    return (flow_hash << 4 | flow_hash >> 12) & 0xFFFFF


def inner_frame(payload):
    return raw(Ether(dst="02:00:00:00:00:20", src="02:00:00:00:00:10")
               / IP(src="10.0.0.10", dst="10.0.0.20", id=0x1234, flags="DF", ttl=64)
               / UDP(sport=40000, dport=4242) / payload)


def overlay_header(kind, vni, flow_hash, hop_limit):
    if kind == "vxlan":
        return struct.pack("!BBHI", 0x08, 0, 0, vni << 8)
    return struct.pack("!BBHI", 0x10, 0, flow_hash, vni << 8 | hop_limit)


def outer(frame):
    """The outer frame of one manifest entry, built by scapy."""
    ether = Ether(dst=DST_MAC, src=SRC_MAC)
    if frame["vlan_id"]:
        ether = ether / Dot1Q(prio=0, id=0, vlan=frame["vlan_id"])
    ip6 = IPv6(src=frame["src_ip6"], dst=frame["dst_ip6"], tc=frame["tos"], hlim=frame["ttl"],
               fl=flow_label(frame["flow_hash"]), nh=17)
    udp = UDP(sport=frame["flow_hash"] | 0xC000, dport=frame["udp_port"])
    header = overlay_header(frame["kind"], frame["vni"], frame["flow_hash"], frame["hop_limit"])
    return ether / ip6 / udp / header / bytes.fromhex(frame["inner"])


def zero_sum_tail(frame):
    """The frame's inner payload with its last two bytes chosen so that the UDP checksum computes
    to 0 (and is sent as 0xffff): with those bytes 0 the checksum is c = ~S, and adding c to the
    sum makes it 0xffff, whose complement is 0."""
    inner = bytearray.fromhex(frame["inner"])
    assert (8 + 8 + len(inner)) % 2 == 0  # the tail is one whole 16-bit word of the datagram
    inner[-2:] = b"\0\0"
    frame["inner"] = inner.hex()
    c = Ether(raw(outer(frame)))[UDP].chksum
    inner[-2:] = struct.pack("!H", c)
    frame["inner"] = inner.hex()
    return frame


def frames():
    base = {"src_ip6": SRC_IP6, "dst_ip6": DST_IP6, "tos": 0, "ttl": 64, "hop_limit": 64, "vlan_id": 0,
            "inner": inner_frame(b"hello ipv6 underlay").hex()}
    yield "andromeda", "Andromeda, untagged", dict(base, kind="andromeda", udp_port=43481, vni=100,
                                                     flow_hash=0x60D1)
    yield "vxlan", "VXLAN, untagged, traffic class 0xb8, hop limit 9", dict(
        base, kind="vxlan", udp_port=4789, vni=0xABCDEF, flow_hash=0x1A63, tos=0xB8, ttl=9)
    yield "andromeda_tagged", "Andromeda, 802.1Q VID 100, overlay hop limit 7", dict(
        base, kind="andromeda", udp_port=43481, vni=0x123456, flow_hash=0xFFFF, hop_limit=7, vlan_id=100)
    yield "vxlan_tagged", "VXLAN on the kernel's legacy port 8472, VID 4094, other addresses", dict(
        base, kind="vxlan", udp_port=8472, vni=1, flow_hash=0x0001, vlan_id=4094,
        src_ip6="2001:db8:ffff::fffe", dst_ip6="2001:db8::1:0:0:1")
    yield "andromeda_checksum_ffff", "Andromeda whose UDP checksum computes to 0 and is sent as 0xffff", zero_sum_tail(
        dict(base, kind="andromeda", udp_port=43481, vni=100, flow_hash=0x60D1,
             inner=inner_frame(b"hello ipv6 underlay!").hex()))


def refused_seeds(good):
    """Seeds decap refuses, for the fuzzer to start near each IPv6 refusal."""
    pkt = Ether(raw(good))
    zero = pkt.copy()
    zero[UDP].chksum = 0
    yield "zero-checksum", raw(zero)
    ip6 = pkt[IPv6]
    yield "fragment-header", raw(Ether(dst=DST_MAC, src=SRC_MAC)
                                 / IPv6(src=ip6.src, dst=ip6.dst, fl=ip6.fl) / IPv6ExtHdrFragment(id=7)
                                 / ip6[UDP].copy())
    yield "hop-by-hop", raw(Ether(dst=DST_MAC, src=SRC_MAC)
                            / IPv6(src=ip6.src, dst=ip6.dst, fl=ip6.fl) / IPv6ExtHdrHopByHop()
                            / ip6[UDP].copy())


def main():
    manifest = []
    SEEDS.mkdir(parents=True, exist_ok=True)
    good = None
    for name, description, frame in frames():
        wire = raw(outer(frame))
        dissected = Ether(wire)
        udp = dissected[UDP]
        assert udp.chksum != 0 and dissected[IPv6].plen == udp.len
        if name == "andromeda_checksum_ffff":
            assert udp.chksum == 0xFFFF, hex(udp.chksum)
        (HERE / f"{name}.hex").write_text(wire.hex() + "\n")
        (SEEDS / f"underlay6-{name}.bin").write_bytes(wire)
        good = good or wire
        manifest.append(dict(frame, name=name, file=f"{name}.hex", description=description,
                             src_mac=SRC_MAC, dst_mac=DST_MAC, flow_label=flow_label(frame["flow_hash"]),
                             udp_checksum=udp.chksum, length=len(wire)))
    for name, wire in refused_seeds(good):
        (SEEDS / f"underlay6-{name}.bin").write_bytes(wire)
    (HERE / "manifest.json").write_text(json.dumps({"frames": manifest}, indent=1) + "\n")
    print(f"wrote {len(manifest)} frames to {HERE} and seeds to {SEEDS}")


if __name__ == "__main__":
    main()
