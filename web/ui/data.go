package ui

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/incident"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/api"
)

// pageSource is what an incident page reads: the live store, or the
// incident's frozen snapshot (store.Snapshot answers the same queries in
// memory), so every page renders the same way from either.
type pageSource interface {
	api.Source
	SamplesPage(ctx context.Context, q store.SampleQuery) (store.SamplePage, error)
	SampleByID(ctx context.Context, from, to time.Time, rid string) (correlate.Sample, error)
	SampleTenants(ctx context.Context, from, to time.Time) ([]string, error)
}

// incidentData is everything about one incident a page may show.
type incidentData struct {
	inc         store.Incident
	an          *correlate.Analysis // newest ready analysis (or the snapshot's), nil if none
	status      string              // newest analysis status; "" when none was started
	version     int
	computedAt  time.Time
	recomputing bool
	errMsg      string
	snap        *store.Snapshot // nil when none, or when live data was asked for
	snapAt      *time.Time
	src         pageSource
}

// viewCache keeps decoded analyses and snapshots: both are immutable once
// written (a new analysis is a new version, a re-freeze a new created_at),
// and decoding them is most of the cost of a page.
type viewCache struct {
	mu        sync.Mutex
	analyses  map[int64]cachedAnalysis
	snapshots map[int64]*store.Snapshot
}

type cachedAnalysis struct {
	version int
	an      *correlate.Analysis
}

const viewCacheMax = 64

func (vc *viewCache) analysis(id int64, version int) *correlate.Analysis {
	vc.mu.Lock()
	defer vc.mu.Unlock()
	if a, ok := vc.analyses[id]; ok && a.version == version {
		return a.an
	}
	return nil
}

func (vc *viewCache) putAnalysis(id int64, version int, an *correlate.Analysis) {
	vc.mu.Lock()
	defer vc.mu.Unlock()
	if vc.analyses == nil || len(vc.analyses) >= viewCacheMax {
		vc.analyses = map[int64]cachedAnalysis{}
	}
	vc.analyses[id] = cachedAnalysis{version: version, an: an}
}

func (vc *viewCache) snapshot(id int64, at time.Time) *store.Snapshot {
	vc.mu.Lock()
	defer vc.mu.Unlock()
	if sn, ok := vc.snapshots[id]; ok && sn.CreatedAt.Equal(at) {
		return sn
	}
	return nil
}

func (vc *viewCache) putSnapshot(sn *store.Snapshot) {
	vc.mu.Lock()
	defer vc.mu.Unlock()
	if vc.snapshots == nil || len(vc.snapshots) >= viewCacheMax/4 {
		vc.snapshots = map[int64]*store.Snapshot{}
	}
	vc.snapshots[sn.IncidentID] = sn
}

// decodeAnalysis decodes a stored result through the cache.
func (p *Pages) decodeAnalysis(rec store.AnalysisRecord) (*correlate.Analysis, error) {
	if an := p.views.analysis(rec.IncidentID, rec.Version); an != nil {
		return an, nil
	}
	var an correlate.Analysis
	if err := json.Unmarshal(rec.Result, &an); err != nil {
		return nil, err
	}
	p.views.putAnalysis(rec.IncidentID, rec.Version, &an)
	return &an, nil
}

// loadIncident reads an incident, its analysis state and its data source.
// With live false a snapshot, when there is one, is the source.
func (p *Pages) loadIncident(ctx context.Context, id int64, live bool) (*incidentData, error) {
	inc, err := p.store.Incident(ctx, id)
	if err != nil {
		return nil, err
	}
	d := &incidentData{inc: inc, src: p.store}
	latest, err := p.store.LatestAnalysis(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		// Nothing computed yet; the page asks for it (freezing must not).
	case err != nil:
		return nil, err
	default:
		d.status, d.version, d.errMsg = latest.Status, latest.Version, latest.Error
		rec := latest
		if latest.Status != store.AnalysisReady {
			ready, rerr := p.store.LatestReadyAnalysis(ctx, id)
			switch {
			case rerr == nil:
				rec, d.recomputing = ready, latest.Status == store.AnalysisPending
				d.version = ready.Version
			case !errors.Is(rerr, store.ErrNotFound):
				return nil, rerr
			}
		}
		if rec.Status == store.AnalysisReady && len(rec.Result) > 2 {
			if d.an, err = p.decodeAnalysis(rec); err != nil {
				return nil, err
			}
			d.computedAt = rec.CreatedAt
			if rec.FinishedAt != nil {
				d.computedAt = *rec.FinishedAt
			}
		}
	}
	at, ok, err := p.store.SnapshotTime(ctx, id)
	if err != nil {
		return nil, err
	}
	if ok {
		d.snapAt = &at
	}
	if ok && !live {
		sn := p.views.snapshot(id, at)
		if sn == nil {
			if sn, err = p.store.LoadSnapshot(ctx, id); err != nil {
				return nil, err
			}
			p.views.putSnapshot(sn)
		}
		d.snap, d.src = sn, sn
		if d.an == nil && len(sn.Analysis) > 0 {
			var an correlate.Analysis
			if err := json.Unmarshal(sn.Analysis, &an); err == nil {
				d.an, d.status = &an, store.AnalysisReady
			}
		}
	}
	return d, nil
}

// view is what decides the page's windows and slowness thresholds.
func (d *incidentData) view() incident.View {
	return incident.View{Incident: d.inc, Analysis: d.an, Frozen: d.snap != nil}
}
