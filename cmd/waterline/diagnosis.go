package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/diagnose"
	"github.com/waterline-dev/waterline/incident"
	"github.com/waterline-dev/waterline/pull"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/api"
)

// newDiagnosis builds the analysis worker, the incident service that
// every change of an incident goes through (it queues the incident for
// analysis and tells the webhooks), and, unless WATERLINE_DETECT_INTERVAL
// is 0, the background spike detector, which opens and resolves
// incidents through that service. New analyses are announced to the
// webhooks. retentionFloor is the earliest time retention keeps data of:
// open incidents about to lose theirs are frozen.
func newDiagnosis(c config, st *store.Store, slo diagnose.SLOFunc, log *slog.Logger, hooks *webhooks, wake <-chan struct{},
	retentionFloor func() time.Time) (*diagnose.Analyzer, *incident.Service, *diagnose.Detector) {
	analyzer := diagnose.NewAnalyzer(st, diagnose.AnalyzerOptions{SLO: slo, Log: log, OnReady: hooks.notifier.AnalysisReady})
	incidents := incident.New(st, incident.Options{Log: log, Watchers: []func(int64){analyzer.Enqueue, hooks.incidentChanged},
		RetentionFloor: retentionFloor})
	if c.DetectInterval == 0 {
		return analyzer, incidents, nil
	}
	detector := diagnose.NewDetector(st, diagnose.DetectorOptions{
		Interval:      c.DetectInterval,
		Merge:         c.DetectMerge,
		OpenIncidents: c.DetectOpen,
		MinSeverity:   c.DetectMinSev,
		Sensitivity:   correlate.Sensitivity(c.DetectSens),
		SLO:           slo,
		Log:           log,
		Incidents:     incidents,
		Wake:          wake,
	})
	return analyzer, incidents, detector
}

// adhocQuery adapts the puller's ad-hoc range queries to the web layer,
// marking expressions Prometheus rejected as bad input.
func adhocQuery(p *pull.Puller) api.QueryRangeFunc {
	if p == nil {
		return nil
	}
	return func(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]api.LabeledSeries, error) {
		series, err := p.QueryRange(ctx, expr, start, end, step)
		// Refused (bad PromQL) or failed as it ran (Prometheus' 422
		// execution error: a match that is not one-to-one, too many
		// samples; VictoriaMetrics' limits; a query timeout): the
		// expression is the client's to fix or narrow, not a 502.
		var qe *pull.QueryError
		if errors.As(err, &qe) && (qe.Rejected || qe.TooBig) {
			return nil, fmt.Errorf("%w: %v", api.ErrBadQuery, qe.Err)
		}
		if err != nil {
			return nil, err
		}
		out := make([]api.LabeledSeries, len(series))
		for i, s := range series {
			out[i] = api.LabeledSeries{Labels: s.Labels, Points: s.Points}
		}
		return out, nil
	}
}
