package web

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waterline-dev/waterline/web/request"
)

// Window reads beyond the slots wait for one, and past the wait get a 503
// with Retry-After rather than piling up in memory.
func TestLimitReads(t *testing.T) {
	e := echo.New()
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		status := http.StatusInternalServerError
		var re *request.Error
		if errors.As(err, &re) {
			status = re.Status
		}
		_ = c.NoContent(status)
	}
	release := make(chan struct{})
	entered := make(chan struct{}, 4)
	slots := make(chan struct{}, 2)
	e.GET("/slow", func(c echo.Context) error {
		entered <- struct{}{}
		<-release
		return c.NoContent(http.StatusOK)
	}, limitReads(slots, 200*time.Millisecond))
	srv := httptest.NewServer(e)
	defer srv.Close()
	get := func() (int, string) {
		res, err := http.Get(srv.URL + "/slow")
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		res.Body.Close()
		return res.StatusCode, res.Header.Get("Retry-After")
	}
	done := make(chan int, 3)
	for range 2 {
		go func() { s, _ := get(); done <- s }()
		<-entered
	}
	// Both slots held: a third waits its 200 ms and is turned away.
	if s, retry := get(); s != http.StatusServiceUnavailable || retry == "" {
		t.Errorf("third read while two run: %d, Retry-After %q; want 503 with Retry-After", s, retry)
	}
	// One waiting when a slot frees gets it.
	go func() { s, _ := get(); done <- s }()
	time.Sleep(50 * time.Millisecond)
	release <- struct{}{}
	<-entered
	close(release)
	for range 3 {
		if s := <-done; s != http.StatusOK {
			t.Errorf("read: %d", s)
		}
	}
}
