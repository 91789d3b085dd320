package recommend

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// step is a rounding granularity for values below upTo.
type step struct {
	upTo float64
	size int64
	name string
}

// Friendly steps spare reviewers numbers like 1487m or 3583Mi while adding
// at most 5% to the computed value (below 20m or 20Mi the smallest unit
// may add more): CPU in millicores, memory in bytes. The last step has no
// upper bound.
var (
	cpuSteps = []step{
		{upTo: 100, size: 1, name: "1m"},
		{upTo: 1000, size: 5, name: "5m"},
		{upTo: math.Inf(1), size: 50, name: "50m"},
	}
	memorySteps = []step{
		{upTo: 100 << 20, size: 1 << 20, name: "1Mi"},
		{upTo: 1 << 30, size: 4 << 20, name: "4Mi"},
		{upTo: math.Inf(1), size: 32 << 20, name: "32Mi"},
	}
)

// roundingSlack absorbs floating-point noise before rounding up, so that
// 0.1 x 1.3 cores is 130m, not 131m: a nanocore, or a thousandth of a byte.
const roundingSlack = 1e-6

// Round rounds value (cores or bytes) up to its friendly step, never to
// zero, and names the step.
func Round(name corev1.ResourceName, value float64) (resource.Quantity, string) {
	steps, unit, format := memorySteps, 1.0, resource.BinarySI
	if name == corev1.ResourceCPU {
		steps, unit, format = cpuSteps, 1000, resource.DecimalSI
	}
	// Bounded so that the step count fits an int64; NaN becomes 0.
	v := math.Min(math.Max(value*unit-roundingSlack, 0), 1<<60)
	s := steps[len(steps)-1]
	for _, c := range steps {
		if v < c.upTo {
			s = c
			break
		}
	}
	n := max(int64(math.Ceil(v/float64(s.size))), 1) * s.size
	if name == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(n, format), s.name
	}
	return *resource.NewQuantity(n, format), s.name
}
