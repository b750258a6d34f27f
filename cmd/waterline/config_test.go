package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestPublicURLNeverUnspecified: a listen address on every interface
// (0.0.0.0, as the Docker image sets) is no address a share link or a
// webhook's link can point at; without WATERLINE_PUBLIC_URL the links use
// localhost and serve warns, rather than printing http://0.0.0.0:8080.
func TestPublicURLNeverUnspecified(t *testing.T) {
	for addr, want := range map[string]string{
		"0.0.0.0:8080":   "http://localhost:8080",
		"[::]:9000":      "http://localhost:9000",
		":8080":          "http://localhost:8080",
		"127.0.0.1:8080": "http://127.0.0.1:8080",
		"wl.internal:80": "http://wl.internal:80",
	} {
		env := map[string]string{"WATERLINE_ADDR": addr}
		c, err := parseConfig("serve", nil, func(k string) string { return env[k] }, io.Discard, nil)
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		if c.PublicURL != want {
			t.Errorf("addr %s: public URL %q, want %q", addr, c.PublicURL, want)
		}
		if guessed := c.PublicURLGuessed; guessed != (want != "http://"+addr) {
			t.Errorf("addr %s: guessed %v", addr, guessed)
		}
	}
	env := map[string]string{"WATERLINE_ADDR": "0.0.0.0:8080", "WATERLINE_PUBLIC_URL": "https://waterline.example.com/"}
	if c, _ := parseConfig("serve", nil, func(k string) string { return env[k] }, io.Discard, nil); c.PublicURL != "https://waterline.example.com" || c.PublicURLGuessed {
		t.Errorf("an explicit public URL: %q guessed %v", c.PublicURL, c.PublicURLGuessed)
	}
}

// A bad flag is one line naming it (not the usage after it); -h prints
// the usage and is a success; migrate and token list only what they use.
func TestFlagErrorsAndHelp(t *testing.T) {
	for _, tc := range []struct {
		args          []string
		wantErr       string // "" : errHelp
		usage, absent string // on stderr
	}{
		{[]string{"serve", "--bogus"}, "flag provided but not defined: -bogus (run 'waterline serve -h'", "", "-addr"},
		{[]string{"demo", "--inject-after", "abc"}, `invalid value "abc" for flag -inject-after`, "", "-scenario"},
		{[]string{"serve", "-h"}, "", "-addr", ""},
		{[]string{"demo", "-h"}, "", "-inject-after", ""},
		{[]string{"token", "-h"}, "", "token revoke NAME|ID", ""},
		{[]string{"token", "list", "-h"}, "", "-database-url", "-addr"},
		{[]string{"token", "revoke", "-h"}, "", "token revoke NAME|ID", ""},
		{[]string{"migrate", "-h"}, "", "-database-url", "-detect-interval"},
	} {
		var stderr strings.Builder
		err := run(context.Background(), tc.args, envMap(nil), io.Discard, &stderr)
		switch {
		case tc.wantErr == "" && !errors.Is(err, errHelp):
			t.Errorf("%v: err = %v, want help (exit 0)", tc.args, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.wantErr)
		}
		if tc.usage != "" && !strings.Contains(stderr.String(), tc.usage) {
			t.Errorf("%v: usage lacks %q:\n%s", tc.args, tc.usage, stderr.String())
		}
		if tc.absent != "" && strings.Contains(stderr.String(), tc.absent) {
			t.Errorf("%v: stderr has %q:\n%s", tc.args, tc.absent, stderr.String())
		}
	}
}

// migrate and token read only DATABASE_URL: a server setting that is bad
// (or meant for another version) in an environment shared with serve, as
// a compose file or a Kubernetes ConfigMap shares it, does not stop them.
func TestMigrateAndTokenIgnoreServerSettings(t *testing.T) {
	env := map[string]string{"WATERLINE_ADDR": "no-port", "PROMETHEUS_URL": "ftp://x", "WATERLINE_DETECT_INTERVAL": "often",
		"DATABASE_URL": "postgres://u@127.0.0.1:1/db"}
	for _, name := range []string{"migrate", "token list"} {
		c, err := parseConfig(name, nil, func(k string) string { return env[k] }, io.Discard, nil)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if c.DatabaseURL != env["DATABASE_URL"] {
			t.Errorf("%s: database URL %q", name, c.DatabaseURL)
		}
	}
	// serve still refuses them.
	if _, err := parseConfig("serve", nil, func(k string) string { return env[k] }, io.Discard, nil); err == nil {
		t.Error("serve took a bad WATERLINE_ADDR")
	}
}

// A URL's password never reaches an error: a DATABASE_URL with a bad port
// printed it whole, and a malformed PROMETHEUS_URL was echoed as given.
func TestConfigErrorsHideURLPasswords(t *testing.T) {
	for _, env := range []map[string]string{
		{"DATABASE_URL": "postgres://u:S3cretPW@host:notaport/db"},
		{"PROMETHEUS_URL": "user:S3cretPW@prom:9090"},
		{"PROMETHEUS_URL": "ftp://user:S3cretPW@prom:9090"},
	} {
		_, err := parseConfig("serve", nil, func(k string) string { return env[k] }, io.Discard, nil)
		if err == nil || strings.Contains(err.Error(), "S3cretPW") {
			t.Errorf("%v: %v", env, err)
		}
	}
}

// A history pull records spikes at the sensitivity serve's detector uses:
// -detect-sensitivity / WATERLINE_DETECT_SENSITIVITY was accepted by pull
// and dropped (it recorded at medium).
func TestPullRecordsAtTheConfiguredSensitivity(t *testing.T) {
	env := map[string]string{"WATERLINE_DETECT_SENSITIVITY": "high"}
	c, err := parseConfig("pull", nil, func(k string) string { return env[k] }, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := historyDetectorOptions(c, nil).Sensitivity; got != "high" {
		t.Errorf("pull's detector sensitivity %q, want high", got)
	}
}

// Switches are flags as Go's are: -webhook-allow-private alone turns it
// on ("flag needs an argument" before), =false turns one off.
func TestSwitchesNeedNoValue(t *testing.T) {
	c, err := parseConfig("serve", []string{"-webhook-allow-private", "-prometheus-compression", "-detect-open-incidents=false", "-addr", "127.0.0.1:9"},
		func(string) string { return "" }, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.WebhookAllowPrivate || !c.PromGzip || c.DetectOpen || c.Addr != "127.0.0.1:9" {
		t.Errorf("allow-private %v, compression %v, open incidents %v, addr %q", c.WebhookAllowPrivate, c.PromGzip, c.DetectOpen, c.Addr)
	}
	// The old form, a value after a space, is refused, saying why (it
	// would turn the switch on and leave "false" over).
	if _, err := parseConfig("serve", []string{"-detect-open-incidents", "false"}, func(string) string { return "" }, io.Discard, nil); err == nil ||
		!strings.Contains(err.Error(), "=false") {
		t.Errorf("-detect-open-incidents false: %v", err)
	}
	env := map[string]string{"WATERLINE_WEBHOOK_ALLOW_PRIVATE": "true"}
	if c, err := parseConfig("serve", nil, func(k string) string { return env[k] }, io.Discard, nil); err != nil || !c.WebhookAllowPrivate {
		t.Errorf("from the environment: %v %v", c.WebhookAllowPrivate, err)
	}
}

// pull lists and reads only what a history pull uses: its -h listed every
// serve setting (listen address, webhooks, retention…), and a bad one of
// them in an environment shared with serve stopped it.
func TestPullTakesOnlyItsSettings(t *testing.T) {
	var help strings.Builder
	if _, err := parseConfig("pull", []string{"-h"}, func(string) string { return "" }, &help, nil); !errors.Is(err, errHelp) {
		t.Fatalf("-h: %v", err)
	}
	for _, want := range []string{"-database-url", "-prometheus-url", "-config", "-detect-sensitivity", "-log-level"} {
		if !strings.Contains(help.String(), want+" ") {
			t.Errorf("pull -h lacks %s", want)
		}
	}
	for _, serveOnly := range []string{"-addr", "-webhook-allow-private", "-samples-retention", "-detect-interval", "-auth-proxy-header", "-pull-interval"} {
		if strings.Contains(help.String(), serveOnly+" ") {
			t.Errorf("pull -h lists serve's %s", serveOnly)
		}
	}
	env := map[string]string{"WATERLINE_ADDR": "no-port", "WATERLINE_DETECT_INTERVAL": "often", "PROMETHEUS_URL": "http://prom:9090"}
	c, err := parseConfig("pull", nil, func(k string) string { return env[k] }, io.Discard, nil)
	if err != nil {
		t.Fatalf("a serve setting stopped pull: %v", err)
	}
	if c.PrometheusURL != env["PROMETHEUS_URL"] {
		t.Errorf("prometheus URL %q", c.PrometheusURL)
	}
	if _, err := parseConfig("pull", []string{"-addr", "127.0.0.1:9"}, func(string) string { return "" }, io.Discard, nil); err == nil {
		t.Error("pull took -addr")
	}
}

// -h lists the environment's values as the flags' defaults: it printed
// DATABASE_URL's password whole, and would print a header's credential.
func TestHelpHidesCredentialsFromTheEnvironment(t *testing.T) {
	env := map[string]string{
		"DATABASE_URL":                 "postgres://u:S3cretPW@db:5432/w?sslmode=disable&sslpassword=S3cretKey",
		"PROMETHEUS_URL":               "https://grafana:S3cretPW@prom.example.com",
		"WATERLINE_PROMETHEUS_HEADERS": "X-Scope-OrgID=team-a,X-Api-Key=S3cretKey",
	}
	var out bytes.Buffer
	if _, err := parseConfig("serve", []string{"-h"}, func(k string) string { return env[k] }, &out, nil); !errors.Is(err, errHelp) {
		t.Fatalf("-h: %v", err)
	}
	help := out.String()
	if strings.Contains(help, "S3cret") {
		t.Errorf("-h prints a credential:\n%s", help)
	}
	for _, want := range []string{"postgres://u:xxxxx@db:5432/w", "https://grafana:xxxxx@prom.example.com", "X-Scope-OrgID=xxxxx,X-Api-Key=xxxxx"} {
		if !strings.Contains(help, want) {
			t.Errorf("-h lacks %q", want)
		}
	}
	// A libpq keyword string is not a URL: not shown at all.
	env = map[string]string{"DATABASE_URL": "host=db user=u password=S3cretPW"}
	out.Reset()
	_, _ = parseConfig("migrate", []string{"-h"}, func(k string) string { return env[k] }, &out, nil)
	if strings.Contains(out.String(), "S3cret") {
		t.Errorf("migrate -h prints a credential:\n%s", out.String())
	}
}

// WATERLINE_PROMETHEUS_HEADERS reads as OTEL_EXPORTER_OTLP_HEADERS does;
// errors name the pair and its header, never the value.
func TestPrometheusHeaders(t *testing.T) {
	env := map[string]string{"PROMETHEUS_URL": "http://mimir:8080/prometheus",
		"WATERLINE_PROMETHEUS_HEADERS": " X-Scope-OrgID = team-a|team-b , x-extra=a%20b%2Cc"}
	c, err := parseConfig("pull", nil, func(k string) string { return env[k] }, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.backend().Headers; got.Get("X-Scope-OrgID") != "team-a|team-b" || got.Get("X-Extra") != "a b,c" {
		t.Errorf("headers %v", got)
	}
	for _, bad := range []string{"X-Scope-OrgID", "Bad Name=S3cret", "Host=S3cret.example.com", "X-Key=S3cret%0d%0aInjected: 1", "X-Key=S3cret%zz"} {
		env := map[string]string{"PROMETHEUS_URL": "http://prom:9090", "WATERLINE_PROMETHEUS_HEADERS": bad}
		_, err := parseConfig("serve", nil, func(k string) string { return env[k] }, io.Discard, nil)
		if err == nil || strings.Contains(err.Error(), "S3cret") || !strings.Contains(err.Error(), "WATERLINE_PROMETHEUS_HEADERS") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	// Two credentials at once, or half a client certificate: refused.
	for _, env := range []map[string]string{
		{"PROMETHEUS_URL": "http://u:pw@prom:9090", "WATERLINE_PROMETHEUS_BEARER_TOKEN_FILE": "/var/run/secrets/token"},
		{"PROMETHEUS_URL": "http://prom:9090", "WATERLINE_PROMETHEUS_HEADERS": "Authorization=Bearer%20x", "WATERLINE_PROMETHEUS_BEARER_TOKEN_FILE": "/t"},
		{"PROMETHEUS_URL": "http://prom:9090", "WATERLINE_PROMETHEUS_CERT_FILE": "/tls.crt"},
	} {
		if _, err := parseConfig("serve", nil, func(k string) string { return env[k] }, io.Discard, nil); err == nil {
			t.Errorf("%v: accepted", env)
		}
	}
}

// readme is the repository's README.md.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestREADMEConfigurationTableIsTheFlags holds README's Configuration
// table to flagSpecs: every setting is a row naming its variable and its
// flag, every row is a setting, and a default written as one literal is
// the flag's.
func TestREADMEConfigurationTableIsTheFlags(t *testing.T) {
	var c config
	specs := map[string]envFlag{}
	for _, s := range flagSpecs(&c) {
		specs[s.env] = s
	}
	ticked := regexp.MustCompile("`([^`]+)`")
	literal := regexp.MustCompile("^`([^`]*)`$")
	seen := map[string]bool{}
	for _, line := range strings.Split(readme(t), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(line, "| `") {
			continue
		}
		vars := ticked.FindAllStringSubmatch(cells[1], -1)
		flags := ticked.FindAllStringSubmatch(cells[2], -1)
		if len(vars) == 0 || (!strings.HasPrefix(vars[0][1], "WATERLINE_") && !strings.HasSuffix(vars[0][1], "_URL")) {
			continue // another table
		}
		if len(flags) != len(vars) {
			t.Errorf("README row %q: %d variables, %d flags", strings.TrimSpace(cells[1]), len(vars), len(flags))
			continue
		}
		for i, v := range vars {
			s, ok := specs[v[1]]
			switch {
			case !ok:
				t.Errorf("README documents %s, which no command reads", v[1])
				continue
			case seen[v[1]]:
				t.Errorf("README documents %s twice", v[1])
			case flags[i][1] != "-"+s.name:
				t.Errorf("README gives %s the flag %s; it is -%s", v[1], flags[i][1], s.name)
			}
			seen[v[1]] = true
			if m := literal.FindStringSubmatch(strings.TrimSpace(cells[3])); m != nil && m[1] != s.def {
				t.Errorf("README gives %s the default %q; it is %q", v[1], m[1], s.def)
			}
		}
	}
	for env := range specs {
		if !seen[env] {
			t.Errorf("%s (-%s) is missing from README's Configuration table", env, specs[env].name)
		}
	}
}

// TestREADMECommandLinesParse runs every waterline command line README
// shows (its shell blocks, and make demo's DEMO_FLAGS) up to its flags,
// with -h after them: a flag the command does not have fails here, not
// in a reader's terminal. README's list of demo flags names each of
// demo's flags.
func TestREADMECommandLinesParse(t *testing.T) {
	text := readme(t)
	var lines [][]string
	inShell := false
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			inShell = line == "```sh"
			continue
		case !inShell:
			continue
		}
		line, _, _ = strings.Cut(line, "#")
		fields := strings.Fields(line)
		for i := 0; i+1 < len(fields); i++ {
			if fields[i] == "waterline" && commands[fields[i+1]].run != nil {
				lines = append(lines, fields[i+1:])
				break
			}
		}
	}
	for _, m := range regexp.MustCompile(`make demo DEMO_FLAGS="?([^"`+"`"+`]+)"?`).FindAllStringSubmatch(text, -1) {
		lines = append(lines, append([]string{"demo"}, strings.Fields(m[1])...))
	}
	if len(lines) < 8 {
		t.Fatalf("only %d command lines found in README", len(lines))
	}
	for _, args := range lines {
		var stderr strings.Builder
		err := run(context.Background(), append(args[:len(args):len(args)], "-h"), envMap(nil), io.Discard, &stderr)
		if !errors.Is(err, errHelp) {
			t.Errorf("README's `waterline %s`: %v", strings.Join(args, " "), err)
		}
	}

	var help strings.Builder
	if err := run(context.Background(), []string{"demo", "-h"}, envMap(nil), io.Discard, &help); !errors.Is(err, errHelp) {
		t.Fatal(err)
	}
	_, listed, ok := strings.Cut(strings.Join(strings.Fields(text), " "), "`waterline demo` takes its own flags (")
	listed, _, _ = strings.Cut(listed, ")")
	if !ok {
		t.Fatal("README no longer lists demo's flags")
	}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z-]+)`).FindAllStringSubmatch(help.String(), -1) {
		if !strings.Contains(listed, "`--"+m[1]+"`") {
			t.Errorf("README's list of demo's flags (%s) lacks --%s", listed, m[1])
		}
	}
}
