// Package views holds Waterline's HTML: templ components (one .templ per
// page) and the plain functions that build their view structs. Components
// take structs shaped like the screen (formatting done here, in Go, where
// it is tested); builders take domain values (correlate, store, wire) and
// never do I/O. Package ui loads the data, calls a builder, and renders
// the component.
package views

//go:generate go tool templ generate -path ../../..

import (
	"math"

	"github.com/a-h/templ"
	"strconv"
	"strings"
	"time"
)

// Page is what the layout needs around a page body.
type Page struct {
	Title string
	User  string // signed-in user; "" on public (share) pages
	// Proxied: the user is signed in by the auth proxy, which only it
	// can sign out (a Sign out button would bring them straight back).
	Proxied bool
	// Shared: a read-only share page (no user, and nothing to sign in
	// for); a page without a user that is not one offers to sign in.
	Shared bool
	CSRF   string // the session's CSRF token; forms and htmx requests echo it
	Nav    string // "home", "explore" or "" — which nav entry is current
	// OG is set on share pages: Open Graph / Twitter tags for chat unfurls.
	OG *OpenGraph
}

// OpenGraph is the unfurl card of a share link. Nothing in it may name a
// tenant or quote a sample.
type OpenGraph struct {
	Title, Description, URL, Image string
	Labels                         []KV // twitter:label/data pairs
}

// KV is a label and a value.
type KV struct{ K, V string }

// Link is an anchor; Current marks the one that is selected.
type Link struct {
	Text, Href string
	Current    bool
	Title      string // a tooltip, when the text is terse
	// Get is the htmx request of a link above the filtered region: Href
	// without the window, which comes from the region as it is now
	// (#view-window, see Filtered.Window), so a zoom made since the page
	// loaded is kept.
	Get string
}

// FmtMs formats a duration in ms for people: "0.8 ms", "42 ms", "1,250 ms".
func FmtMs(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	if math.Abs(v) < 10 {
		// + 0 turns a -0 that rounds away ("-0.0 ms") into 0.
		return strconv.FormatFloat(math.Round(v*10)/10+0, 'f', 1, 64) + " ms"
	}
	return thousands(math.Round(v)) + " ms"
}

// FmtIntervalMs formats a confidence interval in ms with both ends at
// one precision, set by the wider end: "[293, 325] ms", "[-0.5, 1.4] ms",
// "[-0.01, 0.03] ms" (not "-0.0066").
func FmtIntervalMs(lo, hi float64) string {
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return "–"
	}
	digits := 2
	switch m := math.Max(math.Abs(lo), math.Abs(hi)); {
	case m >= 10:
		return "[" + thousands(math.Round(lo)) + ", " + thousands(math.Round(hi)) + "] ms"
	case m >= 1:
		digits = 1
	}
	f := func(v float64) string {
		s := strconv.FormatFloat(v, 'f', digits, 64)
		if strings.Trim(s, "-0.") == "" { // no "-0.00"
			s = strings.TrimPrefix(s, "-")
		}
		return s
	}
	return "[" + f(lo) + ", " + f(hi) + "] ms"
}

// FmtNum formats a measured value compactly: "0.42", "3.1", "250", "12.5k".
func FmtNum(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "–"
	case a >= 1e9:
		return trimZero(strconv.FormatFloat(v/1e9, 'f', 1, 64)) + "G"
	case a >= 1e6:
		return trimZero(strconv.FormatFloat(v/1e6, 'f', 1, 64)) + "M"
	case a >= 1e4:
		return trimZero(strconv.FormatFloat(v/1e3, 'f', 1, 64)) + "k"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return trimZero(strconv.FormatFloat(v, 'f', 1, 64))
	case a == 0:
		return "0"
	case a < 0.01:
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
	return trimZero(strconv.FormatFloat(v, 'f', 2, 64))
}

func trimZero(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// thousands renders an integral value with comma separators.
func thousands(v float64) string {
	s := strconv.FormatFloat(math.Abs(v), 'f', 0, 64)
	var b strings.Builder
	if v < 0 {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// FmtPct formats a 0..100 share: "42%", "0.5%".
func FmtPct(v float64) string {
	switch a := math.Abs(v); {
	case a > 0 && a < 0.05:
		// Not "0.0%" next to a "0%": something, under a tenth of a point.
		if v < 0 {
			return ">-0.1%"
		}
		return "<0.1%"
	case a > 0 && a < 1:
		return strconv.FormatFloat(v, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(math.Round(v)+0, 'f', 0, 64) + "%"
}

// FmtTime formats an instant in UTC, with the date only when it is not
// the same day as ref.
func FmtTime(t, ref time.Time) string {
	t = t.UTC()
	if ref.IsZero() || t.Format("2006-01-02") != ref.UTC().Format("2006-01-02") {
		return t.Format("2006-01-02 15:04:05") + " UTC"
	}
	return t.Format("15:04:05") + " UTC"
}

// Ago says how long before now t was: "just now", "4 min ago", "3 h ago",
// "2 days ago".
func Ago(t, now time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + " min ago"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + " h ago"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + " days ago"
}

// FmtDuration formats a span: "45 s", "12 min", "2 h 5 min", "3 days".
func FmtDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + " s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + " min"
	case d < 48*time.Hour:
		h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
		if m == 0 {
			return strconv.Itoa(h) + " h"
		}
		return strconv.Itoa(h) + " h " + strconv.Itoa(m) + " min"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + " days"
}

// pct clamps a fraction to 0..100 percent for a bar width.
func pct(f float64) float64 {
	if math.IsNaN(f) || f < 0 {
		return 0
	}
	return math.Min(100, 100*f)
}

// Style returns one CSS declaration for a style attribute, e.g.
// Style("left", 12.5) = "left:12.50%;". It is SafeCSS: the property is a
// constant of ours and the value a formatted number.
func Style(prop string, percent float64) templ.SafeCSS {
	return templ.SafeCSS(prop + ":" + strconv.FormatFloat(percent, 'f', 2, 64) + "%;")
}

// Width returns "width:N%;".
func Width(percent float64) templ.SafeCSS { return Style("width", percent) }

// Height returns "height:Npx;".
func Height(px int) templ.SafeCSS { return templ.SafeCSS("height:" + strconv.Itoa(px) + "px;") }

// CategoryLabel names a cause category for people.
func CategoryLabel(cat string) string {
	switch cat {
	case "release":
		return "Bad release"
	case "capacity":
		return "Capacity / traffic peak"
	case "local_replica":
		return "Local replica or node"
	case "batching":
		return "Batching window"
	case "cold_start":
		return "Cold start after scale-up"
	case "downstream":
		return "Downstream dependency"
	case "routing":
		return "Routing imbalance"
	case "ingress":
		return "Ingress / gateway"
	case "unexplained":
		return "Unexplained"
	}
	return cat
}

// samplesOf says whose samples a count covers: "of all models", "of
// rerank-base", or with other filters "of rerank-base matching the
// filters". The page shows several counts of samples (the analysis', the
// heatmap's, the table's); each says whose, so that two differing
// numbers do not read as a contradiction.
func samplesOf(s State) string {
	other := s.Scope
	other.Model = ""
	of := "of all models"
	if s.Scope.Model != "" {
		of = "of " + s.Scope.Model
	}
	if !other.IsZero() || s.Entry != "" || s.Status != "" || s.Batch != "" {
		of += " matching the filters"
	}
	return of
}

// FmtSpan formats a window as "16:03–19:07 UTC", with dates when it does
// not lie within one day.
func FmtSpan(from, to time.Time) string {
	from, to = from.UTC(), to.UTC()
	if from.Format("2006-01-02") != to.Add(-time.Nanosecond).Format("2006-01-02") {
		return from.Format("2006-01-02 15:04") + " – " + to.Format("2006-01-02 15:04") + " UTC"
	}
	return from.Format("15:04") + "–" + to.Format("15:04") + " UTC"
}
