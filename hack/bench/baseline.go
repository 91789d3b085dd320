package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"
)

// BaselineParallel is how many of the baseline's queries are in flight.
const BaselineParallel = 8

// maxPoints is Prometheus's limit on the points of one series in a range
// query's answer.
const maxPoints = 11000

// BaselineResult is what reading the fleet's history the katalyst way
// cost.
type BaselineResult struct {
	Wall    time.Duration
	Queries int
	Bytes   int64
	Samples int64
	// Points is how many points the answers held.
	Points int64
}

// baselineQuery is one query of the baseline.
type baselineQuery struct {
	query      string
	start, end time.Time
}

// Baseline reads the fleet's history as katalyst's resource-recommend
// controller does, its Prometheus data source running one query per task:
// one range query per ResourceRecommend, container and resource, at a
// 1-minute step over the window ending at end, split at maxPoints points,
// BaselineParallel at a time, each answer decoded whole as Prometheus's
// client library does. Its CPU query takes rate() over rateWindow, the
// job's, where katalyst's [30s] finds no two samples of 1-minute data. The
// queries go through base (the proxy), with the statistics asked for.
func Baseline(ctx context.Context, base string, f Fleet, end time.Time, window, rateWindow time.Duration) (BaselineResult, error) {
	queries := baselineQueries(f, end, window, rateWindow)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan baselineQuery)
	var mu sync.Mutex
	res := BaselineResult{}
	var firstErr error
	began := time.Now()
	var wg sync.WaitGroup
	for range BaselineParallel {
		wg.Go(func() {
			for q := range work {
				got, err := baselineOne(ctx, base, q)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
					cancel()
				}
				res.Queries++
				res.Bytes += got.Bytes
				res.Samples += got.Samples
				res.Points += got.Points
				mu.Unlock()
			}
		})
	}
	for _, q := range queries {
		select {
		case work <- q:
			continue
		case <-ctx.Done():
		}
		break
	}
	close(work)
	wg.Wait()
	res.Wall = time.Since(began)
	if firstErr != nil {
		return res, firstErr
	}
	return res, ctx.Err()
}

// baselineQueries returns the baseline's queries: per workload, container
// and resource, katalyst's CPU or memory query over each range.
func baselineQueries(f Fleet, end time.Time, window, rateWindow time.Duration) []baselineQuery {
	var out []baselineQuery
	for _, w := range f.Workloads {
		pods := katalystPodRegex(w)
		for _, c := range w.Containers {
			sel := fmt.Sprintf(`container!="POD",namespace=%q,pod=~%q,container=%q`, w.Namespace, pods, c.Name)
			for _, q := range []string{
				fmt.Sprintf(`rate(container_cpu_usage_seconds_total{%s}[%s])`, sel, model.Duration(rateWindow)),
				fmt.Sprintf(`container_memory_working_set_bytes{%s}`, sel),
			} {
				for _, r := range splitRange(end.Add(-window), end, time.Minute) {
					out = append(out, baselineQuery{query: q, start: r.Start, end: r.End})
				}
			}
		}
	}
	return out
}

// katalystPodRegex is katalyst's pod regular expression of a workload:
// WorkloadSuffixRuleForDeployment for a Deployment, <name>-.* otherwise.
func katalystPodRegex(w Workload) string {
	if w.Kind == KindDeployment {
		return "^" + w.Name + "-[a-z0-9]+-[a-z0-9]{5}$"
	}
	return "^" + w.Name + "-.*"
}

// splitRange splits [start, end] into ranges of at most maxPoints points
// at step.
func splitRange(start, end time.Time, step time.Duration) []Span {
	var out []Span
	chunk := time.Duration(maxPoints-1) * step
	for from := start; !from.After(end); from = from.Add(chunk + step) {
		out = append(out, Span{Start: from, End: earliest(from.Add(chunk), end)})
	}
	return out
}

// baselineOne sends one query and decodes its matrix.
func baselineOne(ctx context.Context, base string, q baselineQuery) (BaselineResult, error) {
	form := url.Values{
		"query": {q.query},
		"start": {formatTime(q.start)},
		"end":   {formatTime(q.end)},
		"step":  {"60"},
		"stats": {statsParam},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/query_range", strings.NewReader(form.Encode()))
	if err != nil {
		return BaselineResult{}, fmt.Errorf("baseline query: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept-Encoding", "gzip")
	rep, body, err := send(req, Request{})
	if err != nil {
		return BaselineResult{}, fmt.Errorf("baseline query: %w", err)
	}
	var answer struct {
		Data struct {
			Result model.Matrix `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return BaselineResult{}, fmt.Errorf("baseline query %s: %w", strconv.Quote(q.query), err)
	}
	scanned, err := scannedSamples(body)
	if err != nil {
		return BaselineResult{}, fmt.Errorf("baseline query: %w", err)
	}
	var points int64
	for _, s := range answer.Data.Result {
		points += int64(len(s.Values))
	}
	return BaselineResult{Bytes: rep.Bytes, Samples: scanned, Points: points}, nil
}
