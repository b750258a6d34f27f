// Package static embeds the UI's assets: htmx, the stylesheet and the small
// script for the timeline (crosshair, drag-to-zoom). There is no front-end
// build step and no CDN: what is in this folder is what the browser gets.
//
// htmx.min.js is htmx 2.0.11, unmodified, from the npm package htmx.org
// (npm pack htmx.org@2.0.11; package/dist/htmx.min.js), sha256
// d6fdc75f204e6bdefa99b69bf1e6d4ac69b8a364f77929f45c13476b4000f717.
// static_test.go checks that hash, so an accidental edit or upgrade shows.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
)

// FS holds the assets, served under /static/. icon-16.png is the 16×16
// icon Jira shows next to an incident's remote link (outbound webhooks).
//
//go:embed *.js *.css *.png
var FS embed.FS

// HTMXVersion is the pinned htmx release in htmx.min.js.
const HTMXVersion = "2.0.11"

// HTMXSHA256 is the sha256 of htmx.min.js as published in htmx.org@2.0.11.
const HTMXSHA256 = "d6fdc75f204e6bdefa99b69bf1e6d4ac69b8a364f77929f45c13476b4000f717"

// versions maps each asset to a short hash of its content, for cache
// busting: pages link /static/app.css?v=<hash>, so assets can be cached
// for a long time and still change with a new binary.
var versions = func() map[string]string {
	m := map[string]string{}
	_ = fs.WalkDir(FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := FS.ReadFile(p)
		if err != nil {
			return err
		}
		h := sha256.Sum256(b)
		m[p] = hex.EncodeToString(h[:4])
		return nil
	})
	return m
}()

// Path returns the URL of an asset with its content hash, e.g.
// "/static/app.css?v=1a2b3c4d". Unknown names get no hash.
func Path(name string) string {
	if v, ok := versions[name]; ok {
		return "/static/" + name + "?v=" + v
	}
	return "/static/" + name
}
