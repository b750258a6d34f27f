package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/waterline-dev/waterline/wire"
)

// apiClient calls Waterline's HTTP API the way an integration would: the
// demo pushes events as a CD system does and samples as a gateway does.
type apiClient struct {
	base  string
	token string
	http  *http.Client
}

func newAPIClient(base, token string) *apiClient {
	return &apiClient{base: base, token: token, http: &http.Client{Timeout: 2 * time.Minute}}
}

// do sends one request and decodes a 2xx JSON answer into out (if not
// nil). Any other status is an error carrying the API's error message.
func (c *apiClient) do(ctx context.Context, method, path, contentType string, body io.Reader, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if res.StatusCode/100 != 2 {
		var e wire.Error
		if json.Unmarshal(raw, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(raw))
		}
		return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, e.Error)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: decoding the answer: %w", method, path, err)
	}
	return nil
}

// postNDJSON posts NDJSON to an ingest endpoint.
func (c *apiClient) postNDJSON(ctx context.Context, path string, body []byte) (wire.IngestResult, error) {
	var r wire.IngestResult
	err := c.do(ctx, http.MethodPost, path, "application/x-ndjson", bytes.NewReader(body), &r)
	return r, err
}

// postSamples posts NDJSON samples in batches of at most batch lines,
// reporting the lines sent so far after each batch.
func (c *apiClient) postSamples(ctx context.Context, ndjson []byte, batch int, sent func(n int)) (wire.IngestResult, error) {
	var total wire.IngestResult
	n := 0
	for len(ndjson) > 0 {
		cut, lines := 0, 0
		for cut < len(ndjson) && lines < batch {
			i := bytes.IndexByte(ndjson[cut:], '\n')
			if i < 0 {
				cut = len(ndjson)
			} else {
				cut += i + 1
			}
			lines++
		}
		r, err := c.postNDJSON(ctx, "/api/v1/samples", ndjson[:cut])
		if err != nil {
			return total, err
		}
		total.Accepted += r.Accepted
		total.Duplicates += r.Duplicates
		n += lines
		sent(n)
		ndjson = ndjson[cut:]
	}
	return total, nil
}
