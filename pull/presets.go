package pull

import (
	"embed"
	"sort"
	"strings"
)

// presetFS holds the built-in presets, one YAML file each, in the same
// format as WATERLINE_CONFIG: they double as examples for users.
//
//go:embed presets/*.yaml
var presetFS embed.FS

// PresetNames lists the built-in presets.
func PresetNames() []string {
	entries, _ := presetFS.ReadDir("presets")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(out)
	return out
}

// presetYAML returns the text of a built-in preset.
func presetYAML(name string) ([]byte, bool) {
	if strings.ContainsAny(name, "/.") {
		return nil, false
	}
	b, err := presetFS.ReadFile("presets/" + name + ".yaml")
	return b, err == nil
}
