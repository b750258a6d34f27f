package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/internal/testing/testclock"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
	"github.com/waterline-dev/waterline/web/webhook"
)

const secret = "test-secret-0123456789"

// received is one request the test receiver got.
type received struct {
	key, delivery, event, ts, sig string
	body                          []byte
}

// receiver is a local webhook receiver: answer decides each answer (by
// the 1-based number of the request), and every request is recorded.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	got    []received
	answer func(n int, w http.ResponseWriter)
}

func newReceiver(t *testing.T, answer func(n int, w http.ResponseWriter)) *receiver {
	rc := &receiver{t: t, answer: answer}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec := received{
			key: r.Header.Get(webhook.HeaderIdempotencyKey), delivery: r.Header.Get(webhook.HeaderDelivery),
			event: r.Header.Get(webhook.HeaderEvent), ts: r.Header.Get(webhook.HeaderTimestamp),
			sig: r.Header.Get(webhook.HeaderSignature), body: body,
		}
		rc.mu.Lock()
		rc.got = append(rc.got, rec)
		n := len(rc.got)
		rc.mu.Unlock()
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("request %s with Content-Type %q", r.Method, r.Header.Get("Content-Type"))
		}
		if err := webhook.Verify(secret, rec.ts, rec.sig, body, testclock.Now()); err != nil {
			t.Errorf("delivery %s: %v", rec.delivery, err)
		}
		answer(n, w)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

func ok(int, http.ResponseWriter) {}

// fixture is a database with one incident and one webhook pointing at a
// receiver.
type fixture struct {
	st       *store.Store
	incident int64
	hook     int64
}

func newFixture(t *testing.T, url string) fixture {
	t.Helper()
	st := store.New(storetest.NewPool(t))
	ctx := context.Background()
	in, err := st.CreateIncident(ctx, store.NewIncident{Title: "p99 up", Start: testclock.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	w, err := st.CreateWebhook(ctx, store.NewWebhook{URL: url, Secret: secret, Format: store.WebhookFormatWaterline, Events: store.WebhookEvents})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{st: st, incident: in.ID, hook: w.ID}
}

// enqueue queues n deliveries due now, with keys k-0…k-(n−1): the
// cause.changed of n analysis versions of one incident.
func (f fixture) enqueue(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		q, err := f.st.EnqueueDelivery(context.Background(), store.NewDelivery{
			WebhookID: f.hook, IncidentID: f.incident, Event: store.EventCauseChanged, AnalysisVersion: i + 1,
			IdempotencyKey: fmt.Sprintf("k-%d", i), Body: []byte(fmt.Sprintf(`{"n":%d}`, i)), DueAt: testclock.Now(),
		})
		if err != nil || !q {
			t.Fatalf("enqueue %d: %v %v", i, q, err)
		}
	}
}

func (f fixture) log(t *testing.T) []store.Delivery {
	t.Helper()
	ds, _, err := f.st.Deliveries(context.Background(), f.hook, "", 500)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func fast(o webhook.Options) webhook.Options {
	if o.BaseBackoff == 0 {
		o.BaseBackoff = 40 * time.Millisecond
	}
	o.Poll = 10 * time.Millisecond
	o.Now = testclock.Now // the receiver below verifies on the same clock
	o.AllowPrivate = true // the receivers are on loopback
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Second
	}
	return o
}

func TestDeliverySignedWithHeadersAndLogged(t *testing.T) {
	rc := newReceiver(t, ok)
	f := newFixture(t, rc.srv.URL)
	f.enqueue(t, 1)
	// The same key again is the same event noticed twice: not queued.
	if q, err := f.st.EnqueueDelivery(context.Background(), store.NewDelivery{WebhookID: f.hook, IncidentID: f.incident,
		Event: store.EventCauseChanged, IdempotencyKey: "k-0", Body: []byte(`{}`), DueAt: testclock.Now()}); err != nil || q {
		t.Fatalf("duplicate key queued=%v err=%v", q, err)
	}
	d := webhook.NewDispatcher(f.st, fast(webhook.Options{}))
	if sent, err := d.DeliverOne(context.Background()); !sent || err != nil {
		t.Fatalf("DeliverOne = %v, %v", sent, err)
	}
	if sent, err := d.DeliverOne(context.Background()); sent || err != nil {
		t.Fatalf("second DeliverOne = %v, %v; want nothing due", sent, err)
	}
	got := rc.requests()
	if len(got) != 1 {
		t.Fatalf("%d requests, want 1", len(got))
	}
	r := got[0]
	// The signature, computed here independently of Sign: HMAC-SHA256
	// over timestamp "." body.
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(r.ts + "." + string(r.body)))
	if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); r.sig != want {
		t.Fatalf("signature %q, want %q", r.sig, want)
	}
	if ts, _ := strconv.ParseInt(r.ts, 10, 64); testclock.Now().Sub(time.Unix(ts, 0)).Abs() > time.Minute {
		t.Fatalf("timestamp %s is not now", r.ts)
	}
	if string(r.body) != `{"n":0}` || r.key != "k-0" || r.event != store.EventCauseChanged {
		t.Fatalf("request %+v", r)
	}
	log := f.log(t)
	if len(log) != 1 || log[0].Status != store.DeliveryDelivered || log[0].Attempts != 1 ||
		log[0].LastStatus == nil || *log[0].LastStatus != 200 || log[0].DeliveredAt == nil || r.delivery != strconv.FormatInt(log[0].ID, 10) {
		t.Fatalf("log %+v", log)
	}
	// A tampered body or another secret fails verification.
	if webhook.Verify(secret, r.ts, r.sig, append(r.body, ' '), testclock.Now()) == nil {
		t.Fatal("tampered body verified")
	}
	if webhook.Verify("other-secret", r.ts, r.sig, r.body, testclock.Now()) == nil {
		t.Fatal("wrong secret verified")
	}
	if webhook.Verify(secret, r.ts, r.sig, r.body, testclock.Now().Add(10*time.Minute)) != webhook.ErrStale {
		t.Fatal("stale timestamp verified")
	}
}

func TestRetryOn500ThenSuccess(t *testing.T) {
	rc := newReceiver(t, func(n int, w http.ResponseWriter) {
		if n == 1 {
			http.Error(w, "upstream exploded", http.StatusInternalServerError)
		}
	})
	f := newFixture(t, rc.srv.URL)
	f.enqueue(t, 1)
	d := webhook.NewDispatcher(f.st, fast(webhook.Options{BaseBackoff: 300 * time.Millisecond}))
	ctx := context.Background()
	if sent, err := d.DeliverOne(ctx); !sent || err != nil {
		t.Fatalf("first attempt: %v %v", sent, err)
	}
	log := f.log(t)
	if log[0].Status != store.DeliveryPending || log[0].Attempts != 1 || *log[0].LastStatus != 500 ||
		log[0].LastError != "HTTP 500 Internal Server Error" { // the answer's body is not kept
		t.Fatalf("after a 500: %+v", log[0])
	}
	// Backoff with jitter: between half and all of the base.
	wait := log[0].NextAttemptAt.Sub(*log[0].LastAttemptAt)
	if wait < 150*time.Millisecond || wait > 300*time.Millisecond {
		t.Fatalf("retry in %v, want 150–300ms", wait)
	}
	if sent, _ := d.DeliverOne(ctx); sent {
		t.Fatal("retried before its backoff")
	}
	time.Sleep(log[0].NextAttemptAt.Sub(testclock.Now()) + 20*time.Millisecond)
	if sent, err := d.DeliverOne(ctx); !sent || err != nil {
		t.Fatalf("retry: %v %v", sent, err)
	}
	log = f.log(t)
	if log[0].Status != store.DeliveryDelivered || log[0].Attempts != 2 || log[0].LastError != "" {
		t.Fatalf("after the retry: %+v", log[0])
	}
	got := rc.requests()
	if len(got) != 2 || got[0].key != got[1].key || got[0].delivery != got[1].delivery || string(got[0].body) != string(got[1].body) {
		t.Fatalf("the retry is not the same delivery: %+v", got)
	}
}

func TestWhichAnswersAreRetried(t *testing.T) {
	for _, tc := range []struct {
		status     int
		retryAfter string
		want       string
		minWait    time.Duration
	}{
		{400, "", store.DeliveryFailed, 0},
		{401, "", store.DeliveryFailed, 0},
		{404, "", store.DeliveryFailed, 0},
		{422, "", store.DeliveryFailed, 0},
		{302, "", store.DeliveryFailed, 0}, // redirects are not followed
		{408, "", store.DeliveryPending, 0},
		{429, "3", store.DeliveryPending, 3 * time.Second},
		{502, "", store.DeliveryPending, 0},
		{503, "", store.DeliveryPending, 0},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			rc := newReceiver(t, func(n int, w http.ResponseWriter) {
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				if tc.status == 302 {
					w.Header().Set("Location", "/elsewhere")
				}
				w.WriteHeader(tc.status)
			})
			f := newFixture(t, rc.srv.URL)
			f.enqueue(t, 1)
			d := webhook.NewDispatcher(f.st, fast(webhook.Options{}))
			if sent, err := d.DeliverOne(context.Background()); !sent || err != nil {
				t.Fatalf("DeliverOne: %v %v", sent, err)
			}
			log := f.log(t)[0]
			if log.Status != tc.want || log.Attempts != 1 || log.LastStatus == nil || *log.LastStatus != tc.status {
				t.Fatalf("status %d → %+v, want %s", tc.status, log, tc.want)
			}
			if w := log.NextAttemptAt.Sub(*log.LastAttemptAt); w < tc.minWait {
				t.Fatalf("next attempt in %v, want at least %v (Retry-After)", w, tc.minWait)
			}
			time.Sleep(60 * time.Millisecond) // past any backoff but Retry-After's
			_, _ = d.DeliverOne(context.Background())
			n := len(rc.requests())
			if tc.want == store.DeliveryFailed && n != 1 {
				t.Fatalf("status %d was sent %d times; a 4xx must not be retried", tc.status, n)
			}
		})
	}
}

func TestTimeoutIsRetriedAndAttemptsRunOut(t *testing.T) {
	rc := newReceiver(t, func(n int, w http.ResponseWriter) { time.Sleep(400 * time.Millisecond) })
	f := newFixture(t, rc.srv.URL)
	f.enqueue(t, 1)
	d := webhook.NewDispatcher(f.st, fast(webhook.Options{Timeout: 100 * time.Millisecond, BaseBackoff: time.Millisecond, MaxAttempts: 2}))
	if sent, err := d.DeliverOne(context.Background()); !sent || err != nil {
		t.Fatalf("DeliverOne: %v %v", sent, err)
	}
	log := f.log(t)[0]
	if log.Status != store.DeliveryPending || log.LastStatus != nil || log.LastError != "no answer within 100ms (the connection failed or timed out)" {
		t.Fatalf("after a timeout: %+v", log)
	}
	time.Sleep(10 * time.Millisecond)
	if sent, err := d.DeliverOne(context.Background()); !sent || err != nil {
		t.Fatalf("DeliverOne: %v %v", sent, err)
	}
	log = f.log(t)[0]
	if log.Status != store.DeliveryFailed || log.Attempts != 2 || log.LastError != "no answer within 100ms (the connection failed or timed out) (gave up after 2 attempts)" {
		t.Fatalf("after the last attempt: %+v", log)
	}
}

// waitDelivered polls the log until n deliveries are delivered.
func (f fixture) waitDelivered(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		done := 0
		for _, d := range f.log(t) {
			if d.Status == store.DeliveryDelivered {
				done++
			}
		}
		if done == n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("not all %d delivered: %+v", n, f.log(t))
}

// exactlyOnce checks that keys k-0…k-(n−1) each arrived once.
func exactlyOnce(t *testing.T, got []received, n int) {
	t.Helper()
	seen := map[string]int{}
	for _, r := range got {
		seen[r.key]++
	}
	for i := range n {
		if c := seen[fmt.Sprintf("k-%d", i)]; c != 1 {
			t.Errorf("k-%d received %d times, want exactly once", i, c)
		}
	}
	if len(got) != n {
		t.Errorf("%d requests for %d deliveries", len(got), n)
	}
}

func TestNoDuplicateDeliveryAfterRestart(t *testing.T) {
	const n = 20
	rc := newReceiver(t, func(int, http.ResponseWriter) { time.Sleep(30 * time.Millisecond) })
	f := newFixture(t, rc.srv.URL)
	f.enqueue(t, n)

	ctx, stop := context.WithCancel(context.Background())
	first := webhook.NewDispatcher(f.st, fast(webhook.Options{Workers: 2}))
	done := make(chan struct{})
	go func() { first.Run(ctx); close(done) }()
	for len(rc.requests()) < 6 {
		time.Sleep(5 * time.Millisecond)
	}
	stop() // mid-way, with sends in flight
	<-done
	// Everything the receiver got before the stop is recorded as
	// delivered: an in-flight send was finished, not abandoned.
	sentBefore := len(rc.requests())
	delivered := 0
	for _, d := range f.log(t) {
		if d.Status == store.DeliveryDelivered {
			delivered++
		}
	}
	if delivered != sentBefore || sentBefore >= n {
		t.Fatalf("after the stop: receiver got %d, log says %d delivered (of %d)", sentBefore, delivered, n)
	}

	second := webhook.NewDispatcher(f.st, fast(webhook.Options{Workers: 2}))
	ctx2, stop2 := context.WithCancel(context.Background())
	defer stop2()
	go second.Run(ctx2)
	f.waitDelivered(t, n)
	exactlyOnce(t, rc.requests(), n)
}

func TestConcurrentDispatchersNeverDoubleSend(t *testing.T) {
	const n = 40
	rc := newReceiver(t, func(i int, w http.ResponseWriter) { time.Sleep(time.Duration(i%4) * time.Millisecond) })
	f := newFixture(t, rc.srv.URL)
	f.enqueue(t, n)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 3 { // three serve replicas
		d := webhook.NewDispatcher(f.st, fast(webhook.Options{Workers: 3}))
		wg.Go(func() { d.Run(ctx) })
	}
	f.waitDelivered(t, n)
	stop()
	wg.Wait()
	exactlyOnce(t, rc.requests(), n)
	for _, d := range f.log(t) {
		if d.Attempts != 1 {
			t.Errorf("delivery %d took %d attempts", d.ID, d.Attempts)
		}
	}
}

func TestDeletedWebhookSendsNothing(t *testing.T) {
	rc := newReceiver(t, ok)
	f := newFixture(t, rc.srv.URL)
	f.enqueue(t, 3)
	if err := f.st.DeleteWebhook(context.Background(), f.hook); err != nil {
		t.Fatal(err)
	}
	d := webhook.NewDispatcher(f.st, fast(webhook.Options{}))
	if sent, err := d.DeliverOne(context.Background()); sent || err != nil {
		t.Fatalf("DeliverOne after delete: %v %v", sent, err)
	}
	if len(rc.requests()) != 0 {
		t.Fatal("a deleted webhook's delivery was sent")
	}
}

// TestIncidentEventsStayInOrderAcrossRetries: while an incident's earlier
// event waits for its retry, a later event of that incident (say resolved
// after opened) is held back for the same webhook, so a ticket is never
// closed before it is opened; another incident's events are not held.
func TestIncidentEventsStayInOrderAcrossRetries(t *testing.T) {
	rc := newReceiver(t, func(n int, w http.ResponseWriter) {
		if n == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
		}
	})
	f := newFixture(t, rc.srv.URL)
	ctx := context.Background()
	other, err := f.st.CreateIncident(ctx, store.NewIncident{Title: "other", Start: testclock.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range []struct {
		incident int64
		event    string
	}{{f.incident, store.EventIncidentOpened}, {f.incident, store.EventIncidentResolved}, {other.ID, store.EventIncidentOpened}} {
		if q, err := f.st.EnqueueDelivery(ctx, store.NewDelivery{WebhookID: f.hook, IncidentID: d.incident, Event: d.event,
			IdempotencyKey: fmt.Sprintf("o-%d", i), Body: []byte(fmt.Sprintf(`{"n":%d}`, i)), DueAt: testclock.Now()}); err != nil || !q {
			t.Fatalf("enqueue %d: %v %v", i, q, err)
		}
	}
	d := webhook.NewDispatcher(f.st, fast(webhook.Options{BaseBackoff: 400 * time.Millisecond}))
	if sent, err := d.DeliverOne(ctx); !sent || err != nil { // opened: 503, retried later
		t.Fatalf("first attempt: %v %v", sent, err)
	}
	if sent, err := d.DeliverOne(ctx); !sent || err != nil { // the other incident's opened
		t.Fatalf("second attempt: %v %v", sent, err)
	}
	if sent, err := d.DeliverOne(ctx); sent || err != nil {
		t.Fatalf("resolved was sent (%v, %v) while its incident's opened waits for a retry", sent, err)
	}
	for deadline := time.Now().Add(10 * time.Second); len(rc.requests()) < 4 && time.Now().Before(deadline); {
		if sent, err := d.DeliverOne(ctx); err != nil {
			t.Fatal(err)
		} else if !sent {
			time.Sleep(20 * time.Millisecond)
		}
	}
	var order []string
	for _, r := range rc.requests() {
		order = append(order, r.key)
	}
	if want := "[o-0 o-2 o-0 o-1]"; fmt.Sprint(order) != want {
		t.Fatalf("receiver saw %v, want %s", order, want)
	}
}

// A receiver that accepts and never answers held a worker for the whole
// timeout on each of its deliveries in turn — six incidents' worth — while
// a healthy receiver's page waited behind them. A receiver that gives no
// answer has its other deliveries held back until the failed one's
// retry: it costs one attempt per worker, not one per delivery.
func TestHungReceiverDoesNotHoldUpOthers(t *testing.T) {
	hung := newReceiver(t, func(n int, w http.ResponseWriter) { time.Sleep(300 * time.Millisecond) })
	healthy := newReceiver(t, ok)
	f := newFixture(t, hung.srv.URL)
	ctx := context.Background()
	for i := range 6 {
		in, err := f.st.CreateIncident(ctx, store.NewIncident{Title: fmt.Sprintf("i%d", i), Start: testclock.Now().Add(-time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.EnqueueDelivery(ctx, store.NewDelivery{WebhookID: f.hook, IncidentID: in.ID, Event: store.EventIncidentOpened,
			IdempotencyKey: fmt.Sprintf("hung-%d", i), Body: []byte(`{}`), DueAt: testclock.Now().Add(-time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := f.st.CreateWebhook(ctx, store.NewWebhook{URL: healthy.srv.URL, Secret: secret, Format: store.WebhookFormatWaterline, Events: store.WebhookEvents})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.EnqueueDelivery(ctx, store.NewDelivery{WebhookID: w.ID, IncidentID: f.incident, Event: store.EventIncidentOpened,
		IdempotencyKey: "healthy", Body: []byte(`{}`), DueAt: testclock.Now()}); err != nil {
		t.Fatal(err)
	}
	d := webhook.NewDispatcher(f.st, fast(webhook.Options{Timeout: 100 * time.Millisecond, BaseBackoff: time.Minute, Workers: 2}))
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { d.Run(rctx); close(done) }()
	defer func() { stop(); <-done }()
	for deadline := time.Now().Add(20 * time.Second); len(healthy.requests()) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the healthy receiver got nothing")
		}
	}
	if n := len(hung.requests()); n > 2 {
		t.Errorf("%d attempts to the hung receiver before the healthy one's delivery, want at most one per worker", n)
	}
}

// A gateway in front of an overloaded Jira or ServiceNow answered 504 just
// under the timeout: the guard for hung receivers saw an answer and let
// each of its deliveries hold a sender for almost the whole timeout in
// turn, while a healthy receiver's page waited behind them. An error
// answered after a long wait pauses the receiver like no answer does.
func TestSlowErrorReceiverDoesNotHoldUpOthers(t *testing.T) {
	slow := newReceiver(t, func(n int, w http.ResponseWriter) {
		time.Sleep(150 * time.Millisecond) // just under the 200 ms timeout below
		w.WriteHeader(http.StatusGatewayTimeout)
	})
	healthy := newReceiver(t, ok)
	f := newFixture(t, slow.srv.URL)
	ctx := context.Background()
	for i := range 8 {
		in, err := f.st.CreateIncident(ctx, store.NewIncident{Title: fmt.Sprintf("i%d", i), Start: testclock.Now().Add(-time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.EnqueueDelivery(ctx, store.NewDelivery{WebhookID: f.hook, IncidentID: in.ID, Event: store.EventIncidentOpened,
			IdempotencyKey: fmt.Sprintf("slow-%d", i), Body: []byte(`{}`), DueAt: testclock.Now().Add(-time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := f.st.CreateWebhook(ctx, store.NewWebhook{URL: healthy.srv.URL, Secret: secret, Format: store.WebhookFormatWaterline, Events: store.WebhookEvents})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.EnqueueDelivery(ctx, store.NewDelivery{WebhookID: w.ID, IncidentID: f.incident, Event: store.EventIncidentOpened,
		IdempotencyKey: "healthy", Body: []byte(`{}`), DueAt: testclock.Now()}); err != nil {
		t.Fatal(err)
	}
	d := webhook.NewDispatcher(f.st, fast(webhook.Options{Timeout: 200 * time.Millisecond, BaseBackoff: time.Minute, Workers: 2}))
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { d.Run(rctx); close(done) }()
	defer func() { stop(); <-done }()
	for deadline := time.Now().Add(20 * time.Second); len(healthy.requests()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the healthy receiver got nothing")
		}
	}
	if n := len(slow.requests()); n > 2 {
		t.Errorf("%d slow attempts (%d ms each) to the failing receiver before the healthy one's delivery, want at most one per worker", n, 150)
	}
}

// A 429 with Retry-After (Slack's one message a second per incoming
// webhook, Jira Cloud's and ServiceNow's rate limits) held back only the
// delivery that got it: the receiver's other deliveries — a fleet-wide
// spike opens several incidents at once — went out at once, each drew
// another 429 and spent one of its attempts. The whole receiver waits for
// the Retry-After now, deliveries queued meanwhile included, and no attempt
// of theirs is spent.
func TestRetryAfterHoldsTheWholeReceiver(t *testing.T) {
	rc := newReceiver(t, func(n int, w http.ResponseWriter) {
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	f := newFixture(t, rc.srv.URL)
	ctx := context.Background()
	for i := range 5 {
		in, err := f.st.CreateIncident(ctx, store.NewIncident{Title: fmt.Sprintf("i%d", i), Start: testclock.Now().Add(-time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.EnqueueDelivery(ctx, store.NewDelivery{WebhookID: f.hook, IncidentID: in.ID, Event: store.EventIncidentOpened,
			IdempotencyKey: fmt.Sprintf("rl-%d", i), Body: []byte(`{}`), DueAt: testclock.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	d := webhook.NewDispatcher(f.st, fast(webhook.Options{}))
	for range 5 {
		if _, err := d.DeliverOne(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(rc.requests()); n > 1 {
		t.Fatalf("the receiver answered 429 Retry-After: 60 and got %d more requests within the same second", n-1)
	}
	// Queued during the quiet: it waits too.
	if _, err := f.st.EnqueueDelivery(ctx, store.NewDelivery{WebhookID: f.hook, IncidentID: f.incident, Event: store.EventIncidentOpened,
		IdempotencyKey: "rl-later", Body: []byte(`{}`), DueAt: testclock.Now()}); err != nil {
		t.Fatal(err)
	}
	if sent, err := d.DeliverOne(ctx); sent || err != nil {
		t.Fatalf("a delivery queued during the Retry-After was sent: %v %v", sent, err)
	}
	attempts := 0
	for _, d := range f.log(t) {
		attempts += d.Attempts
		if d.Status != store.DeliveryPending {
			t.Errorf("delivery %d is %s, want pending", d.ID, d.Status)
		}
	}
	if attempts != 1 {
		t.Errorf("%d attempts spent, want the one that got the 429", attempts)
	}
}

// With the database gone the workers back off and say so once, not every
// poll: they logged two warnings a second for as long as an outage lasted.
func TestDispatcherBacksOffWhileTheDatabaseIsDown(t *testing.T) {
	st, pool := storetest.NewWithPool(t)
	pool.Close() // every claim fails now
	var mu sync.Mutex
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))
	d := webhook.NewDispatcher(st, fast(webhook.Options{Workers: 1, Log: log}))
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	d.Run(ctx) // 150 polls at 10 ms
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(logs.String(), "database error"); n == 0 || n > 3 {
		t.Errorf("%d warnings in 1.5 s of outage, want one or two:\n%s", n, logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
