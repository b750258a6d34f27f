package ui

import (
	"context"
	"fmt"
	"time"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
)

// heatSampleMax bounds the samples a heatmap or a brushed selection
// reads: faster ones are thinned (and re-weighted) beyond it, slow ones
// all kept.
const heatSampleMax = 200_000

// heatKey is heatSamples' cache key: live samples are thinned below the
// incident's slow threshold, which differs between incidents sharing a
// window and scope.
func heatKey(d *incidentData, from, to time.Time, scope correlate.Scope) (string, time.Duration) {
	src, ttl := d.sourceKey()
	key := fmt.Sprintf("heat|%s|%d|%d|%s", src, from.UnixMilli(), to.UnixMilli(), scope)
	if d.snap == nil {
		_, def := d.view().SlowThresholds()
		key += fmt.Sprintf("|%g", def)
	}
	return key, ttl
}

// heatSamples are the samples of a window for the heatmap and its brush,
// from the snapshot once frozen, else from the store (thinned), through
// the short-lived cache.
func (p *Pages) heatSamples(ctx context.Context, d *incidentData, from, to time.Time, scope correlate.Scope) ([]correlate.Sample, error) {
	key, ttl := heatKey(d, from, to, scope)
	v, err := p.viewData.get(ctx, key, ttl, func(ctx context.Context) (any, error) {
		if d.snap != nil {
			var out []correlate.Sample
			for _, x := range d.snap.FrozenSamples {
				if !x.Time.Before(from) && x.Time.Before(to) && scopeHolds(scope, x) {
					out = append(out, x)
				}
			}
			return out, nil
		}
		_, def := d.view().SlowThresholds()
		return p.store.Samples(ctx, store.SampleFilter{From: from, To: to, Scope: scope, Bulk: true, Thin: 4, KeepAbove: def, Limit: heatSampleMax})
	})
	if err != nil {
		return nil, err
	}
	return v.([]correlate.Sample), nil
}

func scopeHolds(sc correlate.Scope, x correlate.Sample) bool {
	return (sc.Model == "" || sc.Model == x.Model) && (sc.Version == "" || sc.Version == x.Version) &&
		(sc.Tenant == "" || sc.Tenant == x.Tenant) && (sc.Replica == "" || sc.Replica == x.Replica) && (sc.Node == "" || sc.Node == x.Node)
}
