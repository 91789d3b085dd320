package usage

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// Resolution is how a namespace's CPU history was read: a rate() over
// RateWindow every Step. Scrape is the scrape interval measured in the
// namespace's samples, zero when none was measured (both set, or no
// sample to measure).
type Resolution struct {
	Step, RateWindow, Scrape time.Duration
	// Set says which of Step and RateWindow came from the settings rather
	// than from Scrape.
	StepSet, RateWindowSet bool
}

// String says where the resolution came from, for the evidence, e.g.
// "rate over 2m every 1m, from the 1m scrape interval".
func (r Resolution) String() string {
	if r.Step <= 0 {
		return ""
	}
	s := fmt.Sprintf("rate over %s every %s", model.Duration(r.RateWindow), model.Duration(r.Step))
	switch {
	case r.Scrape > 0 && (!r.StepSet || !r.RateWindowSet):
		s += fmt.Sprintf(", from the %s scrape interval", model.Duration(r.Scrape))
		if r.StepSet || r.RateWindowSet {
			s += " and the settings"
		}
	case r.StepSet && r.RateWindowSet:
		s += ", as set"
	default:
		s += ", the defaults: no recent sample to measure the scrape interval in"
	}
	return s
}

// scrapeProbe is how far back each evaluation of the scrape interval
// looks: ten samples at a minute, forty at 15s.
const scrapeProbe = 10 * time.Minute

// scrapeLooks is how many times over the window the interval is measured:
// a median of several, so that a pod restarting at one of them, or a
// sample lying exactly on the edge of a range, does not decide it.
const scrapeLooks = 8

// scrapeQuery measures the spacing of the CPU counter's samples of the
// containers selector matches: the time between the last sample before a
// range and the last in it, divided by the samples in the range, is their
// mean spacing; its median over the containers is the namespace's.
func scrapeQuery(selector string) string {
	sel := fmt.Sprintf("container_cpu_usage_seconds_total{%s}", selector)
	probe := model.Duration(scrapeProbe)
	return fmt.Sprintf(`quantile(0.5, (timestamp(%s) - timestamp(%s offset %s)) / count_over_time(%s[%s]))`, sel, sel, probe, sel, probe)
}

// scrapeInterval measures the scrape interval of the containers selector
// matches, at scrapeLooks times over the window: zero when none has a
// sample to measure. It is rounded to the second, or to the millisecond
// below a second; a scrape's timestamps jitter by a few milliseconds.
func (r *Reader) scrapeInterval(ctx context.Context, namespace, selector string) (time.Duration, error) {
	end := r.now()
	step := max(r.window/scrapeLooks, time.Minute)
	rng := promv1.Range{Start: end.Add(-time.Duration(scrapeLooks-1) * step), End: end, Step: step}
	var seen []float64
	collect := func(series *model.SampleStream) {
		for _, s := range series.Values {
			if v := float64(s.Value); v > 0 && !math.IsInf(v, 0) {
				seen = append(seen, v)
			}
		}
	}
	err := r.query(ctx, namespace, "scrape interval", scrapeQuery(selector), rng, collect)
	if sizeLimit(err) != "" && len(seen) == 0 {
		// VictoriaMetrics looks back a whole step for timestamp(): at
		// a step of days, more samples than a strict limit allows. One
		// look at the end, a minute's step, reads minutes of them.
		r.noteSplit(ctx, Split{Namespace: namespace, Query: "scrape interval", Limit: sizeLimit(err), By: "time", Pieces: [2]int{1, 0}})
		err = r.query(ctx, namespace, "scrape interval", scrapeQuery(selector), promv1.Range{Start: end, End: end, Step: time.Minute}, collect)
	}
	if err != nil || len(seen) == 0 {
		return 0, err
	}
	slices.Sort(seen)
	median := time.Duration(seen[len(seen)/2] * float64(time.Second))
	if median >= time.Second {
		return median.Round(time.Second), nil
	}
	return max(median.Round(time.Millisecond), time.Millisecond), nil
}

// resolution decides how the CPU history of a namespace is read: the
// step and rate window set, or where zero, from the scrape interval
// measured in the namespace's samples: each stored sample read once
// (a step of one interval) and each interval's own rate (a window of two
// samples). Without a sample to measure, the defaults.
func (r *Reader) resolution(ctx context.Context, namespace, selector string) (Resolution, error) {
	res := Resolution{Step: r.step, RateWindow: r.rateWindow, StepSet: r.step > 0, RateWindowSet: r.rateWindow > 0}
	if res.StepSet && res.RateWindowSet {
		return res, nil
	}
	scrape, err := r.scrapeInterval(ctx, namespace, selector)
	if err != nil {
		return Resolution{}, err
	}
	res.Scrape = scrape
	if scrape <= 0 {
		if !res.StepSet {
			res.Step = DefaultStep
		}
		if !res.RateWindowSet {
			res.RateWindow = max(DefaultRateWindow, res.Step)
		}
		return res, nil
	}
	if !res.StepSet {
		res.Step = scrape
	}
	if !res.RateWindowSet {
		// A window shorter than the step would leave samples unread.
		res.RateWindow = max(2*scrape, res.Step)
	}
	return res, nil
}

// clip keeps the points of rngs that lie within parts: each range cut to
// the grid points of each part, so that a part reads the samples a whole
// read would have at the same times.
func clip(rngs []promv1.Range, parts []Span) []promv1.Range {
	var out []promv1.Range
	for _, p := range parts {
		for _, rng := range rngs {
			from, to := rng.Start, rng.End
			if p.From.After(from) {
				n := (p.From.Sub(from) + rng.Step - 1) / rng.Step
				from = from.Add(n * rng.Step)
			}
			if p.To.Before(to) {
				n := (to.Sub(p.To) + rng.Step - 1) / rng.Step
				to = to.Add(-n * rng.Step)
			}
			if !from.After(to) {
				out = append(out, promv1.Range{Start: from, End: to, Step: rng.Step})
			}
		}
	}
	return out
}
