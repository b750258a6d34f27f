package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/waterline-dev/waterline/store"
)

// Options configure a Dispatcher; zero fields take defaults.
type Options struct {
	Workers     int           // deliveries sent at once; default 2
	Timeout     time.Duration // per attempt; default 10s
	BaseBackoff time.Duration // wait before the first retry (±50 %); default 5s
	MaxBackoff  time.Duration // longest wait between attempts; default 1h
	MaxAttempts int           // attempts before a delivery is marked failed; default 26: retried for 8–16 h (12 h on average) with the defaults
	Poll        time.Duration // how often idle workers look for due deliveries; default 1s
	Client      *http.Client  // default: NewClient(AllowPrivate)
	// AllowPrivate lets webhooks reach loopback, private and link-local
	// addresses (WATERLINE_WEBHOOK_ALLOW_PRIVATE); by default they are
	// refused on every connection (egress.go).
	AllowPrivate bool
	Log          *slog.Logger
	Now          func() time.Time
}

// Dispatcher sends queued deliveries. Several dispatchers (serve
// replicas) may share one database: each delivery is claimed with FOR
// UPDATE SKIP LOCKED and its row stays locked while it is sent, so no two
// senders ever send the same row, and a delivery recorded as delivered is
// never sent again — after a restart included.
type Dispatcher struct {
	st   *store.Store
	opt  Options
	wake chan struct{}
}

// NewDispatcher returns a Dispatcher over st, which must run on a pool
// (each worker holds a transaction while it sends).
func NewDispatcher(st *store.Store, opt Options) *Dispatcher {
	if opt.Workers <= 0 {
		opt.Workers = 2
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 10 * time.Second
	}
	if opt.BaseBackoff <= 0 {
		opt.BaseBackoff = 5 * time.Second
	}
	if opt.MaxBackoff <= 0 {
		opt.MaxBackoff = time.Hour
	}
	if opt.MaxAttempts <= 0 {
		opt.MaxAttempts = 26
	}
	if opt.Poll <= 0 {
		opt.Poll = time.Second
	}
	if opt.Client == nil {
		opt.Client = NewClient(opt.AllowPrivate)
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &Dispatcher{st: st, opt: opt, wake: make(chan struct{}, 1)}
}

// Wake tells idle workers that something was queued, so it goes out now
// rather than at the next poll. It never blocks.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run sends due deliveries until ctx ends. A delivery already being sent
// when ctx ends is finished and recorded (within the attempt timeout)
// before Run returns, so stopping never loses or repeats one.
func (d *Dispatcher) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range d.opt.Workers {
		wg.Go(func() { d.work(ctx) })
	}
	wg.Wait()
}

func (d *Dispatcher) work(ctx context.Context) {
	failures := 0 // database errors in a row
	for ctx.Err() == nil {
		sent, err := d.DeliverOne(ctx)
		wait := d.opt.Poll
		switch {
		case err != nil && ctx.Err() == nil:
			// The database is gone: wait longer each time (up to 30 s)
			// and say so when it starts and every few minutes, not at
			// every poll.
			failures++
			if failures == 1 || failures%10 == 0 {
				d.opt.Log.Warn("webhook delivery: database error; retrying with backoff", "err", err, "failures", failures)
			}
			wait = min(d.opt.Poll<<min(failures, 6), 30*time.Second)
		case err == nil && failures > 0:
			d.opt.Log.Info("webhook delivery: database reachable again", "after_failures", failures)
			failures = 0
		}
		if sent && err == nil {
			continue // more may be due
		}
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-time.After(wait):
		}
	}
}

// errNothingDue ends the claim transaction when no delivery is due.
var errNothingDue = errors.New("nothing due")

// DeliverOne claims one due delivery, sends it and records the outcome.
// It reports whether there was one. Once claimed, the attempt runs to its
// end even if ctx is cancelled: abandoning it half-way could leave a
// receiver with a message the log says was never sent.
func (d *Dispatcher) DeliverOne(ctx context.Context) (bool, error) {
	if ctx.Err() != nil {
		return false, nil
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.opt.Timeout+30*time.Second)
	defer cancel()
	var (
		hook  int64
		pause time.Time // zero: the receiver is not paused
	)
	err := d.st.InTx(actx, func(tx *store.Store) error {
		// The row stays locked while it is sent: should this replica's host
		// die or be cut off mid-send, the server ends the claim once it
		// has sat idle past the send's time limit, and another replica
		// sends it again (at least once), not hours later.
		if err := tx.BoundClaim(actx, d.opt.Timeout+claimIdleMargin); err != nil {
			return err
		}
		due, err := tx.ClaimDueDelivery(actx, d.opt.Now())
		if errors.Is(err, store.ErrNotFound) {
			return errNothingDue
		}
		if err != nil {
			return err
		}
		a, detail, until := d.attempt(actx, due)
		if a.Status == store.DeliveryDelivered {
			d.opt.Log.Info("webhook delivered", "delivery", due.ID, "webhook", due.WebhookID, "event", due.Event,
				"incident", due.IncidentID, "status", a.HTTPStatus, "attempt", due.Attempts+1)
		} else {
			d.opt.Log.Warn("webhook attempt failed", "delivery", due.ID, "webhook", due.WebhookID, "event", due.Event,
				"attempt", due.Attempts+1, "err", a.Err, "detail", detail, "next", a.Status)
		}
		hook, pause = due.WebhookID, until
		return tx.RecordAttempt(actx, due.ID, a)
	})
	if errors.Is(err, errNothingDue) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !pause.IsZero() {
		// Once the claim's transaction is over, not in it: DeleteWebhook
		// locks the webhook's row, then waits for its deliveries' rows
		// (this one's included), so writing the webhook's row while
		// holding this one could deadlock with it.
		d.opt.Log.Warn("webhook receiver paused", "webhook", hook, "until", pause)
		if err := d.st.PauseWebhook(actx, hook, pause); err != nil {
			return true, err
		}
	}
	return true, nil
}

// claimIdleMargin is how much longer than the attempt timeout a claim's
// transaction may sit idle on the server (logging, a slow first byte of
// the outcome's write) before the server takes its sender for gone.
const claimIdleMargin = 10 * time.Second

// slowAnswerShare: an error answer that took at least this share of the
// attempt timeout (1/4: 2.5 s by default) pauses the whole receiver.
const slowAnswerShare = 4

// attempt POSTs one delivery and decides what happens next. The attempt
// records only a short, sanitised reason (failure); detail is the
// transport's own error, for the server log only (never the receiver's
// body, nor the URL with its query string).
//
// pause, unless zero, is when the receiver's other deliveries may go
// again. A receiver that gave no answer (timed out, refused) or answered
// an error only after a long wait (a gateway's 502/504 just under the
// timeout) is in trouble for all its deliveries: they wait for this one's
// retry rather than each hold a sender for about the timeout while other
// receivers wait, so it costs about one attempt per sender and round. A
// 429 is about the receiver, not the delivery: it pauses it until this
// delivery's retry, and a Retry-After (on any retryable answer, at most
// an hour) pauses it for that long at least. Otherwise a quick error
// answer is judged per delivery (a body the receiver chokes on must not
// stop the others).
func (d *Dispatcher) attempt(ctx context.Context, due store.DueDelivery) (a store.Attempt, detail string, pause time.Time) {
	now := d.opt.Now()
	a = store.Attempt{At: now}
	sent := time.Now()
	status, retryIn, err := d.post(ctx, due, now)
	slow := time.Since(sent) >= d.opt.Timeout/slowAnswerShare
	a.HTTPStatus = status
	if err == nil {
		a.Status, a.NextAt = store.DeliveryDelivered, now
		return a, "", time.Time{}
	}
	a.Err = failure(status, err, d.opt.Timeout)
	if status == 0 {
		detail = err.Error()
		var ue *url.Error
		if errors.As(err, &ue) {
			detail = ue.Err.Error()
		}
	}
	if (status != 0 && !retryable(status)) || errors.Is(err, errBadURL) {
		a.Status, a.NextAt = store.DeliveryFailed, now
		return a, detail, time.Time{}
	}
	if retryIn > 0 {
		// The receiver asked for quiet, for all it is sent: its other
		// deliveries wait too, rather than each draw another 429 and
		// spend an attempt on it.
		retryIn = min(retryIn, maxRetryAfter)
		pause = now.Add(retryIn)
	}
	if due.Attempts+1 >= d.opt.MaxAttempts {
		a.Status, a.NextAt = store.DeliveryFailed, now
		a.Err += fmt.Sprintf(" (gave up after %d attempts)", due.Attempts+1)
		return a, detail, pause
	}
	wait := backoff(due.Attempts+1, d.opt.BaseBackoff, d.opt.MaxBackoff)
	if retryIn > wait {
		wait = min(retryIn, d.opt.MaxBackoff)
	}
	a.Status, a.NextAt = store.DeliveryPending, now.Add(wait)
	if (status == 0 || slow || status == http.StatusTooManyRequests) && a.NextAt.After(pause) {
		pause = a.NextAt
	}
	return a, detail, pause
}

// maxRetryAfter bounds the quiet a receiver may ask for with Retry-After.
const maxRetryAfter = time.Hour

// post sends the delivery once. It returns the HTTP status (0 when no
// answer came), the wait the receiver asked for (Retry-After), and an
// error unless the answer was 2xx.
func (d *Dispatcher) post(ctx context.Context, due store.DueDelivery, now time.Time) (int, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opt.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, due.URL, bytes.NewReader(due.Body))
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %w", errBadURL, err)
	}
	ts := now.Unix()
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "Waterline-Webhook/1")
	h.Set(HeaderEvent, due.Event)
	h.Set(HeaderDelivery, strconv.FormatInt(due.ID, 10))
	h.Set(HeaderIdempotencyKey, due.IdempotencyKey)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	h.Set(HeaderSignature, Sign(due.Secret, ts, due.Body))
	res, err := d.opt.Client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer res.Body.Close()
	// The answer's body is not kept (it could be an internal service's
	// data); it is drained so the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
	if res.StatusCode/100 == 2 {
		return res.StatusCode, 0, nil
	}
	return res.StatusCode, retryAfter(res.Header), fmt.Errorf("HTTP %d", res.StatusCode)
}
