package testbed

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

var (
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelNameRE  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// Series is one time series of history to load into Prometheus.
type Series struct {
	// Name is the metric name. A name ending in _total is written as a
	// counter, any other as a gauge; Prometheus stores both the same way.
	Name string
	// Labels are the series' labels, without __name__.
	Labels map[string]string
	// Samples are the series' values; their order does not matter.
	Samples []Sample
}

// Sample is one value of a series. Times are kept to the millisecond.
type Sample struct {
	Time  time.Time
	Value float64
}

// family is a metric family in the order WriteOpenMetrics writes it.
type family struct {
	name   string
	typ    string
	series []*series
}

// series is a Series with validated labels and sorted samples.
type series struct {
	name    string
	labels  string
	samples []Sample
}

// WriteOpenMetrics writes series as an OpenMetrics text exposition with
// explicit timestamps, as promtool tsdb create-blocks-from openmetrics
// expects: samples grouped per metric family, each family announced by a
// TYPE line, samples of a series in time order (promtool silently drops
// out-of-order samples), timestamps in seconds, and a final "# EOF".
// Series with the same name and labels are merged; two samples of a series
// at the same millisecond are an error.
func WriteOpenMetrics(w io.Writer, in []Series) error {
	families, err := groupFamilies(in)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	for _, f := range families {
		fmt.Fprintf(bw, "# TYPE %s %s\n", f.name, f.typ)
		for _, s := range f.series {
			for _, smp := range s.samples {
				fmt.Fprintf(bw, "%s%s %s %s\n", s.name, s.labels, formatValue(smp.Value), formatTimestamp(smp.Time))
			}
		}
	}
	bw.WriteString("# EOF\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write openmetrics: %w", err)
	}
	return nil
}

// groupFamilies validates the series and groups them into families, in the
// order the families first appear.
func groupFamilies(in []Series) ([]*family, error) {
	var families []*family
	byFamily := map[string]*family{}
	bySeries := map[string]*series{}
	for _, s := range in {
		if len(s.Samples) == 0 {
			continue
		}
		if !metricNameRE.MatchString(s.Name) {
			return nil, fmt.Errorf("invalid metric name %q", s.Name)
		}
		labels, err := formatLabels(s.Labels)
		if err != nil {
			return nil, fmt.Errorf("series %s: %w", s.Name, err)
		}
		name, typ := familyOf(s.Name)
		f := byFamily[name]
		if f == nil {
			f = &family{name: name, typ: typ}
			byFamily[name] = f
			families = append(families, f)
		} else if f.typ != typ {
			return nil, fmt.Errorf("series %s: metric family %s is both a %s and a %s", s.Name, name, f.typ, typ)
		}
		key := s.Name + labels
		ser := bySeries[key]
		if ser == nil {
			ser = &series{name: s.Name, labels: labels}
			bySeries[key] = ser
			f.series = append(f.series, ser)
		}
		for _, smp := range s.Samples {
			if smp.Time.IsZero() {
				return nil, fmt.Errorf("series %s%s: sample without time", s.Name, labels)
			}
			ser.samples = append(ser.samples, smp)
		}
	}
	for _, f := range families {
		for _, s := range f.series {
			if err := sortSamples(s); err != nil {
				return nil, err
			}
		}
	}
	return families, nil
}

// familyOf returns the metric family and type of a metric name.
func familyOf(name string) (string, string) {
	if base, ok := strings.CutSuffix(name, "_total"); ok && base != "" {
		return base, "counter"
	}
	return name, "gauge"
}

// sortSamples sorts the samples of s by time and rejects duplicates.
func sortSamples(s *series) error {
	slices.SortStableFunc(s.samples, func(a, b Sample) int {
		return cmp.Compare(a.Time.UnixMilli(), b.Time.UnixMilli())
	})
	for i := 1; i < len(s.samples); i++ {
		if s.samples[i].Time.UnixMilli() == s.samples[i-1].Time.UnixMilli() {
			return fmt.Errorf("series %s%s: two samples at %s", s.name, s.labels, s.samples[i].Time.UTC().Format(time.RFC3339Nano))
		}
	}
	return nil
}

// formatLabels returns the label set in exposition syntax, sorted by name,
// or "" for no labels.
func formatLabels(labels map[string]string) (string, error) {
	if len(labels) == 0 {
		return "", nil
	}
	names := make([]string, 0, len(labels))
	for name, value := range labels {
		if !labelNameRE.MatchString(name) || strings.HasPrefix(name, "__") {
			return "", fmt.Errorf("invalid label name %q", name)
		}
		if !utf8.ValidString(value) {
			return "", fmt.Errorf("label %s: value is not valid UTF-8", name)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteByte('{')
	for i, name := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(name)
		b.WriteString(`="`)
		b.WriteString(labelValueEscaper.Replace(labels[name]))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String(), nil
}

var labelValueEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// formatValue formats a sample value; NaN and infinities come out as NaN,
// +Inf and -Inf as OpenMetrics wants them.
func formatValue(v float64) string {
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// formatTimestamp formats t as seconds since the epoch with at most three
// decimals, computed from integer milliseconds so that no float rounding
// can move a sample.
func formatTimestamp(t time.Time) string {
	ms, sign := t.UnixMilli(), ""
	if ms < 0 {
		ms, sign = -ms, "-"
	}
	sec, frac := ms/1000, ms%1000
	if frac == 0 {
		return sign + strconv.FormatInt(sec, 10)
	}
	return fmt.Sprintf("%s%d.%03d", sign, sec, frac)
}

// countSamples returns the number of samples in series.
func countSamples(series []Series) int {
	n := 0
	for _, s := range series {
		n += len(s.Samples)
	}
	return n
}
