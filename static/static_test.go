package static

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestHTMXIsThePinnedRelease(t *testing.T) {
	b, err := FS.ReadFile("htmx.min.js")
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	if got := hex.EncodeToString(h[:]); got != HTMXSHA256 {
		t.Fatalf("htmx.min.js sha256 %s, want %s (htmx.org@%s)", got, HTMXSHA256, HTMXVersion)
	}
	if !strings.Contains(string(b), `version:"`+HTMXVersion+`"`) {
		t.Errorf("htmx.min.js does not declare version %s", HTMXVersion)
	}
}

func TestPathHasContentHash(t *testing.T) {
	for _, name := range []string{"app.css", "app.js", "htmx.min.js"} {
		p := Path(name)
		if !strings.HasPrefix(p, "/static/"+name+"?v=") || len(p) != len("/static/"+name+"?v=")+8 {
			t.Errorf("Path(%q) = %q", name, p)
		}
	}
	if got := Path("nope.js"); got != "/static/nope.js" {
		t.Errorf("unknown asset: %q", got)
	}
}
