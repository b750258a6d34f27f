package ingest

import (
	"fmt"
	"net/http"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/web/request"
	"github.com/waterline-dev/waterline/wire"
)

// Samples is the stream of b's request samples for
// store.InsertSampleStream: each call decodes and checks the next record
// into dst, and io.EOF ends the stream. Records are parsed by the narrow
// fast parser when they can be, else by encoding/json, which words the
// error.
func Samples(b *Body, lim Limits, now time.Time) func(dst *correlate.Sample) error {
	var w wire.Sample
	fast := sampleParser{intern: map[string]string{}}
	return func(dst *correlate.Sample) error {
		raw, line, err := b.Next()
		if err != nil {
			return err // io.EOF ends the stream
		}
		if !fast.parse(raw, &w) {
			w = wire.Sample{StagesMs: wire.NoStages}
			if err := DecodeRecord(raw, line, &w); err != nil {
				return err
			}
		}
		return checkSample(&w, line, lim, now, dst)
	}
}

// maxBatchSize bounds batch_size well inside the int32 column.
const maxBatchSize = 1 << 20

// checkSample validates w (line is for errors) and fills dst.
func checkSample(w *wire.Sample, line int, lim Limits, now time.Time, dst *correlate.Sample) error {
	bad := func(field, format string, args ...any) error {
		return &request.Error{Status: http.StatusUnprocessableEntity, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if w.RequestID == "" {
		return bad("request_id", "required: the request's unique id")
	}
	if w.Model == "" {
		return bad("model", "required")
	}
	for _, f := range []struct{ name, v string }{{"request_id", w.RequestID}, {"model", w.Model}, {"version", w.Version},
		{"tenant", w.Tenant}, {"replica", w.Replica}, {"node", w.Node}, {"entry", w.Entry}, {"status", w.Status},
		{"dependency", w.Dependency}} {
		if err := request.CheckText(f.v, request.MaxLabelLen); err != "" {
			return bad(f.name, "%s", err)
		}
	}
	t, err := checkTime(w.Time, lim, now)
	if err != "" {
		return bad("time", "%s", err)
	}
	if w.TotalMs == nil {
		return bad("total_ms", "required: the request's total latency in ms")
	}
	if *w.TotalMs < 0 || *w.TotalMs > correlate.MaxLatencyMs {
		return bad("total_ms", "want 0 to %d ms (a day), got %v", correlate.MaxLatencyMs, *w.TotalMs)
	}
	for st, v := range w.StagesMs {
		if v < 0 || v > correlate.MaxLatencyMs { // NaN (not reported) passes
			return bad("stages_ms."+correlate.Stage(st).String(), "want 0 to %d ms (a day), got %v", correlate.MaxLatencyMs, v)
		}
	}
	if w.BatchSize < 0 || w.BatchSize > maxBatchSize {
		return bad("batch_size", "want 0 (unknown) to %d, got %d", maxBatchSize, w.BatchSize)
	}
	if w.InputTokens < 0 || w.InputTokens > correlate.MaxTokens {
		return bad("input_tokens", "want 0 (unknown) to %d, got %d", correlate.MaxTokens, w.InputTokens)
	}
	if w.OutputTokens < 0 || w.OutputTokens > correlate.MaxTokens {
		return bad("output_tokens", "want 0 (unknown) to %d, got %d", correlate.MaxTokens, w.OutputTokens)
	}
	if w.SampleRate != nil && (*w.SampleRate < 1 || *w.SampleRate > correlate.MaxSampleRate) {
		return bad("sample_rate", "want 1 to %g (one in N requests kept), got %v", correlate.MaxSampleRate, *w.SampleRate)
	}
	*dst = w.Domain(t)
	return nil
}

// CheckTime parses an RFC 3339 time and checks it lies within the limits'
// window around now (and after 1970), as every ingested record's time
// must. It returns a message when it does not.
func CheckTime(v string, lim Limits, now time.Time) (time.Time, string) {
	return checkTime(v, lim, now)
}

// minTime is the earliest time accepted whatever the limits say.
var minTime = time.Unix(0, 0).UTC()

// checkTime parses an RFC 3339 time and checks it is within the accepted
// window around now. It returns a message when it is not.
func checkTime(v string, lim Limits, now time.Time) (time.Time, string) {
	if v == "" {
		return time.Time{}, "required: an RFC 3339 time such as 2026-01-02T15:04:05Z"
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Sprintf("want an RFC 3339 time such as 2026-01-02T15:04:05Z, got %q", v)
	}
	t = t.UTC()
	if t.Before(minTime) {
		return time.Time{}, fmt.Sprintf("%s is before 1970", v)
	}
	if lim.MaxAge > 0 && t.Before(now.Add(-lim.MaxAge)) {
		return time.Time{}, fmt.Sprintf("%s is more than %s in the past", v, lim.MaxAge)
	}
	if !lim.Oldest.IsZero() && t.Before(lim.Oldest) {
		return time.Time{}, fmt.Sprintf("%s is before %s: %s", v, lim.Oldest.Format(time.RFC3339), lim.OldestWhy)
	}
	if t.After(now.Add(lim.MaxFuture)) {
		return time.Time{}, fmt.Sprintf("%s is more than %s in the future (clock skew?)", v, lim.MaxFuture)
	}
	return t, ""
}
