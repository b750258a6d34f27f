package otlp

import (
	"strings"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/correlate"
)

func TestParseConfigReadsTheOTLPSectionOnly(t *testing.T) {
	c, err := ParseConfig("w.yaml", []byte(`
presets: [inference]   # pull's, not ours
otlp:
  entry_span: gateway.request
  grace: 2s
  tenant_attribute: enduser.id
  dimensions: {replica: [pod]}
  stages:
    - {stage: queue, name: '^wait$', kind: internal}
  stage_attributes:
    - {stage: batch_wait, attribute: batch.wait_ms, unit: ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.EntrySpan != "gateway.request" || c.Grace != 2*time.Second || c.MaxWait != time.Minute {
		t.Errorf("entry/grace/wait: %q %s %s", c.EntrySpan, c.Grace, c.MaxWait)
	}
	if got := c.Dims[DimTenant]; len(got) != 1 || got[0] != "enduser.id" {
		t.Errorf("tenant: %v", got)
	}
	if got := c.Dims[DimReplica]; len(got) != 1 || got[0] != "pod" {
		t.Errorf("replica: %v", got)
	}
	if c.Rules[0].Stage != correlate.StageQueue || len(c.Rules) != len(DefaultConfig().Rules)+1 {
		t.Errorf("own rules go first, before the built-in ones: %+v", c.Rules[0])
	}
	if c.AttrStages[0].Attr != "batch.wait_ms" || c.AttrStages[0].Scale != 1 {
		t.Errorf("stage attributes: %+v", c.AttrStages[0])
	}
	if c, err := ParseConfig("x", []byte("presets: []\n")); err != nil || c.Grace != DefaultConfig().Grace {
		t.Errorf("a file without otlp: keeps the defaults: %v", err)
	}
}

func TestParseConfigNamesTheBadField(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"otlp:\n  gracee: 2s\n", "field gracee not found"},
		{"otlp:\n  grace: soon\n", "otlp.grace: want a duration"},
		{"otlp:\n  stages:\n    - {stage: compute, name: x}\n", `otlp.stages[0].stage: unknown stage "compute"`},
		{"otlp:\n  stages:\n    - {stage: exec, name: '('}\n", "otlp.stages[0].name: bad regular expression"},
		{"otlp:\n  stages:\n    - {stage: exec}\n", "otlp.stages[0]: matches every span"},
		{"otlp:\n  dimensions: {team: [x]}\n", "otlp.dimensions.team: unknown dimension"},
		{"otlp:\n  stage_attributes:\n    - {stage: queue, attribute: q, unit: min}\n", "unit: want s, ms, us or ns"},
	} {
		_, err := ParseConfig("w.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "w.yaml") {
			t.Errorf("%q: got %v, want …%s…", tc.yaml, err, tc.want)
		}
	}
}
