package pull

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"
)

// SLOs are latency objectives (ms) per model, directly or through a tier
// (realtime, search, batch — or any name the file defines).
type SLOs struct {
	Tiers       map[string]float64 // tier → ms
	ModelTier   map[string]string  // model → tier
	ModelMs     map[string]float64 // model → ms, overrides its tier
	DefaultTier string             // tier of models not listed
	DefaultMs   float64            // ms for models not listed (when no default tier)
}

// SLOFor returns the latency objective of model in ms; ok is false when
// the config gives none.
func (c *Config) SLOFor(model string) (ms float64, ok bool) {
	s := c.SLOs
	if v, ok := s.ModelMs[model]; ok {
		return v, true
	}
	if t, ok := s.ModelTier[model]; ok {
		v, ok := s.Tiers[t]
		return v, ok
	}
	if s.DefaultTier != "" {
		v, ok := s.Tiers[s.DefaultTier]
		return v, ok
	}
	return s.DefaultMs, s.DefaultMs > 0
}

// TierOf returns the tier of model ("" when none is configured).
func (c *Config) TierOf(model string) string {
	if t, ok := c.SLOs.ModelTier[model]; ok {
		return t
	}
	if _, ok := c.SLOs.ModelMs[model]; ok {
		return ""
	}
	return c.SLOs.DefaultTier
}

// apply merges the slos section into s.
func (y *slosYAML) apply(s *SLOs, origin string) error {
	if s.Tiers == nil {
		s.Tiers, s.ModelTier, s.ModelMs = map[string]float64{}, map[string]string{}, map[string]float64{}
	}
	for _, name := range sortedKeys(y.Tiers) {
		n := y.Tiers[name]
		ms, ok := parseMs(&n)
		if !ok {
			return fmt.Errorf("%s:%d: slos.tiers.%s: want milliseconds (300) or a duration (300ms), got %q", origin, n.Line, name, n.Value)
		}
		s.Tiers[name] = ms
	}
	for _, model := range sortedKeys(y.Models) {
		n := y.Models[model]
		if ms, ok := parseMs(&n); ok {
			s.ModelMs[model] = ms
			continue
		}
		if _, ok := s.Tiers[n.Value]; !ok {
			return fmt.Errorf("%s:%d: slos.models.%s: %q is neither milliseconds nor a tier defined in slos.tiers", origin, n.Line, model, n.Value)
		}
		s.ModelTier[model] = n.Value
	}
	if n := &y.Default; n.Kind != 0 {
		if ms, ok := parseMs(n); ok {
			s.DefaultMs, s.DefaultTier = ms, ""
		} else if _, ok := s.Tiers[n.Value]; ok {
			s.DefaultTier = n.Value
		} else {
			return fmt.Errorf("%s:%d: slos.default: %q is neither milliseconds nor a tier defined in slos.tiers", origin, n.Line, n.Value)
		}
	}
	return nil
}

// parseMs reads a positive number of milliseconds or a duration string.
func parseMs(n *yaml.Node) (float64, bool) {
	if n.Kind != yaml.ScalarNode {
		return 0, false
	}
	if v, err := strconv.ParseFloat(n.Value, 64); err == nil && v > 0 {
		return v, true
	}
	if d, err := time.ParseDuration(n.Value); err == nil && d > 0 {
		return float64(d) / float64(time.Millisecond), true
	}
	return 0, false
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
