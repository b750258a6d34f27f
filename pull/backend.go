package pull

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// Backend is a Prometheus-compatible query API and how to reach it. Only
// URL is needed next to a plain Prometheus; the rest is for what stands
// in front of one in production:
//   - Mimir and Cortex answer nothing without the tenant's X-Scope-OrgID
//     header (several tenants as "a|b" with tenant federation);
//   - OpenShift's Thanos querier, and Prometheus behind kube-rbac-proxy or
//     oauth2-proxy, want a service account's token as a bearer token, and
//     serve TLS under the cluster's own CA;
//   - a Prometheus behind an mTLS proxy wants a client certificate.
//
// Basic auth goes in the URL (https://user:password@host): Go's HTTP
// client sends it, and messages print the URL redacted.
type Backend struct {
	URL string
	// Headers are sent with every request (X-Scope-OrgID, …).
	Headers http.Header
	// BearerTokenFile is read before every request, as Prometheus reads its
	// own credentials_file: Kubernetes rotates projected service-account
	// tokens in place.
	BearerTokenFile string
	// CAFile is a PEM bundle of authorities trusted for the server's
	// certificate, next to the system's.
	CAFile string
	// CertFile and KeyFile are a client certificate (PEM), reloaded at each
	// new connection when they change (cert-manager renews them in place).
	CertFile, KeyFile string
	// Compression asks for gzipped answers: worth it across a slow link
	// only. Next to Prometheus, gzipping a large range answer costs it far
	// more CPU than the bytes save: a day of 150 series at 15 s with the
	// detector's history takes three times as long compressed
	// (bench/spikes_prom_test.go), and the Prometheus is everyone's.
	Compression bool
	// RoundTripper replaces the pooled transport (tests); the headers and
	// the bearer token still apply, TLS settings do not.
	RoundTripper http.RoundTripper
}

// transport builds the round tripper b describes. The files are checked
// here, so a wrong path fails at start-up, with the setting's file named.
func (b Backend) transport() (http.RoundTripper, error) {
	rt := b.RoundTripper
	if rt == nil {
		// No proxy from the environment, as before Backend: an HTTP_PROXY
		// set for the egress would otherwise take the in-cluster
		// Prometheus too.
		t := &http.Transport{
			MaxIdleConnsPerHost: 16, IdleConnTimeout: time.Minute,
			TLSHandshakeTimeout: 10 * time.Second,
			DisableCompression:  !b.Compression,
		}
		tc, err := b.tlsConfig()
		if err != nil {
			return nil, err
		}
		t.TLSClientConfig = tc
		rt = t
	}
	if b.BearerTokenFile != "" {
		if _, err := readToken(b.BearerTokenFile); err != nil {
			return nil, err
		}
	}
	if len(b.Headers) == 0 && b.BearerTokenFile == "" {
		return rt, nil
	}
	u, err := url.Parse(b.URL)
	if err != nil {
		return nil, fmt.Errorf("Prometheus URL %s: %v", redactURL(b.URL), err)
	}
	return authorize{next: rt, host: u.Host, headers: b.Headers, tokenFile: b.BearerTokenFile}, nil
}

func (b Backend) tlsConfig() (*tls.Config, error) {
	if b.CAFile == "" && b.CertFile == "" && b.KeyFile == "" {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if b.CAFile != "" {
		pem, err := os.ReadFile(b.CAFile)
		if err != nil {
			return nil, fmt.Errorf("Prometheus CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("Prometheus CA file %s: no PEM certificate in it", b.CAFile)
		}
		tc.RootCAs = pool
	}
	if (b.CertFile == "") != (b.KeyFile == "") {
		return nil, errors.New("a Prometheus client certificate needs both its certificate and its key file")
	}
	if b.CertFile != "" {
		c := &clientCert{certFile: b.CertFile, keyFile: b.KeyFile}
		if _, err := c.get(nil); err != nil {
			return nil, err
		}
		tc.GetClientCertificate = c.get
	}
	return tc, nil
}

// clientCert loads a key pair at each TLS handshake (new connections
// only, so rarely): a renewed certificate is used without a restart.
type clientCert struct{ certFile, keyFile string }

func (c *clientCert) get(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return nil, fmt.Errorf("Prometheus client certificate %s: %w", c.certFile, err)
	}
	return &pair, nil
}

// authorize adds the backend's headers and bearer token to each request
// to its host: a redirect elsewhere gets neither, as Go's client drops
// its own Authorization on one.
type authorize struct {
	next      http.RoundTripper
	host      string
	headers   http.Header
	tokenFile string
}

func (a authorize) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host != a.host {
		return a.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for name, values := range a.headers {
		r.Header[name] = values
	}
	if a.tokenFile != "" {
		tok, err := readToken(a.tokenFile)
		if err != nil {
			if r.Body != nil {
				r.Body.Close()
			}
			return nil, err
		}
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	return a.next.RoundTrip(r)
}

// readToken reads a bearer token file: its content, surrounding white
// space (a trailing newline) trimmed.
func readToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("Prometheus bearer token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("Prometheus bearer token file %s is empty", path)
	}
	return tok, nil
}
