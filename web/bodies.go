package web

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/web/request"
)

// Routes that read a body go through a gate: at most a few requests of a
// kind read and handle their bodies at once (each holds memory and a
// database connection), and a body must keep arriving at a minimum rate.
// A request takes its slot only once its first chunk has arrived (or its
// whole body, if smaller), so clients that open a request and send slowly
// wait outside the slots and are cut off by the rate, never holding up
// the requests that send at network speed.

const (
	// firstChunk is what must have arrived before a request takes a slot.
	firstChunk = 32 << 10
	// defaultBodyGrace and defaultBodyMinRate: a body may wait for the
	// client up to grace + bytes received / rate in total; past that it is
	// too slow (408). Time the server spends elsewhere (the database
	// taking rows) does not count, nor anything after the body's end.
	defaultBodyGrace   = 5 * time.Second
	defaultBodyMinRate = 16 << 10 // bytes per second
	// formMaxBody bounds the bodies of forms and small JSON requests.
	formMaxBody = 64 << 10
	// signInMaxBody bounds a sign-in form: a token, a CSRF token, a path.
	signInMaxBody = 8 << 10
)

// gate is one kind of body-reading route's slots.
type gate struct {
	name    string
	slots   chan struct{}
	maxBody int64 // 0: the handler bounds the body itself
}

func newGate(name string, n int, maxBody int64) *gate {
	return &gate{name: name, slots: make(chan struct{}, n), maxBody: maxBody}
}

// gates are the server's gates by kind.
type gates struct {
	samples, traces, ingest, small *gate
	// signIn is for the anonymous sign-in and sign-out forms: their own
	// slots, so stalled anonymous bodies never queue ahead of
	// authenticated writes.
	signIn *gate
}

func newGates(cfg Config) gates {
	n := cmp.Or(cfg.IngestConcurrency, 4)
	return gates{
		samples: newGate("samples", n, 0),
		traces:  newGate("traces", n, 0),
		ingest:  newGate("ingest", n, 0),            // events, Alertmanager, annotations
		small:   newGate("small", 4*n, formMaxBody), // incidents, webhooks and page forms
		signIn:  newGate("sign-in", 4*n, signInMaxBody),
	}
}

// gated admits a request through g: the body is paced, its first chunk
// awaited, then a slot taken for the rest of the request.
func (s *Server) gated(g *gate) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			ctx := req.Context()
			if req.Body != nil && req.Body != http.NoBody {
				var body io.ReadCloser = &pacedBody{r: req.Body, rc: http.NewResponseController(c.Response()), ctx: ctx, size: req.ContentLength,
					grace: cmp.Or(s.cfg.BodyGrace, defaultBodyGrace), rate: float64(cmp.Or(s.cfg.BodyMinRate, defaultBodyMinRate))}
				if g.maxBody > 0 {
					body = http.MaxBytesReader(c.Response(), body, g.maxBody)
				}
				need := firstChunk
				if req.ContentLength >= 0 && req.ContentLength < int64(need) {
					need = int(req.ContentLength)
				}
				br := bufio.NewReaderSize(body, firstChunk)
				if _, err := br.Peek(need); errors.Is(err, os.ErrDeadlineExceeded) {
					return tooSlow()
				}
				req.Body = struct {
					io.Reader
					io.Closer
				}{br, body}
			}
			select {
			case g.slots <- struct{}{}:
				defer func() { <-g.slots }()
			case <-ctx.Done():
				return ctx.Err()
			}
			return next(c)
		}
	}
}

func tooSlow() error {
	return &request.Error{Status: http.StatusRequestTimeout,
		Msg: fmt.Sprintf("the request body arrived too slowly: send it at %d KiB/s or more (after the first %s), within the request time limit",
			defaultBodyMinRate>>10, defaultBodyGrace)}
}

// pacedBody enforces a minimum transfer rate on a request body through
// the connection's read deadline, set before every read: the reads may
// have waited grace + received/rate in total, and never past the
// request's own deadline. A read past it fails with
// os.ErrDeadlineExceeded, which the decoders answer with 408.
type pacedBody struct {
	r      io.ReadCloser
	rc     *http.ResponseController
	ctx    context.Context
	grace  time.Duration
	rate   float64
	size   int64         // the declared length; -1 when unknown (chunked)
	n      int64         // bytes received
	waited time.Duration // time spent waiting in Read
}

func (p *pacedBody) Read(b []byte) (int, error) {
	allow := p.grace + time.Duration(float64(p.n)/p.rate*float64(time.Second)) - p.waited
	if allow < 100*time.Millisecond {
		allow = 100 * time.Millisecond
	}
	start := time.Now()
	deadline := start.Add(allow)
	if d, ok := p.ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	// Not every ResponseWriter supports deadlines (httptest's recorder
	// does not); the request's context still bounds the handler.
	_ = p.rc.SetReadDeadline(deadline)
	n, err := p.r.Read(b)
	p.waited += time.Since(start)
	p.n += int64(n)
	if errors.Is(err, io.EOF) || (err == nil && p.size >= 0 && p.n >= p.size) {
		// The body is in: the pace no longer applies. Left set, the
		// deadline fails net/http's background read on the connection
		// once the body is consumed, which cancels the request: a
		// database wait longer than the grace answered a small ingest
		// 499 and stored nothing. The request's own deadline still
		// bounds it. (A body cut short keeps its passed deadline, so
		// net/http's discard of the rest fails at once.)
		d, _ := p.ctx.Deadline()
		_ = p.rc.SetReadDeadline(d)
	}
	return n, err
}

func (p *pacedBody) Close() error { return p.r.Close() }

// stallsAsUnavailable answers a stalled body (408, from the gate or the
// handler) with 503 and Retry-After, for senders that retry only server
// errors: Alertmanager drops a notification answered 4xx, and a stall is
// the network's fault, not the notification's.
func stallsAsUnavailable(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		var re *request.Error
		if errors.As(err, &re) && re.Status == http.StatusRequestTimeout {
			c.Response().Header().Set("Retry-After", "1")
			return &request.Error{Status: http.StatusServiceUnavailable, Msg: re.Msg}
		}
		return err
	}
}
