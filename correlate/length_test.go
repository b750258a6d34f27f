package correlate

import (
	"math"
	"strings"
	"testing"
	"time"
)

// llmFleet is a vLLM-style model: P99 ×2.4 at the onset with the request
// rate flat, more requests running at once (its batch) and a queue, and
// its requests' generated tokens going from outBefore to outDuring.
func llmFleet(outBefore, outDuring float64) *fixture {
	return llmFleetPrompts(900, 910, outBefore, outDuring)
}

// llmFleetPrompts is llmFleet with its prompts' tokens too.
func llmFleetPrompts(inBefore, inDuring, outBefore, outDuring float64) *fixture {
	x := newFixture()
	x.p99("chat", 4000, 9600)
	m := Scope{Model: "chat"}
	x.curve(RoleQPS, LevelModel, m, 20, 20)
	x.curve(RoleBatchSize, LevelModel, m, 24, 52)
	x.curve(RoleQueue, LevelModel, m, 0.5, 6)
	x.curve(RoleKVCache, LevelModel, m, 0.4, 0.9)
	x.curve(RolePromptTokens, LevelModel, m, inBefore, inDuring)
	x.curve(RoleOutputTokens, LevelModel, m, outBefore, outDuring)
	return x
}

// Prompts three times as long, answers as long as before: the requests
// are longer (capacity's demand), but a longer prompt is one longer
// prefill, not a request kept in the running batch, so it is not held
// against a batching window.
func TestLongerPromptsAreNotLongerBatches(t *testing.T) {
	t.Parallel()
	a := llmFleetPrompts(900, 2700, 210, 212).analyze()
	if e := evidenceNamed(causeOf(t, a, CatCapacity), "requests_longer"); e == nil || !strings.Contains(e.Summary, "2700 prompt tokens each") {
		t.Errorf("capacity's length evidence %+v", e)
	}
	if e := evidenceNamed(causeOf(t, a, CatBatching), "requests_longer"); e != nil {
		t.Errorf("batching opposed by longer prompts: %+v", e)
	}
}

// Clients started asking for longer answers: the same request rate, ×2.3
// the generated tokens per request. The queue, the running requests and
// the latency all follow the tokens. Before token curves, the analysis
// opposed capacity with "traffic did not rise, so the pool had no more
// work" and read the running requests as a batching window that grew.
func TestLongerRequestsAreTheWorkload(t *testing.T) {
	t.Parallel()
	a := llmFleet(210, 480).analyze()

	capacity := causeOf(t, a, CatCapacity)
	if e := evidenceNamed(capacity, "requests_longer"); e == nil || e.Strength < 0.5 || !strings.Contains(e.Summary, "480 generated tokens each after the onset against 210 before") {
		dumpCause(t, capacity)
		t.Errorf("capacity does not say the requests got longer: %+v", e)
	} else if e.Curve == "" {
		t.Errorf("the length evidence rests on no curve: %+v", e)
	}
	if e := evidenceNamed(capacity, "traffic_flat"); e != nil && e.Strength > 0 {
		t.Errorf("capacity opposed by the flat request rate while each request brings ×2.3 the tokens: %+v", e)
	}
	if capacity.Summary != "Requests got longer (×2.29 generated tokens each, at ×1.00 the request rate) and outgrew the serving capacity: requests queue." {
		t.Errorf("capacity's summary %q", capacity.Summary)
	}
	batching := causeOf(t, a, CatBatching)
	if e := evidenceNamed(batching, "requests_longer"); e == nil || !strings.Contains(e.Summary, "without a wider batching window") {
		dumpCause(t, batching)
		t.Errorf("batching's bigger batches are not put down to the longer requests: %+v", e)
	}
	if batching.Score >= capacity.Score {
		t.Errorf("batching %.2f ranks with capacity %.2f", batching.Score, capacity.Score)
	}
	tl := a.Checklist[1].Answer
	if !strings.Contains(tl, "Requests of chat got longer: 480 generated tokens each after the onset against 210 before (×2.29)") {
		t.Errorf("the timeline step does not say the requests got longer: %q", tl)
	}
	if len(a.RequestLengths) != 1 {
		t.Fatalf("request lengths %+v", a.RequestLengths)
	}
	if rl := a.RequestLengths[0]; rl.Model != "chat" || rl.OutputBefore < 200 || rl.OutputBefore > 220 || rl.OutputDuring < 470 || rl.OutputDuring > 490 || rl.PromptBefore < 890 {
		t.Errorf("request length %+v", rl)
	}
}

// The same fleet with the requests' length unchanged: the flat request
// rate opposes capacity as before, and the timeline step rules the
// workload out.
func TestRequestLengthThatHeldRulesTheWorkloadOut(t *testing.T) {
	t.Parallel()
	a := llmFleet(210, 212).analyze()
	capacity := causeOf(t, a, CatCapacity)
	if e := evidenceNamed(capacity, "requests_longer"); e != nil && e.Strength > 0 {
		t.Errorf("capacity says the requests got longer: %+v", e)
	}
	if e := evidenceNamed(capacity, "traffic_flat"); e == nil || e.Strength < 0.5 {
		dumpCause(t, capacity)
		t.Errorf("a flat request rate with a flat length no longer opposes capacity: %+v", e)
	}
	if tl := a.Checklist[1].Answer; !strings.Contains(tl, "Requests of chat kept their length") || !strings.Contains(tl, "the rise is not the requests' length") {
		t.Errorf("timeline step %q", tl)
	}
}

// Without token curves nothing is said about the requests' length.
func TestNoTokenCurvesNoLengthClaim(t *testing.T) {
	t.Parallel()
	x := newFixture()
	x.p99("chat", 100, 300)
	x.curve(RoleQPS, LevelModel, Scope{Model: "chat"}, 20, 20)
	a := x.analyze()
	if len(a.RequestLengths) != 0 || strings.Contains(a.Checklist[1].Answer, "tokens") {
		t.Errorf("lengths %+v, timeline %q", a.RequestLengths, a.Checklist[1].Answer)
	}
	if e := evidenceNamed(causeOf(t, a, CatCapacity), "requests_longer"); e != nil {
		t.Errorf("length evidence without token curves: %+v", e)
	}
}

// A fleet measuring no queue time (no stage curves, no samples) but its
// waiting requests, which rose from 0.5 to 6: capacity's summary said
// "queues and GPUs do not show the pool saturating" beside that curve.
func TestQueueLengthShowsQueueingWithoutQueueTime(t *testing.T) {
	t.Parallel()
	queued := func(during float64) Cause {
		x := newFixture()
		x.p99("chat", 100, 400)
		x.curve(RoleQPS, LevelModel, Scope{Model: "chat"}, 20, 40)
		x.curve(RoleQueue, LevelModel, Scope{Model: "chat"}, 0.5, during)
		return causeOf(t, x.analyze(), CatCapacity)
	}
	c := queued(6)
	e := evidenceNamed(c, "queue_growth")
	if e == nil || e.Strength < 0.9 || !strings.Contains(e.Summary, "chat's waiting requests rose from 0.5 to 6") || e.Curve == "" {
		dumpCause(t, c)
		t.Fatalf("queue evidence %+v", e)
	}
	if c.Summary != "Traffic rose ×2.00 and outgrew the serving capacity: requests queue." {
		t.Errorf("summary %q", c.Summary)
	}
	// A queue that stayed put says so too: no "no queue data".
	c = queued(0.5)
	if evidenceNamed(c, "queue_growth") != nil || c.Summary != "Traffic rose ×2.00, but queues and GPUs do not show the pool saturating." {
		dumpCause(t, c)
		t.Errorf("flat queue: summary %q", c.Summary)
	}
}

// The time per generated token tells the two apart: held while the
// requests got longer, the servers are not slower; risen while the length
// held, they are.
func TestTimePerTokenTellsLongerFromSlower(t *testing.T) {
	t.Parallel()
	longer := llmFleet(210, 480)
	longer.curve(RoleTPOT, LevelModel, Scope{Model: "chat"}, 42, 43)
	a := longer.analyze()
	// The length is quoted once, from capacity's evidence.
	for _, want := range []string{"Requests of chat got longer: 480 generated tokens each after the onset against 210 before (×2.29)",
		"Each generated token of chat took 43 ms after the onset, as before (42 ms). The servers are not slower: the requests are longer"} {
		if tl := a.Checklist[1].Answer; !strings.Contains(tl, want) {
			t.Errorf("longer requests, same speed:\n got %q\nwant %q", tl, want)
		}
	}
	if rl := a.RequestLengths[0]; rl.TPOTBeforeMs < 41 || rl.TPOTBeforeMs > 43 || rl.TPOTDuringMs < 42 || rl.TPOTDuringMs > 44 {
		t.Errorf("request length %+v", rl)
	}

	slower := llmFleet(210, 212)
	slower.curve(RoleTPOT, LevelModel, Scope{Model: "chat"}, 42, 70)
	tl := slower.analyze().Checklist[1].Answer
	for _, w := range []string{"Requests of chat kept their length", "the rise is not the requests' length.",
		"Each generated token of chat took 70 ms after the onset against 42 ms before (×1.67): the servers decode more slowly."} {
		if !strings.Contains(tl, w) {
			t.Errorf("same length, slower tokens: %q lacks %q", tl, w)
		}
	}

	// Only the decode speed known (no length curves): it is said alone.
	x := newFixture()
	x.p99("chat", 4000, 9600)
	x.curve(RoleQPS, LevelModel, Scope{Model: "chat"}, 20, 20)
	x.curve(RoleTPOT, LevelModel, Scope{Model: "chat"}, 42, 70)
	if tl := x.analyze().Checklist[1].Answer; !strings.Contains(tl, "the servers decode more slowly") || strings.Contains(tl, "Requests of") {
		t.Errorf("speed alone: %q", tl)
	}
}

// Answers half as long, prompts as long as before: the requests got
// shorter. The timeline said "Requests of chat kept their length" on the
// prompts' figures, hiding the generated tokens that halved.
func TestShorterAnswersAreNotSaidToKeepTheirLength(t *testing.T) {
	t.Parallel()
	a := llmFleet(210, 100).analyze()
	tl := a.Checklist[1].Answer
	want := "Requests of chat got shorter: 100 generated tokens each after the onset against 210 before (×0.48): the rise is not the requests' length."
	if !strings.Contains(tl, want) || strings.Contains(tl, "kept their length") {
		t.Errorf("timeline step:\n got %q\nwant it to contain %q", tl, want)
	}
}

// Capacity, the top cause, rests on the longer requests: the timeline
// step quotes that evidence, and said the same figures again in the
// length's own sentence.
func TestTimelineSaysTheLengthOnce(t *testing.T) {
	t.Parallel()
	for _, tpot := range []float64{math.NaN(), 43} {
		x := llmFleet(210, 480)
		if !math.IsNaN(tpot) {
			x.curve(RoleTPOT, LevelModel, Scope{Model: "chat"}, 42, tpot)
		}
		a := x.analyze()
		if top := topCause(a.Causes); top == nil || top.Category != CatCapacity {
			t.Fatalf("top cause %+v", top)
		}
		tl := a.Checklist[1].Answer
		if n := strings.Count(tl, "480 generated tokens each after the onset against 210 before"); n != 1 {
			t.Errorf("tpot %v: the length is said %d times: %q", tpot, n, tl)
		}
		if !strings.Contains(tl, "look at who sends") {
			t.Errorf("tpot %v: the length's reading is gone: %q", tpot, tl)
		}
	}
}

// The advice reads as English ("before at the servers" did not), and is
// not to look at the requests first when the servers decode more slowly
// as well.
func TestLengthAdviceWording(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		tpot       float64
		want, lack []string
	}{
		{"no decode speed", math.NaN(), []string{"so look at who sends longer requests before looking at the servers."}, nil},
		{"same speed", 43, []string{"The servers are not slower: the requests are longer, so look at who sends them before looking at the servers."}, nil},
		{"slower too", 84, []string{"Each generated token of chat took 84 ms after the onset against 42 ms before (×2.00): the servers decode more slowly.",
			"Both changed: look at who sends longer requests and at the servers."}, []string{"before looking at the servers"}},
	} {
		x := llmFleet(210, 480)
		if !math.IsNaN(c.tpot) {
			x.curve(RoleTPOT, LevelModel, Scope{Model: "chat"}, 42, c.tpot)
		}
		tl := x.analyze().Checklist[1].Answer
		if strings.Contains(tl, "before at the") {
			t.Errorf("%s: %q", c.name, tl)
		}
		for _, w := range c.want {
			if !strings.Contains(tl, w) {
				t.Errorf("%s: %q lacks %q", c.name, tl, w)
			}
		}
		for _, w := range c.lack {
			if strings.Contains(tl, w) {
				t.Errorf("%s: %q says %q", c.name, tl, w)
			}
		}
	}
}

// Two affected models: code's answers got longer, chat's held while its
// servers decode twice as slowly. The timeline step spoke of code alone
// and sent the reader to who sends longer requests; chat's slower
// servers went unsaid. With code's decode speed in between the two
// thresholds, neither was said when no length curve was there at all.
func TestSeveralModelsEachSlowdownIsSaid(t *testing.T) {
	t.Parallel()
	x := newFixture()
	chat, code := Scope{Model: "chat"}, Scope{Model: "code"}
	for _, m := range []Scope{chat, code} {
		x.p99(m.Model, 4000, 9600)
		x.curve(RoleQPS, LevelModel, m, 20, 20)
	}
	x.curve(RoleOutputTokens, LevelModel, chat, 200, 200)
	x.curve(RoleOutputTokens, LevelModel, code, 200, 500)
	x.curve(RoleTPOT, LevelModel, chat, 40, 80)
	tl := x.analyze().Checklist[1].Answer
	for _, w := range []string{"Requests of code got longer", "Each generated token of chat took 80 ms after the onset against 40 ms before (×2.00): the servers decode more slowly."} {
		if !strings.Contains(tl, w) {
			t.Errorf("%q lacks %q", tl, w)
		}
	}

	y := newFixture()
	for _, m := range []Scope{chat, code} {
		y.p99(m.Model, 4000, 9600)
		y.curve(RoleQPS, LevelModel, m, 20, 20)
	}
	y.curve(RoleTPOT, LevelModel, chat, 40, 48) // between: nothing to say
	y.curve(RoleTPOT, LevelModel, code, 40, 80)
	tl = y.analyze().Checklist[1].Answer
	if w := "Each generated token of code took 80 ms after the onset against 40 ms before (×2.00): the servers decode more slowly."; !strings.Contains(tl, w) {
		t.Errorf("speed alone: %q lacks %q", tl, w)
	}
}

// A vLLM fleet whose replicas' KV cache filled (60 % → 98 %) as traffic
// rose, with no GPU utilisation curve: the full cache is capacity's
// evidence of saturation (requests wait for cache blocks or are
// preempted), where the summary said "queues and GPUs do not show the pool
// saturating".
func TestFullKVCacheIsSaturation(t *testing.T) {
	t.Parallel()
	x := newFixture()
	x.p99("chat", 4000, 9000)
	x.curve(RoleQPS, LevelModel, Scope{Model: "chat"}, 20, 32)
	for _, r := range []string{"chat-0", "chat-1", "chat-2"} {
		x.curve(RoleKVCache, LevelReplica, Scope{Model: "chat", Replica: r, Node: "n-" + r}, 0.6, 0.98)
	}
	c := causeOf(t, x.analyze(), CatCapacity)
	e := evidenceNamed(c, "kv_cache_full")
	if e == nil || e.Strength < 0.9 || !strings.Contains(e.Summary, "The KV cache of all 3 measured replicas is 98% used during the spike (median, against 60% before the onset).") {
		dumpCause(t, c)
		t.Fatalf("KV-cache evidence %+v", e)
	}
	if c.Summary != "Traffic rose ×1.60 and outgrew the serving capacity: the KV cache is full." {
		t.Errorf("summary %q", c.Summary)
	}
	// Half full: said, not claimed.
	y := newFixture()
	y.p99("chat", 4000, 9000)
	y.curve(RoleQPS, LevelModel, Scope{Model: "chat"}, 20, 32)
	y.curve(RoleKVCache, LevelModel, Scope{Model: "chat"}, 0.5, 0.55)
	c = causeOf(t, y.analyze(), CatCapacity)
	if e := evidenceNamed(c, "kv_cache_full"); e != nil && e.Strength > 0 || c.Summary != "Traffic rose ×1.60, but queues and GPUs do not show the pool saturating." {
		t.Errorf("half-full cache: %+v, summary %q", e, c.Summary)
	}
}

// A deploy of the model lines up with the onset and the answers got
// longer: the new version may write them, so the advice does not send the
// reader to the clients alone.
func TestLongerAnswersAfterADeploySuspectTheVersion(t *testing.T) {
	t.Parallel()
	x := llmFleet(210, 480)
	x.events = append(x.events, Event{ID: "d1", Kind: KindDeploy, Time: x.onset.Add(-2 * time.Minute), Scope: Scope{Model: "chat", Version: "v2"}})
	tl := x.analyze().Checklist[1].Answer
	if !strings.Contains(tl, "compare the new version's answers with the old one's and look at who sends longer requests before looking at the servers") {
		t.Errorf("timeline step after a deploy: %q", tl)
	}
	if tl := llmFleet(210, 480).analyze().Checklist[1].Answer; strings.Contains(tl, "new version") {
		t.Errorf("no deploy, yet: %q", tl)
	}
}

// vLLM's queue and execution times as stage curves: the queue time rose
// ×8 but is 6 % of the tail's growth, execution (longer answers) the rest.
// Capacity's summary said "queues and GPUs do not show the pool
// saturating" beside a queue eight times as long.
func TestQueueThatRoseButExplainsLittleIsNotDenied(t *testing.T) {
	t.Parallel()
	x := llmFleet(210, 480)
	x.curve(RoleStageTime, LevelModel, Scope{Model: "chat"}, 50, 400).Stage = "queue"
	x.curve(RoleStageTime, LevelModel, Scope{Model: "chat"}, 3900, 9100).Stage = "exec"
	c := causeOf(t, x.analyze(), CatCapacity)
	if want := "Requests got longer (×2.29 generated tokens each, at ×1.00 the request rate); the queue time rose from 50 ms to 400 ms, though queueing explains little of the tail's growth."; c.Summary != want {
		t.Errorf("summary\n got %q\nwant %q", c.Summary, want)
	}
}

// The time to the first token says where a rise goes when the decode
// speed held: before decoding starts (the queue, the prefill). Risen with
// the time per token alike, the servers are slower throughout. Held or
// absent, nothing is said of it.
func TestTimeToFirstTokenSaysWhereTheTimeGoes(t *testing.T) {
	t.Parallel()
	chat := Scope{Model: "chat"}
	wait := llmFleet(210, 212)
	wait.curve(RoleTPOT, LevelModel, chat, 42, 43)
	wait.curve(RoleTTFT, LevelModel, chat, 240, 1900)
	a := wait.analyze()
	want := "After the onset the first token of chat took 1.9 s against 240 ms before (×7.92): the time goes before decoding starts, in the queue or the prefill."
	if tl := a.Checklist[1].Answer; !strings.Contains(tl, want) {
		t.Errorf("a longer wait for the first token:\n got %q\nwant %q", tl, want)
	}
	if rl := a.RequestLengths[0]; rl.TTFTBeforeMs < 239 || rl.TTFTBeforeMs > 241 || rl.TTFTDuringMs < 1899 || rl.TTFTDuringMs > 1901 {
		t.Errorf("request length %+v", rl)
	}

	slower := llmFleet(210, 212)
	slower.curve(RoleTPOT, LevelModel, chat, 40, 80)
	slower.curve(RoleTTFT, LevelModel, chat, 200, 400)
	if tl := slower.analyze().Checklist[1].Answer; !strings.Contains(tl, "it grew with the time per token, so the servers are slower throughout") {
		t.Errorf("both slower alike: %q", tl)
	}

	held := llmFleet(210, 480)
	held.curve(RoleTTFT, LevelModel, chat, 240, 250)
	if tl := held.analyze().Checklist[1].Answer; strings.Contains(tl, "first token") {
		t.Errorf("a time to first token that held is said: %q", tl)
	}
	if tl := llmFleet(210, 480).analyze().Checklist[1].Answer; strings.Contains(tl, "first token") {
		t.Errorf("no time-to-first-token curve, yet: %q", tl)
	}
}

// "The time goes before decoding starts" is said only where the data show
// the decode did not grow: the time per token held and the answers kept
// their length. Answers twice as long at the same decode speed put the
// rise in the decode ("the requests are longer"); a decode ×1.5 slower
// adds 21 ms to each of 210 tokens, more than the first token's 1.7 s;
// without the time per token nothing shows the decode held. The first
// token's figures are still said, as a longer wait before decoding.
func TestTimeToFirstTokenClaimsNoMoreThanTheDecodeShows(t *testing.T) {
	t.Parallel()
	chat := Scope{Model: "chat"}
	longer := llmFleet(210, 480)
	longer.curve(RoleTPOT, LevelModel, chat, 42, 42)
	longer.curve(RoleTTFT, LevelModel, chat, 300, 900)
	decode := llmFleet(210, 212)
	decode.curve(RoleTPOT, LevelModel, chat, 42, 63)
	decode.curve(RoleTTFT, LevelModel, chat, 240, 1900)
	noTPOT := llmFleet(210, 212)
	noTPOT.curve(RoleTTFT, LevelModel, chat, 240, 1900)
	for name, x := range map[string]*fixture{"longer answers": longer, "decode ×1.5": decode, "no time per token": noTPOT} {
		tl := x.analyze().Checklist[1].Answer
		if strings.Contains(tl, "the time goes before decoding starts") {
			t.Errorf("%s: the rise put before decoding: %q", name, tl)
		}
		if !strings.Contains(tl, "After the onset the first token of chat took") || !strings.Contains(tl, "requests wait longer before decoding starts, in the queue or the prefill.") {
			t.Errorf("%s: the first token's rise is not said: %q", name, tl)
		}
	}
}

// A time to the first token the step said is not said again as the curve
// of the affected model that moved most (it is the one that moves most
// where requests queue); the step still rests on it.
func TestTimeToFirstTokenIsSaidOnce(t *testing.T) {
	t.Parallel()
	chat := Scope{Model: "chat"}
	x := llmFleet(210, 212)
	x.curve(RoleTPOT, LevelModel, chat, 42, 43)
	x.curve(RoleTTFT, LevelModel, chat, 240, 1900)
	st := x.analyze().Checklist[1]
	if n := strings.Count(st.Answer, "1.9 s"); n != 1 || strings.Contains(st.Answer, "time to first token moved most") {
		t.Errorf("the first token's rise said %d times: %q", n, st.Answer)
	}
	if strings.Contains(st.Answer, "moved most") || st.Curve != "ttft|model|model=chat" {
		t.Errorf("another curve said to have moved most, or the step rests on another: %+v", st)
	}
}

// The same for the time per generated token: a decode slowdown the length
// line said with its figures is not said again as the curve that moved
// most.
func TestTimePerTokenIsSaidOnce(t *testing.T) {
	t.Parallel()
	x := llmFleet(210, 212)
	x.curve(RoleTPOT, LevelModel, Scope{Model: "chat"}, 40, 200)
	st := x.analyze().Checklist[1]
	if n := strings.Count(st.Answer, "200 ms"); n != 1 || strings.Contains(st.Answer, "time per generated token moved most") {
		t.Errorf("the decode slowdown said %d times: %q", n, st.Answer)
	}
}
