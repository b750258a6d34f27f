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

var sharedRange = netip.MustParsePrefix("100.64.0.0/10")
var thisNetwork = netip.MustParsePrefix("0.0.0.0/8")

// BlockedAddr reports whether a webhook may not connect to a.
func BlockedAddr(a netip.Addr) bool {
	a = a.Unmap()
	return !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsUnspecified() || a.IsLinkLocalUnicast() ||
		a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() || a.IsMulticast() ||
		sharedRange.Contains(a) || thisNetwork.Contains(a)
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
