package store

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/waterline-dev/waterline/correlate"
)

// Snapshot is a frozen copy of what an incident page shows — downsampled
// curves, events, samples (the slow ones and a capped baseline) and the
// analysis — kept after Prometheus and sample retention drop the data, so
// a permalink stays complete. It answers the same queries as the live
// store (Curves, CurveSeries, Events, SamplesPage, SampleByID), in memory.
type Snapshot struct {
	IncidentID    int64
	CreatedAt     time.Time
	FrozenCurves  []correlate.Curve
	FrozenEvents  []correlate.Event
	FrozenSamples []correlate.Sample
	Analysis      json.RawMessage // a correlate.Analysis, as stored in analyses.result
	// AnalysisVersion is the version Analysis is (0: none, or a snapshot
	// taken before the version was kept): the frozen page can say which
	// analysis it shows, and a newer ready version has it frozen again.
	AnalysisVersion int
	// Tenants are all the tenants the window's samples and events named,
	// sorted (the frozen samples are thinned); TenantsKnown is false for
	// snapshots taken before the list was kept.
	Tenants      []string
	TenantsKnown bool
}

// snapSample is a Sample on the wire: JSON has no NaN, so unreported
// stages are null.
type snapSample struct {
	RequestID  string     `json:"id"`
	Time       time.Time  `json:"t"`
	Model      string     `json:"m"`
	Version    string     `json:"v,omitempty"`
	Tenant     string     `json:"te,omitempty"`
	Replica    string     `json:"r,omitempty"`
	Node       string     `json:"n,omitempty"`
	Entry      string     `json:"e,omitempty"`
	BatchSize  int        `json:"b,omitempty"`
	Status     string     `json:"s,omitempty"`
	TotalMs    float64    `json:"ms"`
	StagesMs   []*float64 `json:"st"`
	SampleRate float64    `json:"rate"`
	Dependency string     `json:"dep,omitempty"`
	InTokens   int        `json:"in,omitempty"`
	OutTokens  int        `json:"out,omitempty"`
}

func toSnapSamples(in []correlate.Sample) []snapSample {
	out := make([]snapSample, len(in))
	for i, x := range in {
		st := make([]*float64, correlate.NumStages)
		for j, v := range x.StagesMs {
			if !math.IsNaN(v) {
				v := v
				st[j] = &v
			}
		}
		out[i] = snapSample{RequestID: x.RequestID, Time: x.Time, Model: x.Model, Version: x.Version, Tenant: x.Tenant,
			Replica: x.Replica, Node: x.Node, Entry: x.Entry, BatchSize: x.BatchSize, Status: x.Status, TotalMs: x.TotalMs,
			StagesMs: st, SampleRate: x.SampleRate, Dependency: x.Dependency, InTokens: x.InputTokens, OutTokens: x.OutputTokens}
	}
	return out
}

func fromSnapSamples(in []snapSample) []correlate.Sample {
	out := make([]correlate.Sample, len(in))
	for i, x := range in {
		s := correlate.Sample{RequestID: x.RequestID, Time: x.Time.UTC(), Model: x.Model, Version: x.Version, Tenant: x.Tenant,
			Replica: x.Replica, Node: x.Node, Entry: x.Entry, BatchSize: x.BatchSize, Status: x.Status, TotalMs: x.TotalMs,
			SampleRate: x.SampleRate, Dependency: x.Dependency, InputTokens: x.InTokens, OutputTokens: x.OutTokens}
		for j := range s.StagesMs {
			s.StagesMs[j] = math.NaN()
			if j < len(x.StagesMs) && x.StagesMs[j] != nil {
				s.StagesMs[j] = *x.StagesMs[j]
			}
		}
		out[i] = s
	}
	return out
}

func gzipJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(v); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func gunzipJSON(b []byte, v any) error {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return err
	}
	defer zr.Close()
	dec := json.NewDecoder(io.LimitReader(zr, 1<<30))
	return dec.Decode(v)
}

// SaveSnapshot stores (or replaces) the incident's snapshot; each part is
// gzip-compressed JSON. ErrNotFound when the incident does not exist.
func (s *Store) SaveSnapshot(ctx context.Context, sn Snapshot) error {
	curves, err := gzipJSON(sn.FrozenCurves)
	if err != nil {
		return wrap("save snapshot", err)
	}
	events, err := gzipJSON(sn.FrozenEvents)
	if err != nil {
		return wrap("save snapshot", err)
	}
	samples, err := gzipJSON(toSnapSamples(sn.FrozenSamples))
	if err != nil {
		return wrap("save snapshot", err)
	}
	analysis := sn.Analysis
	if len(analysis) == 0 {
		analysis = json.RawMessage("null")
	}
	an, err := gzipJSON(analysis)
	if err != nil {
		return wrap("save snapshot", err)
	}
	var tenants []string // NULL: unknown
	if sn.TenantsKnown {
		tenants = append(make([]string, 0, len(sn.Tenants)), sn.Tenants...)
	}
	var version *int // NULL: none
	if sn.AnalysisVersion > 0 {
		version = &sn.AnalysisVersion
	}
	tag, err := s.db.Exec(ctx, `
		INSERT INTO snapshots (incident_id, created_at, curves, events, samples, analysis, tenants, analysis_version)
		SELECT id, $2, $3, $4, $5, $6, $7, $8 FROM incidents WHERE id = $1
		ON CONFLICT (incident_id) DO UPDATE SET created_at = EXCLUDED.created_at, curves = EXCLUDED.curves,
		  events = EXCLUDED.events, samples = EXCLUDED.samples, analysis = EXCLUDED.analysis, tenants = EXCLUDED.tenants,
		  analysis_version = EXCLUDED.analysis_version`,
		sn.IncidentID, sn.CreatedAt, curves, events, samples, an, tenants, version)
	if err != nil {
		return wrap("save snapshot", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// SnapshotTime returns when the incident's snapshot was taken; ok is false
// when it has none. It reads no payload, so pages can check it cheaply.
func (s *Store) SnapshotTime(ctx context.Context, incidentID int64) (at time.Time, ok bool, err error) {
	err = s.db.QueryRow(ctx, `SELECT created_at FROM snapshots WHERE incident_id = $1`, incidentID).Scan(&at)
	if err = translate(err); err == ErrNotFound {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, wrap("snapshot time", err)
	}
	return at.UTC(), true, nil
}

// LoadSnapshot reads and decodes the incident's snapshot, or ErrNotFound.
func (s *Store) LoadSnapshot(ctx context.Context, incidentID int64) (*Snapshot, error) {
	var curves, events, samples, analysis []byte
	sn := &Snapshot{IncidentID: incidentID}
	var tenants []string
	err := s.db.QueryRow(ctx, `SELECT created_at, curves, events, samples, analysis, tenants, COALESCE(analysis_version, 0)
		FROM snapshots WHERE incident_id = $1`,
		incidentID).Scan(&sn.CreatedAt, &curves, &events, &samples, &analysis, &tenants, &sn.AnalysisVersion)
	if err != nil {
		return nil, wrap("load snapshot", err)
	}
	sn.Tenants, sn.TenantsKnown = tenants, tenants != nil
	sn.CreatedAt = sn.CreatedAt.UTC()
	var ss []snapSample
	for _, p := range []struct {
		name string
		b    []byte
		v    any
	}{{"curves", curves, &sn.FrozenCurves}, {"events", events, &sn.FrozenEvents}, {"samples", samples, &ss}, {"analysis", analysis, &sn.Analysis}} {
		if err := gunzipJSON(p.b, p.v); err != nil {
			return nil, wrap("load snapshot", fmt.Errorf("%s: %w", p.name, err))
		}
	}
	sn.FrozenSamples = fromSnapSamples(ss)
	if string(sn.Analysis) == "null" {
		sn.Analysis = nil
	}
	return sn, nil
}

// UnfrozenIncidents lists the incidents that should have a snapshot and
// have none, oldest first: those resolved since then (their freeze was
// lost to a restart or failed), and shared manual ones still open whose
// window ended before settled — a postmortem's incident over a past
// window is never resolved, and its share link read live data that
// retention then dropped. (Alertmanager's and the detector's open
// incidents still move; they are frozen when they resolve.)
//
// Resolved incidents whose snapshot is incomplete are listed again: one
// frozen at the resolution lacks the ten minutes after the end that the
// frozen page draws (listed once the end is settled), and one frozen
// before the first analysis lacks it, and so every sample counted as slow
// (listed once an analysis is ready). So is one frozen with an older
// version than the newest ready one: a version that finished after the
// freeze (begun before the resolution, or taken over when stale) may have
// other causes, onset and slow line than the copy, and the API served it
// while the link showed the older one. (One taken before versions were
// kept, holding an analysis, is listed once.)
//
// Open incidents of any source that started before expiring are listed
// too: retention is about to drop their data (an alert incident whose
// resolution was lost stays open for weeks), and a copy now beats none at
// the resolution. Zero expiring lists none such.
func (s *Store) UnfrozenIncidents(ctx context.Context, since, settled, expiring time.Time, limit int) ([]int64, error) {
	rows, err := s.db.Query(ctx, `
		SELECT i.id FROM incidents i
		LEFT JOIN snapshots sn ON sn.incident_id = i.id
		WHERE (sn.incident_id IS NULL
		       AND ((i.status = 'resolved' AND i.resolved_at >= $1)
		         OR (i.status = 'open' AND i.source = 'manual' AND i.end_at < $2
		             AND EXISTS (SELECT 1 FROM share_links l WHERE l.incident_id = i.id AND l.revoked_at IS NULL))
		         OR (i.status = 'open' AND i.start_at < $4)))
		   OR (sn.incident_id IS NOT NULL AND i.status = 'resolved' AND i.resolved_at >= $1
		       AND ((i.end_at < $2 AND sn.created_at < i.end_at + interval '10 minutes')
		         OR EXISTS (SELECT 1 FROM analyses a WHERE a.incident_id = i.id AND a.status = 'ready'
		                    AND a.version > COALESCE(sn.analysis_version, 0))))
		ORDER BY COALESCE(i.resolved_at, i.end_at, i.start_at) LIMIT $3`, since, settled, limit, expiring)
	if err != nil {
		return nil, wrap("unfrozen incidents", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	return ids, wrap("unfrozen incidents", err)
}
