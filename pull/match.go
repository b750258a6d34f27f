package pull

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// A Prometheus that holds several clusters or environments (Thanos, Mimir,
// VictoriaMetrics cluster, one Prometheus federating staging and prod)
// gives every query of a preset all of them: "sum by (model)" adds
// staging's traffic to prod's, and a pod name reused in two clusters
// merges two replicas. `match: {cluster: prod-eu}` adds equality matchers
// to every selector of every query the pull sends, so Waterline reads one
// environment; the labels must be on every series it reads (an external
// label, or a relabelling, puts them there).

// matcherList renders match as PromQL equality matchers, sorted by label:
// `cluster="prod-eu", env="prod"`. "" for none.
func matcherList(match map[string]string) (string, error) {
	names := make([]string, 0, len(match))
	for n := range match {
		if !labelNameRE.MatchString(n) || strings.HasPrefix(n, "__") {
			return "", fmt.Errorf("match: %q is not a label name", n)
		}
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		// PromQL's double-quoted strings take Go's escapes.
		parts[i] = n + "=" + strconv.Quote(match[n])
	}
	return strings.Join(parts, ", "), nil
}

// groupingKeywords are followed by a parenthesised list of label names.
var groupingKeywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// isKeyword reports whether an identifier (lower-cased) is never a metric
// name: a grouping keyword, a binary operator or modifier, or a number.
func isKeyword(w string) bool {
	switch w {
	case "or", "and", "unless", "bool", "offset", "atan2", "inf", "nan":
		return true
	}
	return groupingKeywords[w]
}

// withMatchers adds the matchers (matcherList's form) to every vector
// selector of expr: `rate(x[1m])` → `rate(x{cluster="a"}[1m])`,
// `x{mode="idle"}` → `x{cluster="a", mode="idle"}`. Prometheus still
// checks the result (serve evaluates every query once at start).
func withMatchers(expr, matchers string) (string, error) {
	if matchers == "" {
		return expr, nil
	}
	return rewriteSelectors(expr, func(name, inner string) string {
		if inner == "" {
			return name + "{" + matchers + "}"
		}
		return name + "{" + matchers + ", " + inner + "}"
	})
}

// vectorSelectors lists expr's vector selectors, each once, in order:
// `rate(x{a="b"}[1m]) / y` → `x{a="b"}`, `y`.
func vectorSelectors(expr string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	_, err := rewriteSelectors(expr, func(name, inner string) string {
		sel := name
		if inner != "" || name == "" {
			sel += "{" + inner + "}"
		}
		if !seen[sel] {
			seen[sel] = true
			out = append(out, sel)
		}
		return sel
	})
	return out, err
}

// rewriteSelectors replaces every vector selector of expr with what f
// makes of its metric name ("" for `{__name__=~"…"}`) and the text inside
// its braces ("" for none). It reads PromQL's tokens (strings, numbers and
// durations, label lists after by/on/…, matcher braces), not its grammar.
func rewriteSelectors(expr string, f func(name, inner string) string) (string, error) {
	var b strings.Builder
	i, n := 0, len(expr)
	// next is the first byte after spaces from j, 0 at the end.
	next := func(j int) (int, byte) {
		for j < n && (expr[j] == ' ' || expr[j] == '\t' || expr[j] == '\n' || expr[j] == '\r') {
			j++
		}
		if j < n {
			return j, expr[j]
		}
		return j, 0
	}
	// closing returns the index after the bracket closing the one at j,
	// skipping strings.
	closing := func(j int, open, close byte) (int, error) {
		depth := 0
		for k := j; k < n; k++ {
			switch c := expr[k]; {
			case c == '"' || c == '\'' || c == '`':
				end, err := stringEnd(expr, k)
				if err != nil {
					return 0, err
				}
				k = end - 1
			case c == open:
				depth++
			case c == close:
				depth--
				if depth == 0 {
					return k + 1, nil
				}
			}
		}
		return 0, fmt.Errorf("unclosed %q at offset %d", open, j)
	}
	// braces writes the selector of name whose braces open at j.
	braces := func(name string, j int) (int, error) {
		end, err := closing(j, '{', '}')
		if err != nil {
			return 0, err
		}
		b.WriteString(f(name, strings.TrimSpace(expr[j+1:end-1])))
		return end, nil
	}
	pendingGroup := false // the last identifier was by/on/…: its (…) lists labels
	for i < n {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			end, err := stringEnd(expr, i)
			if err != nil {
				return "", err
			}
			b.WriteString(expr[i:end])
			i = end
		case c >= '0' && c <= '9' || c == '.' && i+1 < n && expr[i+1] >= '0' && expr[i+1] <= '9':
			// A number or a duration (0.99, 1e3, 5m30s): never a name.
			j := i
			for j < n && (isIdentByte(expr[j]) || expr[j] == '.' || (expr[j] == '+' || expr[j] == '-') && (expr[j-1] == 'e' || expr[j-1] == 'E')) {
				j++
			}
			b.WriteString(expr[i:j])
			i = j
		case c == '[':
			end, err := closing(i, '[', ']')
			if err != nil {
				return "", err
			}
			b.WriteString(expr[i:end])
			i = end
		case c == '(' && pendingGroup:
			end, err := closing(i, '(', ')')
			if err != nil {
				return "", err
			}
			b.WriteString(expr[i:end])
			i, pendingGroup = end, false
		case c == '{':
			// A selector without a metric name: {__name__=~"…"}.
			end, err := braces("", i)
			if err != nil {
				return "", err
			}
			i = end
		case isIdentStart(c):
			j := i
			for j < n && isIdentByte(expr[j]) {
				j++
			}
			word := expr[i:j]
			k, nc := next(j)
			lower := strings.ToLower(word)
			pendingGroup = groupingKeywords[lower]
			switch {
			case isKeyword(lower), nc == '(':
				// a keyword, a function or an aggregation's call
				b.WriteString(word)
			case nc == 'b' || nc == 'w':
				// "sum by (…)", "max without (…)": an aggregation.
				if rest := nextWord(expr, k); rest != "by" && rest != "without" {
					b.WriteString(f(word, ""))
				} else {
					b.WriteString(word)
				}
			case nc == '{':
				// The name, then its braces (spaces between them dropped).
				end, err := braces(word, k)
				if err != nil {
					return "", err
				}
				j = end
			default:
				b.WriteString(f(word, ""))
			}
			i = j
		default:
			if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
				pendingGroup = false
			}
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), nil
}

// stringEnd returns the index after the string literal starting at i.
func stringEnd(s string, i int) (int, error) {
	q := s[i]
	for k := i + 1; k < len(s); k++ {
		switch {
		case s[k] == '\\' && q != '`':
			k++
		case s[k] == q:
			return k + 1, nil
		}
	}
	return 0, fmt.Errorf("unclosed string at offset %d", i)
}

// nextWord returns the identifier starting at i.
func nextWord(s string, i int) string {
	j := i
	for j < len(s) && isIdentByte(s[j]) {
		j++
	}
	return s[i:j]
}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentByte(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }
