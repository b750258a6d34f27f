package correlate

import (
	"testing"
	"time"
)

// The lead time a cause states is the one the page's changes table and the
// API's offset_s give: a deploy 51 s before an onset shown to the second is
// not "45s before" it (a sentence once rounded to 15 s steps).
func TestLeadTimeSaidToTheSecond(t *testing.T) {
	onset := time.Now().UTC().Truncate(time.Minute)
	for _, c := range []struct {
		offset float64
		want   string
	}{
		{-51, "51s before the onset"},
		{-495.4, "8m15s before the onset"},
		{-497, "8m17s before the onset"},
		{40, "40s after the onset"},
		{0.3, "at the onset"},
	} {
		e := AlignedEvent{Event: Event{Time: onset.Add(time.Duration(c.offset * float64(time.Second)))}, OffsetS: c.offset}
		if got := ago(e); got != c.want {
			t.Errorf("offset %.1f s: %q, want %q", c.offset, got, c.want)
		}
	}
}
