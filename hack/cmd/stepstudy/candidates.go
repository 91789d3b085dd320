package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// candidate is a way to read the CPU history: the reader's own query at
// a step and rate window or, when over is set, that query with its rate()
// taken every subStep over subRange by a function of Prometheus's, which
// returns one value per step.
type candidate struct {
	step, rate time.Duration
	// over opens the function of the rate()s, e.g. "max_over_time(".
	over string
	// label names the function in the report.
	label string
}

// The range and step of the subqueries: a value per 5 minutes from the
// rates of each of its minutes.
const (
	subRange = 5 * time.Minute
	subStep  = time.Minute
)

// name is how the report names c: step/rate window, or the function of
// the rates at its step.
func (c candidate) name() string {
	if c.over != "" {
		return fmt.Sprintf("%s of %s rates @%s", c.label, short(c.rate), short(c.step))
	}
	if c == auto {
		return "auto"
	}
	return short(c.step) + "/" + short(c.rate)
}

// reference is today's default: a 1m step of rate()s over 5m.
var reference = candidate{step: usage.DefaultStep, rate: usage.DefaultRateWindow}

// auto is the job's default since the step and rate window are measured:
// the reader finds the scrape interval in the samples, and its queries
// (that one included) are counted like any other's.
var auto = candidate{}

// candidatesFor are the ways to read a history scraped at scrape, the
// reference first. rate() needs two scrapes in its window, so the finest
// window is two scrape intervals, and at least a minute.
func candidatesFor(scrape time.Duration) []candidate {
	finest := max(time.Minute, 2*scrape)
	out := []candidate{
		reference,
		auto,
		{step: 2 * time.Minute, rate: 5 * time.Minute},
		{step: 150 * time.Second, rate: 5 * time.Minute},
		{step: 5 * time.Minute, rate: 5 * time.Minute},
		{step: 10 * time.Minute, rate: 10 * time.Minute},
		{step: time.Minute, rate: 2 * time.Minute},
		{step: 2 * time.Minute, rate: 2 * time.Minute},
	}
	if finest == time.Minute {
		out = append(out, candidate{step: time.Minute, rate: time.Minute})
	}
	return append(out,
		candidate{step: subRange, rate: finest, over: "max_over_time(", label: "max"},
		candidate{step: subRange, rate: finest, over: "quantile_over_time(0.9, ", label: "p90"},
	)
}

// short writes d as PromQL does, 2m30s rather than 2m30s0ms.
func short(d time.Duration) string {
	return model.Duration(d).String()
}

// rewrite wraps the rate() of the reader's CPU query q in c's function of
// a subquery; q is left as it is when c has none.
func (c candidate) rewrite(q string) (string, error) {
	if c.over == "" {
		return q, nil
	}
	from := strings.Index(q, "rate("+history.CPUMetric+"{")
	to := strings.LastIndex(q, "}[")
	if from < 0 || to < from {
		return "", fmt.Errorf("the reader's cpu query is not a rate() of %s: %s", history.CPUMetric, q)
	}
	end := strings.Index(q[to:], "])")
	if end < 0 {
		return "", fmt.Errorf("the reader's cpu query has no range: %s", q)
	}
	end += to + len("])")
	return q[:from] + c.over + q[from:end] + "[" + short(subRange) + ":" + short(subStep) + "])" + q[end:], nil
}

// sent is one CPU query the reader sent, as it reached Prometheus.
type sent struct {
	query  string
	rng    promv1.Range
	took   time.Duration
	points int
	// stats is the query, and rng its range, whose statistics say what
	// the sent one scanned: itself, or for a subquery the reader's own
	// query over the subquery's range and step, as Prometheus evaluates
	// it. Prometheus does not count a subquery's samples in its outer
	// function's statistics (prometheus/prometheus#16638).
	stats    string
	statsRng promv1.Range
}

// recorder is the reader's API: the job's own client, with the CPU
// queries rewritten for the candidate, timed and recorded.
type recorder struct {
	client *usage.Client
	c      candidate
	cpu    []sent
}

var (
	_ usage.RangeQuerier  = (*recorder)(nil)
	_ usage.SeriesQuerier = (*recorder)(nil)
)

// QueryRange is never used by the reader, which streams through
// QueryRangeSeries; it is here to be a RangeQuerier.
func (r *recorder) QueryRange(context.Context, string, promv1.Range, ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error) {
	return nil, nil, nil, errors.New("stepstudy: the reader is expected to stream")
}

// QueryRangeSeries sends q, rewritten when it is the CPU query.
func (r *recorder) QueryRangeSeries(ctx context.Context, q string, rng promv1.Range, each func(*model.SampleStream) error) (promv1.Warnings, error) {
	if !strings.Contains(q, history.CPUMetric) {
		return r.client.QueryRangeSeries(ctx, q, rng, each)
	}
	s := sent{rng: rng, stats: q, statsRng: rng}
	if r.c.over != "" {
		s.statsRng = promv1.Range{Start: rng.Start.Add(-subRange), End: rng.End, Step: subStep}
	}
	q, err := r.c.rewrite(q)
	if err != nil {
		return nil, err
	}
	s.query = q
	began := time.Now()
	warnings, err := r.client.QueryRangeSeries(ctx, q, rng, func(series *model.SampleStream) error {
		s.points += len(series.Values)
		return each(series)
	})
	s.took = time.Since(began)
	r.cpu = append(r.cpu, s)
	return warnings, err
}

// scanned asks Prometheus how many stored samples a query loaded: its
// stats query again, with stats=all, whose
// data.stats.samples.totalQueryableSamples counts each stored sample each
// time an evaluation reads it.
func scanned(ctx context.Context, base string, s sent) (int64, error) {
	form := url.Values{
		"query": {s.stats},
		"start": {strconv.FormatFloat(float64(s.statsRng.Start.UnixMilli())/1000, 'f', -1, 64)},
		"end":   {strconv.FormatFloat(float64(s.statsRng.End.UnixMilli())/1000, 'f', -1, 64)},
		"step":  {strconv.FormatFloat(s.statsRng.Step.Seconds(), 'f', -1, 64)},
		"stats": {"all"},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+"/api/v1/query_range", strings.NewReader(form.Encode()))
	if err != nil {
		return 0, fmt.Errorf("asking for query statistics: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("asking for query statistics: %w", err)
	}
	defer resp.Body.Close()
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Stats *struct {
				Samples *struct {
					TotalQueryableSamples int64 `json:"totalQueryableSamples"`
				} `json:"samples"`
			} `json:"stats"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return 0, fmt.Errorf("asking for query statistics: %s: %w", resp.Status, err)
	}
	if answer.Status != "success" {
		return 0, fmt.Errorf("asking for query statistics: %s: %s", resp.Status, answer.Error)
	}
	if answer.Data.Stats == nil || answer.Data.Stats.Samples == nil {
		return 0, errors.New("asking for query statistics: the answer has no data.stats.samples")
	}
	return answer.Data.Stats.Samples.TotalQueryableSamples, nil
}
