package web

import (
	"net/netip"
	"strings"
	"testing"
)

func TestBlocked(t *testing.T) {
	tests := []struct {
		addr string
		want string // substring of the reason; "" means allowed
	}{
		{"127.0.0.1", "loopback"},
		{"127.255.0.9", "loopback"},
		{"10.0.0.1", "private"},
		{"10.255.255.255", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.254", "private"},
		{"192.168.1.1", "private"},
		{"169.254.169.254", "cloud metadata"},
		{"169.254.10.10", "link-local"},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.100.100.200", "cloud metadata"},
		{"0.0.0.0", "unspecified"},
		{"224.0.0.1", "multicast"},
		{"255.255.255.255", "reserved"},
		{"::1", "loopback"},
		{"::", "unspecified"},
		{"fd00::1", "unique-local"},
		{"fd00:ec2::254", "cloud metadata"},
		{"fc00::1", "unique-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"ff02::1", "multicast"},
		{"::ffff:127.0.0.1", "loopback (as IPv4-mapped IPv6)"},
		{"::ffff:10.1.2.3", "private (RFC 1918) (as IPv4-mapped IPv6)"},
		{"::ffff:169.254.169.254", "cloud metadata"},
		{"::127.0.0.1", "IPv4-compatible"},
		{"64:ff9b::7f00:1", "loopback (as NAT64 IPv6)"},
		{"2002:7f00:1::1", "loopback (as 6to4 IPv6)"},
		{"2002:a00:1::", "private (RFC 1918) (as 6to4 IPv6)"},
		// Public addresses pass.
		{"8.8.8.8", ""},
		{"93.184.216.34", ""},
		{"172.32.0.1", ""},
		{"100.128.0.1", ""},
		{"2606:4700::1111", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::808:808", ""},
	}
	for _, tt := range tests {
		got := Blocked(netip.MustParseAddr(tt.addr))
		if tt.want == "" && got != "" {
			t.Errorf("Blocked(%s) = %q, want allowed", tt.addr, got)
		}
		if tt.want != "" && !strings.Contains(got, tt.want) {
			t.Errorf("Blocked(%s) = %q, want %q", tt.addr, got, tt.want)
		}
	}
	if Blocked(netip.Addr{}) == "" {
		t.Error("the zero Addr must be refused")
	}
}

func TestParseIPv4Loose(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" means not an address
	}{
		{"2130706433", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"},
		{"0x7f.0.0.1", "127.0.0.1"},
		{"0x7f000001", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"127.0.1", "127.0.0.1"},
		{"10.1", "10.0.0.1"},
		{"017700000001", "127.0.0.1"},
		{"167772161", "10.0.0.1"},
		{"0xa9fea9fe", "169.254.169.254"},
		{"127.0.0.1.", "127.0.0.1"},
		{"8.8.8.8", "8.8.8.8"},
		{"256.0.0.1", ""},
		{"1.2.3.4.5", ""},
		{"4294967296", ""},
		{"1.2.65536", ""},
		{"09.1.1.1", ""},
		{"example.com", ""},
		{"1e3", ""},
		{"", ""},
		{"..", ""},
		{"-1", ""},
	}
	for _, tt := range tests {
		a, ok := ParseIPv4Loose(tt.in)
		switch {
		case tt.want == "" && ok:
			t.Errorf("ParseIPv4Loose(%q) = %s, want not an address", tt.in, a)
		case tt.want != "" && (!ok || a.String() != tt.want):
			t.Errorf("ParseIPv4Loose(%q) = %s, %v, want %s", tt.in, a, ok, tt.want)
		}
	}
}

func FuzzParseIPv4Loose(f *testing.F) {
	for _, s := range []string{"2130706433", "0177.0.0.1", "0x7f.1", "127.1", "1.2.3.4", "0x", "00", "1..1", "4294967295"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, ok := ParseIPv4Loose(s)
		if ok && !a.Is4() {
			t.Fatalf("ParseIPv4Loose(%q) = %s, not IPv4", s, a)
		}
		// A dotted quad netip accepts must read the same.
		if b, err := netip.ParseAddr(s); err == nil && b.Is4() && (!ok || a != b) {
			t.Fatalf("ParseIPv4Loose(%q) = %s, %v; netip says %s", s, a, ok, b)
		}
	})
}

func TestControlBackstop(t *testing.T) {
	g := newGuard(nil, false, 0)
	if err := g.control("tcp4", "127.0.0.1:80", nil); err == nil {
		t.Error("control let a loopback connect through")
	}
	if err := g.control("tcp4", "8.8.8.8:443", nil); err != nil {
		t.Errorf("control refused a public address: %v", err)
	}
	if err := newGuard(nil, true, 0).control("tcp4", "127.0.0.1:80", nil); err != nil {
		t.Errorf("control with AllowPrivate refused loopback: %v", err)
	}
}
