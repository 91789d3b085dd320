package bench

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// RunScales benchmarks each scale of opts in order and calls done with
// each result as it is complete. Without Options.Warm, that is Run, one
// scale after the other. With it, the warm runs interleave: every scale's
// usage history is written first; a scale's bed stays up, idle, after its
// cold measurement, while the next scales are measured cold; and each
// warm run starts when it is due (Options.Warm after its cold run ended)
// or, when another scale is measuring a step then, right after that step:
// cold 5,000, cold 20,000 while 5,000's hour passes, warm 5,000, warm
// 20,000. One run at a time, whatever the scale, so that each run's
// figures are its own. The beds of all the scales whose warm run is
// pending are up at once.
func RunScales(ctx context.Context, opts []Options, done func(*Result) error) error {
	warm := slices.ContainsFunc(opts, func(o Options) bool { return o.Warm > 0 })
	if !warm {
		for _, o := range opts {
			res, err := Run(ctx, o)
			if err != nil {
				return fmt.Errorf("scale %d: %w", o.N, err)
			}
			if err := done(res); err != nil {
				return err
			}
		}
		return nil
	}
	// The history is written before any run, so that writing a large
	// scale's does not hold up a smaller scale's warm run.
	for _, o := range opts {
		o, err := o.withDefaults()
		if err != nil {
			return err
		}
		if _, err := EnsureData(ctx, o.CacheDir, NewFleet(o.N), time.Now(), o.Data, o.Logf); err != nil {
			return fmt.Errorf("scale %d: %w", o.N, err)
		}
	}
	return runScales(ctx, opts, func(ctx context.Context, o Options) (warmable, error) {
		s, err := Start(ctx, o)
		if s == nil {
			return nil, err
		}
		return s, err
	}, done)
}

// warmable is a scale measured cold, whose bed is up: Scale.
type warmable interface {
	Result() *Result
	WarmAt() time.Time
	Warm(ctx context.Context) error
	Close()
}

// runScales orders the scales' cold and warm runs as RunScales says,
// starting each scale with start.
func runScales(ctx context.Context, opts []Options, start func(context.Context, Options) (warmable, error), done func(*Result) error) error {
	var pending []warmable
	defer func() {
		for _, s := range pending {
			s.Close()
		}
	}()
	// warmDue runs the pending warm runs due by now, the earliest first;
	// with wait, it waits for each of them, until none is pending.
	warmDue := func(ctx context.Context, wait bool) error {
		for len(pending) > 0 {
			slices.SortStableFunc(pending, func(a, b warmable) int { return a.WarmAt().Compare(b.WarmAt()) })
			s := pending[0]
			if !wait && time.Now().Before(s.WarmAt()) {
				return nil
			}
			pending = pending[1:]
			err := s.Warm(ctx)
			s.Close()
			if err != nil {
				return fmt.Errorf("scale %d, warm: %w", s.Result().N, err)
			}
			if err := done(s.Result()); err != nil {
				return err
			}
		}
		return nil
	}
	for _, o := range opts {
		if err := warmDue(ctx, false); err != nil {
			return err
		}
		o.Between = func(ctx context.Context) error { return warmDue(ctx, false) }
		s, err := start(ctx, o)
		if err != nil {
			if s != nil {
				s.Close()
			}
			return fmt.Errorf("scale %d: %w", o.N, err)
		}
		if o.Warm <= 0 {
			s.Close()
			if err := done(s.Result()); err != nil {
				return err
			}
			continue
		}
		logfOf(o)("scale N = %d measured cold; its bed stays up until its warm run at %s", o.N, s.WarmAt().Format(time.TimeOnly))
		pending = append(pending, s)
	}
	return warmDue(ctx, true)
}

// logfOf returns o.Logf, or a function that logs nothing.
func logfOf(o Options) func(string, ...any) {
	if o.Logf == nil {
		return func(string, ...any) {}
	}
	return o.Logf
}
