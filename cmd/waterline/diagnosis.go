package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/waterline-dev/waterline/diagnose"
	"github.com/waterline-dev/waterline/pull"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web"
)

// newDiagnosis builds the analysis worker and, unless
// WATERLINE_DETECT_INTERVAL is 0, the background spike detector, which
// queues the incidents it opens for analysis. New analyses and the
// detector's incidents are announced to the webhooks.
func newDiagnosis(c config, st *store.Store, slo diagnose.SLOFunc, log *slog.Logger, hooks *webhooks) (*diagnose.Analyzer, *diagnose.Detector) {
	analyzer := diagnose.NewAnalyzer(st, diagnose.AnalyzerOptions{SLO: slo, Log: log, OnReady: hooks.notifier.AnalysisReady})
	if c.DetectInterval == 0 {
		return analyzer, nil
	}
	detector := diagnose.NewDetector(st, diagnose.DetectorOptions{
		Interval:      c.DetectInterval,
		Merge:         c.DetectMerge,
		OpenIncidents: c.DetectOpen,
		MinSeverity:   c.DetectMinSev,
		SLO:           slo,
		Log:           log,
		OnIncident:    func(id int64) { analyzer.Enqueue(id); hooks.incidentChanged(id) },
	})
	return analyzer, detector
}

// adhocQuery adapts the puller's ad-hoc range queries to the web layer,
// marking expressions Prometheus rejected as bad input.
func adhocQuery(p *pull.Puller) web.QueryRangeFunc {
	if p == nil {
		return nil
	}
	return func(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]web.LabeledSeries, error) {
		series, err := p.QueryRange(ctx, expr, start, end, step)
		var qe *pull.QueryError
		if errors.As(err, &qe) && qe.Rejected {
			return nil, fmt.Errorf("%w: %v", web.ErrBadQuery, qe.Err)
		}
		if err != nil {
			return nil, err
		}
		out := make([]web.LabeledSeries, len(series))
		for i, s := range series {
			out[i] = web.LabeledSeries{Labels: s.Labels, Points: s.Points}
		}
		return out, nil
	}
}
