package web

import (
	"fmt"
	"net/http"
	"runtime"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/web/request"
)

// Reads that load curves over a window (spikes, the timeline, the explore
// page, an incident page and what is drawn from it) may each hold a few
// hundred MB at their bounds. Their number at once is bounded too: during
// an incident everyone opens the page at the same moment, and a script
// looping over /api/v1/spikes must not take the memory the pages need.

// heavyReadWait is how long a heavy read waits for a slot before it is
// answered 503 with Retry-After.
const heavyReadWait = 15 * time.Second

// heavySlots is the default number of heavy reads at once: two per CPU,
// at least four.
func heavySlots() int { return max(4, 2*runtime.GOMAXPROCS(0)) }

// limitReads lets at most cap(slots) requests through at once; the others
// wait up to wait for a slot, then get 503 and a Retry-After.
func limitReads(slots chan struct{}, wait time.Duration) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			ctx := c.Request().Context()
			select {
			case slots <- struct{}{}:
			default:
				t := time.NewTimer(wait)
				defer t.Stop()
				select {
				case slots <- struct{}{}:
				case <-t.C:
					c.Response().Header().Set("Retry-After", "5")
					return &request.Error{Status: http.StatusServiceUnavailable,
						Msg: fmt.Sprintf("too many window reads at once (%d); retry in a few seconds", cap(slots))}
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			defer func() { <-slots }()
			return next(c)
		}
	}
}
