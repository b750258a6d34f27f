package webhook_test

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/webhook"
)

func TestBlockedAddresses(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "127.1.2.3", "::1", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254",
		"fe80::1", "fc00::1", "fd12::1", "0.0.0.0", "::", "0.1.2.3", "100.64.0.1", "224.0.0.1", "ff02::1",
		"::ffff:127.0.0.1", "::ffff:169.254.169.254",
		// Reserved IPv4 ranges, and IPv6 addresses that carry a blocked
		// IPv4 one (NAT64, 6to4, IPv4-compatible) or are site-local.
		"198.18.0.1", "192.0.0.8", "240.0.0.1", "255.255.255.255",
		"64:ff9b::a00:1", "64:ff9b::a9fe:a9fe", "64:ff9b:1::a00:1", "2002:a9fe:a9fe::", "2002:7f00:1::1", "::a00:1", "fec0::1"} {
		if !webhook.BlockedAddr(netip.MustParseAddr(a)) {
			t.Errorf("%s is not blocked", a)
		}
	}
	for _, a := range []string{"8.8.8.8", "1.1.1.1", "2606:4700::1111", "100.128.0.1", "172.32.0.1",
		"64:ff9b::808:808", "2002:808:808::1"} {
		if webhook.BlockedAddr(netip.MustParseAddr(a)) {
			t.Errorf("%s is blocked", a)
		}
	}
}

func TestCheckURL(t *testing.T) {
	for _, raw := range []string{"http://169.254.169.254/latest/meta-data/", "http://[::1]:8080/", "http://0x7f000001/",
		"http://2130706433/", "http://017700000001/", "http://0x7f.1/", "http://127.0.0.1/", "http://[::ffff:10.0.0.1]/", "http://0/"} {
		u, _ := url.Parse(raw)
		if msg := webhook.CheckURL(u, false); msg == "" {
			t.Errorf("%s accepted", raw)
		}
	}
	for _, raw := range []string{"https://hooks.example.com/x", "https://8.8.8.8/", "https://a1.example/", "https://123.example/"} {
		u, _ := url.Parse(raw)
		if msg := webhook.CheckURL(u, false); msg != "" {
			t.Errorf("%s refused: %s", raw, msg)
		}
	}
	u, _ := url.Parse("http://127.0.0.1:9000/hook")
	if msg := webhook.CheckURL(u, true); msg != "" {
		t.Errorf("allowed private, still refused: %s", msg)
	}
}

// By default the dispatcher never connects to a loopback receiver, by
// address or by a name that resolves to one (the check runs on the
// dialled address, after DNS); the log says why, briefly. With
// AllowPrivate it delivers.
func TestDispatcherRefusesPrivateTargets(t *testing.T) {
	rc := newReceiver(t, ok)
	port := rc.srv.URL[strings.LastIndex(rc.srv.URL, ":")+1:]
	if _, err := net.LookupHost("localhost"); err != nil {
		t.Skip("localhost does not resolve here:", err)
	}
	for _, target := range []string{rc.srv.URL, "http://localhost:" + port} {
		f := newFixture(t, target+"/hook?api_key=s3cr3t")
		f.enqueue(t, 1)
		o := fast(webhook.Options{})
		o.AllowPrivate = false
		d := webhook.NewDispatcher(f.st, o)
		if sent, err := d.DeliverOne(context.Background()); !sent || err != nil {
			t.Fatalf("DeliverOne: %v %v", sent, err)
		}
		log := f.log(t)[0]
		if log.Status != store.DeliveryPending || !strings.HasPrefix(log.LastError, "refused: the receiver's address is loopback") {
			t.Errorf("%s: %s %q", target, log.Status, log.LastError)
		}
		if strings.Contains(log.LastError, "s3cr3t") {
			t.Errorf("the query string reached the log: %q", log.LastError)
		}
	}
	if n := len(rc.requests()); n != 0 {
		t.Fatalf("the loopback receiver got %d requests", n)
	}
	f := newFixture(t, rc.srv.URL)
	f.enqueue(t, 1)
	if sent, err := webhook.NewDispatcher(f.st, fast(webhook.Options{})).DeliverOne(context.Background()); !sent || err != nil {
		t.Fatalf("DeliverOne: %v %v", sent, err)
	}
	if f.log(t)[0].Status != store.DeliveryDelivered {
		t.Errorf("with AllowPrivate: %+v", f.log(t)[0])
	}
}

// A failing receiver's body is not stored, and a refused port and a
// timeout read the same.
func TestFailureReasonsAreShortAndAlike(t *testing.T) {
	rc := newReceiver(t, func(n int, w http.ResponseWriter) {
		http.Error(w, "internal: db password is hunter2", http.StatusBadGateway)
	})
	f := newFixture(t, rc.srv.URL)
	f.enqueue(t, 1)
	d := webhook.NewDispatcher(f.st, fast(webhook.Options{}))
	if _, err := d.DeliverOne(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.log(t)[0].LastError; got != "HTTP 502 Bad Gateway" {
		t.Errorf("502: %q", got)
	}
	// A closed port: refused at once, worded as a timeout would be.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	f = newFixture(t, closed)
	f.enqueue(t, 1)
	if _, err := webhook.NewDispatcher(f.st, fast(webhook.Options{})).DeliverOne(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.log(t)[0].LastError; got != "no answer within 2s (the connection failed or timed out)" {
		t.Errorf("refused port: %q", got)
	}
}
