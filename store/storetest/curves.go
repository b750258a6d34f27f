package storetest

import (
	"context"
	"testing"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/store"
)

// WriteCurves stores curves as the puller would: their series, the day
// partitions their points need, and the points.
func WriteCurves(t testing.TB, st *store.Store, curves []correlate.Curve) {
	t.Helper()
	ctx := context.Background()
	defs := make([]store.SeriesDef, len(curves))
	for i, c := range curves {
		defs[i] = store.SeriesDef{Curve: c}
	}
	ids, err := st.EnsureSeries(ctx, defs)
	if err != nil {
		t.Fatalf("storetest: series: %v", err)
	}
	batch := make([]store.SeriesPoints, 0, len(curves))
	for _, c := range curves {
		if len(c.Points) == 0 {
			continue
		}
		if err := st.EnsurePartitions(ctx, store.TablePoints, c.Points[0].Time(), c.Points[len(c.Points)-1].Time()); err != nil {
			t.Fatalf("storetest: partitions: %v", err)
		}
		batch = append(batch, store.SeriesPoints{SeriesID: ids[c.Key()], Points: c.Points})
	}
	if _, err := st.UpsertPoints(ctx, batch); err != nil {
		t.Fatalf("storetest: points: %v", err)
	}
}
