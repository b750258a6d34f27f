package pull

import "time"

// window is a half-open range [from, to) of times on the step grid.
type window struct{ from, to time.Time }

// alignDown returns the grid time at or before t (grid: multiples of step
// since the Unix epoch, so every source and every run query the same
// instants and re-pulls overwrite instead of interleaving).
func alignDown(t time.Time, step time.Duration) time.Time {
	return time.Unix(0, t.UnixNano()-((t.UnixNano()%int64(step))+int64(step))%int64(step)).UTC()
}

// alignUp returns the grid time at or after t.
func alignUp(t time.Time, step time.Duration) time.Time {
	d := alignDown(t, step)
	if d.Before(t) {
		d = d.Add(step)
	}
	return d
}

// chunks splits [from, to) into windows of at most maxChunk and of at most
// maxPointsPerSeries steps each, aligned to the grid.
func chunks(from, to time.Time, step, maxChunk time.Duration) []window {
	span := time.Duration(maxPointsPerSeries) * step
	if maxChunk > 0 && maxChunk < span {
		span = maxChunk
	}
	span = span / step * step
	if span < step {
		span = step
	}
	from, to = alignUp(from, step), alignUp(to, step)
	var out []window
	for a := from; a.Before(to); {
		b := alignDown(a.Add(span), span) // chunk edges on multiples of span: shared by all sources
		if !b.After(a) {
			b = a.Add(span)
		}
		if b.After(to) {
			b = to
		}
		out = append(out, window{a, b})
		a = b
	}
	return out
}

// last returns the last grid time inside w (the inclusive end for a
// Prometheus range query).
func (w window) last(step time.Duration) time.Time { return w.to.Add(-step) }
