package ui

import "testing"

// Known open-redirect bypasses: each must fall back to "/". The values
// are as the handler sees them, after the query string's one decoding.
func TestSafeNextRefusesBypasses(t *testing.T) {
	for _, next := range []string{
		"/\t/evil.example/x",  // tab: browsers strip it, leaving //evil.example
		"/\n/evil.example",    // newline, stripped too
		"/\r\n/evil.example",  // CR/LF, also a header split
		"/\\evil.example",     // backslash reads as a slash
		"\\\\evil.example",    // \\host
		"/x\\..\\/evil",       // backslash anywhere
		"//evil.example",      // protocol-relative
		"///evil.example",     // /%2F/ after one decoding
		"/%2F/evil.example",   // double-encoded slash, decoded once more by a proxy
		"/%2f%2fevil.example", // lower case
		"/%5Cevil.example",    // encoded backslash
		"/%09/evil.example",   // encoded tab
		"/%00",                // encoded NUL
		"https://evil.example/",
		"https:evil.example",
		"http:/evil.example",
		"javascript:alert(1)",
		"evil.example",
		"",
		"/\u2215evil.example",  // ∕ division slash
		"/\uff0fevil.example",  // ／ full-width solidus
		"/\uff3cevil.example",  // ＼ full-width reverse solidus
		"/\u2044evil.example",  // ⁄ fraction slash
		"/ /evil.example",      // space
		"/\x7f/evil.example",   // DEL
		"/\u00a0/evil.example", // no-break space
	} {
		if got := safeNext(next); got != "/" {
			t.Errorf("safeNext(%q) = %q, want /", next, got)
		}
	}
	for _, next := range []string{
		"/",
		"/incidents/7",
		"/incidents/7?from=2026-01-02T15%3A04%3A05Z&tenant=t-a#samples",
		"/explore?q=a%2Fb",
		"/https://evil.example", // a path on this site
	} {
		if got := safeNext(next); got != next {
			t.Errorf("safeNext(%q) = %q, want it kept", next, got)
		}
	}
}
