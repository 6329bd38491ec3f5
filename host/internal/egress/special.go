package egress

import "net/netip"

// The classes of addresses (RATIONALE.md, "Egress: special-purpose
// addresses by what they embed"). An address is public, local (loopback,
// private, shared: reached when the allow list allows its host, as a
// service on the operator's network is), or special: every other range
// of the IANA IPv4 and IPv6 Special-Purpose Address Registries that is not
// globally reachable, cloud metadata endpoints, and every form that
// embeds a local or special IPv4 address. A special address is reached
// only when the allow list names that address itself.

// kind is how the policy treats an address.
type kind int

const (
	public  kind = iota // reached when its host is allowed
	local               // loopback, private or shared: likewise
	special             // reached only when named itself
)

// addrRange is a range of addresses and what the errors call it.
type addrRange struct {
	prefix netip.Prefix
	what   string
}

func ranges(kv ...string) []addrRange {
	rs := make([]addrRange, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		rs = append(rs, addrRange{netip.MustParsePrefix(kv[i]), kv[i+1]})
	}
	return rs
}

// metadataAddrs are cloud instance-metadata endpoints outside the
// link-local ranges.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	netip.MustParseAddr("192.0.0.192"),     // Oracle Cloud
	netip.MustParseAddr("fd00:ec2::254"),   // AWS over IPv6
}

const linkLocal = "a link-local address (such as a cloud metadata endpoint)"

// localRanges are reached when the allow list allows their host.
var localRanges = ranges(
	"127.0.0.0/8", "a loopback address",
	"10.0.0.0/8", "a private address",
	"172.16.0.0/12", "a private address",
	"192.168.0.0/16", "a private address",
	"100.64.0.0/10", "a shared address (100.64.0.0/10)",
	"::1/128", "a loopback address",
	"fc00::/7", "a private address",
)

// specialV4 are the IPv4 ranges reached only when named, in the order
// they are looked up (the first that holds the address names it).
var specialV4 = ranges(
	"0.0.0.0/32", "an unspecified address",
	"0.0.0.0/8", `a "this network" address (0.0.0.0/8)`,
	"169.254.0.0/16", linkLocal,
	"192.0.0.0/24", "an IETF protocol address (192.0.0.0/24)",
	"192.0.2.0/24", "a documentation address (192.0.2.0/24)",
	"198.51.100.0/24", "a documentation address (198.51.100.0/24)",
	"203.0.113.0/24", "a documentation address (203.0.113.0/24)",
	"192.88.99.0/24", "a 6to4 relay anycast address (192.88.99.0/24)",
	"198.18.0.0/15", "a benchmarking address (198.18.0.0/15)",
	"224.0.0.0/4", "a multicast address",
	"255.255.255.255/32", "the broadcast address",
	"240.0.0.0/4", "a reserved address (240.0.0.0/4)",
)

// specialV6 are the IPv6 ranges reached only when named, looked up after
// the forms that embed an IPv4 address. Addresses outside 2000::/3 (the
// global unicast range) that no range here or in localRanges names are
// reserved, and special too.
var specialV6 = ranges(
	"::/128", "an unspecified address",
	"64:ff9b:1::/48", "a local-use NAT64 address (64:ff9b:1::/48)",
	"100::/64", "a discard-only address (100::/64)",
	"2001:db8::/32", "a documentation address (2001:db8::/32)",
	"2001::/23", "an IETF protocol address (2001::/23)",
	"3fff::/20", "a documentation address (3fff::/20)",
	"fe80::/10", linkLocal,
	"fec0::/10", "a site-local address (fec0::/10, deprecated)",
	"ff00::/8", "a multicast address",
)

var globalUnicast = netip.MustParsePrefix("2000::/3")

// embedding is a form of IPv6 address that holds an IPv4 address.
type embedding struct {
	prefix netip.Prefix
	what   string                      // "a NAT64 address embedding"
	v4     func(b [16]byte) netip.Addr // the IPv4 address it holds
	always bool                        // special whatever it embeds
}

var embeddings = []embedding{
	{netip.MustParsePrefix("64:ff9b::/96"), "a NAT64 address embedding", last32, false},
	{netip.MustParsePrefix("::/96"), "an IPv4-compatible address (::/96, deprecated) embedding", last32, true},
	{netip.MustParsePrefix("2002::/16"), "a 6to4 address embedding", func(b [16]byte) netip.Addr {
		return netip.AddrFrom4([4]byte(b[2:6]))
	}, false},
	{netip.MustParsePrefix("2001::/32"), "a Teredo address (2001::/32) whose client is", func(b [16]byte) netip.Addr {
		var c [4]byte // RFC 4380: the client's address, its bits inverted
		for i := range c {
			c[i] = b[12+i] ^ 0xff
		}
		return netip.AddrFrom4(c)
	}, true},
}

func last32(b [16]byte) netip.Addr { return netip.AddrFrom4([4]byte(b[12:])) }

// classify says how the policy treats addr and, unless it is public,
// what the errors call it. An IPv4-mapped address is its IPv4 address.
func classify(addr netip.Addr) (kind, string) {
	addr = addr.Unmap().WithZone("")
	for _, m := range metadataAddrs {
		if addr == m {
			return special, "a cloud metadata address"
		}
	}
	if addr.Is6() && addr != netip.IPv6Unspecified() && addr != netip.IPv6Loopback() {
		b := addr.As16()
		for _, e := range embeddings {
			if !e.prefix.Contains(addr) {
				continue
			}
			v4 := e.v4(b)
			k, what := classify(v4)
			switch {
			case k != public:
				return special, e.what + " " + v4.String() + ", " + what
			case e.always:
				return special, e.what + " " + v4.String()
			}
			return public, ""
		}
	}
	for _, r := range localRanges {
		if r.prefix.Contains(addr) {
			return local, r.what
		}
	}
	rs := specialV4
	if addr.Is6() {
		rs = specialV6
	}
	for _, r := range rs {
		if r.prefix.Contains(addr) {
			return special, r.what
		}
	}
	if addr.Is6() && !globalUnicast.Contains(addr) {
		return special, "a reserved address (outside 2000::/3)"
	}
	return public, ""
}
