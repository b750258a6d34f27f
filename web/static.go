package web

import (
	"net/http"

	"github.com/waterline-dev/waterline/static"
)

// staticHandler serves the embedded assets. Pages link them with a content
// hash (?v=…), so a linked asset never changes: it may be cached for a
// year. Unversioned requests get a short lifetime.
func staticHandler() http.Handler {
	fs := http.FileServerFS(static.FS)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("v") != "" {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "public, max-age=300")
		}
		fs.ServeHTTP(w, r)
	})
}
