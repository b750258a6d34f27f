package correlate

import (
	"fmt"
	"math"
	"strings"
)

// Every sentence the analysis writes is read by an on-call engineer, in a
// page, an export, a ticket or a chat message: values carry their units
// in human magnitudes (ms and s, %, MB/s), and no statistics jargon
// (IQRs, robust z) reaches the text. The numbers stay in the structured
// fields for whoever wants them.

// fmtMs renders a duration in ms: "0.8 ms", "42 ms", "1.31 s".
func fmtMs(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "?"
	case math.Abs(v) >= 1000:
		return trimZero(fmt.Sprintf("%.2f", v/1000)) + " s"
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.0f ms", v)
	}
	return trimZero(fmt.Sprintf("%.1f", v)) + " ms"
}

// trimZero drops a trailing ".0" / "0" after the point ("1.50" → "1.5").
func trimZero(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// fmtBytesRate renders bytes per second: "227 kB/s", "12.3 MB/s".
func fmtBytesRate(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return trimZero(fmt.Sprintf("%.1f", v/1e9)) + " GB/s"
	case a >= 1e6:
		return trimZero(fmt.Sprintf("%.1f", v/1e6)) + " MB/s"
	case a >= 1e3:
		return fmt.Sprintf("%.0f kB/s", v/1e3)
	}
	return fmt.Sprintf("%.0f B/s", v)
}

// fmtValue renders a value of a role in its unit.
func fmtValue(role Role, v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "?"
	}
	switch role {
	case RoleLatencyP50, RoleLatencyP95, RoleLatencyP99, RoleLatencyMean, RoleStageTime, RoleTPOT, RoleTTFT:
		return fmtMs(v)
	case RoleQPS:
		return trimZero(fmt.Sprintf("%.1f", v)) + " req/s"
	case RoleErrorRate, RoleNodeCPU, RoleNodeMemory, RoleKVCache:
		return fmtPct(100 * v)
	case RoleGPUUtil:
		return fmtPct(v)
	case RoleGPUMemUsed, RoleGPUMemFree:
		if v >= 1024 {
			return trimZero(fmt.Sprintf("%.1f", v/1024)) + " GiB"
		}
		return fmt.Sprintf("%.0f MiB", v)
	case RoleNodeNetwork:
		return fmtBytesRate(v)
	case RoleQueue:
		return trimZero(fmt.Sprintf("%.1f", v)) + " queued"
	case RoleBatchSize:
		return trimZero(fmt.Sprintf("%.1f", v)) + " per batch"
	case RolePromptTokens, RoleOutputTokens:
		return fmt.Sprintf("%.0f tokens", v)
	}
	return trimZero(fmt.Sprintf("%.2f", v))
}

// fmtPct renders a percentage: "0.4 %", "12 %".
func fmtPct(p float64) string {
	if math.Abs(p) < 10 && p != math.Trunc(p) {
		return trimZero(fmt.Sprintf("%.1f", p)) + "%"
	}
	return fmt.Sprintf("%.0f%%", p)
}

// roleNames are how a sentence names what a curve measures.
var roleNames = map[Role]string{
	RoleLatencyP50: "P50 latency", RoleLatencyP95: "P95 latency", RoleLatencyP99: "P99 latency", RoleLatencyMean: "mean latency",
	RoleQPS: "request rate", RoleErrorRate: "error rate", RoleQueue: "queue length", RoleBatchSize: "batch size",
	RoleStageTime: "stage time", RoleGPUUtil: "GPU utilisation", RoleGPUMemUsed: "GPU memory used", RoleGPUMemFree: "GPU memory free",
	RoleNodeCPU: "CPU use", RoleNodeMemory: "memory use", RoleNodeNetwork: "network receive rate", RoleKVCache: "KV-cache use",
	RolePromptTokens: "prompt tokens per request", RoleOutputTokens: "generated tokens per request", RoleTPOT: "time per generated token",
	RoleTTFT: "time to first token",
}

// describeCurve names a curve for a sentence: "node gpu-a100-04's network
// receive rate", "chat-8b's queue stage time".
func describeCurve(d CurveDeviation) string {
	what, who, _ := curveParts(d)
	if who == "" {
		return what
	}
	return who + "'s " + what
}

// curveParts is what a curve measures ("downstream stage time"), whose it
// is ("replica r1", "chat-8b") and whether that is a model's (or its
// version's) name.
func curveParts(d CurveDeviation) (what, who string, model bool) {
	what = roleNames[d.Role]
	if what == "" {
		what = string(d.Role)
	}
	if d.Stage != "" {
		what = d.Stage + " " + what
	}
	switch {
	case d.Scope.Replica != "":
		who = "replica " + d.Scope.Replica
	case d.Scope.Node != "" && d.Scope.Model == "":
		who = "node " + d.Scope.Node
	case d.Scope.Version != "":
		who, model = d.Scope.Model+" "+d.Scope.Version, true
	case d.Scope.Model != "":
		who, model = d.Scope.Model, true
	}
	return what, who, model
}

// curveSubject is describeCurve opening a sentence. A model's name (and
// its version's) is an identifier, which capitalize would rename
// ("Rerank-base's downstream stage time" of rerank-base): the sentence
// then leads with the curve, "The downstream stage time of rerank-base".
func curveSubject(d CurveDeviation) string {
	if what, who, model := curveParts(d); model {
		return "The " + what + " of " + who
	}
	return capitalize(describeCurve(d))
}

// moved says how a curve moved, in its units and in plain words: "rose
// from 35 ms to 1.76 s (far outside its usual range)", with the extreme
// when it says more than the typical value after the onset.
func moved(d CurveDeviation) string {
	verb := "rose"
	if d.Extreme < d.Before {
		verb = "fell"
	}
	if math.Abs(d.Extreme-d.Before) > 1.5*math.Abs(d.During-d.Before) {
		return fmt.Sprintf("%s from %s to %s at the extreme (%s typically; %s)", verb, fmtValue(d.Role, d.Before), fmtValue(d.Role, d.Extreme), fmtValue(d.Role, d.During), unusual(d.Score))
	}
	return fmt.Sprintf("%s from %s to %s (%s)", verb, fmtValue(d.Role, d.Before), fmtValue(d.Role, d.During), unusual(d.Score))
}

// unusual words a deviation score.
func unusual(score float64) string {
	switch {
	case score >= 0.8:
		return "far outside its usual range"
	case score >= 0.5:
		return "well outside its usual range"
	case score > 0:
		return "just outside its usual range"
	}
	return "within its usual range"
}

// likelier words a risk ratio: "5.9× as likely to be slow".
func likelier(rr float64) string {
	if rr >= 100 {
		return "over 100× as likely to be slow"
	}
	return trimZero(fmt.Sprintf("%.1f", rr)) + "× as likely to be slow"
}

// OpenedBy says who opened an incident, from its source: "opened
// manually", "opened by Alertmanager", "opened by the detector".
func OpenedBy(source string) string {
	switch source {
	case "manual", "":
		return "opened manually"
	case "alertmanager":
		return "opened by Alertmanager"
	case "detector":
		return "opened by the detector"
	}
	return "opened by " + source
}

// farAbove words how far a replica sits above its peers, from its robust
// z against them.
func farAbove(z float64) string {
	switch {
	case math.IsNaN(z):
		return "its peers' spread is unknown"
	case z >= 10:
		return "far above all of them"
	case z >= 4:
		return "clearly above all of them"
	}
	return "above them"
}

// kOfN renders "k of the n nouns" so that a pool of one reads as one:
// "the only replica", "2 of the 3 replicas" ("1 of the 1 replicas" was
// printed before), "both replicas", "all 3 replicas".
func kOfN(k, n int, noun string) string {
	switch {
	case n == 1 && k == 1:
		return "the only " + noun
	case n == 2 && k == 2:
		return "both " + noun + "s"
	case n > 2 && k == n:
		return "all " + plural(n, noun)
	}
	return fmt.Sprintf("%d of the %s", k, plural(n, noun))
}

// verbFor picks a verb's form for a count: verbFor(1, "is", "are").
func verbFor(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// othersPhrase is "the other model" or "the other N models".
func othersPhrase(n int) string {
	if n == 1 {
		return "the other model"
	}
	return fmt.Sprintf("the other %d models", n)
}
