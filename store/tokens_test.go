package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/store/storetest"
)

// TestTouchTokenRecordsLastUse: a token's use shows in the list (once a
// minute at most), as `waterline token list` prints it.
func TestTouchTokenRecordsLastUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	_, tok, err := st.CreateToken(ctx, "ci", store.ScopeWrite)
	if err != nil {
		t.Fatal(err)
	}
	lastUsed := func() *time.Time {
		t.Helper()
		list, err := st.ListTokens(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range list {
			if x.ID == tok.ID {
				return x.LastUsedAt
			}
		}
		t.Fatalf("token %d not listed", tok.ID)
		return nil
	}
	now := time.Now().UTC().Truncate(time.Second)
	if err := st.TouchToken(ctx, tok.ID, now); err != nil {
		t.Fatal(err)
	}
	if got := lastUsed(); got == nil || !got.Equal(now) {
		t.Fatalf("last used %v, want %v", got, now)
	}
	// Within the minute: not written again.
	if err := st.TouchToken(ctx, tok.ID, now.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := lastUsed(); got == nil || !got.Equal(now) {
		t.Errorf("touched again within a minute: %v", got)
	}
	if err := st.TouchToken(ctx, tok.ID, now.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := lastUsed(); got == nil || !got.Equal(now.Add(2*time.Minute)) {
		t.Errorf("last used %v, want %v", got, now.Add(2*time.Minute))
	}
}
