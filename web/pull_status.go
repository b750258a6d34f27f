package web

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/store"
)

// pullStatusView is the answer of GET /api/v1/pull/status: whether some
// serve replica holds the pull lease, each source's progress and lag, the
// gaps still open and those filled in the last day. It reads Postgres, so
// every replica answers the same whichever one pulls.
type pullStatusView struct {
	LeaderActive bool              `json:"leader_active"`
	Sources      []pullSourceView  `json:"sources"`
	OpenGaps     []store.PullGap   `json:"open_gaps"`
	FilledGaps   []store.PullGap   `json:"filled_gaps"`
	Summary      pullStatusSummary `json:"summary"`
}

type pullSourceView struct {
	store.PullSource
	LagSeconds float64 `json:"lag_seconds"`
}

type pullStatusSummary struct {
	Sources       int        `json:"sources"`
	Failing       int        `json:"failing"` // last attempt failed
	MaxLagSeconds float64    `json:"max_lag_seconds"`
	LastSuccess   *time.Time `json:"last_success,omitempty"`
	OpenGaps      int        `json:"open_gaps"`
	ErrorsTotal   int64      `json:"errors_total"`
	PointsTotal   int64      `json:"points_total"`
}

// handlePullStatusGet is GET /api/v1/pull/status.
func (s *Server) handlePullStatusGet(c echo.Context) error {
	v, err := s.pullStatus(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// pullStatus reads the pull health the API and the home page show.
func (s *Server) pullStatus(ctx context.Context) (pullStatusView, error) {
	now := s.now()
	srcs, err := s.store.PullSources(ctx)
	if err != nil {
		return pullStatusView{}, err
	}
	gaps, err := s.store.PullGaps(ctx, now.Add(-24*time.Hour))
	if err != nil {
		return pullStatusView{}, err
	}
	held, err := s.store.LeaseHeld(ctx, store.PullLease)
	if err != nil {
		return pullStatusView{}, err
	}
	v := pullStatusView{LeaderActive: held, Sources: []pullSourceView{}, OpenGaps: []store.PullGap{}, FilledGaps: []store.PullGap{}}
	for _, src := range srcs {
		lag := now.Sub(src.Cursor).Seconds()
		v.Sources = append(v.Sources, pullSourceView{PullSource: src, LagSeconds: lag})
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
		if g.FilledAt == nil {
			v.OpenGaps = append(v.OpenGaps, g)
		} else {
			v.FilledGaps = append(v.FilledGaps, g)
		}
	}
	v.Summary.OpenGaps = len(v.OpenGaps)
	return v, nil
}
