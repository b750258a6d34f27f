package correlate

import (
	"fmt"
	"math"
	"strings"
)

// RequestLength is what an LLM server's token counts (vLLM, SGLang, TGI)
// say about one affected model: the mean prompt and generated tokens per
// request before the onset and after it (medians of the curves, as every
// deviation). An LLM's latency, the requests it keeps running and its
// queue all grow with the tokens it reads and writes, so a rise that
// follows longer requests is the workload's before it is the servers'.
// A field omitted from the JSON is not in the data.
type RequestLength struct {
	Model        string  `json:"model"`
	PromptBefore float64 `json:"prompt_tokens_before,omitempty"`
	PromptDuring float64 `json:"prompt_tokens_during,omitempty"`
	OutputBefore float64 `json:"output_tokens_before,omitempty"`
	OutputDuring float64 `json:"output_tokens_during,omitempty"`
	// TPOTBeforeMs and TPOTDuringMs are the time per generated token
	// after the first: a server that slowed takes longer per token; one
	// given longer requests does not.
	TPOTBeforeMs float64 `json:"tpot_before_ms,omitempty"`
	TPOTDuringMs float64 `json:"tpot_during_ms,omitempty"`
	// TTFTBeforeMs and TTFTDuringMs are the time to the first token (the
	// queue and the prefill): risen while TPOT and the answers' length
	// held, the time goes before decoding starts.
	TTFTBeforeMs float64 `json:"ttft_before_ms,omitempty"`
	TTFTDuringMs float64 `json:"ttft_during_ms,omitempty"`
}

// lengthChange is the larger move of a model's request length: its
// generated or its prompt tokens per request.
type lengthChange struct {
	model          string
	role           Role
	before, during float64
	ratio          float64
	key            string // the curve it was read from
}

// lengthLonger is the ratio from which requests "got longer": a model's
// mean output length drifts by a few percent hour to hour.
const lengthLonger = 1.3

// lengthFlat is the ratio under which the length "did not change".
const lengthFlat = 1.15

// what says which tokens moved: "generated tokens", "prompt tokens".
func (l lengthChange) what() string {
	if l.role == RolePromptTokens {
		return "prompt tokens"
	}
	return "generated tokens"
}

// sentence says the move with its figures: "Requests of chat got longer:
// 480 generated tokens each after the onset against 210 before (×2.29)".
func (l lengthChange) sentence() string {
	verb := "kept their length"
	switch {
	case l.ratio >= lengthFlat:
		verb = "got longer"
	case l.ratio*lengthFlat <= 1:
		verb = "got shorter"
	}
	return fmt.Sprintf("Requests of %s %s: %.0f %s each after the onset against %.0f before (×%.2f)", l.model, verb, l.during, l.what(), l.before, l.ratio)
}

// requestLength is, of models, the one whose requests' length moved most
// (generated or prompt tokens, the larger ratio), false without token
// curves for any of them.
func (f *facts) requestLength(models []string) (lengthChange, bool) {
	return f.lengthMove(models, lengthRoles, func(r, best float64) bool { return r > best })
}

// answersLength is requestLength of the generated tokens alone: the
// answers, which keep a request in the running batch one decode step per
// token (a longer prompt is one longer prefill).
func (f *facts) answersLength(models []string) (lengthChange, bool) {
	return f.lengthMove(models, lengthRoles[:1], func(r, best float64) bool { return r > best })
}

// lengthRoles are the curves of a request's length, the answer first.
var lengthRoles = []Role{RoleOutputTokens, RolePromptTokens}

// shortestRequests is, of models, the move of the requests' length with
// the smallest ratio: the tokens that shrank most.
func (f *facts) shortestRequests(models []string) (lengthChange, bool) {
	return f.lengthMove(models, lengthRoles, func(r, best float64) bool { return r < best })
}

// lengthMove is, of models' curves of roles, the move whose ratio beats
// every other's, false without any.
func (f *facts) lengthMove(models []string, roles []Role, beats func(r, best float64) bool) (lengthChange, bool) {
	var best lengthChange
	found := false
	for _, m := range models {
		for _, role := range roles {
			d := f.modelDeviation(role, m, "")
			r := safeRatio(d.During, d.Before)
			if math.IsNaN(r) || math.IsInf(r, 0) || d.Before <= 0 {
				continue
			}
			if !found || beats(r, best.ratio) {
				best, found = lengthChange{model: m, role: role, before: d.Before, during: d.During, ratio: r, key: d.Key}, true
			}
		}
	}
	return best, found
}

// requestLengths are the affected models' request lengths, where their
// token curves are in the data.
func (f *facts) requestLengths() []RequestLength {
	var out []RequestLength
	for _, m := range f.affected {
		p, o, tp := f.modelDeviation(RolePromptTokens, m, ""), f.modelDeviation(RoleOutputTokens, m, ""), f.modelDeviation(RoleTPOT, m, "")
		ft := f.modelDeviation(RoleTTFT, m, "")
		rl := RequestLength{Model: m, PromptBefore: known(p.Before), PromptDuring: known(p.During), OutputBefore: known(o.Before), OutputDuring: known(o.During),
			TPOTBeforeMs: known(tp.Before), TPOTDuringMs: known(tp.During), TTFTBeforeMs: known(ft.Before), TTFTDuringMs: known(ft.During)}
		if rl != (RequestLength{Model: m}) {
			out = append(out, rl)
		}
	}
	return out
}

// known is v, or 0 (omitted) when it is not a number.
func known(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// lengthLine is the timeline step's sentence on the affected models'
// request length and decode speed: longer requests explain a rise by
// themselves; a length that held rules the workload out; the time per
// generated token says whether the servers slowed as well. "" without
// token curves. quoted is the curve the step already quoted the top
// cause's evidence on: the length's figures are not said twice. said are
// the curves the line quotes with their figures, which the step does not
// say again.
func (f *facts) lengthLine(quoted string) (line string, said []string) {
	ft, ftKey := f.firstTokenLine(f.affected)
	line = joinSentences(f.lengthAndSpeedLine(quoted), ft)
	if ftKey != "" {
		said = append(said, ftKey)
	}
	// The decode speed and length sentences the line holds, found by their
	// own text: which of them it says depends on several branches above.
	for _, m := range f.affected {
		if s, _ := f.tpotLine([]string{m}); s != "" && strings.Contains(line, s) {
			said = append(said, f.modelDeviation(RoleTPOT, m, "").Key)
		}
		for _, role := range lengthRoles {
			if l, ok := f.lengthMove([]string{m}, []Role{role}, func(float64, float64) bool { return false }); ok && strings.Contains(line, l.sentence()) {
				said = append(said, l.key)
			}
		}
	}
	return line, said
}

// lengthAndSpeedLine is lengthLine without the time to the first token.
func (f *facts) lengthAndSpeedLine(quoted string) string {
	l, ok := f.requestLength(f.affected)
	if !ok {
		speed, _ := f.tpotLine(f.affected)
		return speed
	}
	// The line reads one model's length and decode speed; another affected
	// model's servers that decode more slowly are said after it.
	if line := f.modelLengthLine(l, quoted); line != "" {
		return line + sep(f.othersSlower(l.model))
	}
	return f.othersSlower(l.model)
}

// joinSentences joins the non-empty of a and b with a space.
func joinSentences(a, b string) string {
	if a == "" {
		return b
	}
	return a + sep(b)
}

// firstTokenLine says where the time to the first token grew, of models
// with the curve: "After the onset the first token of chat took 1.9 s
// against 240 ms before (×7.92): …", and the key of the curve it quotes.
// "" where it held or is not in the data. It says where the time goes — before decoding
// starts, in the queue or the prefill — not why: longer prompts, a fuller
// server and a slower prefill all raise it. That the time goes there is
// said only where the decode held (the time per token and the answers'
// length both in the data and flat); otherwise the requests only wait
// longer before decoding starts, which says nothing of the decode.
func (f *facts) firstTokenLine(models []string) (line, key string) {
	for _, m := range models {
		d := f.modelDeviation(RoleTTFT, m, "")
		r := safeRatio(d.During, d.Before)
		if math.IsNaN(r) || math.IsInf(r, 0) || d.Before <= 0 || r < lengthLonger {
			continue
		}
		where := "requests wait longer before decoding starts, in the queue or the prefill"
		if tp := f.modelDeviation(RoleTPOT, m, ""); tp.Before > 0 {
			rr := safeRatio(tp.During, tp.Before)
			answers, ok := f.answersLength([]string{m})
			switch {
			case rr >= lengthLonger && rr*lengthFlat > r:
				// Both grew alike: a slower server, not a longer wait.
				where = "it grew with the time per token, so the servers are slower throughout, not only before decoding"
			case rr < lengthFlat && ok && answers.ratio < lengthFlat:
				// The decode held: the added time is before it.
				where = "the time goes before decoding starts, in the queue or the prefill"
			}
		}
		return fmt.Sprintf("After the onset the first token of %s took %s against %s before (×%.2f): %s.", m, fmtMs(d.During), fmtMs(d.Before), r, where), d.Key
	}
	return "", ""
}

// modelLengthLine is lengthLine for the model whose length moved most.
func (f *facts) modelLengthLine(l lengthChange, quoted string) string {
	said := l.key != "" && l.key == quoted
	speed, held := f.tpotLine([]string{l.model})
	if l.ratio >= lengthLonger {
		lead := "An LLM's latency grows with the tokens it reads and writes"
		if !said {
			lead = l.sentence() + ": an LLM's latency grows with the tokens it reads and writes"
		}
		who, them := "look at who sends longer requests", "look at who sends them"
		if l.role == RoleOutputTokens && f.deployedBefore(l.model) {
			// A new version may answer at more length by itself: the
			// clients are not the only suspects.
			who = "compare the new version's answers with the old one's and look at who sends longer requests"
			them = who
		}
		switch {
		case held && said:
			return speed + " The servers are not slower: the requests are longer, so " + them + " before looking at the servers."
		case held:
			return l.sentence() + ". " + speed + " The servers are not slower: the requests are longer, so " + them + " before looking at the servers."
		case speed != "":
			// The servers slowed as well: the longer requests are not
			// all of it, and not to be looked at first.
			return lead + ". " + speed + " Both changed: " + who + " and at the servers."
		}
		return lead + ", so " + who + " before looking at the servers."
	}
	switch {
	case l.ratio < lengthFlat:
		// No tokens grew: said by those that shrank, if any did ("kept
		// their length" on the prompts would hide answers half as long).
		if s, ok := f.shortestRequests(f.affected); ok && s.ratio*lengthFlat <= 1 {
			l = s
		}
		return l.sentence() + ": the rise is not the requests' length." + sep(speed)
	}
	return speed
}

// sep is s after a space, "" for "".
func sep(s string) string {
	if s == "" {
		return ""
	}
	return " " + s
}

// tpotLine says how the time per generated token of the first of models
// with the curve moved: "Each generated token took 42 ms after the onset,
// as before (41 ms)." when it held, "… took 70 ms after the onset against
// 42 ms before (×1.67): the servers decode more slowly." when it rose.
// "" without the curve or between the two; held says it held.
//
// A model whose decode slowed is said before one whose held: of several
// affected models, the first with the curve may not be the one that slowed.
func (f *facts) tpotLine(models []string) (line string, held bool) {
	first, firstSeen := "", false
	for _, m := range models {
		d := f.modelDeviation(RoleTPOT, m, "")
		r := safeRatio(d.During, d.Before)
		if math.IsNaN(r) || math.IsInf(r, 0) || d.Before <= 0 {
			continue
		}
		switch {
		case r >= lengthLonger:
			return fmt.Sprintf("Each generated token of %s took %s after the onset against %s before (×%.2f): the servers decode more slowly.", m, fmtMs(d.During), fmtMs(d.Before), r), false
		case firstSeen:
		case r < lengthFlat && r*lengthFlat > 1:
			first, held = fmt.Sprintf("Each generated token of %s took %s after the onset, as before (%s).", m, fmtMs(d.During), fmtMs(d.Before)), true
		}
		firstSeen = true
	}
	return first, held
}

// othersSlower says the decode slowdown of the affected models other than
// model, "" where none slowed.
func (f *facts) othersSlower(model string) string {
	var out []string
	for _, m := range f.affected {
		if m == model {
			continue
		}
		if line, held := f.tpotLine([]string{m}); line != "" && !held {
			out = append(out, line)
		}
	}
	return strings.Join(out, " ")
}

// deployedBefore says whether a deploy of model (or of the whole fleet)
// lines up with the onset, as the timeline step weighs events.
func (f *facts) deployedBefore(model string) bool {
	for _, e := range f.events {
		if e.Kind == KindDeploy && (e.Model == "" || e.Model == model) && e.TimeWeight*e.ScopeMatch >= 0.2 {
			return true
		}
	}
	return false
}
