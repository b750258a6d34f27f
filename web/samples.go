package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/correlate"
)

// sampleWire is one request sample as clients send it (DESIGN §5).
type sampleWire struct {
	RequestID  string     `json:"request_id"`
	Time       string     `json:"time"`
	Model      string     `json:"model"`
	Version    string     `json:"version"`
	Tenant     string     `json:"tenant"`
	Replica    string     `json:"replica"`
	Node       string     `json:"node"`
	Entry      string     `json:"entry"`
	BatchSize  int        `json:"batch_size"`
	Status     string     `json:"status"`
	TotalMs    *float64   `json:"total_ms"`
	StagesMs   stagesWire `json:"stages_ms"`
	SampleRate *float64   `json:"sample_rate"`
}

// handleSamplesCreate is POST /api/v1/samples: request samples, streamed
// from the body straight into the database's COPY, all-or-nothing.
func (s *Server) handleSamplesCreate(c echo.Context) error {
	select {
	case s.ingestSlots <- struct{}{}:
		defer func() { <-s.ingestSlots }()
	case <-c.Request().Context().Done():
		return c.Request().Context().Err()
	}
	body, err := s.openIngestBody(c)
	if err != nil {
		return s.ingestFailed(c, "samples", err)
	}
	defer body.close()
	now := s.now()
	var w sampleWire
	fast := sampleParser{intern: map[string]string{}}
	next := func(dst *correlate.Sample) error {
		raw, line, err := body.records.next()
		if err != nil {
			return err // io.EOF ends the stream
		}
		if !fast.parse(raw, &w) {
			w = sampleWire{StagesMs: noStages}
			if err := decodeRecord(raw, line, &w); err != nil {
				return err
			}
		}
		return s.checkSample(&w, line, now, dst)
	}
	accepted, dups, err := s.store.InsertSampleStream(c.Request().Context(), next)
	s.metrics.ingestBytes.WithLabelValues("samples").Add(float64(body.counted.n))
	if err != nil {
		return s.ingestFailed(c, "samples", err)
	}
	s.countIngest("samples", accepted, dups)
	return c.JSON(http.StatusOK, ingestResult{Accepted: accepted, Duplicates: dups})
}

// checkSample validates w (line is for errors) and fills dst.
func (s *Server) checkSample(w *sampleWire, line int, now time.Time, dst *correlate.Sample) error {
	bad := func(field, format string, args ...any) error {
		return &inputError{Status: http.StatusUnprocessableEntity, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if w.RequestID == "" {
		return bad("request_id", "required: the request's unique id")
	}
	if w.Model == "" {
		return bad("model", "required")
	}
	for _, f := range []struct{ name, v string }{{"request_id", w.RequestID}, {"model", w.Model}, {"version", w.Version},
		{"tenant", w.Tenant}, {"replica", w.Replica}, {"node", w.Node}, {"entry", w.Entry}, {"status", w.Status}} {
		if err := checkText(f.v, maxLabelLen); err != "" {
			return bad(f.name, "%s", err)
		}
	}
	t, err := s.checkTime(w.Time, now)
	if err != "" {
		return bad("time", "%s", err)
	}
	if w.TotalMs == nil {
		return bad("total_ms", "required: the request's total latency in ms")
	}
	if *w.TotalMs < 0 {
		return bad("total_ms", "must not be negative, got %v", *w.TotalMs)
	}
	if w.BatchSize < 0 || w.BatchSize > maxBatchSize {
		return bad("batch_size", "want 0 (unknown) to %d, got %d", maxBatchSize, w.BatchSize)
	}
	rate := 1.0
	if w.SampleRate != nil {
		rate = *w.SampleRate
		if rate < 1 {
			return bad("sample_rate", "must be at least 1 (one in N requests kept), got %v", rate)
		}
	}
	*dst = correlate.Sample{
		RequestID: w.RequestID, Time: t, Model: w.Model, Version: w.Version, Tenant: w.Tenant, Replica: w.Replica,
		Node: w.Node, Entry: w.Entry, BatchSize: w.BatchSize, Status: w.Status, TotalMs: *w.TotalMs,
		StagesMs: w.StagesMs, SampleRate: rate,
	}
	return nil
}

// maxBatchSize bounds batch_size well inside the int32 column.
const maxBatchSize = 1 << 20

// maxLabelLen bounds ids and dimension values: they are labels, not text.
const maxLabelLen = 256

// checkText returns what is wrong with a text value ("" when nothing).
// Postgres text cannot hold NUL, which JSON can ("\u0000").
func checkText(v string, max int) string {
	if len(v) > max {
		return fmt.Sprintf("longer than %d bytes", max)
	}
	if strings.IndexByte(v, 0) >= 0 {
		return "must not contain NUL characters"
	}
	return ""
}

// checkTime parses an RFC 3339 time and checks it is within the accepted
// window around now. It returns a message when it is not.
func (s *Server) checkTime(v string, now time.Time) (time.Time, string) {
	if v == "" {
		return time.Time{}, "required: an RFC 3339 time such as 2026-01-02T15:04:05Z"
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Sprintf("want an RFC 3339 time such as 2026-01-02T15:04:05Z, got %q", v)
	}
	t = t.UTC()
	if s.cfg.IngestMaxAge > 0 && t.Before(now.Add(-s.cfg.IngestMaxAge)) {
		return time.Time{}, fmt.Sprintf("%s is more than %s in the past", v, s.cfg.IngestMaxAge)
	}
	if t.After(now.Add(s.cfg.IngestMaxFuture)) {
		return time.Time{}, fmt.Sprintf("%s is more than %s in the future (clock skew?)", v, s.cfg.IngestMaxFuture)
	}
	return t, ""
}

// stagesWire decodes stages_ms: {stage: ms}; unreported stages are NaN.
type stagesWire [correlate.NumStages]float64

// noStages is a stagesWire with every stage unreported.
var noStages = func() stagesWire {
	var s stagesWire
	for i := range s {
		s[i] = math.NaN()
	}
	return s
}()

// UnmarshalJSON parses the object by hand: it is on the hot path of sample
// ingest, and a hand parse names the bad stage exactly. encoding/json has
// already checked b is valid JSON.
func (st *stagesWire) UnmarshalJSON(b []byte) error {
	*st = noStages
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	if len(b) < 2 || b[0] != '{' {
		return &fieldError{"stages_ms", "want an object of stage name to milliseconds"}
	}
	i := 1
	ws := func() {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
	}
	for {
		ws()
		if i >= len(b) || b[i] == '}' {
			return nil
		}
		if b[i] == ',' {
			i++
			continue
		}
		// Key: a JSON string, unescaped the slow way only when it has escapes.
		j := i + 1
		esc := false
		for j < len(b) && b[j] != '"' {
			if b[j] == '\\' {
				esc = true
				j++
			}
			j++
		}
		name := string(b[i+1 : j])
		if esc {
			_ = json.Unmarshal(b[i:j+1], &name)
		}
		i = j + 1
		ws()
		i++ // ':'
		ws()
		k := i
		for k < len(b) && b[k] != ',' && b[k] != '}' && b[k] != ' ' && b[k] != '\n' && b[k] != '\t' && b[k] != '\r' {
			k++
		}
		val := b[i:k]
		i = k
		stage, ok := correlate.ParseStage(name)
		if !ok {
			return &fieldError{"stages_ms." + name, "unknown stage; known stages: " + strings.Join(correlate.StageNames(), ", ")}
		}
		if string(val) == "null" {
			continue
		}
		if len(val) == 0 || !(val[0] == '-' || (val[0] >= '0' && val[0] <= '9')) {
			return &fieldError{"stages_ms." + name, "want a number of milliseconds"}
		}
		ms, err := strconv.ParseFloat(string(val), 64)
		if err != nil || math.IsInf(ms, 0) {
			return &fieldError{"stages_ms." + name, "number out of range"}
		}
		if ms < 0 {
			return &fieldError{"stages_ms." + name, fmt.Sprintf("must not be negative, got %v", ms)}
		}
		st[stage] = ms
	}
}
