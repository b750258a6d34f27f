package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/waterline-dev/waterline/pull"
)

// config is every knob of the binary. Each field has a flag and an
// environment variable; the flag wins. Defaults live in newFlagSet.
type config struct {
	DatabaseURL   string // DATABASE_URL
	PrometheusURL string // PROMETHEUS_URL; empty disables pulling
	PromGzip      bool   // WATERLINE_PROMETHEUS_COMPRESSION: ask for gzipped answers
	// How to reach a Prometheus behind a gateway (Mimir, OpenShift's
	// Thanos querier, an auth proxy): see backend.
	PromHeaders   http.Header // WATERLINE_PROMETHEUS_HEADERS
	PromTokenFile string      // WATERLINE_PROMETHEUS_BEARER_TOKEN_FILE
	PromCAFile    string      // WATERLINE_PROMETHEUS_CA_FILE
	PromCertFile  string      // WATERLINE_PROMETHEUS_CERT_FILE
	PromKeyFile   string      // WATERLINE_PROMETHEUS_KEY_FILE
	Addr          string      // WATERLINE_ADDR
	PublicURL     string      // WATERLINE_PUBLIC_URL; default http://<addr>
	// PublicURLGuessed: no public URL was set and the listen address is
	// every interface's, so links say localhost (serve warns).
	PublicURLGuessed bool
	PullInterval     time.Duration // WATERLINE_PULL_INTERVAL; 0 disables the loop
	ConfigFile       string        // WATERLINE_CONFIG; empty = presets "auto" (those whose exporters Prometheus scrapes)
	LogLevel         string        // WATERLINE_LOG_LEVEL: debug, info, warn, error
	LogFormat        string        // WATERLINE_LOG_FORMAT: text or json

	IngestMaxBytes  int64         // WATERLINE_INGEST_MAX_BYTES: decompressed body limit
	IngestMaxLines  int           // WATERLINE_INGEST_MAX_LINES
	IngestMaxAge    time.Duration // WATERLINE_INGEST_MAX_AGE: oldest accepted time
	IngestMaxFuture time.Duration // WATERLINE_INGEST_MAX_FUTURE: clock skew allowed
	RequestTimeout  time.Duration // WATERLINE_REQUEST_TIMEOUT: per request
	AlertLookback   time.Duration // WATERLINE_ALERT_LOOKBACK: incident window before startsAt

	SamplesRetention time.Duration // WATERLINE_SAMPLES_RETENTION; 0 keeps forever
	PointsRetention  time.Duration // WATERLINE_POINTS_RETENTION; 0 keeps forever

	DetectInterval  time.Duration // WATERLINE_DETECT_INTERVAL; 0 disables the background detector
	DetectOpen      bool          // WATERLINE_DETECT_OPEN_INCIDENTS: detector may open incidents
	DetectMinSev    string        // WATERLINE_DETECT_MIN_SEVERITY: page or ticket
	DetectSens      string        // WATERLINE_DETECT_SENSITIVITY: low, medium or high
	DetectMerge     time.Duration // WATERLINE_DETECT_MERGE: spikes closer than this join one incident
	AuthProxyHeader string        // WATERLINE_AUTH_PROXY_HEADER: trusted user header set by a proxy
	AuthProxyScope  string        // WATERLINE_AUTH_PROXY_SCOPE: read, write or admin for proxy users

	WebhookAllowPrivate bool // WATERLINE_WEBHOOK_ALLOW_PRIVATE: webhooks may target loopback/private/link-local addresses
}

// envFlag binds one flag to one environment variable.
type envFlag struct {
	name, env, def, help string
	set                  func(string) error
}

// flagSpecs returns the flags shared by every command that reads config.
func flagSpecs(c *config) []envFlag {
	str := func(p *string) func(string) error { return func(v string) error { *p = v; return nil } }
	dur := func(p *time.Duration) func(string) error {
		return func(v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return fmt.Errorf("want a non-negative duration such as 30s or 24h, got %q", v)
			}
			*p = d
			return nil
		}
	}
	days := func(p *time.Duration) func(string) error {
		// Retention reads more naturally in days ("14d"); plain durations work too.
		return func(v string) error {
			if n, ok := strings.CutSuffix(v, "d"); ok {
				d, err := strconv.Atoi(n)
				if err != nil || d < 0 {
					return fmt.Errorf("want a number of days such as 14d, got %q", v)
				}
				*p = time.Duration(d) * 24 * time.Hour
				return nil
			}
			return dur(p)(v)
		}
	}
	boolean := func(p *bool) func(string) error {
		return func(v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("want true or false, got %q", v)
			}
			*p = b
			return nil
		}
	}
	size := func(p *int64) func(string) error {
		return func(v string) error {
			n, err := parseSize(v)
			if err != nil {
				return err
			}
			*p = n
			return nil
		}
	}
	count := func(p *int) func(string) error {
		return func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return fmt.Errorf("want a positive integer, got %q", v)
			}
			*p = n
			return nil
		}
	}
	headers := func(p *http.Header) func(string) error {
		return func(v string) error {
			h, err := parseHeaders(v)
			if err != nil {
				return err
			}
			*p = h
			return nil
		}
	}
	oneOf := func(p *string, allowed ...string) func(string) error {
		return func(v string) error {
			for _, a := range allowed {
				if v == a {
					*p = v
					return nil
				}
			}
			return fmt.Errorf("want one of %s, got %q", strings.Join(allowed, ", "), v)
		}
	}
	return []envFlag{
		{"database-url", "DATABASE_URL", "", "Postgres URL", str(&c.DatabaseURL)},
		{"prometheus-url", "PROMETHEUS_URL", "", "Prometheus (or Thanos/Mimir/VictoriaMetrics) base URL; empty disables pulling", str(&c.PrometheusURL)},
		{"prometheus-compression", "WATERLINE_PROMETHEUS_COMPRESSION", "false", "ask Prometheus for gzipped answers (a Prometheus across a slow link; next to it, gzip costs more than it saves)", boolean(&c.PromGzip)},
		{"prometheus-headers", "WATERLINE_PROMETHEUS_HEADERS", "", "headers sent with every query, as OTEL_EXPORTER_OTLP_HEADERS: name=value pairs, comma-separated, values URL-encoded (X-Scope-OrgID=team-a for Mimir/Cortex)", headers(&c.PromHeaders)},
		{"prometheus-bearer-token-file", "WATERLINE_PROMETHEUS_BEARER_TOKEN_FILE", "", "file holding a bearer token for Prometheus, read before every query (a Kubernetes service account's token for OpenShift's Thanos querier or kube-rbac-proxy)", str(&c.PromTokenFile)},
		{"prometheus-ca-file", "WATERLINE_PROMETHEUS_CA_FILE", "", "PEM file of the authorities that sign Prometheus' certificate, trusted next to the system's", str(&c.PromCAFile)},
		{"prometheus-cert-file", "WATERLINE_PROMETHEUS_CERT_FILE", "", "client certificate (PEM) for a Prometheus behind mutual TLS; reloaded when it changes", str(&c.PromCertFile)},
		{"prometheus-key-file", "WATERLINE_PROMETHEUS_KEY_FILE", "", "the client certificate's key (PEM)", str(&c.PromKeyFile)},
		{"addr", "WATERLINE_ADDR", "127.0.0.1:8080", "HTTP listen address", str(&c.Addr)},
		{"public-url", "WATERLINE_PUBLIC_URL", "", "base URL for permalinks and webhooks (default http://<addr>; localhost when addr is 0.0.0.0 or ::)", str(&c.PublicURL)},
		{"pull-interval", "WATERLINE_PULL_INTERVAL", "30s", "pull loop period; 0 disables the loop", dur(&c.PullInterval)},
		{"config", "WATERLINE_CONFIG", "", "YAML file with query roles, presets and SLOs (default: presets auto, those whose exporters Prometheus scrapes)", str(&c.ConfigFile)},
		{"log-level", "WATERLINE_LOG_LEVEL", "info", "debug, info, warn or error", oneOf(&c.LogLevel, "debug", "info", "warn", "error")},
		{"log-format", "WATERLINE_LOG_FORMAT", "text", "text or json", oneOf(&c.LogFormat, "text", "json")},
		{"ingest-max-bytes", "WATERLINE_INGEST_MAX_BYTES", "64MiB", "largest decompressed ingest body", size(&c.IngestMaxBytes)},
		{"ingest-max-lines", "WATERLINE_INGEST_MAX_LINES", "200000", "most records per ingest request", count(&c.IngestMaxLines)},
		{"ingest-max-age", "WATERLINE_INGEST_MAX_AGE", "365d", "oldest record time accepted, counted back from now; 0 = any age", days(&c.IngestMaxAge)},
		{"ingest-max-future", "WATERLINE_INGEST_MAX_FUTURE", "1h", "how far in the future a record time may be (clock skew)", dur(&c.IngestMaxFuture)},
		{"request-timeout", "WATERLINE_REQUEST_TIMEOUT", "120s", "longest time one HTTP request (including its body upload) may take; 0 = no limit", dur(&c.RequestTimeout)},
		{"alert-lookback", "WATERLINE_ALERT_LOOKBACK", "30m", "an Alertmanager incident starts this long before the alert's startsAt", dur(&c.AlertLookback)},
		{"samples-retention", "WATERLINE_SAMPLES_RETENTION", "30d", "keep raw request samples this long (0 = forever); counted from the newest data; older samples are refused", days(&c.SamplesRetention)},
		{"points-retention", "WATERLINE_POINTS_RETENTION", "90d", "keep raw curve points this long (0 = forever); counted from the newest data; change events and the webhook delivery log follow it", days(&c.PointsRetention)},
		{"detect-interval", "WATERLINE_DETECT_INTERVAL", "1m", "background spike detector period; 0 disables it", dur(&c.DetectInterval)},
		{"detect-open-incidents", "WATERLINE_DETECT_OPEN_INCIDENTS", "true", "let the detector open incidents for severe spikes", boolean(&c.DetectOpen)},
		{"detect-min-severity", "WATERLINE_DETECT_MIN_SEVERITY", "page", "weakest spike severity that opens an incident: page or ticket", oneOf(&c.DetectMinSev, "page", "ticket")},
		{"detect-sensitivity", "WATERLINE_DETECT_SENSITIVITY", "medium", "spike detector's false-alarm budget per series: low (about 1 alarm in 50 days of noise), medium (1 in 10), high (1 in 2)", oneOf(&c.DetectSens, "low", "medium", "high")},
		{"detect-merge", "WATERLINE_DETECT_MERGE", "30m", "spikes closer than this join the same incident (another model's spike makes it the fleet's)", dur(&c.DetectMerge)},
		{"auth-proxy-header", "WATERLINE_AUTH_PROXY_HEADER", "", "trust this request header as the signed-in user (set by an auth proxy)", str(&c.AuthProxyHeader)},
		{"auth-proxy-scope", "WATERLINE_AUTH_PROXY_SCOPE", "read", "what users vouched for by the auth proxy may do: read, write (resolve, freeze, share) or admin", oneOf(&c.AuthProxyScope, "read", "write", "admin")},
		{"webhook-allow-private", "WATERLINE_WEBHOOK_ALLOW_PRIVATE", "false", "let webhooks target loopback, private and link-local addresses (receivers inside your network)", boolean(&c.WebhookAllowPrivate)},
	}
}

// parseFlags parses a command's flags. -h prints usage (printUsage, on
// stderr) and ends the command with errHelp, a success; a bad flag or
// value is one line naming it, not the flag package's error followed by
// the whole usage.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer, printUsage func()) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stderr)
		printUsage()
		return errHelp
	}
	if err != nil {
		return fmt.Errorf("%v (run '%s -h' for the flags)", err, fs.Name())
	}
	return nil
}

// parseConfig reads flags (args) over environment variables over defaults.
// Extra flags of a command are registered by extra before parsing. No
// command takes positional arguments, so any left over is an error. Only
// serve takes every setting; pull takes those a history pull reads, and
// the other commands (migrate, token) DATABASE_URL alone, from flag or
// variable, with the defaults for the rest, so their -h lists what they
// use and a setting meant for serve cannot stop them.
func parseConfig(name string, args []string, env func(string) string, stderr io.Writer, extra func(fs *flag.FlagSet)) (config, error) {
	var c config
	specs := flagSpecs(&c)
	fs := flag.NewFlagSet("waterline "+name, flag.ContinueOnError)
	values := map[string]*string{}
	// migrate and token use only the database, pull only what a history
	// pull reads: the server's other settings, from flags or from an
	// environment shared with serve, are not theirs to list, read (nor
	// to refuse).
	for _, s := range specs {
		v := s.def
		if !usesSetting(name, s.name) {
			values[s.name] = &v
			continue
		}
		if e := env(s.env); e != "" {
			v = e
		}
		if s.def == "true" || s.def == "false" { // a switch: -name alone turns it on
			values[s.name] = &v
			fs.Var(switchText{&v}, s.name, s.help+" ($"+s.env+")")
			continue
		}
		values[s.name] = fs.String(s.name, v, s.help+" ($"+s.env+")")
		// -h lists the environment's values as defaults: never its
		// credentials (a URL's password, a header's value).
		if hide := secretShown[s.name]; hide != nil && v != "" {
			fs.Lookup(s.name).DefValue = hide(v)
		}
	}
	if extra != nil {
		extra(fs)
	}
	if err := parseFlags(fs, args, stderr, func() {
		fmt.Fprintf(stderr, "usage: %s [flags]\n\nflags:\n", fs.Name())
		fs.PrintDefaults()
	}); err != nil {
		return c, err
	}
	for _, s := range specs {
		if err := s.set(*values[s.name]); err != nil {
			return c, fmt.Errorf("-%s / %s: %w", s.name, s.env, err)
		}
	}
	// A URL's password never reaches a message: url.Parse's error quotes
	// the whole URL, so only its reason is kept.
	if c.DatabaseURL != "" {
		if _, err := url.Parse(c.DatabaseURL); err != nil {
			return c, fmt.Errorf("DATABASE_URL: not a URL: %v", urlReason(err))
		}
	}
	if c.PrometheusURL != "" {
		u, err := url.Parse(c.PrometheusURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			got := "an unparseable URL"
			if err == nil { // not the URL itself: "user:pw@host" parses as scheme "user"
				got = fmt.Sprintf("scheme %q and host %q", u.Scheme, u.Host)
			}
			return c, fmt.Errorf("PROMETHEUS_URL: want http(s)://host[:port], got %s", got)
		}
		// Two credentials would be one too many: Go's client sends the
		// URL's only when no Authorization header is set.
		creds := 0
		if u.User != nil {
			creds++
		}
		if c.PromTokenFile != "" {
			creds++
		}
		if c.PromHeaders.Get("Authorization") != "" {
			creds++
		}
		if creds > 1 {
			return c, errors.New("Prometheus credentials: give one of a user:password in PROMETHEUS_URL, WATERLINE_PROMETHEUS_BEARER_TOKEN_FILE or an Authorization header in WATERLINE_PROMETHEUS_HEADERS")
		}
		if (c.PromCertFile == "") != (c.PromKeyFile == "") {
			return c, errors.New("WATERLINE_PROMETHEUS_CERT_FILE and WATERLINE_PROMETHEUS_KEY_FILE: give both or neither")
		}
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return c, fmt.Errorf("WATERLINE_ADDR: want host:port, got %q", c.Addr)
	}
	if c.PublicURL == "" {
		// Links (share links, webhooks' incident links) need an address
		// others can open; a listen address on every interface is none.
		host, port, _ := net.SplitHostPort(c.Addr)
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			host, c.PublicURLGuessed = "localhost", true
		}
		c.PublicURL = "http://" + net.JoinHostPort(host, port)
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if u, err := url.Parse(c.PublicURL); err != nil || u.Host == "" {
		return c, fmt.Errorf("WATERLINE_PUBLIC_URL: want an absolute URL, got %q", c.PublicURL)
	}
	if rest := fs.Args(); len(rest) > 0 {
		hint := ""
		if _, err := strconv.ParseBool(rest[0]); err == nil {
			hint = " (a switch takes its value after =, as -webhook-allow-private=false)"
		}
		return c, fmt.Errorf("unexpected arguments: %s%s", strings.Join(rest, " "), hint)
	}
	return c, nil
}

// secretShown are the settings that may hold credentials, with how -h
// shows them.
var secretShown = map[string]func(string) string{
	"database-url":   redactedURL,
	"prometheus-url": redactedURL,
	"prometheus-headers": func(v string) string {
		var names []string
		for pair := range strings.SplitSeq(v, ",") {
			if name, _, ok := strings.Cut(pair, "="); ok {
				names = append(names, strings.TrimSpace(name)+"=xxxxx")
			}
		}
		return strings.Join(names, ",")
	},
}

// redactedURL is a URL with its passwords (user info, a password=
// parameter as libpq takes) replaced by xxxxx. Anything else — a libpq
// "host=… password=…" string — is not shown.
func redactedURL(v string) string {
	u, err := url.Parse(v)
	if err != nil || !strings.Contains(v, "://") {
		return "(set, not shown)"
	}
	if q := u.Query(); q.Has("password") || q.Has("sslpassword") {
		for _, k := range []string{"password", "sslpassword"} {
			if q.Has(k) {
				q.Set(k, "xxxxx")
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// backend is where and how to reach Prometheus.
func (c config) backend() pull.Backend {
	return pull.Backend{URL: c.PrometheusURL, Headers: c.PromHeaders, BearerTokenFile: c.PromTokenFile,
		CAFile: c.PromCAFile, CertFile: c.PromCertFile, KeyFile: c.PromKeyFile, Compression: c.PromGzip}
}

// parseHeaders reads headers in the form of OpenTelemetry's
// OTEL_EXPORTER_OTLP_HEADERS (name=value pairs, comma-separated, values
// URL-encoded), the form operators already write. Errors name the pair by
// position and its header, never its value (a credential, often).
func parseHeaders(v string) (http.Header, error) {
	h := http.Header{}
	for i, pair := range strings.Split(v, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, value, ok := strings.Cut(pair, "=")
		name = strings.TrimSpace(name)
		if !ok || !httpguts.ValidHeaderFieldName(name) {
			return nil, fmt.Errorf("pair %d: want name=value with a header name, got %q before the =", i+1, name)
		}
		dec, err := url.PathUnescape(strings.TrimSpace(value))
		if err != nil || !httpguts.ValidHeaderFieldValue(dec) {
			return nil, fmt.Errorf("pair %d (%s): the value is not a valid URL-encoded header value", i+1, name)
		}
		switch http.CanonicalHeaderKey(name) {
		case "Host", "Content-Length", "Content-Type", "Transfer-Encoding", "Connection":
			return nil, fmt.Errorf("pair %d: %s is set by the HTTP client, not by configuration", i+1, name)
		}
		h.Add(name, dec)
	}
	return h, nil
}

// pullSettings are the settings a history pull reads: where to read and
// write, what to pull, how to log, and the sensitivity its spikes are
// recorded at.
var pullSettings = map[string]bool{"database-url": true, "prometheus-url": true, "prometheus-compression": true,
	"prometheus-headers": true, "prometheus-bearer-token-file": true, "prometheus-ca-file": true,
	"prometheus-cert-file": true, "prometheus-key-file": true,
	"config": true, "log-level": true, "log-format": true, "detect-sensitivity": true}

// usesSetting says whether the command reads the setting (flag and
// environment variable); the others keep their defaults.
func usesSetting(command, setting string) bool {
	switch command {
	case "serve":
		return true
	case "pull":
		return pullSettings[setting]
	}
	return setting == "database-url"
}

// requireDatabase fails fast with one line when DATABASE_URL is missing.
// switchText is a true/false setting as a flag.Value that needs no value
// on the command line (IsBoolFlag), as Go's boolean flags; the text is
// checked with the rest of the settings, as the environment's is.
type switchText struct{ p *string }

func (s switchText) String() string {
	if s.p == nil {
		return ""
	}
	return *s.p
}
func (s switchText) Set(v string) error { *s.p = v; return nil }
func (s switchText) IsBoolFlag() bool   { return true }

// urlReason is url.Parse's error without the URL it quotes (which may hold
// a password).
func urlReason(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func (c config) requireDatabase() error {
	if c.DatabaseURL == "" {
		return errors.New("DATABASE_URL (or -database-url) is required, e.g. postgres://postgres@127.0.0.1:5432/waterline?sslmode=disable")
	}
	return nil
}

// parseSize reads "64MiB", "512KiB", "1GiB" or a plain byte count.
func parseSize(v string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}}
	for _, u := range units {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			x, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
			if err != nil || x <= 0 {
				break
			}
			return x * u.mult, nil
		}
	}
	x, err := strconv.ParseInt(v, 10, 64)
	if err != nil || x <= 0 {
		return 0, fmt.Errorf("want a size such as 64MiB, got %q", v)
	}
	return x, nil
}
