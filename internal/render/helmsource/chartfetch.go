package helmsource

import (
	"context"
	"errors"
	"sync"

	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helm/chartfetch"
)

// FetchCharts fetches the remote charts of rels at the same time, at
// most ChartFetches at once, and keeps each outcome for fetchChart: a
// release's load then finds its chart, or its chart's error, at once. So
// repositories that never answer cost the run one fetch timeout, not one
// each, and fail only their own releases.
func (a *Sources) FetchCharts(ctx context.Context, rels []*Release) {
	if a.Charts == nil {
		return
	}
	// The survey loads each release as the real load does, up to its
	// chart, which fetchChart notes instead of fetching.
	a.Wanted = map[chartfetch.ChartRef]bool{}
	for _, r := range rels {
		_, _ = a.Load(ctx, r, false)
	}
	wanted := a.Wanted
	a.Wanted = nil

	refs := make([]chartfetch.ChartRef, 0, len(wanted))
	for ref := range wanted {
		refs = append(refs, ref)
	}
	out := make([]FetchedChart, len(refs))
	slots := make(chan struct{}, ChartFetches)
	var wg sync.WaitGroup
	for i, ref := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				out[i].Err = ctx.Err()
				return
			}
			defer func() { <-slots }()
			out[i].Chart, out[i].Err = a.Charts.Fetch(ctx, ref)
		}()
	}
	wg.Wait()
	for i, ref := range refs {
		if ctx.Err() == nil {
			a.Fetched[ref] = out[i]
		}
	}
}

// ChartFetches bounds the remote charts fetched at the same time: enough
// that a few repositories that hang cost the run one fetch timeout
// together, few enough not to flood a registry.
const ChartFetches = 8

// FetchedChart is the outcome of one chart's fetch.
type FetchedChart struct {
	Chart *helm.Chart
	Err   error
}

// ErrChartWanted ends a release's load during FetchCharts' survey, once
// its remote chart is noted.
var ErrChartWanted = errors.New("remote chart noted")
