package main

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/recommend-job/recommend-job/internal/testbed/history"
)

// shape is a kind of CPU usage: cpu makes the usage function, in cores,
// of one pod alive from start to end, from the pod's own random source;
// seed gives per-time noise that does not depend on the order of calls.
type shape struct {
	name string
	// about says what the shape is, for the report.
	about string
	cpu   func(rng *rand.Rand, seed uint64, start, end time.Time) func(time.Time) float64
}

// shapes are the workloads of the study: the usual kinds of CPU usage,
// from smooth to made of short bursts.
var shapes = []shape{
	{
		name:  "diurnal",
		about: "0.6 ± 0.4 cores over the day, 3% noise per scrape",
		cpu: func(rng *rand.Rand, seed uint64, _, _ time.Time) func(time.Time) float64 {
			phase := rng.Float64() * 2 * math.Pi
			return func(t time.Time) float64 {
				day := float64(t.UnixMilli()%int64(24*time.Hour/time.Millisecond)) / float64(24*time.Hour/time.Millisecond)
				v := 0.6 + 0.4*math.Sin(2*math.Pi*day+phase)
				return math.Max(0.01, v*(1+0.03*normal(seed, t)))
			}
		},
	},
	{
		name:  "bursty",
		about: "0.15 cores, and bursts of 1-3 minutes at 2 cores, 4 an hour at random (Poisson)",
		cpu: func(rng *rand.Rand, seed uint64, start, end time.Time) func(time.Time) float64 {
			spans := poisson(rng, start, end, 4, time.Minute, 3*time.Minute)
			return func(t time.Time) float64 {
				if spans.holds(t) {
					return 2
				}
				return 0.15 * (1 + 0.05*normal(seed, t))
			}
		},
	},
	{
		name:  "cron",
		about: "idle at 0.05 cores, and every hour 5-10 minutes at 1 core",
		cpu: func(rng *rand.Rand, seed uint64, start, end time.Time) func(time.Time) float64 {
			offset := time.Duration(rng.IntN(60)) * time.Minute
			var spans spans
			for h := start.Truncate(time.Hour); h.Before(end); h = h.Add(time.Hour) {
				from := h.Add(offset)
				spans = append(spans, span{from, from.Add(5*time.Minute + time.Duration(rng.Int64N(int64(5*time.Minute))))})
			}
			return func(t time.Time) float64 {
				if spans.holds(t) {
					return 1
				}
				return 0.05
			}
		},
	},
	{
		name:  "batchy",
		about: "a square wave: 10 minutes at 1.2 cores, 20 at 0.1",
		cpu: func(rng *rand.Rand, _ uint64, _, _ time.Time) func(time.Time) float64 {
			const period = 30 * time.Minute
			phase := time.Duration(rng.Int64N(int64(period)))
			return func(t time.Time) float64 {
				if time.Duration(t.UnixNano()+int64(phase))%period < 10*time.Minute {
					return 1.2
				}
				return 0.1
			}
		},
	},
	{
		name:  "noisy",
		about: "log-normal per scrape: median 0.25 cores, σ 0.9 (mean 0.37, p99 2 cores)",
		cpu: func(_ *rand.Rand, seed uint64, _, _ time.Time) func(time.Time) float64 {
			return func(t time.Time) float64 {
				return 0.25 * math.Exp(0.9*normal(seed, t))
			}
		},
	},
	{
		name: "web",
		about: "a service: 0.2-0.8 cores over the day, wandering ±25% over minutes, 10% noise per scrape, " +
			"and bursts of 30s-2m of one more core, 2 an hour",
		cpu: func(rng *rand.Rand, seed uint64, start, end time.Time) func(time.Time) float64 {
			phase := rng.Float64() * 2 * math.Pi
			bursts := poisson(rng, start, end, 2, 30*time.Second, 2*time.Minute)
			return func(t time.Time) float64 {
				day := float64(t.UnixMilli()%int64(24*time.Hour/time.Millisecond)) / float64(24*time.Hour/time.Millisecond)
				v := (0.5 + 0.3*math.Sin(2*math.Pi*day+phase)) * math.Exp(0.25*wander(seed, t, 3*time.Minute)) * (1 + 0.1*normal(seed, t))
				if bursts.holds(t) {
					v++
				}
				return math.Max(0.01, v)
			}
		},
	},
}

// span is a time range [from, to).
type span struct{ from, to time.Time }

// spans are time ranges sorted by start, none overlapping another.
type spans []span

// holds reports whether t is in one of the spans.
func (s spans) holds(t time.Time) bool {
	// s[i-1] is the last span starting at or before t.
	i := sort.Search(len(s), func(i int) bool { return s[i].from.After(t) })
	return i > 0 && t.Before(s[i-1].to)
}

// merged joins overlapping spans, which must be sorted by start.
func merged(s spans) spans {
	var out spans
	for _, sp := range s {
		if n := len(out); n > 0 && !sp.from.After(out[n-1].to) {
			if sp.to.After(out[n-1].to) {
				out[n-1].to = sp.to
			}
			continue
		}
		out = append(out, sp)
	}
	return out
}

// poisson draws spans from start to end arriving at perHour on average,
// each lasting between shortest and longest.
func poisson(rng *rand.Rand, start, end time.Time, perHour float64, shortest, longest time.Duration) spans {
	var out spans
	for t := start; ; {
		t = t.Add(time.Duration(rng.ExpFloat64() / perHour * float64(time.Hour)))
		if !t.Before(end) {
			return merged(out)
		}
		out = append(out, span{t, t.Add(shortest + time.Duration(rng.Int64N(int64(longest-shortest))))})
	}
}

// normal is a standard normal variate that depends only on seed and t.
func normal(seed uint64, t time.Time) float64 {
	a := splitmix(seed ^ uint64(t.UnixMilli()))
	b := splitmix(a)
	u1 := (float64(a>>11) + 0.5) / (1 << 53)
	u2 := float64(b>>11) / (1 << 53)
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// wander is noise that changes smoothly over about every: standard normal
// values every such interval, cosine-interpolated in between.
func wander(seed uint64, t time.Time, every time.Duration) float64 {
	seed = splitmix(seed ^ 0x5eed)
	k := t.UnixNano() / int64(every)
	frac := float64(t.UnixNano()%int64(every)) / float64(every)
	a, b := normal(seed, time.Unix(0, k*int64(every))), normal(seed, time.Unix(0, (k+1)*int64(every)))
	w := (1 - math.Cos(math.Pi*frac)) / 2
	return a*(1-w) + b*w
}

// splitmix is SplitMix64's mixing function.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// workload is one shape's Deployment in a namespace of its own, scraped
// at one interval.
type workload struct {
	shape     shape
	scrape    time.Duration
	namespace string
	// containers are its pods' containers, one ReplicaSet after another.
	containers []history.Container
}

// newWorkload makes a Deployment named after s in namespace, with
// replicas pods per ReplicaSet and rollouts ReplicaSets from start to end;
// seed makes its randomness, the same for every scrape interval.
func newWorkload(s shape, namespace string, scrape time.Duration, replicas, rollouts int, start, end time.Time, seed uint64) workload {
	w := workload{shape: s, scrape: scrape, namespace: namespace}
	for _, rs := range history.Rollouts(s.name, replicas, rollouts, start, end) {
		for _, pod := range rs.Pods {
			h := fnv.New64a()
			_, _ = h.Write([]byte(s.name + "/" + pod))
			podSeed := splitmix(seed ^ h.Sum64())
			rng := rand.New(rand.NewPCG(seed, podSeed))
			w.containers = append(w.containers, history.Container{
				Namespace: namespace, Pod: pod, Container: "app",
				Start: rs.Start, End: rs.End,
				CPU: s.cpu(rng, podSeed, rs.Start, rs.End),
			})
		}
	}
	return w
}
