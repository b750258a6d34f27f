package pull

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBackendBehindAGateway reads a real Prometheus through what stands in
// front of one in production: a gateway that, like Mimir's, answers 401
// without the tenant's X-Scope-OrgID, like kube-rbac-proxy before
// OpenShift's Thanos querier wants a service account's bearer token (which
// Kubernetes rotates in the file), serves TLS under a private CA, and
// requires a client certificate. Before Backend, none of it could be set:
// such a Prometheus could not be pulled at all.
func TestBackendBehindAGateway(t *testing.T) {
	t.Parallel()
	prom, start := runP99(t, 2, 240)
	target, _ := url.Parse(prom.URL)
	dir := t.TempDir()
	ca := newTestCA(t)
	serverCert := ca.issue(t, "prom-gateway", x509.ExtKeyUsageServerAuth)
	ca.write(t, dir, "client", ca.issue(t, "waterline", x509.ExtKeyUsageClientAuth))
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("token-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	wantToken := "token-1"
	var seen []string // the paths the gateway let through
	rp := httputil.NewSingleHostReverseProxy(target)
	gw := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tok := wantToken
		mu.Unlock()
		switch {
		case r.Header.Get("X-Scope-OrgID") != "team-a":
			http.Error(w, "no org id", http.StatusUnauthorized)
			return
		case r.Header.Get("Authorization") != "Bearer "+tok:
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		seen = append(seen, r.URL.Path)
		mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.pem)
	gw.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	gw.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes below
	gw.StartTLS()
	defer gw.Close()

	ctx := context.Background()
	full := Backend{URL: gw.URL, Headers: http.Header{"X-Scope-Orgid": {"team-a"}}, BearerTokenFile: tokenFile,
		CAFile: caFile, CertFile: filepath.Join(dir, "client.pem"), KeyFile: filepath.Join(dir, "client-key.pem")}
	p, err := New(&Config{}, full, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	query := func(p *Puller) (int, error) {
		series, err := p.QueryRange(ctx, "p99_ms", start, start.Add(time.Hour), 15*time.Second)
		n := 0
		for _, s := range series {
			n += len(s.Points)
		}
		return n, err
	}
	if n, err := query(p); err != nil || n != 2*241 {
		t.Fatalf("through the gateway: %d points, %v; want %d", n, err, 2*241)
	}
	// The token rotates in its file: the next query carries the new one.
	if err := os.WriteFile(tokenFile, []byte("token-2"), 0o600); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	wantToken = "token-2"
	mu.Unlock()
	if _, err := query(p); err != nil {
		t.Fatalf("after the token's rotation: %v", err)
	}
	// Validate and preset detection go through the same door.
	cfg, err := ParseConfig("(test)", []byte("presets: [auto]\nqueries:\n  - role: latency_p99\n    level: model\n    labels: {model: model}\n    expr: p99_ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(ctx, full, start.Add(time.Hour)); err != nil {
		t.Errorf("validate: %v", err)
	}
	if _, _, err := cfg.DetectPresets(ctx, full, start.Add(time.Hour)); err != nil {
		t.Errorf("detect presets: %v", err)
	}
	mu.Lock()
	paths := strings.Join(seen, " ")
	mu.Unlock()
	for _, want := range []string{"/api/v1/query_range", "/api/v1/query", "/api/v1/label/__name__/values"} {
		if !strings.Contains(paths, want) {
			t.Errorf("the gateway let no %s through (it saw %s)", want, paths)
		}
	}

	// Each piece is needed: without it the query fails, saying why.
	for name, b := range map[string]Backend{
		"no tenant header":       {URL: full.URL, BearerTokenFile: tokenFile, CAFile: caFile, CertFile: full.CertFile, KeyFile: full.KeyFile},
		"no token":               {URL: full.URL, Headers: full.Headers, CAFile: caFile, CertFile: full.CertFile, KeyFile: full.KeyFile},
		"no CA":                  {URL: full.URL, Headers: full.Headers, BearerTokenFile: tokenFile, CertFile: full.CertFile, KeyFile: full.KeyFile},
		"no client certificate":  {URL: full.URL, Headers: full.Headers, BearerTokenFile: tokenFile, CAFile: caFile},
		"an old token in a file": {URL: full.URL, Headers: full.Headers, BearerTokenFile: writeTemp(t, "token-1"), CAFile: caFile, CertFile: full.CertFile, KeyFile: full.KeyFile},
	} {
		p, err := New(&Config{}, b, nil, Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_, err = query(p)
		switch {
		case err == nil:
			t.Errorf("%s: the query passed the gateway", name)
		case strings.Contains(name, "tenant") || strings.Contains(name, "token"):
			// A refusal says what it is, whole (a trailing newline in the
			// proxy's body left "401 (Unauthorized" open).
			if msg := err.Error(); !strings.Contains(msg, "refused the request's credentials") || strings.Contains(msg, "\n") {
				t.Errorf("%s: %q", name, msg)
			}
		}
	}
	// Files that cannot serve fail at once, naming what they are.
	for name, b := range map[string]Backend{
		"Prometheus bearer token file":       {URL: full.URL, BearerTokenFile: filepath.Join(dir, "missing")},
		"Prometheus CA file":                 {URL: full.URL, CAFile: tokenFile},
		"Prometheus client certificate":      {URL: full.URL, CertFile: caFile, KeyFile: caFile},
		"needs both its certificate and its": {URL: full.URL, CertFile: full.CertFile},
	} {
		if _, err := New(&Config{}, b, nil, Options{}); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A backend that redirects elsewhere does not get the credentials sent
// along: Go's client drops its own Authorization on a redirect to another
// host, and the backend's headers and token must not go where it did not.
func TestBackendCredentialsStayWithTheirHost(t *testing.T) {
	t.Parallel()
	prom, start := runP99(t, 1, 60)
	target, _ := url.Parse(prom.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	var leaked []string
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if v := r.Header.Get("Authorization") + r.Header.Get("X-Scope-OrgID"); v != "" {
			leaked = append(leaked, v)
		}
		mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	defer elsewhere.Close()
	// Another host name for the same loopback port: "localhost".
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(elsewhere.URL, "http://"))
	other := "http://localhost:" + port
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	p, err := New(&Config{}, Backend{URL: redirector.URL, Headers: http.Header{"X-Scope-Orgid": {"team-a"}},
		BearerTokenFile: writeTemp(t, "S3cret")}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.QueryRange(context.Background(), "p99_ms", start, start.Add(10*time.Minute), 15*time.Second); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) > 0 {
		t.Errorf("the redirect's target got the backend's credentials: %q", leaked)
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// testCA is a private certificate authority for a test's TLS.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a certificate for loopback (127.0.0.1, localhost).
func (ca *testCA) issue(t *testing.T, name string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// write puts c as dir/name.pem and dir/name-key.pem.
func (ca *testCA) write(t *testing.T, dir, name string, c tls.Certificate) {
	t.Helper()
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	if err := os.WriteFile(filepath.Join(dir, name+".pem"), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+"-key.pem"), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
}

// The pull goes straight to Prometheus, as it did before Backend: an
// HTTP_PROXY meant for the egress (webhooks, the internet) must not take
// an in-cluster Prometheus that NO_PROXY does not list.
func TestBackendIgnoresTheEnvironmentsProxy(t *testing.T) {
	for _, b := range []Backend{{URL: "http://prom:9090"}, {URL: "https://prom:9090", CAFile: writeTemp(t, string(newTestCA(t).pem))}} {
		rt, err := b.transport()
		if err != nil {
			t.Fatal(err)
		}
		if tr, ok := rt.(*http.Transport); !ok || tr.Proxy != nil {
			t.Errorf("%+v: transport %T with a proxy", b, rt)
		}
	}
}
