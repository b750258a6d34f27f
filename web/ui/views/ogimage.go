package views

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"strings"
	"time"

	"golang.org/x/image/draw"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"github.com/waterline-dev/waterline/correlate"
)

// OG image size: what chat unfurls expect for a large card.
const (
	OGWidth  = 1200
	OGHeight = 630
)

// OGImageInput is what the preview image shows: the same facts as the
// card (no tenant, no sample), and the latency curve with onset and
// spikes.
type OGImageInput struct {
	Heading  string // "Incident #5"
	Title    string // scrubbed
	Cause    string // "Top cause: Bad release (score 0.82)"
	P99      string // "P99 420 ms → 1,900 ms"
	From, To time.Time
	Curve    []correlate.Point
	// Quantile names the curve ("P99" when empty): the hardest-hit
	// model's measured quantile, which may be a P95.
	Quantile string
	Onset    *time.Time
	// OnsetGapFrom: the latency curve has no data from it to Onset, and
	// the rise is drawn as that gap, not as a line at Onset.
	OnsetGapFrom *time.Time
	Spikes       []correlate.Spike
}

var (
	ogBG     = color.RGBA{0xf6, 0xf7, 0xf9, 0xff}
	ogInk    = color.RGBA{0x14, 0x21, 0x3d, 0xff}
	ogMuted  = color.RGBA{0x5b, 0x65, 0x70, 0xff}
	ogLine   = color.RGBA{0x00, 0x72, 0xb2, 0xff} // Okabe–Ito blue
	ogOnset  = color.RGBA{0xd5, 0x5e, 0x00, 0xff} // Okabe–Ito vermillion
	ogBand   = color.RGBA{0xfb, 0xe3, 0xd3, 0xff}
	ogGrid   = color.RGBA{0xd7, 0xdc, 0xe1, 0xff}
	ogHeader = color.RGBA{0x14, 0x21, 0x3d, 0xff}
)

// OGImage draws the preview PNG, 1200×630. Text is basicfont's 7×13
// bitmap scaled up (no font files to ship).
func OGImage(in OGImageInput) ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, OGWidth, OGHeight))
	draw.Draw(img, img.Bounds(), &image.Uniform{ogBG}, image.Point{}, draw.Src)
	draw.Draw(img, image.Rect(0, 0, OGWidth, 90), &image.Uniform{ogHeader}, image.Point{}, draw.Src)
	text(img, 40, 22, 4, color.White, "Waterline - "+in.Heading) // basicfont's middle dot reads as "@" when scaled
	text(img, 40, 110, 3, ogInk, clip(in.Title, ogLineChars))
	text(img, 40, 165, 3, ogInk, clip(in.Cause, ogLineChars))
	text(img, 40, 215, 3, ogOnset, clip(in.P99, ogLineChars))

	// Chart area.
	r := image.Rect(40, 290, OGWidth-40, OGHeight-50)
	draw.Draw(img, r, &image.Uniform{color.White}, image.Point{}, draw.Src)
	span := float64(in.To.Sub(in.From))
	if span <= 0 {
		span = 1
	}
	xAt := func(t time.Time) int { return r.Min.X + int(float64(r.Dx())*float64(t.Sub(in.From))/span) }
	for _, sp := range in.Spikes {
		a, b := max(xAt(sp.Start), r.Min.X), min(xAt(sp.End), r.Max.X)
		if b > a {
			draw.Draw(img, image.Rect(a, r.Min.Y, b, r.Max.Y), &image.Uniform{ogBand}, image.Point{}, draw.Src)
		}
	}
	for i := 1; i < 4; i++ {
		y := r.Min.Y + r.Dy()*i/4
		for x := r.Min.X; x < r.Max.X; x++ {
			img.Set(x, y, ogGrid)
		}
	}
	ymax := 0.0
	for _, p := range in.Curve {
		if !math.IsNaN(p.V) {
			ymax = math.Max(ymax, p.V)
		}
	}
	ymax = niceCeil(ymax)
	q := in.Quantile
	if q == "" {
		q = "P99"
	}
	if len(in.Curve) == 0 {
		text(img, r.Min.X+6, r.Min.Y+6, 2, ogMuted, "no "+q+" curve for this incident's scope")
	} else {
		text(img, r.Min.X+6, r.Min.Y+6, 2, ogMuted, q+" ms, max "+FmtNum(ymax))
	}
	var px, py int
	var last int64
	first := true
	// The pen lifts over a hole in the data (longer than 2.5 of the
	// curve's usual spacings), as on the timeline: a line across it would
	// draw a rise no point shows.
	hole := int64(2.5 * float64(max(medianSpacing(in.Curve), time.Second).Milliseconds()))
	for _, p := range in.Curve {
		if math.IsNaN(p.V) {
			first = true
			continue
		}
		if p.T-last > hole {
			first = true
		}
		last = p.T
		x := r.Min.X + int(float64(r.Dx())*float64(p.T-in.From.UnixMilli())/(span/1e6))
		y := r.Max.Y - 4 - int(float64(r.Dy()-8)*math.Min(p.V/ymax, 1))
		if !first {
			line(img, px, py, x, y, 3, ogLine)
		}
		px, py, first = x, y, false
	}
	if in.Onset != nil && in.OnsetGapFrom != nil && in.OnsetGapFrom.Before(*in.Onset) {
		// The rise is somewhere in the gap: hatch it, edge to edge.
		a, b := max(xAt(*in.OnsetGapFrom), r.Min.X), min(xAt(*in.Onset), r.Max.X-1)
		if b >= a {
			for x := a; x <= b; x++ {
				for y := r.Min.Y; y < r.Max.Y; y++ {
					if x == a || x == b || (x+y)%10 < 2 {
						img.Set(x, y, ogOnset)
					}
				}
			}
			text(img, min(b+6, r.Max.X-160), r.Max.Y-30, 2, ogOnset, "rose in gap")
		}
	} else if in.Onset != nil {
		x := xAt(*in.Onset)
		if x >= r.Min.X && x < r.Max.X {
			for y := r.Min.Y; y < r.Max.Y; y++ {
				if (y/8)%2 == 0 {
					for dx := -1; dx <= 1; dx++ {
						img.Set(x+dx, y, ogOnset)
					}
				}
			}
			text(img, x+6, r.Max.Y-30, 2, ogOnset, "onset")
		}
	}
	text(img, r.Min.X, r.Max.Y+12, 2, ogMuted, in.From.UTC().Format("2006-01-02 15:04")+" UTC")
	end := in.To.UTC().Format("15:04") + " UTC"
	text(img, r.Max.X-len(end)*14, r.Max.Y+12, 2, ogMuted, end)
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ogLineChars is the most characters a line of the card's text holds.
const ogLineChars = 50

// OGFigures is the card's figures line, "<what> <figures>": what is
// clipped to make room, so a long model name never pushes the figures,
// the point of the line, off the card.
func OGFigures(what, figures string) string {
	room := ogLineChars - len([]rune(figures)) - 1
	if room < 8 {
		return clip(what+" "+figures, ogLineChars)
	}
	return clip(what, room) + " " + figures
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// text draws s with its top-left at (x, y), basicfont scaled by scale.
func text(dst *image.RGBA, x, y, scale int, c color.Color, s string) {
	face := basicfont.Face7x13
	s = latin1(s)
	w := font.MeasureString(face, s).Ceil()
	if w == 0 {
		return
	}
	small := image.NewRGBA(image.Rect(0, 0, w, 13))
	d := font.Drawer{Dst: small, Src: &image.Uniform{c}, Face: face, Dot: fixed.P(0, 11)}
	d.DrawString(s)
	dr := image.Rect(x, y, x+w*scale, y+13*scale)
	draw.NearestNeighbor.Scale(dst, dr, small, small.Bounds(), draw.Over, nil)
}

// line draws a thick line (Bresenham, a square brush).
func line(img *image.RGBA, x0, y0, x1, y1, w int, c color.Color) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := 1, 1
	if x0 > x1 {
		sx = -1
	}
	if y0 > y1 {
		sy = -1
	}
	e := dx + dy
	for {
		for i := -w / 2; i <= w/2; i++ {
			for j := -w / 2; j <= w/2; j++ {
				img.Set(x0+i, y0+j, c)
			}
		}
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// latin1 spells the few non-Latin-1 characters our texts use in ASCII:
// basicfont has glyphs for Latin-1 only.
func latin1(s string) string {
	return strings.Map(func(r rune) rune {
		if r <= 0xff {
			return r
		}
		switch r {
		case '→':
			return '>'
		case '−', '–', '—':
			return '-'
		case '…':
			return '.'
		}
		return '?'
	}, strings.NewReplacer("→", "->", "…", "...").Replace(s))
}
