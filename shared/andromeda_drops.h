/* Every reason Andromeda drops a packet, in every layer, defined once: the BPF programs' counter
 * fields, the C++ enums, their names, the counters the daemon publishes and the table
 * `andromedactl drops` prints all come from these lists (userspace/util/drop_registry.hpp; the C++
 * enums of every layer through one macro, userspace/util/drop_reasons.hpp).
 *
 * X(name, id, "description"). The id is stable: logs, metrics and docs may name it. Each layer's
 * ids start after its base (XDP 100, kernel fast path 200, overlay decapsulation 300, pipeline 400,
 * NAT 500, AF_XDP I/O 600, the pipeline's NAT stage 700); a new reason is appended with the next
 * free id of its layer, and an id is never reused or renumbered. */
#ifndef ANDROMEDA_DROPS_H
#define ANDROMEDA_DROPS_H

/* The XDP program on every port (struct andromeda_xdp_stats, field drop_<name>). */
#define ANDROMEDA_DROPS_XDP(X) \
	X(truncated, 101, "shorter than the headers it claims") \
	X(bad_ip_header, 102, "IPv4 IHL < 5, version != 4, or total length inconsistent") \
	X(overlay_fragment, 103, "fragmented overlay packet: tunnels are never fragmented") \
	X(unknown_peer, 104, "overlay packet from an address that is no peer node") \
	X(bad_overlay_header, 105, "wrong Andromeda version / VXLAN I flag clear") \
	X(unknown_vni, 106, "VNI of no VPC") \
	X(spoofed_mac, 107, "tenant frame whose source MAC is not its endpoint's") \
	X(no_socket, 108, "no AF_XDP socket bound for this port and queue")

/* The kernel fast path's tc programs (struct andromeda_fp_stats, field drop_<name>). */
#define ANDROMEDA_DROPS_FASTPATH(X) \
	X(spoofed_mac, 201, "tenant frame whose source MAC is not its endpoint's") \
	X(spoofed_ip, 202, "tenant IPv4 packet whose source is not its endpoint's") \
	X(spoofed_arp, 203, "tenant ARP whose sender is not its endpoint") \
	X(tagged, 204, "tenant frame with an 802.1Q tag: tenant ports are untagged") \
	X(no_port, 205, "a tc program ran on an interface missing from the port map") \
	X(adjust_failed, 206, "the kernel refused to add or remove the outer headers") \
	X(decap_mismatch, 207, "handed over by the underlay XDP, refused by tc (never expected)") \
	X(nat_rewrite_failed, 208, "the kernel refused to rewrite a NAT flow's addresses, ports or checksums") \
	X(punt_rate_limited, 209, "a tenant frame for the pipeline, over its port's punt budget ([node] punt_rate, punt_burst)") \
	X(decap_bad_outer_csum, 210, "an overlay packet over an IPv6 underlay, above the underlay MTU and not GSO, whose outer UDP checksum does not verify") \
	X(reseg_unfit, 211, "on the segmenting pair, a frame that is not a segment of this node's overlay packets over IPv6 whose outer checksum can be derived (never expected)")

/* Why an overlay packet fails decapsulation (overlay::DecapError; the pipeline counts them as
 * decap_<name> and drops the packet as malformed_overlay). */
#define ANDROMEDA_DROPS_DECAP(X) \
	X(truncated_ethernet, 301, "shorter than an Ethernet header (and its VLAN tags)") \
	X(too_many_vlan_tags, 302, "more than two stacked 802.1Q/802.1ad tags") \
	X(not_ipv4, 303, "outer ethertype is neither IPv4 nor IPv6") \
	X(truncated_ipv4, 304, "fewer than 20 bytes after the Ethernet header") \
	X(bad_ip_version, 305, "version nibble is not 4 (not 6 after an IPv6 ethertype)") \
	X(bad_ip_header_length, 306, "IHL < 5") \
	X(bad_ip_total_length, 307, "total length below the header length or beyond the frame") \
	X(bad_ip_checksum, 308, "header checksum does not verify") \
	X(ip_fragment, 309, "MF set or offset != 0, or an IPv6 fragment header: tunnels are never fragmented") \
	X(not_udp, 310, "IPv4 protocol or IPv6 next header is neither UDP nor an extension header") \
	X(truncated_udp, 311, "IP payload shorter than a UDP header") \
	X(bad_udp_length, 312, "UDP length below 8 or beyond the IP payload") \
	X(wrong_udp_port, 313, "destination port is not the configured overlay port") \
	X(bad_udp_checksum, 314, "a nonzero UDP checksum that does not verify") \
	X(truncated_overlay_header, 315, "UDP payload shorter than the 8-byte overlay header") \
	X(bad_overlay_version, 316, "Andromeda header version is not 1") \
	X(unsupported_inner_protocol, 317, "Andromeda inner protocol is not 0 (Ethernet)") \
	X(vxlan_vni_flag_clear, 318, "VXLAN I flag (0x08) not set") \
	X(inner_frame_too_short, 319, "inner frame shorter than an Ethernet header") \
	/* an IPv6 underlay (docs/wire-format.md, "IPv6 underlay") */ \
	X(truncated_ipv6, 320, "fewer than 40 bytes after the Ethernet header of an IPv6 packet") \
	X(bad_ipv6_payload_length, 321, "IPv6 payload length beyond the frame") \
	X(ipv6_extension_header, 322, "IPv6 next header is an extension header other than a fragment header: UDP must follow the fixed header") \
	X(udp_zero_checksum_ipv6, 323, "UDP checksum 0 over IPv6, where it is mandatory (RFC 8200 section 8.1)")

/* The AF_XDP pipeline (dataplane::DropReason; counted as drop_<name> in the dataplane group). */
#define ANDROMEDA_DROPS_PIPELINE(X) \
	/* any port */ \
	X(unknown_port, 401, "the frame came from a port missing from the port table") \
	X(malformed_ethernet, 402, "shorter than an Ethernet header, or more than two VLAN tags") \
	X(no_tx_buffer, 403, "no spare buffer or emission slot left for an output frame") \
	X(tx_buffer_too_small, 404, "a spare buffer cannot hold the output frame") \
	/* tenant ports */ \
	X(tenant_port_unbound, 405, "the tenant port carries no local endpoint in the current fabric") \
	X(spoofed_source_mac, 406, "Ethernet source is not the port's endpoint MAC") \
	X(spoofed_source_ip, 407, "IP source is not the port's endpoint address (IPv6: its address or its EUI-64 link-local)") \
	X(spoofed_arp_sender, 408, "ARP sender MAC/IP is not the port's endpoint") \
	X(malformed_arp, 409, "not an Ethernet/IPv4 ARP packet, or truncated") \
	X(arp_not_request, 410, "ARP reply or unknown opcode from a tenant: the gateway answers all requests") \
	X(arp_probe, 411, "ARP probe (sender 0.0.0.0): answering would report a conflict") \
	X(arp_for_own_address, 412, "ARP for the asker's own address (gratuitous/announcement): never answered") \
	X(multicast_or_broadcast, 413, "multicast/broadcast destination: only a VXLAN fabric floods it, in a VPC without security groups") \
	X(not_to_gateway_mac, 414, "unicast IP frame not sent to the VPC's gateway MAC") \
	X(unsupported_ethertype, 415, "neither IPv4, IPv6 nor ARP") \
	X(malformed_ipv4, 416, "IPv4 header or lengths do not parse") \
	X(bad_ipv4_checksum, 417, "IPv4 header checksum does not verify") \
	X(malformed_ipv6, 418, "IPv6 header, lengths or extension headers do not parse") \
	X(ipv6_not_routed, 419, "IPv6 in a VPC without an ipv6_prefix, or to an address outside its prefix (no IPv6 NAT), or link-local beyond the gateway") \
	X(gateway_unsupported, 420, "to the gateway address but not an echo request it can answer") \
	X(no_such_endpoint, 421, "destination inside the VPC but no endpoint has that address") \
	X(no_route, 422, "destination outside the VPC and the VPC has no NAT") \
	X(endpoint_port_unbound, 423, "local destination endpoint whose tenant port is not in the port table") \
	X(no_next_hop, 424, "the destination node's underlay MAC (or address) is unknown") \
	X(no_underlay_port, 425, "no port with the underlay role is configured") \
	X(no_underlay_address, 426, "this node's underlay IPv4 address is unknown") \
	X(too_big_no_icmp, 427, "too big for the overlay, and an ICMP error about it is not allowed") \
	X(icmp_error_rate_limited, 428, "too big for the overlay; the sender's ICMP error budget is spent") \
	/* underlay port */ \
	X(underlay_not_overlay, 429, "not IPv4/UDP to the overlay port (host traffic that should have been passed)") \
	X(malformed_overlay, 430, "an overlay packet that fails decapsulation (see decap_errors)") \
	X(wrong_underlay_vlan, 431, "outer 802.1Q tag is not [node] underlay_vlan (another VLAN of the trunk)") \
	X(not_for_this_node, 432, "outer destination is not this node's underlay address") \
	X(unknown_peer, 433, "outer source is not a known peer node") \
	X(overlay_control_unsupported, 434, "Andromeda control/OAM flags set: no control messages are handled") \
	X(overlay_hop_limit_exceeded, 435, "overlay hop limit is 0") \
	X(unknown_vni, 436, "VNI of no VPC") \
	X(malformed_inner_frame, 437, "inner Ethernet/IPv4 malformed or its header checksum fails") \
	X(inner_not_ipv4, 438, "inner frame is neither IPv4 nor IPv6 of a dual-stack VPC (ARP and ND are answered locally, never tunnelled; with VXLAN a peer's tenant's ARP request is answered over the overlay)") \
	X(fabric_spoofed_source, 439, "inner source is not an endpoint of the VPC on the sending node") \
	X(not_local_endpoint, 440, "inner destination is not an endpoint of the VPC on this node") \
	X(underlay_icmp_read, 442, "ICMP fragmentation needed or ICMPv6 Packet Too Big about an outer packet, read for the path MTU (underlay_pmtu_learned / _ignored)") \
	/* uplink port */ \
	X(uplink_without_nat, 441, "uplink frame but this node is no VPC's NAT gateway") \
	/* tenant ports, again */ \
	X(gateway_reply_rate_limited, 443, "an ARP request, echo request or DNS query to the gateway beyond its sender's reply budget") \
	/* security groups, at the sending (egress) and the receiving (ingress) endpoint */ \
	X(policy_denied, 444, "denied by a security group rule or the VPC's default (andromedactl policy counts which)") \
	X(policy_fragment_unknown, 445, "a non-first fragment whose first fragment the firewall did not allow (or never saw)") \
	X(firewall_table_full, 446, "a new flow the rules allow, with the firewall's connection table full") \
	/* the gateway's DHCP and DNS (docs/vm-tenants.md) */ \
	X(dhcp_no_reply, 447, "a DHCP message the gateway sends nothing for: RELEASE/DECLINE (recorded), another endpoint's MAC, over its rate, malformed, relayed (andromedactl dhcp counts which)") \
	X(dns_not_served, 448, "a DNS query to the gateway with the gateway's DNS service off, or its queue full") \
	/* the gateway's IPv6 side (docs/ipv6.md) */ \
	X(nd_not_answered, 449, "a Neighbor Solicitation the ND proxy leaves unanswered: DAD for a tenant's address, for the asker's own, or outside the VPC's prefix") \
	X(malformed_ndp, 450, "a Neighbor or Router Solicitation breaking RFC 4861's checks (hop limit 255, code, checksum, options)") \
	X(router_solicitation_deferred, 451, "a Router Solicitation within 3 s of the port's last advertisement: the next scheduled one answers it") \
	X(tenant_router_message, 452, "a Router or Neighbor Advertisement or a Redirect from a tenant: the gateway is the only router and keeps no neighbour cache") \
	X(mld_ignored, 453, "an MLD report or query: the gateway keeps no multicast groups (a VXLAN fabric floods to every member)") \
	X(overlay_resolution_not_ours, 454, "an ARP request or Neighbor Solicitation from a VXLAN peer's tenant for an address that is no endpoint of this node: its own node answers, or no one") \
	X(flood_rate_limited, 455, "broadcast or multicast beyond the sender's flood budget ([node] flood_rate, flood_burst)") \
	X(flood_no_members, 456, "broadcast or multicast with no one to flood it to: no other endpoint of the VPC is bound here or placed on a reachable node")

/* The NAT (nat::DropReason; drop_<name> in the nat group). A dropped packet is never forwarded:
 * a tenant's private address must not leak to the uplink. */
#define ANDROMEDA_DROPS_NAT(X) \
	X(malformed, 501, "IPv4/TCP/UDP/ICMP header truncated or inconsistent") \
	X(fragment, 502, "IP fragments are not translated (no reassembly)") \
	X(unsupported_protocol, 503, "neither TCP, UDP nor ICMP") \
	X(unsupported_icmp, 504, "an ICMP message that is neither echo nor a known error") \
	X(no_nat_config, 505, "the tenant's VPC has no NAT (or no rules are loaded)") \
	X(not_nat_address, 506, "inbound packet not addressed to any NAT address") \
	X(no_flow, 507, "inbound packet matching no flow, mapping or port forward") \
	X(tcp_not_syn, 508, "a new TCP flow must start with a SYN") \
	X(icmp_error_no_flow, 509, "ICMP error quoting a packet of no known flow") \
	X(table_full, 510, "the flow table is at its configured size") \
	X(ports_exhausted, 511, "no free port (or ICMP id) left in the VPC's range") \
	X(nat_address_limit, 512, "too many NAT addresses in use at once (max_nat_addresses)") \
	X(tuple_conflict, 513, "the translated tuple is already used by another flow") \
	X(stale_flow, 514, "the flow's VPC no longer NATs to the flow's address") \
	X(tenant_flow_rate_limited, 515, "a new flow beyond its tenant's budget ([node.uplink] new_flows_per_tenant)")

/* The AF_XDP I/O layer, frames freed unsent (io::DropReason; drop_<name> in the io group). */
#define ANDROMEDA_DROPS_IO(X) \
	X(handler, 601, "the frame's handler (the pipeline or NAT) dropped it; its own counters say why") \
	X(unhandled, 602, "the handler gave the frame no fate") \
	X(tx_ring_full, 603, "the target TX ring had no room, even after reclaiming completions") \
	X(no_such_socket, 604, "transmit() named a socket this worker does not have") \
	X(invalid_descriptor, 605, "the kernel handed back an address outside the UMEM or a chunk")

/* The NAT stage around the pipeline: frames the pipeline handed to NAT that the stage itself, not
 * the NAT engine, drops (dataplane::NatStageDrop; stage_drop_<name> in the nat group). */
#define ANDROMEDA_DROPS_NAT_STAGE(X) \
	X(no_nat_engine, 701, "the frame needs NAT, but this node is no NAT gateway") \
	X(not_ipv4, 702, "the frame for NAT carries no IPv4 packet") \
	X(no_uplink_port, 703, "translated outbound, but no port has the uplink role") \
	X(no_uplink_next_hop, 704, "translated outbound, but the uplink router's MAC is not known yet")

#endif /* ANDROMEDA_DROPS_H */
