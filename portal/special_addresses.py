"""The IANA special-purpose address registries as data: what the egress guard never connects to (docs/remeasurement.md).

Sources (compiled 2026-12-06; RFC 6890 defines the registries' columns, each entry cites the RFC that made it):

* IANA IPv4 Special-Purpose Address Registry,
  https://www.iana.org/assignments/iana-ipv4-special-registry/ (26 entries);
* IANA IPv6 Special-Purpose Address Registry,
  https://www.iana.org/assignments/iana-ipv6-special-registry/ (25 entries);
* the multicast blocks of the IANA IPv4 Address Space Registry (224.0.0.0/4) and IPv6 Address Space Registry
  (ff00::/8), which the special-purpose registries leave out, and IPv4-compatible IPv6 (::/96, RFC 4291 2.5.5.1,
  deprecated).

Every entry is refused, the registry's "globally reachable" ones included (anycast relays, AS112, AMT): no
inference endpoint lives on them. Five IPv6 forms carry an IPv4 address inside (IPv4-mapped and -compatible, NAT64
well-known and local-use, 6to4, Teredo's client): for those the guard checks the embedded IPv4 address against the
IPv4 table instead (ADDRESS_EMBEDDING_FORMS). An IPv6 address outside global unicast (2000::/3, IANA IPv6 Address
Space Registry) is refused whatever it is.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass


@dataclass(frozen=True)
class SpecialBlock:
    """One registry entry: the block, the registry's name for it, the RFC that made it."""

    block: ipaddress.IPv4Network | ipaddress.IPv6Network
    name: str
    rfc: str
    registry: str


IPV4_REGISTRY = "iana-ipv4-special-registry"
IPV6_REGISTRY = "iana-ipv6-special-registry"
ADDRESS_SPACE = "ipv4-address-space / ipv6-address-space"
ADDRESSING_ARCHITECTURE = "RFC 4291"

_IPV4 = [
    ("0.0.0.0/8", "This network", "RFC 791", IPV4_REGISTRY),
    ("0.0.0.0/32", "This host on this network", "RFC 1122", IPV4_REGISTRY),
    ("10.0.0.0/8", "Private-Use", "RFC 1918", IPV4_REGISTRY),
    ("100.64.0.0/10", "Shared Address Space", "RFC 6598", IPV4_REGISTRY),
    ("127.0.0.0/8", "Loopback", "RFC 1122", IPV4_REGISTRY),
    ("169.254.0.0/16", "Link Local", "RFC 3927", IPV4_REGISTRY),
    ("172.16.0.0/12", "Private-Use", "RFC 1918", IPV4_REGISTRY),
    ("192.0.0.0/24", "IETF Protocol Assignments", "RFC 6890", IPV4_REGISTRY),
    ("192.0.0.0/29", "IPv4 Service Continuity Prefix", "RFC 7335", IPV4_REGISTRY),
    ("192.0.0.8/32", "IPv4 dummy address", "RFC 7600", IPV4_REGISTRY),
    ("192.0.0.9/32", "Port Control Protocol Anycast", "RFC 7723", IPV4_REGISTRY),
    ("192.0.0.10/32", "Traversal Using Relays around NAT Anycast", "RFC 8155", IPV4_REGISTRY),
    ("192.0.0.170/32", "NAT64/DNS64 Discovery", "RFC 8880", IPV4_REGISTRY),
    ("192.0.0.171/32", "NAT64/DNS64 Discovery", "RFC 8880", IPV4_REGISTRY),
    ("192.0.2.0/24", "Documentation (TEST-NET-1)", "RFC 5737", IPV4_REGISTRY),
    ("192.31.196.0/24", "AS112-v4", "RFC 7535", IPV4_REGISTRY),
    ("192.52.193.0/24", "AMT", "RFC 7450", IPV4_REGISTRY),
    ("192.88.99.0/24", "Deprecated (6to4 Relay Anycast)", "RFC 7526", IPV4_REGISTRY),
    ("192.88.99.2/32", "6a44-relay anycast address", "RFC 6751", IPV4_REGISTRY),
    ("192.168.0.0/16", "Private-Use", "RFC 1918", IPV4_REGISTRY),
    ("192.175.48.0/24", "Direct Delegation AS112 Service", "RFC 7534", IPV4_REGISTRY),
    ("198.18.0.0/15", "Benchmarking", "RFC 2544", IPV4_REGISTRY),
    ("198.51.100.0/24", "Documentation (TEST-NET-2)", "RFC 5737", IPV4_REGISTRY),
    ("203.0.113.0/24", "Documentation (TEST-NET-3)", "RFC 5737", IPV4_REGISTRY),
    ("240.0.0.0/4", "Reserved", "RFC 1112", IPV4_REGISTRY),
    ("255.255.255.255/32", "Limited Broadcast", "RFC 8190", IPV4_REGISTRY),
    ("224.0.0.0/4", "Multicast", "RFC 5771", ADDRESS_SPACE),
]
_IPV6 = [
    ("::1/128", "Loopback Address", "RFC 4291", IPV6_REGISTRY),
    ("::/128", "Unspecified Address", "RFC 4291", IPV6_REGISTRY),
    ("::ffff:0:0/96", "IPv4-mapped Address", "RFC 4291", IPV6_REGISTRY),
    ("64:ff9b::/96", "IPv4-IPv6 Translation (NAT64 well-known prefix)", "RFC 6052", IPV6_REGISTRY),
    ("64:ff9b:1::/48", "IPv4-IPv6 Translation (NAT64 local-use prefix)", "RFC 8215", IPV6_REGISTRY),
    ("100::/64", "Discard-Only Address Block", "RFC 6666", IPV6_REGISTRY),
    ("100:0:0:1::/64", "Dummy IPv6 Prefix", "RFC 9780", IPV6_REGISTRY),
    ("2001::/23", "IETF Protocol Assignments", "RFC 2928", IPV6_REGISTRY),
    ("2001::/32", "TEREDO", "RFC 4380", IPV6_REGISTRY),
    ("2001:1::1/128", "Port Control Protocol Anycast", "RFC 7723", IPV6_REGISTRY),
    ("2001:1::2/128", "Traversal Using Relays around NAT Anycast", "RFC 8155", IPV6_REGISTRY),
    ("2001:1::3/128", "DNS-SD Service Registration Protocol Anycast", "RFC 9665", IPV6_REGISTRY),
    ("2001:2::/48", "Benchmarking", "RFC 5180", IPV6_REGISTRY),
    ("2001:3::/32", "AMT", "RFC 7450", IPV6_REGISTRY),
    ("2001:4:112::/48", "AS112-v6", "RFC 7535", IPV6_REGISTRY),
    ("2001:10::/28", "Deprecated (previously ORCHID)", "RFC 4843", IPV6_REGISTRY),
    ("2001:20::/28", "ORCHIDv2", "RFC 7343", IPV6_REGISTRY),
    ("2001:30::/28", "Drone Remote ID Protocol Entity Tags (DETs) Prefix", "RFC 9374", IPV6_REGISTRY),
    ("2001:db8::/32", "Documentation", "RFC 3849", IPV6_REGISTRY),
    ("2002::/16", "6to4", "RFC 3056", IPV6_REGISTRY),
    ("2620:4f:8000::/48", "Direct Delegation AS112 Service", "RFC 7534", IPV6_REGISTRY),
    ("3fff::/20", "Documentation", "RFC 9637", IPV6_REGISTRY),
    ("5f00::/16", "Segment Routing (SRv6) SIDs", "RFC 9602", IPV6_REGISTRY),
    ("fc00::/7", "Unique-Local", "RFC 4193", IPV6_REGISTRY),
    ("fe80::/10", "Link-Local Unicast", "RFC 4291", IPV6_REGISTRY),
    ("ff00::/8", "Multicast", "RFC 4291", ADDRESS_SPACE),
    ("::/96", "IPv4-compatible Address (deprecated)", "RFC 4291", ADDRESSING_ARCHITECTURE),
]

SPECIAL_BLOCKS: tuple[SpecialBlock, ...] = tuple(
    SpecialBlock(ipaddress.ip_network(block), name, rfc, registry)
    for block, name, rfc, registry in _IPV4 + _IPV6
)

# IPv6 forms that carry an IPv4 address, and where it sits (bits counted from the address's low end).
ADDRESS_EMBEDDING_FORMS: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    (ipaddress.IPv6Network("::ffff:0:0/96"), "IPv4-mapped"),
    (ipaddress.IPv6Network("64:ff9b::/96"), "NAT64"),
    (ipaddress.IPv6Network("64:ff9b:1::/48"), "NAT64 local-use"),
    (ipaddress.IPv6Network("2002::/16"), "6to4"),
    (ipaddress.IPv6Network("2001::/32"), "Teredo"),
    (ipaddress.IPv6Network("::/96"), "IPv4-compatible"),
)
GLOBAL_UNICAST_V6 = ipaddress.IPv6Network("2000::/3")
LOOPBACK_BLOCKS = (ipaddress.IPv4Network("127.0.0.0/8"), ipaddress.IPv6Network("::1/128"))


def embedded_ipv4(ip: ipaddress.IPv6Address) -> tuple[str, ipaddress.IPv4Address] | None:
    """The IPv4 address an IPv6 address carries, with the form's name; None when it carries none.

    ::/128 and ::1/128 sit inside ::/96 but are the unspecified and loopback addresses, not IPv4 ones."""
    if ip in (ipaddress.IPv6Address("::"), ipaddress.IPv6Address("::1")):
        return None
    value = int(ip)
    for network, form in ADDRESS_EMBEDDING_FORMS:
        if ip not in network:
            continue
        if form == "6to4":  # 2002:V4ADDR::/48
            return form, ipaddress.IPv4Address((value >> 80) & 0xFFFFFFFF)
        if form == "Teredo":  # the client's public address, bits inverted, in the last 32 bits
            return form, ipaddress.IPv4Address(~value & 0xFFFFFFFF)
        if form == "NAT64 local-use":  # RFC 6052 with a /48 prefix: 16 bits, u octet (bits 64-71), 16 bits
            high = (value >> 64) & 0xFFFF
            low = (value >> 40) & 0xFFFF
            return form, ipaddress.IPv4Address((high << 16) | low)
        return form, ipaddress.IPv4Address(value & 0xFFFFFFFF)
    return None


def special_block(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> SpecialBlock | None:
    """The most specific registry entry holding `ip` (None: no entry holds it)."""
    holding = [entry for entry in SPECIAL_BLOCKS if entry.block.version == ip.version and ip in entry.block]
    return max(holding, key=lambda entry: entry.block.prefixlen, default=None)
