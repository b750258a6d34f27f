package api

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/wire"
)

// GetPullStatus is GET /api/v1/pull/status. It reads Postgres, so every
// replica answers the same whichever one pulls.
func (a *API) GetPullStatus(c echo.Context) error {
	v, err := PullStatus(c.Request().Context(), a.store, a.now())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// PullStatus reads the pull health the API and the home page show: the
// lease, each source's progress and lag at now, the gaps still open and
// those filled in the last day.
func PullStatus(ctx context.Context, st *store.Store, now time.Time) (wire.PullStatus, error) {
	srcs, err := st.PullSources(ctx)
	if err != nil {
		return wire.PullStatus{}, err
	}
	gaps, err := st.PullGaps(ctx, now.Add(-24*time.Hour))
	if err != nil {
		return wire.PullStatus{}, err
	}
	held, err := st.LeaseHeld(ctx, store.PullLease)
	if err != nil {
		return wire.PullStatus{}, err
	}
	v := wire.PullStatus{LeaderActive: held, Sources: []wire.PullSource{}, OpenGaps: []wire.PullGap{}, FilledGaps: []wire.PullGap{}}
	for _, src := range srcs {
		lag := now.Sub(src.Cursor).Seconds()
		v.Sources = append(v.Sources, wire.PullSource{Source: src.Source, Cursor: src.Cursor, LastSuccess: src.LastSuccess,
			LastAttempt: src.LastAttempt, LastError: src.LastError, ErrorsTotal: src.ErrorsTotal, PointsTotal: src.PointsTotal, LagSeconds: lag})
		v.Summary.MaxLagSeconds = max(v.Summary.MaxLagSeconds, lag)
		v.Summary.ErrorsTotal += src.ErrorsTotal
		v.Summary.PointsTotal += src.PointsTotal
		if src.LastError != "" {
			v.Summary.Failing++
		}
		if src.LastSuccess != nil && (v.Summary.LastSuccess == nil || src.LastSuccess.After(*v.Summary.LastSuccess)) {
			v.Summary.LastSuccess = src.LastSuccess
		}
	}
	v.Summary.Sources = len(srcs)
	for _, g := range gaps {
		w := wire.PullGap{ID: g.ID, Source: g.Source, Reason: g.Reason, From: g.From, To: g.To, Done: g.Done, Error: g.Error,
			OpenedAt: g.OpenedAt, FilledAt: g.FilledAt}
		if g.FilledAt == nil {
			v.OpenGaps = append(v.OpenGaps, w)
		} else {
			v.FilledGaps = append(v.FilledGaps, w)
		}
	}
	v.Summary.OpenGaps = len(v.OpenGaps)
	return v, nil
}
