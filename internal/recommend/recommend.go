package recommend

import (
	"errors"
	"fmt"
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// DefaultPercentile is the usage percentile a recommendation is based on,
// katalyst's (and VPA's) p90.
const DefaultPercentile = 0.9

// ErrNoSamples is returned when there is nothing to compute from.
var ErrNoSamples = errors.New("no usage samples")

// Policy says how to turn samples into a value.
type Policy struct {
	// Percentile of the samples to base the value on, in (0, 1].
	Percentile float64
	// BufferPercent is added on top of the percentile value.
	BufferPercent int32
}

// Evidence is what a reviewer needs to trust a value.
type Evidence struct {
	Samples       int     `json:"samples"`
	Percentile    float64 `json:"percentile"`
	RawValue      float64 `json:"percentileValue"`
	BufferPercent int32   `json:"bufferPercent"`
}

// Recommendation is one resource's recommended value with its evidence.
type Recommendation struct {
	Value    resource.Quantity
	Evidence Evidence
}

// Compute recommends a value for resource name from samples: CPU samples
// are in cores, memory samples in bytes. The value is the policy's
// percentile times (1 + BufferPercent/100), rounded up to a whole millicore
// for CPU and a whole MiB for memory, so that a recommendation never lands
// below what was measured.
func Compute(name corev1.ResourceName, samples []float64, p Policy) (Recommendation, error) {
	if len(samples) == 0 {
		return Recommendation{}, ErrNoSamples
	}
	if p.Percentile <= 0 || p.Percentile > 1 {
		return Recommendation{}, fmt.Errorf("percentile %v out of range (0, 1]", p.Percentile)
	}
	raw := Percentile(samples, p.Percentile)
	buffered := raw * (1 + float64(p.BufferPercent)/100)
	var q resource.Quantity
	switch name {
	case corev1.ResourceCPU:
		q = CPUQuantity(buffered)
	case corev1.ResourceMemory:
		q = MemoryQuantity(buffered)
	default:
		return Recommendation{}, fmt.Errorf("unsupported resource %q", name)
	}
	return Recommendation{
		Value: q,
		Evidence: Evidence{
			Samples:       len(samples),
			Percentile:    p.Percentile,
			RawValue:      raw,
			BufferPercent: p.BufferPercent,
		},
	}, nil
}

// Percentile returns the nearest-rank percentile p of samples: the smallest
// sample such that at least p of all samples are at or below it. samples is
// not modified.
func Percentile(samples []float64, p float64) float64 {
	sorted := append([]float64(nil), samples...)
	sort.Float64s(sorted)
	rank := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(rank, 0)]
}

// cpuSlack absorbs floating-point noise before rounding up, so that
// 0.1*1.3*1000 (130.00000000000003) is 130m, not 131m. It is a nanocore,
// far below anything a measurement can tell apart.
const cpuSlack = 1e-6

// CPUQuantity rounds cores up to whole millicores.
func CPUQuantity(cores float64) resource.Quantity {
	milli := int64(math.Ceil(cores*1000 - cpuSlack))
	return *resource.NewMilliQuantity(max(milli, 1), resource.DecimalSI)
}

// MemoryQuantity rounds bytes up to whole MiB. Rounding to a whole byte
// first drops floating-point noise, as bytes come in whole numbers.
func MemoryQuantity(bytes float64) resource.Quantity {
	const mi = 1 << 20
	mib := int64(math.Ceil(math.Round(bytes) / mi))
	return *resource.NewQuantity(max(mib, 1)*mi, resource.BinarySI)
}
