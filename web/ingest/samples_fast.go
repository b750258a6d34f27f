package ingest

import (
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/waterline-dev/waterline/correlate"
	"github.com/waterline-dev/waterline/wire"
)

// sampleParser decodes the common shape of a sample record without
// encoding/json, which would otherwise take most of the ingest CPU. It is
// deliberately narrow: anything it is not sure about (escapes in strings,
// unknown keys, unexpected types, negative or out-of-range numbers,
// invalid UTF-8, malformed JSON) makes it give up, and the record is
// decoded again by decodeRecord, which also words the exact error. So for
// every record it accepts it must produce what decodeRecord would; a fuzz
// test holds it to that.
type sampleParser struct {
	b      []byte
	i      int
	intern map[string]string // low-cardinality values shared within a request
	// Storage the decoded wire's pointers point into, so a record costs no
	// allocation for them; each record is consumed before the next parse.
	totalMs, sampleRate float64
}

// parse fills w from b and reports whether it could.
func (p *sampleParser) parse(b []byte, w *wire.Sample) bool {
	p.b, p.i = b, 0
	*w = wire.Sample{StagesMs: wire.NoStages}
	p.ws()
	if !p.eat('{') {
		return false
	}
	p.ws()
	if p.eat('}') {
		return p.end()
	}
	for {
		key, ok := p.key()
		if !ok {
			return false
		}
		p.ws()
		if !p.eat(':') {
			return false
		}
		p.ws()
		if !p.value(key, w) {
			return false
		}
		p.ws()
		if p.eat(',') {
			p.ws()
			continue
		}
		if p.eat('}') {
			return p.end()
		}
		return false
	}
}

// countInto reads a count (a non-negative integer) or null into dst.
func (p *sampleParser) countInto(dst *int) bool {
	if p.null() {
		return true
	}
	tok, ok := p.number()
	if !ok {
		return false
	}
	n, err := strconv.Atoi(string(tok)) // fails (and so gives up) on 4.0 or 1e3, as encoding/json would
	if err != nil || n < 0 {
		return false
	}
	*dst = n
	return true
}

func (p *sampleParser) value(key []byte, w *wire.Sample) bool {
	switch string(key) {
	case "request_id":
		s, ok := p.str(false)
		w.RequestID = s
		return ok
	case "time":
		s, ok := p.str(false)
		w.Time = s
		return ok
	case "model":
		return p.strInto(&w.Model)
	case "version":
		return p.strInto(&w.Version)
	case "tenant":
		return p.strInto(&w.Tenant)
	case "replica":
		return p.strInto(&w.Replica)
	case "node":
		return p.strInto(&w.Node)
	case "entry":
		return p.strInto(&w.Entry)
	case "status":
		return p.strInto(&w.Status)
	case "dependency":
		return p.strInto(&w.Dependency)
	case "batch_size":
		return p.countInto(&w.BatchSize)
	case "input_tokens":
		return p.countInto(&w.InputTokens)
	case "output_tokens":
		return p.countInto(&w.OutputTokens)
	case "total_ms":
		if p.null() {
			w.TotalMs = nil
			return true
		}
		v, ok := p.float()
		p.totalMs = v
		w.TotalMs = &p.totalMs
		return ok
	case "sample_rate":
		if p.null() {
			w.SampleRate = nil
			return true
		}
		v, ok := p.float()
		p.sampleRate = v
		w.SampleRate = &p.sampleRate
		return ok
	case "stages_ms":
		return p.stages(&w.StagesMs)
	}
	return false
}

// stages parses {"stage": ms|null, ...} or null.
func (p *sampleParser) stages(st *wire.Stages) bool {
	*st = wire.NoStages
	if p.null() {
		return true
	}
	if !p.eat('{') {
		return false
	}
	p.ws()
	if p.eat('}') {
		return true
	}
	for {
		key, ok := p.key()
		if !ok {
			return false
		}
		stage, known := correlate.ParseStage(string(key))
		if !known {
			return false
		}
		p.ws()
		if !p.eat(':') {
			return false
		}
		p.ws()
		if p.null() {
			st[stage] = math.NaN()
		} else {
			v, ok := p.float()
			if !ok {
				return false
			}
			st[stage] = v
		}
		p.ws()
		if p.eat(',') {
			p.ws()
			continue
		}
		return p.eat('}')
	}
}

// float parses a non-negative finite JSON number.
func (p *sampleParser) float() (float64, bool) {
	tok, ok := p.number()
	if !ok || tok[0] == '-' {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(tok), 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// number scans a JSON number strictly by the grammar.
func (p *sampleParser) number() ([]byte, bool) {
	b, i := p.b, p.i
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return nil, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return nil, false
		}
	}
	p.i = i
	return b[start:i], true
}

// strInto parses a string (or null, which leaves dst unchanged, as
// encoding/json does) into dst, interned.
func (p *sampleParser) strInto(dst *string) bool {
	if p.null() {
		return true
	}
	s, ok := p.str(true)
	if ok {
		*dst = s
	}
	return ok
}

// str parses a JSON string without escapes.
func (p *sampleParser) str(intern bool) (string, bool) {
	raw, ok := p.rawString()
	if !ok {
		return "", false
	}
	if intern && p.intern != nil {
		if s, ok := p.intern[string(raw)]; ok {
			return s, true
		}
		s := string(raw)
		if len(p.intern) < 4096 {
			p.intern[s] = s
		}
		return s, true
	}
	return string(raw), true
}

// key parses an object key.
func (p *sampleParser) key() ([]byte, bool) { return p.rawString() }

// rawString returns the bytes of a JSON string that needs no unescaping
// and is valid UTF-8; anything else gives up.
func (p *sampleParser) rawString() ([]byte, bool) {
	b := p.b
	if p.i >= len(b) || b[p.i] != '"' {
		return nil, false
	}
	start := p.i + 1
	ascii := true
	for i := start; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			s := b[start:i]
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			p.i = i + 1
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, false
}

func (p *sampleParser) null() bool {
	if len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "null" {
		p.i += 4
		return true
	}
	return false
}

func (p *sampleParser) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *sampleParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// end checks only white space follows the object.
func (p *sampleParser) end() bool {
	p.ws()
	return p.i == len(p.b)
}
