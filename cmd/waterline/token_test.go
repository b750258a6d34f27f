package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/store/storetest"
)

// token list shows tokens without secrets; token revoke NAME|ID revokes
// one, and a running server refuses it within seconds.
func TestTokenListAndRevoke(t *testing.T) {
	db := storetest.NewDatabase(t)
	env := envMap(map[string]string{"DATABASE_URL": db})
	ctx := context.Background()
	create := func(name, scope string) string {
		var out bytes.Buffer
		if err := run(ctx, []string{"token", "create", "--name", name, "--scope", scope}, env, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out.String())
	}
	gw := create("gateway", "write")
	create("twin", "read")
	create("twin", "read")
	s := startServe(t, db)
	get := func(token string) int {
		req, _ := http.NewRequest("GET", s.base+"/api/v1/incidents", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if st := get(gw); st != 200 {
		t.Fatalf("before revoking: %d", st)
	}

	var list bytes.Buffer
	if err := run(ctx, []string{"token", "list"}, env, &list, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(list.String(), "gateway") || !strings.Contains(list.String(), "write") || strings.Contains(list.String(), gw) ||
		strings.Count(list.String(), "live") != 4 { // e2e's own token too
		t.Errorf("token list:\n%s", list.String())
	}
	if err := run(ctx, []string{"token", "revoke", "twin"}, env, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "by id") {
		t.Errorf("an ambiguous name was revoked: %v", err)
	}
	if err := run(ctx, []string{"token", "revoke", "nobody"}, env, io.Discard, io.Discard); err == nil {
		t.Error("revoking an unknown token did not fail")
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"token", "revoke", "gateway"}, env, &out, io.Discard); err != nil || !strings.Contains(out.String(), `revoked write token "gateway"`) {
		t.Fatalf("revoke: %v %q", err, out.String())
	}
	revoked := time.Now()
	for get(gw) != http.StatusUnauthorized {
		if time.Since(revoked) > 6*time.Second {
			t.Fatal("the server still accepts a revoked token after 6 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	list.Reset()
	if err := run(ctx, []string{"token", "list"}, env, &list, io.Discard); err != nil || !strings.Contains(list.String(), "revoked") {
		t.Errorf("token list after revoking: %v\n%s", err, list.String())
	}
	// By id: the first twin.
	if err := run(ctx, []string{"token", "revoke", "2"}, env, &out, io.Discard); err != nil {
		t.Errorf("revoke by id: %v", err)
	}
}
