package ui

import (
	"bytes"

	"github.com/andybalholm/brotli"
)

// brotliQuality trades size for the time of one compression per cache
// entry: 6 costs a few milliseconds on a ~160 KB page and still beats
// gzip's best; 11 would take a large fraction of a second.
const brotliQuality = 6

// brotliCompress gives the brotli encoding of a cached page (nil if it
// fails: the page is then served gzip or plain).
func brotliCompress(raw []byte) []byte {
	var b bytes.Buffer
	w := brotli.NewWriterLevel(&b, brotliQuality)
	if _, err := w.Write(raw); err != nil {
		return nil
	}
	if err := w.Close(); err != nil {
		return nil
	}
	return b.Bytes()
}
