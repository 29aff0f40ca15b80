#!/usr/bin/python3
"""Golden DHCPv4 and DNS frames for the gateway's codecs and servers, made by scapy.

Run with Debian's Python, which has python3-scapy:  /usr/bin/python3 tests/data/gateway/make_golden.py
Writes tests/data/gateway/<name>.hex (one frame, lowercase hex on one line) and manifest.json.

Requests (from a tenant) name the reply the gateway must send byte for byte ("reply"), or the
outcome when it sends none. The replies are written here from RFC 2131 / RFC 1035 and the
server's documented choices (option order, padding to 300 bytes, TTL 30, ...), encoded by scapy.
For every frame the manifest also lists what scapy put on the wire, read back from its bytes: the
BOOTP fields and each option (code, value) of each DHCP message, the header, questions and records
of each DNS message (with how each owner name is encoded: labels in full, then a pointer or not).
"""

import json
import pathlib
import struct

from scapy.all import (BOOTP, DHCP, DNS, DNSQR, DNSRR, DNSRROPT, IP, TCP, UDP, Ether, Raw, raw)

OUT = pathlib.Path(__file__).resolve().parent

BROADCAST = "ff:ff:ff:ff:ff:ff"
GW_MAC = "02:aa:00:00:00:01"
GW_IP = "10.0.0.1"
VM_MAC = "02:00:00:00:00:0a"
VM_IP = "10.0.0.10"
VM_CHADDR = bytes.fromhex("02000000000a")
CLIENT_ID = b"\x01" + VM_CHADDR
XID = 0x3903F326
LEASE = 3600
MTU = 1450
DOMAIN = "blue.internal"
HOST = "web"
PRL = [1, 28, 2, 3, 15, 6, 12, 26, 51, 42]  # as a Linux client asks, plus 26; 2 and 42 we do not serve


def client(dst_ip="255.255.255.255", src_ip="0.0.0.0", dst_mac=BROADCAST):
    return Ether(dst=dst_mac, src=VM_MAC) / IP(src=src_ip, dst=dst_ip, ttl=64, id=0x4d2) / UDP(sport=68, dport=67)


def server(dst_ip, dst_mac):
    return Ether(dst=dst_mac, src=GW_MAC) / IP(src=GW_IP, dst=dst_ip, ttl=64, id=0, flags="DF") / UDP(sport=67, dport=68)


def padded(bootp_and_dhcp):
    """RFC 1542: the server pads its messages to 300 bytes, after End."""
    n = len(raw(bootp_and_dhcp))
    return bootp_and_dhcp / Raw(b"\x00" * max(0, 300 - n))


def lease_options():
    return [("lease_time", LEASE), ("renewal_time", LEASE // 2), ("rebinding_time", LEASE * 7 // 8)]


# The parameters of PRL, in its order, that the server has (it skips 2, 42 and 51, already sent).
def prl_parameters():
    return [("subnet_mask", "255.255.255.0"), ("broadcast_address", "10.0.0.255"), ("router", GW_IP),
            ("domain", DOMAIN), ("name_server", GW_IP), ("hostname", HOST), ("interface-mtu", MTU)]


def dhcp_frames():
    """(name, description, packet, expectation) for every DHCP golden frame."""
    discover_options = [("message-type", "discover"), ("client_id", CLIENT_ID), ("max_dhcp_size", 1500),
                        ("hostname", "vm1"), ("vendor_class_id", "andromeda-test"), ("param_req_list", PRL), "end"]
    yield ("dhcp_discover", "DISCOVER, broadcast flag, client id, max size, host name, vendor class, PRL",
           client() / BOOTP(op=1, xid=XID, flags=0x8000, chaddr=VM_CHADDR) / DHCP(options=discover_options),
           {"reply": "dhcp_offer"})
    yield ("dhcp_offer", "OFFER to the broadcast flag: every option the issue names, in PRL order",
           server("255.255.255.255", BROADCAST)
           / padded(BOOTP(op=2, xid=XID, flags=0x8000, yiaddr=VM_IP, chaddr=VM_CHADDR)
                    / DHCP(options=[("message-type", "offer"), ("server_id", GW_IP), ("client_id", CLIENT_ID)]
                           + lease_options() + prl_parameters() + ["end"])), None)
    yield ("dhcp_request", "REQUEST in SELECTING: our server id, the offered address, no broadcast flag",
           client() / BOOTP(op=1, xid=XID, chaddr=VM_CHADDR)
           / DHCP(options=[("message-type", "request"), ("client_id", CLIENT_ID), ("server_id", GW_IP),
                           ("requested_addr", VM_IP), ("max_dhcp_size", 1500), ("param_req_list", PRL), "end"]),
           {"reply": "dhcp_ack"})
    yield ("dhcp_ack", "ACK unicast to yiaddr at chaddr",
           server(VM_IP, VM_MAC)
           / padded(BOOTP(op=2, xid=XID, yiaddr=VM_IP, chaddr=VM_CHADDR)
                    / DHCP(options=[("message-type", "ack"), ("server_id", GW_IP), ("client_id", CLIENT_ID)]
                           + lease_options() + prl_parameters() + ["end"])), None)
    yield ("dhcp_request_wrong_address", "REQUEST in INIT-REBOOT for an address that is not the client's",
           client() / BOOTP(op=1, xid=XID + 1, chaddr=VM_CHADDR)
           / DHCP(options=[("message-type", "request"), ("client_id", CLIENT_ID), ("requested_addr", "10.0.0.99"),
                           "end"]),
           {"reply": "dhcp_nak"})
    yield ("dhcp_nak", "NAK, always broadcast, with a message",
           server("255.255.255.255", BROADCAST)
           / padded(BOOTP(op=2, xid=XID + 1, chaddr=VM_CHADDR)
                    / DHCP(options=[("message-type", "nak"), ("server_id", GW_IP), ("client_id", CLIENT_ID),
                                    ("error_message", "requested address is not this client's"), "end"])), None)
    yield ("dhcp_request_renewing", "REQUEST in RENEWING: unicast to the server, ciaddr set, no PRL",
           client(dst_ip=GW_IP, src_ip=VM_IP, dst_mac=GW_MAC) / BOOTP(op=1, xid=XID + 2, ciaddr=VM_IP, chaddr=VM_CHADDR)
           / DHCP(options=[("message-type", "request"), "end"]),
           {"reply": "dhcp_ack_renewing"})
    yield ("dhcp_ack_renewing", "ACK to ciaddr with the default parameters (1, 3, 6, 15, 26)",
           server(VM_IP, VM_MAC)
           / padded(BOOTP(op=2, xid=XID + 2, ciaddr=VM_IP, yiaddr=VM_IP, chaddr=VM_CHADDR)
                    / DHCP(options=[("message-type", "ack"), ("server_id", GW_IP)] + lease_options()
                           + [("subnet_mask", "255.255.255.0"), ("router", GW_IP), ("name_server", GW_IP),
                              ("domain", DOMAIN), ("interface-mtu", MTU), "end"])), None)
    yield ("dhcp_inform", "INFORM from the configured address, asking for mask, router, DNS, domain, MTU",
           client(src_ip=VM_IP) / BOOTP(op=1, xid=XID + 3, ciaddr=VM_IP, chaddr=VM_CHADDR)
           / DHCP(options=[("message-type", "inform"), ("param_req_list", [1, 3, 6, 15, 26]), "end"]),
           {"reply": "dhcp_inform_ack"})
    yield ("dhcp_inform_ack", "ACK to an INFORM: to ciaddr, no yiaddr, no lease times",
           server(VM_IP, VM_MAC)
           / padded(BOOTP(op=2, xid=XID + 3, ciaddr=VM_IP, chaddr=VM_CHADDR)
                    / DHCP(options=[("message-type", "ack"), ("server_id", GW_IP), ("subnet_mask", "255.255.255.0"),
                                    ("router", GW_IP), ("name_server", GW_IP), ("domain", DOMAIN),
                                    ("interface-mtu", MTU), "end"])), None)
    yield ("dhcp_release", "RELEASE, unicast to the server",
           client(dst_ip=GW_IP, src_ip=VM_IP, dst_mac=GW_MAC) / BOOTP(op=1, xid=XID + 4, ciaddr=VM_IP, chaddr=VM_CHADDR)
           / DHCP(options=[("message-type", "release"), ("server_id", GW_IP), ("client_id", CLIENT_ID), "end"]),
           {"outcome": "released"})
    yield ("dhcp_decline", "DECLINE: the address is in use on the link",
           client() / BOOTP(op=1, xid=XID + 5, chaddr=VM_CHADDR)
           / DHCP(options=[("message-type", "decline"), ("server_id", GW_IP), ("requested_addr", VM_IP), "end"]),
           {"outcome": "declined"})
    # Option Overload: the PRL and End sit in the file field (RFC 2131 4.1: read after the options).
    file_field = bytes([55, 3, 1, 3, 26, 255]) + bytes(128 - 6)
    yield ("dhcp_discover_overload", "DISCOVER with option 52 = 1: its PRL is in the file field",
           client() / BOOTP(op=1, xid=XID + 6, chaddr=VM_CHADDR, file=file_field)
           / DHCP(options=[("message-type", "discover"), ("dhcp-option-overload", 1), "end"]),
           {"reply": "dhcp_offer_overload"})
    yield ("dhcp_offer_overload", "OFFER answering the PRL read from the file field",
           server(VM_IP, VM_MAC)
           / padded(BOOTP(op=2, xid=XID + 6, yiaddr=VM_IP, chaddr=VM_CHADDR)
                    / DHCP(options=[("message-type", "offer"), ("server_id", GW_IP)] + lease_options()
                           + [("subnet_mask", "255.255.255.0"), ("router", GW_IP), ("interface-mtu", MTU), "end"])),
           None)


DNS_CLIENT_PORT = 40001


def to_gateway(transport):
    return Ether(dst=GW_MAC, src=VM_MAC) / IP(src=VM_IP, dst=GW_IP, ttl=64, id=0x77) / transport


def from_gateway(transport):
    return Ether(dst=VM_MAC, src=GW_MAC) / IP(src=GW_IP, dst=VM_IP, ttl=64, id=0, flags="DF") / transport


def udp_query(dns):
    return to_gateway(UDP(sport=DNS_CLIENT_PORT, dport=53) / dns)


def udp_answer(dns):
    return from_gateway(UDP(sport=53, dport=DNS_CLIENT_PORT) / dns)


def local_answer(query, rcode=0, answers=None, opt=False):
    """The gateway's answer: AA, RA, RD copied, names compressed to the question."""
    dns = DNS(id=query.id, qr=1, aa=1, rd=query.rd, ra=1, rcode=rcode, qd=query.qd, an=answers,
              ar=DNSRROPT(rclass=1232, z=0) if opt else None)
    return dns.compress()


def dns_frames():
    q_a = DNS(id=0x1234, rd=1, qd=DNSQR(qname="web.blue.internal", qtype="A"))
    yield ("dns_query_a", "A query for a VPC name", udp_query(q_a), {"reply": "dns_answer_a", "outcome": "answered"})
    yield ("dns_answer_a", "the local A answer, its owner name a pointer to the question",
           udp_answer(local_answer(q_a, answers=DNSRR(rrname="web.blue.internal", type="A", ttl=30, rdata=VM_IP))),
           None)
    q_aaaa = DNS(id=0x2345, rd=1, qd=DNSQR(qname="WEB.Blue.Internal", qtype="AAAA"), ar=DNSRROPT(rclass=4096, z=0))
    yield ("dns_query_aaaa_edns", "AAAA query in mixed case, with EDNS (4096)", udp_query(q_aaaa),
           {"reply": "dns_answer_aaaa", "outcome": "answered"})
    yield ("dns_answer_aaaa", "the local AAAA answer, the question's case kept, our OPT (1232)",
           udp_answer(local_answer(q_aaaa, opt=True,
                                   answers=DNSRR(rrname="WEB.Blue.Internal", type="AAAA", ttl=30, rdata="fd00::a"))),
           None)
    q_nx = DNS(id=0x3456, rd=1, qd=DNSQR(qname="nope.blue.internal", qtype="A"))
    yield ("dns_query_nxdomain", "A query for a name the VPC does not have", udp_query(q_nx),
           {"reply": "dns_answer_nxdomain", "outcome": "nxdomain"})
    yield ("dns_answer_nxdomain", "NXDOMAIN, no SOA", udp_answer(local_answer(q_nx, rcode=3)), None)
    q_mx = DNS(id=0x4567, rd=0, qd=DNSQR(qname="web.blue.internal", qtype="MX"))
    yield ("dns_query_nodata", "MX query for a VPC name", udp_query(q_mx),
           {"reply": "dns_answer_nodata", "outcome": "nodata"})
    yield ("dns_answer_nodata", "NODATA: NOERROR without answers", udp_answer(local_answer(q_mx)), None)
    q_fwd = DNS(id=0x5678, rd=1, qd=DNSQR(qname="www.example.com", qtype="A"))
    yield ("dns_query_upstream", "A query for a name outside the VPC: forwarded", udp_query(q_fwd),
           {"outcome": "forwarded"})
    upstream = DNS(id=0x5678, qr=1, rd=1, ra=1, qd=q_fwd.qd,
                   an=DNSRR(rrname="www.example.com", type="CNAME", ttl=300, rdata="web.example.com")
                   / DNSRR(rrname="web.example.com", type="A", ttl=60, rdata="192.0.2.7")).compress()
    yield ("dns_answer_upstream", "the upstream's answer returned: CNAME and A, compressed names (also in RDATA)",
           udp_answer(upstream), None)
    q_tcp = DNS(id=0x6789, rd=1, qd=DNSQR(qname="web.blue.internal", qtype="A"))
    yield ("dns_tcp_query", "A query over TCP, with its 2-byte length",
           to_gateway(TCP(sport=40002, dport=53, flags="PA", seq=1000, ack=2000) / q_tcp),
           {"reply": "dns_tcp_answer", "outcome": "answered"})
    yield ("dns_tcp_answer", "the local answer over TCP",
           from_gateway(TCP(sport=53, dport=40002, flags="PA", seq=2000, ack=1000 + 2 + len(raw(q_tcp)))
                        / local_answer(q_tcp, answers=DNSRR(rrname="web.blue.internal", type="A", ttl=30,
                                                            rdata=VM_IP))), None)
    # A name whose pointer points at itself: the header reads, the question does not.
    looped = struct.pack("!HHHHHH", 0x789A, 0x0100, 1, 0, 0, 0) + b"\x03web\xc0\x0c" + struct.pack("!HH", 1, 1)
    yield ("dns_query_pointer_loop", "a query whose name loops (a pointer to itself): FORMERR",
           udp_query(Raw(looped)), {"reply": "dns_answer_formerr", "outcome": "formerr", "malformed": True})
    yield ("dns_answer_formerr", "FORMERR: the header only",
           udp_answer(DNS(id=0x789A, qr=1, rd=1, ra=1, rcode=1, qd=None)), None)


def dhcp_options(area, name):
    """The options of one area as (code, value hex, area), Pad skipped, up to End."""
    out, at = [], 0
    while at < len(area):
        code = area[at]
        if code == 0:
            at += 1
            continue
        if code == 255:
            break
        length = area[at + 1]
        out.append({"code": code, "value": area[at + 2:at + 2 + length].hex(), "area": name})
        at += 2 + length
    return out, at


def describe_dhcp(message):
    b = BOOTP(message)
    options, end = dhcp_options(message[240:], "options")
    overload = next((int(o["value"], 16) for o in options if o["code"] == 52), 0)
    if overload & 1:
        options += dhcp_options(message[108:236], "file")[0]
    if overload & 2:
        options += dhcp_options(message[44:108], "sname")[0]
    return {"op": b.op, "htype": b.htype, "hlen": b.hlen, "hops": b.hops, "xid": b.xid, "secs": b.secs,
            "flags": int(b.flags), "ciaddr": b.ciaddr, "yiaddr": b.yiaddr, "siaddr": b.siaddr, "giaddr": b.giaddr,
            "chaddr": bytes(b.chaddr).hex(), "sname": bytes(b.sname).hex(), "file": bytes(b.file).hex(),
            "options": options, "options_end": 240 + end, "length": len(message)}


def name_encoding(message, at):
    """How the name at `at` is written: labels in full, then a pointer (or the root)."""
    labels = 0
    while True:
        n = message[at]
        if n >= 0xC0:
            return labels, ((n & 0x3F) << 8) | message[at + 1], at + 2
        if n == 0:
            return labels, None, at + 1
        labels += 1
        at += 1 + n


def describe_dns(message):
    d = DNS(message)
    header = {"id": d.id, "qr": d.qr, "opcode": d.opcode, "aa": d.aa, "tc": d.tc, "rd": d.rd, "ra": d.ra,
              "z": d.z, "ad": d.ad, "cd": d.cd, "rcode": d.rcode, "qdcount": d.qdcount, "ancount": d.ancount,
              "nscount": d.nscount, "arcount": d.arcount}
    at, questions, records = 12, [], []
    for q in [d.qd[i] for i in range(d.qdcount)]:  # scapy's dissection gives the values; the walk, the offsets
        labels, pointer, at = name_encoding(message, at)
        questions.append({"name": q.qname.decode().rstrip(".") or ".", "type": q.qtype, "class": q.qclass,
                          "labels": labels, "pointer": pointer})
        at += 4
    for section, rrs, count in (("answer", d.an, d.ancount), ("authority", d.ns, d.nscount),
                                ("additional", d.ar, d.arcount)):
        rr_list = [rrs[i] for i in range(count)] if count else []
        for rr in rr_list:
            labels, pointer, at = name_encoding(message, at)
            _, rclass, ttl, rdlen = struct.unpack("!HHIH", message[at:at + 10])
            rdata = message[at + 10:at + 10 + rdlen]
            entry = {"section": section, "name": rr.rrname.decode().rstrip(".") or ".", "type": rr.type,
                     "class": rclass, "ttl": ttl, "rdata": rdata.hex(), "labels": labels,
                     "pointer": pointer}
            if rr.type in (1, 28):
                entry["address"] = rr.rdata
            if rr.type == 5:
                entry["target"] = rr.rdata.decode().rstrip(".")
            if rr.type == 41:
                entry.update({"udp_size": rr.rclass, "version": rr.version, "extended_rcode": rr.extrcode})
            records.append(entry)
            at += 10 + rdlen
    return {"header": header, "questions": questions, "records": records, "length": len(message)}


def main():
    manifest = []
    for name, description, pkt, expect in list(dhcp_frames()) + list(dns_frames()):
        wire = raw(pkt)
        frame = Ether(wire)
        entry = {"name": name, "file": f"{name}.hex", "description": description, "length": len(wire)}
        if expect:
            entry["expect"] = expect
        if UDP in frame and 67 in (frame[UDP].sport, frame[UDP].dport):
            payload = bytes(frame[UDP].payload)
            entry.update({"kind": "dhcp", "payload_offset": len(wire) - len(payload), "dhcp": describe_dhcp(payload)})
        elif expect and expect.get("malformed"):
            entry.update({"kind": "dns", "payload_offset": 14 + 20 + 8})
        else:
            transport = frame[UDP] if UDP in frame else frame[TCP]
            payload = bytes(transport.payload)
            offset = len(wire) - len(payload)
            tcp = TCP in frame
            message = payload[2:] if tcp else payload
            entry.update({"kind": "dns_tcp" if tcp else "dns", "payload_offset": offset, "dns": describe_dns(message)})
        (OUT / f"{name}.hex").write_text(wire.hex() + "\n")
        manifest.append(entry)
    (OUT / "manifest.json").write_text(json.dumps({"frames": manifest}, indent=1) + "\n")
    print(f"wrote {len(manifest)} frames to {OUT}")


if __name__ == "__main__":
    main()
