package helm

import (
	"context"
	"fmt"
	"math"

	"helm.sh/helm/v4/pkg/chart/common/util"
)

// UtilizationTarget names an averageUtilization of a HorizontalPodAutoscaler
// a release renders: that of metric Index of HPA's spec.metrics.
type UtilizationTarget struct {
	HPA   string
	Index int
}

// UtilizationKey finds, by rendering, the values key that sets target's
// averageUtilization, as Keys finds those of a container's requests: the
// keys the templates read that hold the rendered percentage now are
// probed, and the one whose probe comes out there sets it. It wraps
// ErrNoKey when none does, as when the template writes a number of its
// own.
func (e Engine) UtilizationKey(ctx context.Context, r Release, target UtilizationTarget) (Path, error) {
	ch, err := releaseChart(r)
	if err != nil {
		return nil, err
	}
	objects, err := e.render(ctx, r, ch, r.Values, asInstalled)
	if err != nil {
		return nil, err
	}
	current, ok := renderedUtilization(objects, r.Namespace, target)
	if !ok {
		return nil, fmt.Errorf("%w: HorizontalPodAutoscaler %s renders no averageUtilization for metric %d", ErrNoKey, target.HPA, target.Index)
	}
	coalesced, err := util.CoalesceValues(ch, deepCopyMap(r.Values))
	if err != nil {
		return nil, err
	}
	var candidates []Path
	for _, p := range templateReads(r.Chart.chart) {
		if v, state := lookup(coalesced, p); state == present && sameNumber(v, current) {
			candidates = append(candidates, p)
		}
	}
	// One render with every candidate's probe; when a template refuses
	// them together, one render per candidate.
	groups := [][]Path{candidates}
	if len(candidates) > 1 {
		for _, p := range candidates {
			groups = append(groups, []Path{p})
		}
	}
	for i, group := range groups {
		values, ps := scalarProbeValues(coalesced, group)
		probed, err := e.render(ctx, r, ch, values, asInstalled)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			continue
		}
		if v, ok := renderedUtilization(probed, r.Namespace, target); ok {
			if key, ok := ps.key(v); ok {
				return key, nil
			}
		}
		if i == 0 {
			break // all rendered together: none of them is the key
		}
	}
	return nil, fmt.Errorf("%w: the averageUtilization %v of HorizontalPodAutoscaler %s comes from none of the chart's values", ErrNoKey, current, target.HPA)
}

// renderedUtilization returns the averageUtilization of target among
// objects.
func renderedUtilization(objects []Object, namespace string, target UtilizationTarget) (any, bool) {
	for _, o := range installed(objects) {
		if o.Kind != "HorizontalPodAutoscaler" || o.Name != target.HPA || o.Namespace != "" && o.Namespace != namespace {
			continue
		}
		metrics, _ := dig(o.Body, "spec", "metrics").([]any)
		if target.Index < 0 || target.Index >= len(metrics) {
			return nil, false
		}
		metric, _ := metrics[target.Index].(map[string]any)
		for _, field := range []string{"resource", "containerResource"} {
			if v := dig(metric, field, "target", "averageUtilization"); v != nil {
				return v, true
			}
		}
	}
	return nil, false
}

// dig returns the value at keys of nested mappings, nil when absent.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// sameNumber reports whether a value of the values is the number a
// render wrote.
func sameNumber(v, rendered any) bool {
	a, okA := number(v)
	b, okB := number(rendered)
	return okA && okB && a == b
}

// number is a whole number of the values or of a render, or its text.
func number(v any) (float64, bool) {
	switch t := v.(type) {
	case int:
		return float64(t), true
	case int64:
		return float64(t), true
	case float64:
		return t, t == math.Trunc(t)
	case string:
		var f float64
		if _, err := fmt.Sscan(t, &f); err == nil && f == math.Trunc(f) {
			return f, true
		}
	}
	return 0, false
}

// removeUtilization drops the averageUtilization a proof expects to change
// from an HPA's body, before and after, and reports whether after holds
// the expected percentage.
func removeUtilization(after, before map[string]any, index int, percent int32) bool {
	got := false
	for i, body := range []map[string]any{after, before} {
		metrics, _ := dig(body, "spec", "metrics").([]any)
		if index >= len(metrics) {
			continue
		}
		metric, _ := metrics[index].(map[string]any)
		for _, field := range []string{"resource", "containerResource"} {
			target, ok := dig(metric, field, "target").(map[string]any)
			if !ok {
				continue
			}
			if i == 0 {
				n, ok := number(target["averageUtilization"])
				got = got || ok && n == float64(percent)
			}
			delete(target, "averageUtilization")
		}
	}
	return got
}
