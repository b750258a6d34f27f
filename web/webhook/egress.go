package webhook

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Where webhooks may go. By default a webhook may not reach loopback,
// link-local (cloud metadata at 169.254.169.254), private, shared (CGNAT),
// multicast or unspecified addresses: an admin registering a webhook
// must not get a way to probe or reach internal services. The check runs
// on every connection, on the address actually dialled after DNS
// resolution (a net.Dialer Control hook), so a name that resolves to a
// public address at registration and a private one later (DNS rebinding)
// is refused too. AllowPrivate (WATERLINE_WEBHOOK_ALLOW_PRIVATE) lifts it
// for receivers inside the network.

// ErrBlockedAddress is the dial error for a refused target.
var ErrBlockedAddress = errors.New("address not allowed for webhooks")

// Ranges no webhook receiver lives in, beyond netip's predicates: shared
// address space (carrier NAT), "this network", IETF protocol assignments,
// benchmarking, reserved-for-future-use (and broadcast), IPv6 site-local
// (deprecated, still routed on some networks) and NAT64's local-use prefix
// (its embedded address has no fixed place).
var blockedRanges = []netip.Prefix{
	netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("192.0.0.0/24"), netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"), netip.MustParsePrefix("fec0::/10"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

// IPv6 ranges that carry an IPv4 address, judged by it: NAT64's well-known
// prefix and IPv4-compatible addresses (in the last 32 bits), 6to4 (bits
// 16–48). On a DNS64 network a name whose A record is private resolves to
// 64:ff9b::10.0.0.1, which the gateway connects to.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	v4Compat  = netip.MustParsePrefix("::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// BlockedAddr reports whether a webhook may not connect to a.
func BlockedAddr(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsUnspecified() || a.IsLinkLocalUnicast() ||
		a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() || a.IsMulticast() {
		return true
	}
	for _, p := range blockedRanges {
		if p.Contains(a) {
			return true
		}
	}
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a), v4Compat.Contains(a):
			return BlockedAddr(netip.AddrFrom4([4]byte(b[12:16])))
		case sixToFour.Contains(a):
			return BlockedAddr(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	return false
}

// refusePrivate is a net.Dialer Control hook: it runs after resolution,
// with the IP about to be connected to.
func refusePrivate(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrBlockedAddress, address)
	}
	if BlockedAddr(ap.Addr()) {
		return fmt.Errorf("%w: %s is loopback, private, link-local or unspecified (set WATERLINE_WEBHOOK_ALLOW_PRIVATE=true to allow)", ErrBlockedAddress, ap.Addr())
	}
	return nil
}

// NewClient is the HTTP client webhooks are sent with: no redirects (a
// receiver that redirects is misconfigured, and following one would turn
// the POST into a GET and could lead anywhere), no proxy from the
// environment (the address check must see the receiver's address), and,
// unless allowPrivate, no connection to a blocked address.
func NewClient(allowPrivate bool) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = refusePrivate
	}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           d.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          20,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// CheckURL is the registration-time check of a webhook's URL: a host
// that is an IP literal must be allowed, and a host that is a number in
// another spelling (0x7f000001, 2130706433, 017700000001), which some
// resolvers read as an address, is refused outright. Names are checked
// when dialled. It returns what is wrong, or "".
func CheckURL(u *url.URL, allowPrivate bool) string {
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil {
		if !allowPrivate && BlockedAddr(a) {
			return fmt.Sprintf("%s is a loopback, private, link-local or unspecified address; webhooks may not target those unless WATERLINE_WEBHOOK_ALLOW_PRIVATE=true", host)
		}
		return ""
	}
	if numericHost(host) {
		return fmt.Sprintf("host %q looks like an address in a non-standard spelling; write a name or a dotted IPv4 / bracketed IPv6 address", host)
	}
	return ""
}

// numericHost reports whether every dot-separated part of host is a
// number (decimal, octal or 0x-hex): not a name, but not a canonical
// IPv4 address either.
func numericHost(host string) bool {
	host = strings.TrimSuffix(host, ".")
	if host == "" {
		return false
	}
	for _, p := range strings.Split(host, ".") {
		if p == "" {
			return false
		}
		s := strings.ToLower(p)
		digits := "0123456789"
		if h, ok := strings.CutPrefix(s, "0x"); ok {
			s, digits = h, "0123456789abcdef"
		}
		if strings.Trim(s, digits) != "" {
			return false
		}
	}
	return true
}

// failure is the short reason an attempt failed, as stored in the
// delivery log: the status and its standard text for an answer (never the
// receiver's body, which could hold an internal service's data), and
// for a failed connection one wording whether it was refused, reset or
// timed out (so the log cannot be used to scan ports).
func failure(status int, err error, timeout time.Duration) string {
	if status != 0 {
		if t := http.StatusText(status); t != "" {
			return fmt.Sprintf("HTTP %d %s", status, t)
		}
		return fmt.Sprintf("HTTP %d", status)
	}
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var recordErr tls.RecordHeaderError
	switch {
	case errors.Is(err, ErrBlockedAddress):
		return "refused: the receiver's address is loopback, private, link-local or unspecified (set WATERLINE_WEBHOOK_ALLOW_PRIVATE=true to allow)"
	case errors.As(err, &dnsErr):
		return "the receiver's host name did not resolve"
	case errors.As(err, &certErr), errors.As(err, &recordErr):
		return "TLS handshake with the receiver failed"
	case errors.Is(err, errBadURL):
		return "bad webhook URL"
	}
	return fmt.Sprintf("no answer within %s (the connection failed or timed out)", timeout)
}

var errBadURL = errors.New("bad webhook URL")
