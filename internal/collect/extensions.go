package collect

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

// Extensions are the algorithmPolicy.extensions this project reads. A zero
// field means the key is absent and the run's default applies. Katalyst
// reads none of them, so a CR katalyst accepts keeps its meaning unless it
// sets one.
type Extensions struct {
	// Percentile is the usage percentile the recommendation starts from,
	// in [MinPercentile, 1]; "percentile".
	Percentile float64
	// HalfLife is the decay half-life of the usage histogram, in
	// [MinHalfLife, MaxHalfLife]; "halfLife" as a duration ("24h"), or
	// katalyst's documented "decayHalfLife" in whole hours.
	HalfLife time.Duration
	// CPUPercentile and MemoryPercentile override Percentile for one
	// resource; "cpuPercentile", "memoryPercentile".
	CPUPercentile, MemoryPercentile float64
	// Window is how much usage history to read; "window", a duration
	// in [MinWindow, MaxWindow].
	Window time.Duration
	// PeakInterval is the interval of the memory peaks the histogram is
	// built from; "memoryPeakInterval", a whole number of minutes in
	// [MinPeakInterval, MaxPeakInterval].
	PeakInterval time.Duration
	// Unknown are the keys this project does not read, sorted. They are
	// accepted, as katalyst accepts any extensions.
	Unknown []string
}

// Bounds of the settings a ResourceRecommend's extensions, and the run's
// own configuration, may take. They keep what one ResourceRecommend can
// cost a run bounded: a namespace's history is read once, over the longest
// window any of its ResourceRecommends asks for and at the finest memory
// peak interval, so these bounds are the most one namespace can ask for.
const (
	// MinWindow is the shortest window that can hold the day of history
	// a recommendation needs.
	MinWindow = 24 * time.Hour
	// MaxWindow is 30 days. CPU is read at the step (1m by default) in
	// range queries of at most 11,000 points, so 30 days are 43,201
	// points in 4 queries, and as many again for memory peaks of a
	// minute: at most 11 queries for a namespace where a week takes 4.
	// Older history says little: at the default 24h half-life a sample
	// 30 days old weighs 2^-30 of a new one, and Prometheus keeps 15 days
	// by default.
	MaxWindow = 30 * 24 * time.Hour
	// MinHalfLife is an hour, the default memory peak interval: with a
	// shorter half-life the last peak would outweigh all others.
	MinHalfLife = time.Hour
	// MaxHalfLife is MaxWindow: a longer half-life weighs no sample of any
	// window less than half as much as a new one, which is no decay.
	MaxHalfLife = MaxWindow
	// MinPeakInterval and MaxPeakInterval bound the memory peak interval,
	// a whole number of minutes: the peaks of coarser intervals are
	// derived from the finest one of a namespace, so the finest costs as
	// many memory queries as a minute's rates cost CPU queries, and a day
	// still yields a peak a day.
	MinPeakInterval = time.Minute
	MaxPeakInterval = 24 * time.Hour
	// MinPercentile is the median. A request below the median of usage
	// is exceeded most of the time, which the scheduler cannot see: the
	// pods of the node it shares pay for it.
	MinPercentile = 0.5
)

// CheckWindow reports a usage window outside [MinWindow, MaxWindow].
func CheckWindow(d time.Duration) error {
	if d < MinWindow || d > MaxWindow {
		return fmt.Errorf("must be between %s and %s (30 days), got %s", short(MinWindow), short(MaxWindow), short(d))
	}
	return nil
}

// CheckHalfLife reports a decay half-life outside [MinHalfLife,
// MaxHalfLife].
func CheckHalfLife(d time.Duration) error {
	if d < MinHalfLife || d > MaxHalfLife {
		return fmt.Errorf("must be between %s and %s, got %s", short(MinHalfLife), short(MaxHalfLife), short(d))
	}
	return nil
}

// CheckPeakInterval reports a memory peak interval that is not a whole
// number of minutes in [MinPeakInterval, MaxPeakInterval].
func CheckPeakInterval(d time.Duration) error {
	if d < MinPeakInterval || d > MaxPeakInterval || d%time.Minute != 0 {
		return fmt.Errorf("must be a whole number of minutes between %s and %s, got %s", short(MinPeakInterval), short(MaxPeakInterval), short(d))
	}
	return nil
}

// CheckPercentile reports a percentile outside [MinPercentile, 1].
func CheckPercentile(p float64) error {
	if !(p >= MinPercentile && p <= 1) {
		return fmt.Errorf("must be a number in [%g, 1], got %g", MinPercentile, p)
	}
	return nil
}

// short renders a duration without trailing zero units: 24h, not 24h0m0s.
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// ParseExtensions reads raw (nil is allowed) and checks the values of the
// keys it knows against their bounds; the error names the key and what is
// wrong with it.
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
			if !ok {
				return ext, invalid(CodeExtensionsInvalid, msgExtensionInvalid, k, fmt.Sprintf("must be a number in [%g, 1], got %s", MinPercentile, show(v)))
			}
			if err := CheckPercentile(p); err != nil {
				return ext, invalid(CodeExtensionsInvalid, msgExtensionInvalid, k, err.Error())
			}
			switch k {
			case "cpuPercentile":
				ext.CPUPercentile = p
			case "memoryPercentile":
				ext.MemoryPercentile = p
			default:
				ext.Percentile = p
			}
		case "memoryPeakInterval", "halfLife", "window":
			check, field := CheckWindow, &ext.Window
			switch k {
			case "memoryPeakInterval":
				check, field = CheckPeakInterval, &ext.PeakInterval
			case "halfLife":
				check, field = CheckHalfLife, &ext.HalfLife
			}
			d, err := positiveDuration(v)
			if err == nil {
				err = check(d)
			}
			if err != nil {
				return ext, invalid(CodeExtensionsInvalid, msgExtensionInvalid, k, err.Error())
			}
			*field = d
		case "decayHalfLife":
			h, ok := number(v)
			maxHours := float64(MaxHalfLife / time.Hour)
			if !ok || h != math.Trunc(h) || h < float64(MinHalfLife/time.Hour) || h > maxHours {
				return ext, invalid(CodeExtensionsInvalid, msgExtensionInvalid, k,
					fmt.Sprintf("must be a whole number of hours from %d to %d, got %s", MinHalfLife/time.Hour, MaxHalfLife/time.Hour, show(v)))
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
