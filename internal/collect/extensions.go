package collect

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

// Extensions are the algorithmPolicy.extensions this project reads. A zero
// field means the key is absent and the run's default applies. Katalyst
// reads none of them, so a CR katalyst accepts keeps its meaning unless it
// sets one.
type Extensions struct {
	// Percentile is the usage percentile the recommendation starts from,
	// in (0, 1]; "percentile".
	Percentile float64
	// HalfLife is the decay half-life of the usage histogram; "halfLife"
	// as a duration ("24h"), or katalyst's documented "decayHalfLife" in
	// whole hours.
	HalfLife time.Duration
	// CPUPercentile and MemoryPercentile override Percentile for one
	// resource; "cpuPercentile", "memoryPercentile".
	CPUPercentile, MemoryPercentile float64
	// Window is how much usage history to read; "window", a duration.
	Window time.Duration
	// PeakInterval is the interval of the memory peaks the histogram is
	// built from; "memoryPeakInterval", a duration.
	PeakInterval time.Duration
	// Unknown are the keys this project does not read, sorted. They are
	// accepted, as katalyst accepts any extensions.
	Unknown []string
}

// ParseExtensions reads raw (nil is allowed) and checks the values of the
// keys it knows; the error names the key and what is wrong with it.
func ParseExtensions(raw *runtime.RawExtension) (Extensions, *ValidationError) {
	var ext Extensions
	if raw == nil || len(raw.Raw) == 0 {
		return ext, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw.Raw, &m); err != nil {
		return ext, invalid(CodeExtensionsInvalid, "spec.resourcePolicy.algorithmPolicy.extensions must be an object")
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		switch k {
		case "percentile", "cpuPercentile", "memoryPercentile":
			p, ok := number(v)
			if !ok || math.IsNaN(p) || p <= 0 || p > 1 {
				return ext, invalid(CodeExtensionsInvalid, msgExtensionInvalid, k, fmt.Sprintf("must be a number in (0, 1], got %s", show(v)))
			}
			switch k {
			case "cpuPercentile":
				ext.CPUPercentile = p
			case "memoryPercentile":
				ext.MemoryPercentile = p
			default:
				ext.Percentile = p
			}
		case "memoryPeakInterval":
			d, err := positiveDuration(v)
			if err != nil {
				return ext, invalid(CodeExtensionsInvalid, msgExtensionInvalid, k, err.Error())
			}
			if d < time.Minute || d > 24*time.Hour {
				return ext, invalid(CodeExtensionsInvalid, msgExtensionInvalid, k, fmt.Sprintf("must be between 1m and 24h, got %s", d))
			}
			ext.PeakInterval = d
		case "halfLife", "window":
			d, err := positiveDuration(v)
			if err != nil {
				return ext, invalid(CodeExtensionsInvalid, msgExtensionInvalid, k, err.Error())
			}
			if k == "window" {
				if d < minExtensionWindow {
					return ext, invalid(CodeExtensionsInvalid, msgExtensionInvalid, k, fmt.Sprintf("must be at least %s, the least history a recommendation needs, got %s", minExtensionWindow, d))
				}
				ext.Window = d
			} else {
				ext.HalfLife = d
			}
		case "decayHalfLife":
			h, ok := number(v)
			if !ok || h != math.Trunc(h) || h < 1 || h > 24*365 {
				return ext, invalid(CodeExtensionsInvalid, msgExtensionInvalid, k, fmt.Sprintf("must be a whole number of hours from 1 to 8760, got %s", show(v)))
			}
			if _, both := m["halfLife"]; both {
				return ext, invalid(CodeExtensionsInvalid, msgExtensionInvalid, k, "must not be set together with halfLife")
			}
			ext.HalfLife = time.Duration(h) * time.Hour
		default:
			ext.Unknown = append(ext.Unknown, k)
		}
	}
	return ext, nil
}

// number accepts a JSON number or a string holding one, as YAML authors
// quote values inconsistently.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

func positiveDuration(v any) (time.Duration, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("must be a duration such as \"24h\", got %s", show(v))
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("must be a positive duration such as \"24h\", got %s", show(v))
	}
	return d, nil
}

// show renders a decoded JSON value for a message.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// minExtensionWindow is the shortest window that can hold the day of
// history a recommendation needs.
const minExtensionWindow = 24 * time.Hour
