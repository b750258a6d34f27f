package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/store/storetest"
	"github.com/waterline-dev/waterline/web/webhook"
)

// TestServeSendsWebhooks checks serve's wiring: a webhook registered
// through the API hears an incident open, its analysis become ready and
// the incident resolve — each once, signed.
func TestServeSendsWebhooks(t *testing.T) {
	var (
		mu     sync.Mutex
		events []string
	)
	const secret = "serve-test-secret-0123"
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.Verify(secret, r.Header.Get(webhook.HeaderTimestamp), r.Header.Get(webhook.HeaderSignature), body, time.Now()); err != nil {
			t.Errorf("delivery: %v", err)
		}
		mu.Lock()
		events = append(events, r.Header.Get(webhook.HeaderEvent))
		mu.Unlock()
	}))
	defer rc.Close()
	got := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), events...)
	}

	db := storetest.NewDatabase(t)
	s := startServe(t, db, "WATERLINE_WEBHOOK_ALLOW_PRIVATE", "true") // the receiver is on loopback
	var admin bytes.Buffer
	if err := run(context.Background(), []string{"token", "create", "--name", "hooks", "--scope", "admin"},
		envMap(map[string]string{"DATABASE_URL": db}), &admin, io.Discard); err != nil {
		t.Fatal(err)
	}
	call := func(method, path, token, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, s.base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}
	if st, b := call("POST", "/api/v1/webhooks", strings.TrimSpace(admin.String()),
		fmt.Sprintf(`{"url":%q,"secret":%q}`, rc.URL+"/hook", secret)); st != 201 {
		t.Fatalf("register: %d %s", st, b)
	}
	// runServe reads the real clock, so the window is an hour before it.
	hourAgo := time.Now().Add(-time.Hour).Truncate(time.Minute)
	st, b := call("POST", "/api/v1/incidents", s.token, fmt.Sprintf(`{"title":"p99 up","start":%q,"end":%q}`,
		hourAgo.Add(-time.Hour).Format(time.RFC3339), hourAgo.Format(time.RFC3339)))
	var inc struct{ ID int64 }
	if st != 201 || json.Unmarshal(b, &inc) != nil {
		t.Fatalf("incident: %d %s", st, b)
	}
	waitFor := func(want []string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !slices.Equal(got(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("webhook events %v, want %v\nserve log:\n%s", got(), want, s.stderr)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The analyzer picks the incident up (an empty window still gives a
	// ready analysis) and the dispatcher is woken, so this is quick.
	waitFor([]string{"incident.opened", "analysis.ready"})
	if st, b := call("POST", fmt.Sprintf("/api/v1/incidents/%d/resolve", inc.ID), s.token, ""); st != 200 {
		t.Fatalf("resolve: %d %s", st, b)
	}
	waitFor([]string{"incident.opened", "analysis.ready", "incident.resolved"})
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
}
