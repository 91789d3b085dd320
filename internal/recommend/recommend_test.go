package recommend

import (
	"math"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// hourly is n+1 samples of v an hour apart from start: n hours of span.
func hourly(start time.Time, v float64, n int) []Sample {
	out := make([]Sample, 0, n+1)
	for i := 0; i <= n; i++ {
		out = append(out, Sample{Time: start.Add(time.Duration(i) * time.Hour), Value: v})
	}
	return out
}

func q(s string) *resource.Quantity {
	v := resource.MustParse(s)
	return &v
}

func str(q *resource.Quantity) string {
	if q == nil {
		return ""
	}
	return q.String()
}

const mib = 1 << 20

// Bucket ends (start of the next bucket, 0.2 x (1.05^(b+1) - 1) for CPU
// and 2e8 x (1.05^(b+1) - 1) bytes for memory) of the constant usages
// below, all above the usage itself, so the percentile is the usage, the
// highest sample:
//   - 0.02 cores: bucket 1, ends at 0.0205;
//   - 0.1 cores: bucket 8, ends at 0.110266;
//   - 1 core: bucket 36, ends at 1.016281;
//   - 50Mi: bucket 4, ends at 55256312.5 bytes (52.70Mi);
//   - 200Mi: bucket 14, ends at 215785635.9 bytes (205.79Mi);
//   - 1000Mi: bucket 37, ends at 1077095458 bytes (1027.20Mi).
func TestCompute(t *testing.T) {
	cpu := func(v float64) Input {
		return Input{Resource: corev1.ResourceCPU, Samples: hourly(t0, v, 25), BufferPercent: 30}
	}
	mem := func(v float64) Input {
		return Input{Resource: corev1.ResourceMemory, Samples: hourly(t0, v, 25), BufferPercent: 30}
	}
	with := func(in Input, f func(*Input)) Input { f(&in); return in }
	tests := []struct {
		name        string
		in          Input
		wantValue   string
		wantRequest string
		wantLimit   string
		wantCapped  []string
		wantHeld    string
		wantReason  string
	}{
		// 0.1 x 1.3 = 0.13 cores, on the 5m step: 130m.
		{name: "cpu constant", in: cpu(0.1), wantValue: "130m", wantRequest: "130m"},
		// 0.02 x 1.3 = 0.026, on the 1m step: 26m.
		{name: "cpu small", in: cpu(0.02), wantValue: "26m", wantRequest: "26m"},
		// 1 x 1.3 = 1.3, on the 50m step: 1300m.
		{name: "cpu cores", in: cpu(1), wantValue: "1300m", wantRequest: "1300m"},
		// 200Mi x 1.3 = 260Mi, on the 4Mi step.
		{name: "memory constant", in: mem(200 * mib), wantValue: "260Mi", wantRequest: "260Mi"},
		// 50Mi x 1.3 = 65Mi, on the 1Mi step.
		{name: "memory small", in: mem(50 * mib), wantValue: "65Mi", wantRequest: "65Mi"},
		// 1000Mi without buffer, on the 4Mi step.
		{name: "memory large", in: with(mem(1000*mib), func(i *Input) { i.BufferPercent = 0 }), wantValue: "1000Mi", wantRequest: "1000Mi"},
		// The first bucket ends at 10m, far above 3m: 3m x 1.3 = 3.9m, up to 4m.
		{name: "cpu in the first bucket", in: cpu(0.003), wantValue: "4m", wantRequest: "4m"},
		// 12Mi is in the second bucket, which ends at 19.55Mi: 12Mi x 1.3 = 15.6Mi, up to 16Mi.
		{name: "memory in the second bucket", in: mem(12 * mib), wantValue: "16Mi", wantRequest: "16Mi"},
		// 130m is below minAllowed 200m.
		{name: "min allowed", in: with(cpu(0.1), func(i *Input) { i.MinAllowed = q("200m") }),
			wantValue: "200m", wantRequest: "200m", wantCapped: []string{"minAllowed 200m"}},
		// 260Mi is above maxAllowed 256Mi.
		{name: "max allowed", in: with(mem(200*mib), func(i *Input) { i.MaxAllowed = q("256Mi") }),
			wantValue: "256Mi", wantRequest: "256Mi", wantCapped: []string{"maxAllowed 256Mi"}},
		// RequestsOnly: 260Mi is above the 250Mi limit, the request stops there.
		{name: "requests only capped at the limit", in: with(mem(200*mib), func(i *Input) { i.Limit = q("250Mi") }),
			wantValue: "250Mi", wantRequest: "250Mi", wantCapped: []string{"limit 250Mi"}},
		// RequestsAndLimits, 100m:200m is a ratio of 2: 130m and 260m.
		{name: "requests and limits keep the ratio", in: with(cpu(0.1), func(i *Input) {
			i.ControlledValues, i.Request, i.Limit = v1alpha1.ContainerControlledValuesRequestsAndLimits, q("100m"), q("200m")
		}), wantValue: "130m", wantRequest: "130m", wantLimit: "260m"},
		// No limit stays no limit.
		{name: "requests and limits without a limit", in: with(cpu(0.1), func(i *Input) {
			i.ControlledValues, i.Request = v1alpha1.ContainerControlledValuesRequestsAndLimits, q("100m")
		}), wantValue: "130m", wantRequest: "130m"},
		// request == limit (Guaranteed QoS) stays equal.
		{name: "requests and limits guaranteed", in: with(cpu(0.1), func(i *Input) {
			i.ControlledValues, i.Request, i.Limit = v1alpha1.ContainerControlledValuesRequestsAndLimits, q("100m"), q("100m")
		}), wantValue: "130m", wantRequest: "130m", wantLimit: "130m"},
		// A limit without a request: Kubernetes takes the limit as the request.
		{name: "requests and limits, limit only", in: with(cpu(0.1), func(i *Input) {
			i.ControlledValues, i.Limit = v1alpha1.ContainerControlledValuesRequestsAndLimits, q("1")
		}), wantValue: "130m", wantRequest: "130m", wantLimit: "130m"},
		// LimitsOnly, 100m:300m is a ratio of 3: the limit is 390m, the request stays.
		{name: "limits only", in: with(cpu(0.1), func(i *Input) {
			i.ControlledValues, i.Request, i.Limit = v1alpha1.ContainerControlledValuesLimitsOnly, q("100m"), q("300m")
		}), wantValue: "130m", wantLimit: "390m"},
		// LimitsOnly, 500m:600m is 1.2: 156m would be below the request 500m.
		{name: "limits only never below the request", in: with(cpu(0.1), func(i *Input) {
			i.ControlledValues, i.Request, i.Limit = v1alpha1.ContainerControlledValuesLimitsOnly, q("500m"), q("600m")
		}), wantValue: "130m", wantLimit: "500m", wantCapped: []string{"request 500m"}},
		{name: "limits only without a limit", in: with(cpu(0.1), func(i *Input) {
			i.ControlledValues, i.Request = v1alpha1.ContainerControlledValuesLimitsOnly, q("100m")
		}), wantValue: "130m", wantHeld: "no limit to control: a container without a limit keeps none"},
		// 130m against 125m: 4.0%, under 10%.
		{name: "held back below the threshold", in: with(cpu(0.1), func(i *Input) { i.Request = q("125m") }),
			wantValue: "130m", wantHeld: "request 130m is 4.0% from the current 125m, below the 10% change threshold"},
		// 130m against 140m: 7.1%.
		{name: "held back downwards", in: with(cpu(0.1), func(i *Input) { i.Request = q("140m") }),
			wantValue: "130m", wantHeld: "request 130m is 7.1% from the current 140m, below the 10% change threshold"},
		// 130m against 115m: 13.0%, over 10%.
		{name: "changed above the threshold", in: with(cpu(0.1), func(i *Input) { i.Request = q("115m") }),
			wantValue: "130m", wantRequest: "130m"},
		// Equal is written: it corrects a repository that disagrees.
		{name: "equal is not held back", in: with(cpu(0.1), func(i *Input) { i.Request = q("0.13") }),
			wantValue: "130m", wantRequest: "130m"},
		// 125m is below minAllowed 130m, so the 4.0% change is made.
		{name: "current outside the bounds is not held back", in: with(cpu(0.1), func(i *Input) { i.Request, i.MinAllowed = q("125m"), q("130m") }),
			wantValue: "130m", wantRequest: "130m"},
		// Peak 200Mi after an OOM: max(200Mi + 100Mi, 200Mi x 1.2) = 300Mi, above the buffered 260Mi.
		{name: "oom bump", in: with(mem(200*mib), func(i *Input) { i.OOMKilled = true }), wantValue: "300Mi", wantRequest: "300Mi"},
		// The OOM floor is capped by maxAllowed.
		{name: "oom bump capped", in: with(mem(200*mib), func(i *Input) { i.OOMKilled, i.MaxAllowed = true, q("280Mi") }),
			wantValue: "280Mi", wantRequest: "280Mi", wantCapped: []string{"maxAllowed 280Mi"}},
		// An OOM says nothing about CPU.
		{name: "oom leaves cpu alone", in: with(cpu(0.1), func(i *Input) { i.OOMKilled = true }), wantValue: "130m", wantRequest: "130m"},
		{name: "no samples", in: Input{Resource: corev1.ResourceCPU}, wantReason: "insufficient data: no samples in the window"},
		// 24 samples over 23h: too short a span.
		{name: "short span", in: Input{Resource: corev1.ResourceCPU, Samples: hourly(t0, 0.1, 23)},
			wantReason: "insufficient data: 24 samples over 23h0m0s, need 12 over 24h0m0s"},
		// The newest of 26 hourly samples is 25h before the end of the
		// window: the workload may be gone.
		{name: "stale", in: Input{Resource: corev1.ResourceCPU, Samples: hourly(t0, 0.1, 25), Now: t0.Add(50 * time.Hour)},
			wantReason: "insufficient data: no samples in the last 24h0m0s, the newest is 25h0m0s old"},
		// 24h old is still fresh.
		{name: "fresh", in: Input{Resource: corev1.ResourceCPU, Samples: hourly(t0, 0.1, 25), BufferPercent: 30, Now: t0.Add(49 * time.Hour)},
			wantValue: "130m", wantRequest: "130m"},
		// 2 samples 48h apart: too few.
		{name: "too few samples", in: Input{Resource: corev1.ResourceCPU, Samples: []Sample{{t0, 0.1}, {t0.Add(48 * time.Hour), 0.1}}},
			wantReason: "insufficient data: 2 samples over 48h0m0s, need 12 over 24h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Compute(tt.in, Options{})
			if err != nil {
				t.Fatalf("Compute() error = %v", err)
			}
			if str(got.Value) != tt.wantValue || str(got.Request) != tt.wantRequest || str(got.Limit) != tt.wantLimit {
				t.Errorf("Compute() value %q request %q limit %q, want %q %q %q",
					str(got.Value), str(got.Request), str(got.Limit), tt.wantValue, tt.wantRequest, tt.wantLimit)
			}
			if !slices.Equal(got.Evidence.Capped, tt.wantCapped) || got.Evidence.HeldBack != tt.wantHeld || got.Reason != tt.wantReason {
				t.Errorf("Compute() capped %q held back %q reason %q, want %q %q %q",
					got.Evidence.Capped, got.Evidence.HeldBack, got.Reason, tt.wantCapped, tt.wantHeld, tt.wantReason)
			}
		})
	}
}

func TestComputeEvidence(t *testing.T) {
	in := Input{Resource: corev1.ResourceMemory, Samples: hourly(t0, 200*mib, 25), BufferPercent: 30, Window: 7 * 24 * time.Hour, OOMKilled: true}
	got, err := Compute(in, Options{})
	if err != nil {
		t.Fatalf("Compute() error = %v", err)
	}
	e := got.Evidence
	// 26 hourly peaks over 25h; p90 200Mi's bucket ends at 215785635.9
	// bytes, above every sample, so the percentile is 200Mi = 209715200
	// bytes, at a resolution of the bucket's 19799316.0 bytes, x 1.3 =
	// 272629760; OOM floor 300Mi = 314572800 bytes; 4Mi steps.
	if e.Window != "168h0m0s" || e.Samples != 26 || e.Span != "25h0m0s" || e.Percentile != 0.9 || e.HalfLife != "24h0m0s" {
		t.Errorf("evidence history = %+v, want window 168h, 26 samples over 25h, p90, half-life 24h", e)
	}
	if e.RawValue != 200*mib || !e.PercentileAtMax || math.Abs(e.BucketWidth-19799316.0) > 1 || math.Abs(e.BufferedValue-272629760) > 1 || e.BufferPercent != 30 {
		t.Errorf("evidence values = %v (at max %v, resolution %v) buffered %v buffer %d, want 209715200 (true, 19799316.0), 272629760, 30",
			e.RawValue, e.PercentileAtMax, e.BucketWidth, e.BufferedValue, e.BufferPercent)
	}
	if !e.OOMKilled || e.OOMFloor != 300*mib || e.RoundingStep != "4Mi" {
		t.Errorf("evidence oom %v floor %v step %q, want true 314572800 4Mi", e.OOMKilled, e.OOMFloor, e.RoundingStep)
	}
}

// TestComputeHalfLife: 84 hours at 1 core, then 84 hours at 0.2 cores.
// Every old sample is 84h older than a new one, so the old level's share
// of the weight (weight = usage, decayed by 2^(-age/halfLife)) is
// 1 x 2^(-84/halfLife) / (1 x 2^(-84/halfLife) + 0.2):
//   - half-life 24h: 0.0884 / 0.2884 = 30.6%, so p90 is still in 1 core's
//     bucket, which ends above the highest sample, 1 core: x 1.3 -> 1300m;
//   - half-life 12h: 0.0078 / 0.2078 = 3.8%, so p90 is 0.2 cores' bucket end,
//     0.215786, below the highest sample, x 1.3 = 0.280522 -> 285m.
func TestComputeHalfLife(t *testing.T) {
	samples := append(hourly(t0, 1, 83), hourly(t0.Add(84*time.Hour), 0.2, 83)...)
	for _, tt := range []struct {
		halfLife time.Duration
		want     string
	}{{24 * time.Hour, "1300m"}, {12 * time.Hour, "285m"}} {
		got, err := Compute(Input{Resource: corev1.ResourceCPU, Samples: samples, BufferPercent: 30}, Options{HalfLife: tt.halfLife})
		if err != nil {
			t.Fatalf("Compute() error = %v", err)
		}
		if s := str(got.Request); s != tt.want {
			t.Errorf("half-life %s: request %s, want %s", tt.halfLife, s, tt.want)
		}
	}
}

func TestComputeErrors(t *testing.T) {
	ok := hourly(t0, 0.1, 25)
	if _, err := Compute(Input{Resource: corev1.ResourceCPU, Samples: ok}, Options{CPUPercentile: 1.5}); err == nil {
		t.Error("Compute(percentile 1.5) error = nil, want an error")
	}
	if _, err := Compute(Input{Resource: "nvidia.com/gpu", Samples: ok}, Options{}); err == nil {
		t.Error("Compute(gpu) error = nil, want an error")
	}
	if _, err := Compute(Input{Resource: corev1.ResourceCPU, Samples: ok, ControlledValues: "Everything"}, Options{}); err == nil {
		t.Error("Compute(controlledValues Everything) error = nil, want an error")
	}
}

func TestRound(t *testing.T) {
	tests := []struct {
		name     corev1.ResourceName
		value    float64
		want     string
		wantStep string
	}{
		{corev1.ResourceCPU, 0, "1m", "1m"},
		{corev1.ResourceCPU, 0.0991, "100m", "1m"},
		// 0.1 x 1.3 is 0.13000000000000003: float noise, not 135m.
		{corev1.ResourceCPU, 0.1 * 1.3, "130m", "5m"},
		{corev1.ResourceCPU, 0.1001, "105m", "5m"},
		{corev1.ResourceCPU, 1.001, "1050m", "50m"},
		{corev1.ResourceCPU, 2, "2", "50m"},
		{corev1.ResourceMemory, 1, "1Mi", "1Mi"},
		{corev1.ResourceMemory, 100*mib + 1, "104Mi", "4Mi"},
		{corev1.ResourceMemory, 1 << 30, "1Gi", "4Mi"},
		{corev1.ResourceMemory, 1<<30 + 1, "1056Mi", "32Mi"},
	}
	for _, tt := range tests {
		got, step := Round(tt.name, tt.value)
		if got.String() != tt.want || step != tt.wantStep {
			t.Errorf("Round(%s, %v) = %s step %s, want %s step %s", tt.name, tt.value, got.String(), step, tt.want, tt.wantStep)
		}
	}
}

// FuzzCompute checks, for constant usage at two levels, that the value is
// never below minAllowed, never above maxAllowed, and never lower for the
// higher level.
func FuzzCompute(f *testing.F) {
	f.Add(true, 0.1, 0.2, int64(50), int64(2000), uint8(30))
	f.Add(false, 1e8, 3e8, int64(0), int64(1<<40), uint8(0))
	f.Add(true, 0.0, 1000.0, int64(1), int64(1), uint8(100))
	f.Fuzz(func(t *testing.T, isCPU bool, a, b float64, lo, hi int64, buffer uint8) {
		// Fold every input into the domain rather than skip it: usage
		// levels 0 <= a <= b < 1e15, bounds 0 <= lo <= hi <= 2^50, buffer
		// 0 to 100.
		a = foldFloat(a, 1e14)
		b = a + foldFloat(b, 1e14)
		lo = foldInt(lo, 1<<49)
		hi = lo + foldInt(hi, 1<<49)
		buffer %= 101
		name, minQ, maxQ := corev1.ResourceMemory, resource.NewQuantity(lo, resource.BinarySI), resource.NewQuantity(hi, resource.BinarySI)
		if isCPU {
			name, minQ, maxQ = corev1.ResourceCPU, resource.NewMilliQuantity(lo, resource.DecimalSI), resource.NewMilliQuantity(hi, resource.DecimalSI)
		}
		compute := func(level float64) resource.Quantity {
			got, err := Compute(Input{Resource: name, Samples: hourly(t0, level, 25), BufferPercent: int32(buffer),
				MinAllowed: minQ, MaxAllowed: maxQ}, Options{})
			if err != nil || got.Request == nil {
				t.Fatalf("Compute(%v) = %+v, %v; want a request", level, got, err)
			}
			return *got.Request
		}
		low, high := compute(a), compute(b)
		for _, v := range []resource.Quantity{low, high} {
			if v.Cmp(*minQ) < 0 || v.Cmp(*maxQ) > 0 {
				t.Errorf("value %s outside [%s, %s]", v.String(), minQ.String(), maxQ.String())
			}
		}
		if low.Cmp(high) > 0 {
			t.Errorf("level %v gives %s, more than level %v's %s", a, low.String(), b, high.String())
		}
	})
}

// foldFloat maps any float, NaN and infinities included, into [0, limit).
func foldFloat(v, limit float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return math.Mod(math.Abs(v), limit)
}

// foldInt maps any int64 into [0, limit).
func foldInt(v, limit int64) int64 {
	v %= limit
	if v < 0 {
		v += limit
	}
	return v
}

// TestComputeStartupFloor: memory is never below the startup peak, which
// is rounded up like any value, and only a cap undercuts it.
func TestComputeStartupFloor(t *testing.T) {
	mem := func(startup float64) Input {
		return Input{Resource: corev1.ResourceMemory, Samples: hourly(t0, 200*mib, 25), BufferPercent: 30, StartupPeak: startup}
	}
	with := func(in Input, f func(*Input)) Input { f(&in); return in }
	tests := []struct {
		name       string
		in         Input
		wantValue  string
		wantPeak   float64
		wantFloor  bool
		wantCapped []string
	}{
		// 700Mi, above 260Mi, on the 4Mi step already.
		{name: "startup peak above the buffered p90", in: mem(700 * mib), wantValue: "700Mi", wantPeak: 700 * mib, wantFloor: true},
		// 701.5Mi, up to the 4Mi step: 704Mi.
		{name: "startup peak rounded up", in: mem(701.5 * mib), wantValue: "704Mi", wantPeak: 701.5 * mib, wantFloor: true},
		// 150Mi is below 260Mi: shown, not applied.
		{name: "startup peak below the buffered p90", in: mem(150 * mib), wantValue: "260Mi", wantPeak: 150 * mib},
		{name: "no startup seen", in: mem(0), wantValue: "260Mi"},
		// An OOM kill at 200Mi floors at 300Mi, above the 250Mi startup.
		{name: "OOM floor above the startup peak", in: with(mem(250*mib), func(i *Input) { i.OOMKilled = true }),
			wantValue: "300Mi", wantPeak: 250 * mib},
		{name: "maxAllowed still caps", in: with(mem(700*mib), func(i *Input) { i.MaxAllowed = q("512Mi") }),
			wantValue: "512Mi", wantPeak: 700 * mib, wantFloor: true, wantCapped: []string{"maxAllowed 512Mi, below the startup peak 700Mi"}},
		{name: "maxAllowed above the startup peak", in: with(mem(700*mib), func(i *Input) { i.MaxAllowed = q("1Gi") }),
			wantValue: "700Mi", wantPeak: 700 * mib, wantFloor: true},
		{name: "the limit caps the request", in: with(mem(700*mib), func(i *Input) { i.Limit = q("600Mi") }),
			wantValue: "600Mi", wantPeak: 700 * mib, wantFloor: true, wantCapped: []string{"limit 600Mi, below the startup peak 700Mi"}},
		// CPU has no startup floor: 0.1 x 1.3 = 130m.
		{name: "cpu ignores it", in: Input{Resource: corev1.ResourceCPU, Samples: hourly(t0, 0.1, 25), BufferPercent: 30, StartupPeak: 700 * mib},
			wantValue: "130m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Compute(tt.in, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if str(got.Value) != tt.wantValue || str(got.Request) != tt.wantValue {
				t.Errorf("Compute() value %s request %s, want %s", str(got.Value), str(got.Request), tt.wantValue)
			}
			ev := got.Evidence
			if ev.StartupPeak != tt.wantPeak || ev.StartupFloor != tt.wantFloor {
				t.Errorf("evidence startup peak %v floor %v, want %v %v", ev.StartupPeak, ev.StartupFloor, tt.wantPeak, tt.wantFloor)
			}
			if !slices.Equal(ev.Capped, tt.wantCapped) {
				t.Errorf("evidence capped %q, want %q", ev.Capped, tt.wantCapped)
			}
		})
	}
}
