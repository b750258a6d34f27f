package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

// Error is the body of every 4xx and 5xx answer of the API: the line and
// field where they apply (line counts NDJSON lines or array elements from 1).
type Error struct {
	Error string `json:"error"`
	Line  int    `json:"line,omitempty"`
	Field string `json:"field,omitempty"`
}

// IngestResult is the answer of POST /api/v1/events and /api/v1/samples.
type IngestResult struct {
	Accepted   int `json:"accepted"`
	Duplicates int `json:"duplicates"`
}

// Sample is one request sample as clients send it (POST /api/v1/samples,
// DESIGN §5). Time stays text so that the server can name a malformed
// one; TotalMs and SampleRate are pointers so that it can tell a missing
// value from zero. Decode into a Sample whose StagesMs is NoStages (or use
// DecodeSample): an absent stages_ms then means no stage reported.
type Sample struct {
	RequestID  string   `json:"request_id"`
	Time       string   `json:"time"` // RFC 3339
	Model      string   `json:"model"`
	Version    string   `json:"version"`
	Tenant     string   `json:"tenant"`
	Replica    string   `json:"replica"`
	Node       string   `json:"node"`
	Entry      string   `json:"entry"`
	BatchSize  int      `json:"batch_size,omitempty"`
	Status     string   `json:"status"`
	TotalMs    *float64 `json:"total_ms"`
	StagesMs   Stages   `json:"stages_ms"`
	SampleRate *float64 `json:"sample_rate"`
	// Dependency names what the downstream stage called (OTel's
	// peer.service), when the sender knows it.
	Dependency string `json:"dependency,omitempty"`
	// InputTokens and OutputTokens are an LLM request's prompt and
	// generated tokens (OTel's gen_ai.usage.*), when the sender knows them.
	InputTokens  int `json:"input_tokens,omitempty"`
	OutputTokens int `json:"output_tokens,omitempty"`
}

// sampleTime is how NewSample writes times: milliseconds always shown, the
// precision samples carry.
const sampleTime = "2006-01-02T15:04:05.000Z07:00"

// NewSample is s as a client sends it.
func NewSample(s correlate.Sample) Sample {
	total, rate := s.TotalMs, s.SampleRate
	return Sample{
		RequestID: s.RequestID, Time: s.Time.UTC().Format(sampleTime), Model: s.Model, Version: s.Version,
		Tenant: s.Tenant, Replica: s.Replica, Node: s.Node, Entry: s.Entry, BatchSize: s.BatchSize,
		Status: s.Status, TotalMs: &total, StagesMs: Stages(s.StagesMs), SampleRate: &rate, Dependency: s.Dependency,
		InputTokens: s.InputTokens, OutputTokens: s.OutputTokens,
	}
}

// Domain is the sample the record describes, at time t (parsed from
// Time by the caller, who decides which times are acceptable). A missing
// sample_rate is 1: every request kept.
func (w *Sample) Domain(t time.Time) correlate.Sample {
	s := correlate.Sample{
		RequestID: w.RequestID, Time: t, Model: w.Model, Version: w.Version, Tenant: w.Tenant, Replica: w.Replica,
		Node: w.Node, Entry: w.Entry, BatchSize: w.BatchSize, Status: w.Status, StagesMs: w.StagesMs, SampleRate: 1,
		Dependency: w.Dependency, InputTokens: w.InputTokens, OutputTokens: w.OutputTokens,
	}
	if w.TotalMs != nil {
		s.TotalMs = *w.TotalMs
	}
	if w.SampleRate != nil {
		s.SampleRate = *w.SampleRate
	}
	return s
}

// DecodeSample reads one sample record (an NDJSON line), for clients that
// read samples back, such as tests of what was sent.
func DecodeSample(raw []byte) (correlate.Sample, error) {
	w := Sample{StagesMs: NoStages}
	if err := json.Unmarshal(raw, &w); err != nil {
		return correlate.Sample{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, w.Time)
	if err != nil {
		return correlate.Sample{}, fmt.Errorf("time: %w", err)
	}
	return w.Domain(t.UTC()), nil
}

// Stages is stages_ms: {stage: ms}. Unreported stages are NaN here and
// absent (or null) in JSON.
type Stages [correlate.NumStages]float64

// NoStages has every stage unreported.
var NoStages = func() Stages {
	var s Stages
	for i := range s {
		s[i] = math.NaN()
	}
	return s
}()

// FieldError is a bad value inside a field (one entry of stages_ms, say):
// Field names it the way the API's errors do ("stages_ms.queue").
type FieldError struct{ Field, Msg string }

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// MarshalJSON writes the reported stages in stage order.
func (st Stages) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, v := range st {
		if math.IsNaN(v) {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, correlate.Stage(i).String()...)
		b = append(b, '"', ':')
		b = strconv.AppendFloat(b, v, 'f', -1, 64)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON parses the object by hand: it is on the hot path of sample
// ingest, and a hand parse names the bad stage exactly. encoding/json has
// already checked b is valid JSON.
func (st *Stages) UnmarshalJSON(b []byte) error {
	*st = NoStages
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	if len(b) < 2 || b[0] != '{' {
		return &FieldError{"stages_ms", "want an object of stage name to milliseconds"}
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
			return &FieldError{"stages_ms." + name, "unknown stage; known stages: " + strings.Join(correlate.StageNames(), ", ")}
		}
		if string(val) == "null" {
			continue
		}
		if len(val) == 0 || !(val[0] == '-' || (val[0] >= '0' && val[0] <= '9')) {
			return &FieldError{"stages_ms." + name, "want a number of milliseconds"}
		}
		ms, err := strconv.ParseFloat(string(val), 64)
		if err != nil || math.IsInf(ms, 0) {
			return &FieldError{"stages_ms." + name, "number out of range"}
		}
		if ms < 0 {
			return &FieldError{"stages_ms." + name, fmt.Sprintf("must not be negative, got %v", ms)}
		}
		st[stage] = ms
	}
}

// EventIn is one change event as clients send it (POST /api/v1/events,
// DESIGN §5): the scope flat, times as text so the server can name a
// malformed one. Without an id the server derives one from the content.
type EventIn struct {
	ID      string          `json:"id,omitempty"`
	Kind    string          `json:"kind"`
	Time    string          `json:"time"` // RFC 3339
	EndTime string          `json:"end_time,omitempty"`
	Model   string          `json:"model,omitempty"`
	Version string          `json:"version,omitempty"`
	Tenant  string          `json:"tenant,omitempty"`
	Replica string          `json:"replica,omitempty"`
	Node    string          `json:"node,omitempty"`
	Source  string          `json:"source,omitempty"`
	Summary string          `json:"summary,omitempty"`
	Attrs   json.RawMessage `json:"attrs,omitempty"`
}

// NewEventIn is e as a client sends it.
func NewEventIn(e correlate.Event) (EventIn, error) {
	w := EventIn{ID: e.ID, Kind: string(e.Kind), Time: e.Time.UTC().Format(time.RFC3339Nano), Model: e.Model,
		Version: e.Version, Tenant: e.Tenant, Replica: e.Replica, Node: e.Node, Source: e.Source, Summary: e.Summary}
	if e.EndTime != nil {
		w.EndTime = e.EndTime.UTC().Format(time.RFC3339Nano)
	}
	if len(e.Attrs) > 0 {
		raw, err := json.Marshal(e.Attrs)
		if err != nil {
			return EventIn{}, err
		}
		w.Attrs = raw
	}
	return w, nil
}

// Annotation is Grafana's annotation body (POST /api/annotations), which
// Waterline stores as a change event: times in Unix milliseconds, the kind
// and scope in tags ("deploy", "model:rerank-base"). The dashboard and
// panel are accepted and ignored.
type Annotation struct {
	DashboardUID string   `json:"dashboardUID,omitempty"`
	DashboardID  int64    `json:"dashboardId,omitempty"`
	PanelID      int64    `json:"panelId,omitempty"`
	Time         *int64   `json:"time,omitempty"`
	TimeEnd      *int64   `json:"timeEnd,omitempty"`
	Tags         []string `json:"tags,omitempty"`
	Text         string   `json:"text"`
}

// AnnotationResult is Grafana's answer to an added annotation, which CD
// tools check.
type AnnotationResult struct {
	ID      int64  `json:"id"`
	Message string `json:"message"`
}
