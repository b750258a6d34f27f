package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/waterline-dev/waterline/internal/testing/testclock"
	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/webhook"
)

// A replica whose host dies (or is cut off) while it sends a webhook
// leaves its claim's transaction open on the server: no FIN, no reset, and
// pooled sessions have the server's TCP keepalive (two hours by default).
// The delivery's row stayed locked for all that time — it, and every later
// event of its incident for that webhook, which wait behind it, went out
// hours late. The server ends a claim left idle past the send's bounds, so
// another replica sends it again (at least once: the idempotency key is
// the same).
func TestDeliveryClaimedByACutOffReplicaIsSentByAnother(t *testing.T) {
	t.Parallel()
	direct, viaProxy, hole := proxiedDatabase(t)
	ctx := context.Background()
	poolB, err := pgxpool.New(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	defer poolB.Close()
	stB := store.New(poolB)
	poolA, err := pgxpool.New(ctx, viaProxy)
	if err != nil {
		t.Fatal(err)
	}
	// poolA is never closed: its session hangs on the cut.
	stA := store.New(poolA)

	var (
		mu   sync.Mutex
		keys []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get(webhook.HeaderIdempotencyKey))
		first := len(keys) == 1
		mu.Unlock()
		if first {
			hole.silence() // replica A is cut off while its send is in flight
		}
	}))
	defer srv.Close()

	in, err := stB.CreateIncident(ctx, store.NewIncident{Title: "p99 up", Start: testclock.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	w, err := stB.CreateWebhook(ctx, store.NewWebhook{URL: srv.URL, Secret: "0123456789abcdef0123", Format: store.WebhookFormatWaterline, Events: store.WebhookEvents})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stB.EnqueueDelivery(ctx, store.NewDelivery{WebhookID: w.ID, IncidentID: in.ID, Event: store.EventIncidentOpened,
		IdempotencyKey: "host/incidents/1/incident.opened", Body: []byte(`{}`), DueAt: testclock.Now()}); err != nil {
		t.Fatal(err)
	}

	opt := webhook.Options{AllowPrivate: true, Timeout: time.Second, Poll: 50 * time.Millisecond, Now: testclock.Now}
	go func() { _, _ = webhook.NewDispatcher(stA, opt).DeliverOne(ctx) }() // hangs on the cut until its own deadline
	for {
		mu.Lock()
		n := len(keys)
		mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}

	b := webhook.NewDispatcher(stB, opt)
	deadline := time.Now().Add(30 * time.Second)
	for {
		sent, err := b.DeliverOne(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if sent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the delivery claimed by the cut-off replica is still locked 30 s later; no other replica can send it")
		}
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 2 || keys[0] != keys[1] {
		t.Fatalf("receiver got %q, want the delivery twice under one idempotency key", keys)
	}
}
