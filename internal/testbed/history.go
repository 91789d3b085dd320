package testbed

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
)

// Series is one time series of history to load into Prometheus.
type Series struct {
	// Name is the metric name.
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

// historySpan bounds the time between the oldest and the newest sample of
// one WriteBlock call. The block writer's head takes samples down to half
// its range below the newest one it has, and each series starts again at
// its beginning, so the range is twice this span.
const historySpan = 400 * 24 * time.Hour

// WriteBlock writes series as one TSDB block into dataDir, where a
// Prometheus started afterwards on dataDir serves it (a running one only
// after a restart). It is the test bed's one way to load history: the
// series are appended as they come, one at a time, so that a
// cluster-sized week need not be held in memory. A series' samples may
// come in any order; two series with the same name and labels must not
// overlap in time. No samples is no error.
func WriteBlock(ctx context.Context, dataDir string, series iter.Seq[Series]) (err error) {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	w, err := tsdb.NewBlockWriter(slog.New(slog.DiscardHandler), dataDir, 2*historySpan.Milliseconds())
	if err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	defer func() {
		// Close releases the head; Flush, before, wrote the block.
		if cerr := w.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("write history: %w", cerr)
		}
	}()
	samples := 0
	var first, last int64
	for s := range series {
		if len(s.Samples) == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("write history: %w", err)
		}
		lset, err := seriesLabels(s)
		if err != nil {
			return fmt.Errorf("write history: %w", err)
		}
		sorted := slices.SortedFunc(slices.Values(s.Samples), func(a, b Sample) int {
			return cmp.Compare(a.Time.UnixMilli(), b.Time.UnixMilli())
		})
		if samples == 0 {
			first, last = sorted[0].Time.UnixMilli(), sorted[0].Time.UnixMilli()
		}
		first, last = min(first, sorted[0].Time.UnixMilli()), max(last, sorted[len(sorted)-1].Time.UnixMilli())
		if time.Duration(last-first)*time.Millisecond > historySpan {
			return fmt.Errorf("write history: samples span more than %s", historySpan)
		}
		app := w.Appender(ctx)
		var ref storage.SeriesRef
		for _, smp := range sorted {
			if smp.Time.IsZero() {
				_ = app.Rollback()
				return fmt.Errorf("write history: series %s: sample without time", lset)
			}
			if ref, err = app.Append(ref, lset, smp.Time.UnixMilli(), smp.Value); err != nil {
				_ = app.Rollback()
				return fmt.Errorf("write history: series %s at %s: %w", lset, smp.Time.UTC().Format(time.RFC3339Nano), err)
			}
		}
		if err := app.Commit(); err != nil {
			return fmt.Errorf("write history: series %s: %w", lset, err)
		}
		samples += len(sorted)
	}
	if samples == 0 {
		return nil
	}
	if _, err := w.Flush(ctx); err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	return nil
}

var (
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelNameRE  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// seriesLabels returns the label set of s, __name__ included.
func seriesLabels(s Series) (labels.Labels, error) {
	if !metricNameRE.MatchString(s.Name) {
		return labels.EmptyLabels(), fmt.Errorf("invalid metric name %q", s.Name)
	}
	b := labels.NewScratchBuilder(len(s.Labels) + 1)
	b.Add(model.MetricNameLabel, s.Name)
	for name, value := range s.Labels {
		if !labelNameRE.MatchString(name) || strings.HasPrefix(name, "__") {
			return labels.EmptyLabels(), fmt.Errorf("series %s: invalid label name %q", s.Name, name)
		}
		b.Add(name, value)
	}
	b.Sort()
	return b.Labels(), nil
}

// ReadOpenMetrics parses an OpenMetrics text exposition whose samples all
// carry timestamps, as promtool tsdb dump-openmetrics writes it, into
// series, in the order they first appear.
func ReadOpenMetrics(r io.Reader) ([]Series, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read openmetrics: %w", err)
	}
	p := textparse.NewOpenMetricsParser(data, labels.NewSymbolTable())
	var out []Series
	index := map[string]int{}
	for {
		entry, err := p.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read openmetrics: %w", err)
		}
		switch entry {
		case textparse.EntrySeries:
		case textparse.EntryHistogram:
			return nil, errors.New("read openmetrics: native histograms are not supported")
		default:
			continue
		}
		_, ts, v := p.Series()
		var lset labels.Labels
		p.Labels(&lset)
		if ts == nil {
			return nil, fmt.Errorf("read openmetrics: %s: sample without timestamp", lset)
		}
		key := lset.String()
		i, ok := index[key]
		if !ok {
			s := Series{Name: lset.Get(model.MetricNameLabel), Labels: map[string]string{}}
			lset.Range(func(l labels.Label) {
				if l.Name != model.MetricNameLabel {
					s.Labels[l.Name] = l.Value
				}
			})
			i = len(out)
			index[key] = i
			out = append(out, s)
		}
		out[i].Samples = append(out[i].Samples, Sample{Time: time.UnixMilli(*ts), Value: v})
	}
}
