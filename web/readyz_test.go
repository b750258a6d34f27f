package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web"
)

// /readyz needs no token (load balancers probe it), and answered anyone
// with the database driver's error: the Postgres user, database, host
// and port, and the server's own message.
func TestReadyzTellsAnonymousClientsNoConnectionDetails(t *testing.T) {
	pool, err := pgxpool.New(t.Context(), "postgres://waterline_svc@127.0.0.1:5432/prod_incidents_eu?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	srv := httptest.NewServer(web.NewServer(web.Config{PublicURL: "http://waterline.test"}, web.Deps{
		Store: store.New(pool),
		// As store.Ready reports an unreachable database.
		Ready: func(ctx context.Context) error {
			if err := pool.Ping(ctx); err != nil {
				return fmt.Errorf("postgres unreachable: %w", err)
			}
			return nil
		},
	}))
	t.Cleanup(srv.Close)
	res, err := http.Get(srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/readyz: %d %s", res.StatusCode, body)
	}
	for _, secret := range []string{"waterline_svc", "prod_incidents_eu", "127.0.0.1", "5432"} {
		if strings.Contains(string(body), secret) {
			t.Errorf("/readyz without a token tells %q: %s", secret, body)
		}
	}
}
