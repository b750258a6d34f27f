package correlate

import (
	"fmt"
	"math"
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
	var best lengthChange
	found := false
	for _, m := range models {
		for _, role := range []Role{RoleOutputTokens, RolePromptTokens} {
			d := f.modelDeviation(role, m, "")
			r := safeRatio(d.During, d.Before)
			if math.IsNaN(r) || math.IsInf(r, 0) || d.Before <= 0 {
				continue
			}
			if !found || r > best.ratio {
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
		p, o := f.modelDeviation(RolePromptTokens, m, ""), f.modelDeviation(RoleOutputTokens, m, "")
		rl := RequestLength{Model: m, PromptBefore: known(p.Before), PromptDuring: known(p.During), OutputBefore: known(o.Before), OutputDuring: known(o.During)}
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
// request length: longer requests explain a rise by themselves; a length
// that held rules the workload out. "" without token curves.
func (f *facts) lengthLine() string {
	l, ok := f.requestLength(f.affected)
	switch {
	case !ok:
		return ""
	case l.ratio >= lengthLonger:
		return l.sentence() + ": an LLM's latency grows with the tokens it reads and writes, so look at who sends longer requests before at the servers."
	case l.ratio < lengthFlat:
		return l.sentence() + ": the rise is not the requests' length."
	}
	return ""
}
