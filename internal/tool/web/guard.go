package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// BlockedError is a refused destination: the address a host resolved to (or
// was written as) is not on the public internet.
type BlockedError struct {
	Host   string     // as written in the URL
	Addr   netip.Addr // the address that was refused
	Reason string     // e.g. "loopback", "private (RFC 1918)"
}

func (e *BlockedError) Error() string {
	if e.Host != "" && e.Host != e.Addr.String() {
		return fmt.Sprintf("%s resolves to %s, a %s address", e.Host, e.Addr, e.Reason)
	}
	return fmt.Sprintf("%s is a %s address", e.Addr, e.Reason)
}

// blockedRange is one refused prefix and why.
type blockedRange struct {
	prefix netip.Prefix
	reason string
}

// blockedRanges lists every destination web_fetch refuses. Exact metadata
// addresses come first so they are named as such rather than by their range.
var blockedRanges = func() []blockedRange {
	rs := []struct{ p, reason string }{
		{"169.254.169.254/32", "cloud metadata"},
		{"fd00:ec2::254/128", "cloud metadata"},
		{"100.100.100.200/32", "cloud metadata"},
		{"192.0.0.192/32", "cloud metadata"},
		{"0.0.0.0/8", "unspecified (this network)"},
		{"10.0.0.0/8", "private (RFC 1918)"},
		{"100.64.0.0/10", "carrier-grade NAT (shared)"},
		{"127.0.0.0/8", "loopback"},
		{"169.254.0.0/16", "link-local"},
		{"172.16.0.0/12", "private (RFC 1918)"},
		{"192.0.0.0/24", "IETF protocol assignment"},
		{"192.0.2.0/24", "documentation"},
		{"192.168.0.0/16", "private (RFC 1918)"},
		{"198.18.0.0/15", "benchmarking"},
		{"198.51.100.0/24", "documentation"},
		{"203.0.113.0/24", "documentation"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved"}, // includes 255.255.255.255 broadcast
		{"::/128", "unspecified"},
		{"::1/128", "loopback"},
		{"::/96", "IPv4-compatible IPv6"},
		{"100::/64", "discard-only"},
		{"64:ff9b:1::/48", "local-use NAT64"},
		{"2001:db8::/32", "documentation"},
		{"fc00::/7", "unique-local IPv6"},
		{"fe80::/10", "link-local"},
		{"fec0::/10", "site-local"},
		{"ff00::/8", "multicast"},
	}
	out := make([]blockedRange, len(rs))
	for i, r := range rs {
		out[i] = blockedRange{netip.MustParsePrefix(r.p), r.reason}
	}
	return out
}()

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// Blocked reports why web_fetch may not connect to addr, or "" if addr is a
// public address. IPv4-mapped IPv6 (::ffff:a.b.c.d) and the IPv6 forms that
// embed an IPv4 address (NAT64 64:ff9b::/96, 6to4 2002::/16) are judged by the
// IPv4 address inside them, so none can be used to spell a private one.
func Blocked(addr netip.Addr) string {
	if !addr.IsValid() {
		return "invalid"
	}
	addr = addr.WithZone("")
	if addr.Is4In6() {
		if r := Blocked(addr.Unmap()); r != "" {
			return r + " (as IPv4-mapped IPv6)"
		}
		return ""
	}
	if addr.Is6() && nat64.Contains(addr) {
		b := addr.As16()
		if r := Blocked(netip.AddrFrom4([4]byte(b[12:16]))); r != "" {
			return r + " (as NAT64 IPv6)"
		}
	}
	if addr.Is6() && sixToFour.Contains(addr) {
		b := addr.As16()
		if r := Blocked(netip.AddrFrom4([4]byte(b[2:6]))); r != "" {
			return r + " (as 6to4 IPv6)"
		}
	}
	for _, r := range blockedRanges {
		if r.prefix.Contains(addr) {
			return r.reason
		}
	}
	return ""
}

// ParseIPv4Loose reads host the way inet_aton does, the form many resolvers
// and browsers still accept: one to four parts, each decimal, octal (leading
// 0) or hex (0x), the last part filling the remaining bytes. So 2130706433,
// 0177.0.0.1, 0x7f.1 and 127.1 all mean 127.0.0.1. A host that reads this
// way is an address, never a name to look up, so it cannot bypass the guard
// by reaching a resolver that would interpret it.
func ParseIPv4Loose(host string) (netip.Addr, bool) {
	if host == "" || len(host) > 64 {
		return netip.Addr{}, false
	}
	parts := strings.Split(strings.TrimSuffix(host, "."), ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		if p == "" {
			return netip.Addr{}, false
		}
		base, digits := 10, p
		switch {
		case len(p) > 1 && (p[:2] == "0x" || p[:2] == "0X"):
			base, digits = 16, p[2:]
			if digits == "" {
				digits = "0"
			}
		case len(p) > 1 && p[0] == '0':
			base, digits = 8, p[1:]
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var n uint64
	last := len(vals) - 1
	for i, v := range vals[:last] {
		if v > 0xff {
			return netip.Addr{}, false
		}
		n |= v << (8 * (3 - i))
	}
	if vals[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	n |= vals[last]
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// hostAddr reads host as an IP literal in any accepted spelling.
func hostAddr(host string) (netip.Addr, bool) {
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if a, err := netip.ParseAddr(h); err == nil {
		return a, true
	}
	return ParseIPv4Loose(h)
}

// Resolver looks a host name up; *net.Resolver satisfies it. Tests hook it to
// make any name resolve anywhere.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// guard is the dialer every web_fetch connection goes through. It resolves
// the host once, refuses the connection if any of its addresses is not
// public, and then dials the very addresses it checked, so a second DNS answer
// (rebinding) has no lookup to slip into. The socket's Control hook checks
// the address once more just before connect, as a backstop for any path that
// reaches the dialer with something other than a checked address.
type guard struct {
	resolver     Resolver
	allowPrivate bool
	dialer       net.Dialer
	// dial connects to a checked address; tests replace it to stand a
	// loopback listener in for a public address.
	dial func(ctx context.Context, network, address string) (net.Conn, error)
}

func newGuard(resolver Resolver, allowPrivate bool, dialTimeout time.Duration) *guard {
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	g := &guard{resolver: resolver, allowPrivate: allowPrivate}
	g.dialer = net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second, Control: g.control}
	g.dial = g.dialer.DialContext
	return g
}

// check refuses addr unless private destinations are allowed.
func (g *guard) check(host string, addr netip.Addr) error {
	if g.allowPrivate {
		return nil
	}
	if r := Blocked(addr); r != "" {
		return &BlockedError{Host: host, Addr: addr, Reason: r}
	}
	return nil
}

// resolve returns the checked addresses host stands for.
func (g *guard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, ok := hostAddr(host); ok {
		if err := g.check(host, a); err != nil {
			return nil, err
		}
		return []netip.Addr{a.Unmap()}, nil
	}
	addrs, err := g.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolve %s: no addresses", host)
	}
	// One private answer refuses the whole host: a name that mixes public
	// and private addresses is how rebinding attacks are staged.
	for i, a := range addrs {
		if err := g.check(host, a); err != nil {
			return nil, err
		}
		addrs[i] = a.Unmap()
	}
	return addrs, nil
}

// DialContext is the transport's dialer.
func (g *guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", address, err)
	}
	addrs, err := g.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, a := range addrs {
		c, err := g.dial(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// control runs on the raw socket just before connect.
func (g *guard) control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("connect %s: not an IP address", address)
	}
	return g.check("", a)
}
