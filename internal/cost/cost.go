// Package cost turns an item's request changes into what they do to the
// cluster: the change per replica times the target's replicas, in cores
// and GiB, and its price per month. It reads nothing: collect and usage
// say how many replicas, the settings and the ResourceRecommend's
// annotations what a core-hour and a GiB-hour cost.
package cost

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// OpenCost's default on-demand prices (configs/default.json, "based on
// GCP us-central1"), in US dollars per hour: its CPU per core and its RAM
// per GiB.
const (
	DefaultCPUCoreHour   = 0.031611
	DefaultMemoryGiBHour = 0.004237
	DefaultCurrency      = "USD"
)

// Annotations by which a ResourceRecommend sets its own prices, for a
// team on other nodes.
const (
	AnnotationPriceCPUCoreHour   = "recommend-job.io/price-cpu-core-hour"
	AnnotationPriceMemoryGiBHour = "recommend-job.io/price-memory-gib-hour"
)

// MaxPrice bounds a price per hour: far above any machine's core or GiB,
// low enough that no sum of a fleet's figures loses its cents.
const MaxPrice = 1000

// priceRE is a plain decimal: no sign, exponent, hex, or Inf.
var priceRE = regexp.MustCompile(`^[0-9]{1,4}(\.[0-9]{1,9})?$`)

// ParsePrice reads a price per hour: a plain decimal above 0 and at most
// MaxPrice, e.g. "0.031611".
func ParsePrice(s string) (float64, error) {
	if !priceRE.MatchString(s) {
		return 0, fmt.Errorf("%q is not a decimal such as 0.0316", cut(s))
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	if v <= 0 || v > MaxPrice {
		return 0, fmt.Errorf("%s is not above 0 and at most %d", s, MaxPrice)
	}
	return v, nil
}

// cut shortens an annotation's value for a message: it is the tenant's.
func cut(s string) string {
	const most = 32
	if len(s) > most {
		return s[:most] + "..."
	}
	return s
}

// PricesFor are the prices of a ResourceRecommend with annotations: the
// run's, with those its annotations set in their place. When one is
// malformed, none is taken, and problem says why; the run's prices are
// used then.
func PricesFor(annotations map[string]string, run plan.Prices) (prices plan.Prices, problem string) {
	prices = run
	prices.Source = "settings"
	own := prices
	set := false
	for _, a := range []struct {
		key string
		to  *float64
	}{{AnnotationPriceCPUCoreHour, &own.CPUCoreHour}, {AnnotationPriceMemoryGiBHour, &own.MemoryGiBHour}} {
		value, ok := annotations[a.key]
		if !ok {
			continue
		}
		v, err := ParsePrice(value)
		if err != nil {
			return prices, fmt.Sprintf("annotation %s: %v; the run's prices are used", a.key, err)
		}
		*a.to, set = v, true
	}
	if set {
		own.Source = "annotation"
		return own, ""
	}
	return prices, ""
}

// Replicas is what says how many pods a target runs.
type Replicas struct {
	// Spec is the live object's replica count; nil when it has none.
	Spec *int32
	// Scaled says an HPA sets the replicas; HPACurrent is its
	// status.currentReplicas, nil before it has one.
	Scaled     bool
	HPACurrent *int32
	// Average is the replica count averaged over Window from
	// kube-state-metrics, when HasAverage.
	Average    float64
	HasAverage bool
	Window     time.Duration
}

// Count is the number of replicas the figures are of, and where it came
// from: an HPA's target its average over the window (to a tenth, so that
// the figures do not move with every sample), else the HPA's current
// count; any other the object's own count, else one.
func (r Replicas) Count() (float64, string) {
	switch {
	case r.Scaled && r.HasAverage:
		return math.Round(r.Average*10) / 10, "average over " + days(r.Window) + ", kube-state-metrics"
	case r.Scaled && r.HPACurrent != nil:
		return float64(*r.HPACurrent), "HPA current, no kube-state-metrics series"
	case r.Spec != nil:
		return float64(*r.Spec), "spec"
	}
	return 1, "assumed, the target states no replica count"
}

// days shows a window as the settings write it: 7d, 36h.
func days(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	}
	return d.String()
}

// Counted reports whether r is a request the item writes, which its cost
// counts: changed, recommended, not a limit alone, not held back.
func Counted(r plan.Resource) bool {
	if !r.Changed || r.Recommended == nil || r.LimitsOnly || r.HeldBack {
		return false
	}
	if ev := r.Evidence; ev != nil && (ev.HeldBack != "" || ev.HPA != "") {
		return false
	}
	return r.Resource == corev1.ResourceCPU || r.Resource == corev1.ResourceMemory
}

// gib is a GiB in bytes.
const gib = 1 << 30

// Of is the cost of it's changes at count replicas (from source) and
// prices: per resource, (proposed - current request) x replicas, a
// request not set counting as the limit, or zero without one; money is that times the price per
// hour times plan.HoursPerMonth. Values are float64 from the quantities,
// never rounded: only what shows them rounds.
func Of(it *plan.Item, count float64, source string, prices plan.Prices) *plan.Cost {
	c := &plan.Cost{Replicas: count, ReplicasSource: source, Prices: prices}
	for _, ctr := range it.Containers {
		var cc plan.ContainerCost
		counted := false
		for _, r := range ctr.Resources {
			if !Counted(r) {
				continue
			}
			counted = true
			var before float64
			if held := r.HeldRequest(); held != nil {
				before = held.AsApproximateFloat64()
			}
			change := (r.Recommended.AsApproximateFloat64() - before) * count
			var money float64
			if r.Resource == corev1.ResourceCPU {
				money = change * prices.CPUCoreHour * plan.HoursPerMonth
				c.CPUCores.Add(change)
				cc.CPUCores += change
			} else {
				change /= gib
				money = change * prices.MemoryGiBHour * plan.HoursPerMonth
				c.MemoryGiB.Add(change)
				cc.MemoryGiB += change
			}
			c.Monthly.Add(money)
			cc.Monthly += money
		}
		if counted {
			cc.Name = ctr.Name
			c.Containers = append(c.Containers, cc)
		}
	}
	saturate(c)
	return c
}

// saturate caps c's figures at ±plan.MaxFigure and names in c.Beyond
// those that were beyond it, or not a number (an infinite change less an
// infinite one): a tenant's minAllowed of 1e15 over two billion replicas
// must show as beyond the bound, not as whatever its cents wrap to.
func saturate(c *plan.Cost) {
	kinds := []struct {
		name  string
		delta *plan.Delta
		of    func(*plan.ContainerCost) *float64
	}{
		{"cpu cores", &c.CPUCores, func(cc *plan.ContainerCost) *float64 { return &cc.CPUCores }},
		{"memory GiB", &c.MemoryGiB, func(cc *plan.ContainerCost) *float64 { return &cc.MemoryGiB }},
		{"money per month", &c.Monthly, func(cc *plan.ContainerCost) *float64 { return &cc.Monthly }},
	}
	figures := func(k int) []*float64 {
		out := []*float64{&kinds[k].delta.Net, &kinds[k].delta.Raised, &kinds[k].delta.Cut}
		for i := range c.Containers {
			out = append(out, kinds[k].of(&c.Containers[i]))
		}
		return out
	}
	var beyond []string
	for k := range kinds {
		if slices.ContainsFunc(figures(k), func(v *float64) bool { return capped(*v) != *v }) {
			beyond = append(beyond, kinds[k].name)
		}
	}
	if len(beyond) == 0 {
		return
	}
	c.Beyond = strings.Join(beyond, ", ")
	// Every figure, not only those beyond: a cost some of whose figures
	// are capped is no sum to add to another's.
	for k := range kinds {
		for _, v := range figures(k) {
			*v = capped(*v)
		}
	}
}

// capped is v within ±plan.MaxFigure; not a number is 0.
func capped(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return math.Max(-plan.MaxFigure, math.Min(v, plan.MaxFigure))
}
