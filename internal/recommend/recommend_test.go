package recommend

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestPercentile(t *testing.T) {
	tests := []struct {
		name    string
		samples []float64
		p       float64
		want    float64
	}{
		// 10 samples, p90: rank ceil(0.9*10) = 9, the 9th smallest.
		{name: "ten samples", samples: []float64{10, 1, 9, 2, 8, 3, 7, 4, 6, 5}, p: 0.9, want: 9},
		// 11 samples, p90: rank ceil(9.9) = 10, the 10th smallest.
		{name: "eleven samples", samples: []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, p: 0.9, want: 10},
		{name: "one sample", samples: []float64{42}, p: 0.9, want: 42},
		{name: "max", samples: []float64{3, 1, 2}, p: 1, want: 3},
		// p50 of 4: rank ceil(2) = 2, the 2nd smallest.
		{name: "median of four", samples: []float64{4, 3, 2, 1}, p: 0.5, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.samples...)
			if got := Percentile(tt.samples, tt.p); got != tt.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tt.samples, tt.p, got, tt.want)
			}
			for i := range in {
				if in[i] != tt.samples[i] {
					t.Fatalf("Percentile modified its input: %v, was %v", tt.samples, in)
				}
			}
		})
	}
}

func TestCompute(t *testing.T) {
	// 100 CPU samples 0.01, 0.02, ... 1.00 cores: p90 is 0.90 cores.
	ramp := make([]float64, 100)
	for i := range ramp {
		ramp[i] = float64(i+1) / 100
	}
	tests := []struct {
		name     string
		resource corev1.ResourceName
		samples  []float64
		policy   Policy
		want     string
		wantRaw  float64
	}{
		// 0.90 * 1.30 = 1.17 cores.
		{name: "cpu ramp", resource: corev1.ResourceCPU, samples: ramp, policy: Policy{Percentile: 0.9, BufferPercent: 30}, want: "1170m", wantRaw: 0.9},
		// 0.1 * 1.3 = 0.13 exactly, despite float noise.
		{name: "cpu constant", resource: corev1.ResourceCPU, samples: []float64{0.1, 0.1, 0.1}, policy: Policy{Percentile: 0.9, BufferPercent: 30}, want: "130m", wantRaw: 0.1},
		// 0.2504 cores rounds up to 251m.
		{name: "cpu rounds up", resource: corev1.ResourceCPU, samples: []float64{0.2504}, policy: Policy{Percentile: 0.9}, want: "251m", wantRaw: 0.2504},
		// 1 core * 2.0 = 2 cores, printed as a whole number.
		{name: "cpu whole cores", resource: corev1.ResourceCPU, samples: []float64{1}, policy: Policy{Percentile: 0.9, BufferPercent: 100}, want: "2", wantRaw: 1},
		// 200 MiB * 1.3 = 260 MiB.
		{name: "memory constant", resource: corev1.ResourceMemory, samples: []float64{200 << 20}, policy: Policy{Percentile: 0.9, BufferPercent: 30}, want: "260Mi", wantRaw: 200 << 20},
		// 100 MiB + 1 byte rounds up to 101 MiB.
		{name: "memory rounds up", resource: corev1.ResourceMemory, samples: []float64{100<<20 + 1}, policy: Policy{Percentile: 0.9}, want: "101Mi", wantRaw: 100<<20 + 1},
		// 1024 MiB prints as 1Gi.
		{name: "memory gibibyte", resource: corev1.ResourceMemory, samples: []float64{1 << 30}, policy: Policy{Percentile: 0.9}, want: "1Gi", wantRaw: 1 << 30},
		// Tiny usage still yields the smallest step, never zero.
		{name: "cpu floor", resource: corev1.ResourceCPU, samples: []float64{0}, policy: Policy{Percentile: 0.9}, want: "1m", wantRaw: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Compute(tt.resource, tt.samples, tt.policy)
			if err != nil {
				t.Fatalf("Compute() error = %v", err)
			}
			if s := got.Value.String(); s != tt.want {
				t.Errorf("Compute() value = %s, want %s", s, tt.want)
			}
			if got.Evidence.RawValue != tt.wantRaw {
				t.Errorf("Compute() raw value = %v, want %v", got.Evidence.RawValue, tt.wantRaw)
			}
			if got.Evidence.Samples != len(tt.samples) || got.Evidence.BufferPercent != tt.policy.BufferPercent {
				t.Errorf("Compute() evidence = %+v, want %d samples and buffer %d", got.Evidence, len(tt.samples), tt.policy.BufferPercent)
			}
		})
	}
}

func TestComputeErrors(t *testing.T) {
	if _, err := Compute(corev1.ResourceCPU, nil, Policy{Percentile: 0.9}); !errors.Is(err, ErrNoSamples) {
		t.Errorf("Compute(no samples) error = %v, want ErrNoSamples", err)
	}
	if _, err := Compute(corev1.ResourceCPU, []float64{1}, Policy{Percentile: 0}); err == nil {
		t.Error("Compute(percentile 0) error = nil, want an error")
	}
	if _, err := Compute("nvidia.com/gpu", []float64{1}, Policy{Percentile: 0.9}); err == nil {
		t.Error("Compute(gpu) error = nil, want an error")
	}
}
