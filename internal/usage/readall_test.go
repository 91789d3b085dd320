package usage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// gatedReader is a SettingsReader whose reads of a namespace return, once
// gate lets them, a history that names the namespace and the workload,
// or fail for the namespaces in fail. It counts the reads under way.
type gatedReader struct {
	fail map[string]bool
	// gate is called with the namespace as its read starts, the lock held,
	// and waits on cond until the read may end or expired says so, so
	// that a ReadAll that never lets the gate open fails the test rather
	// than hang it.
	gate     func(r *gatedReader, namespace string)
	deadline time.Time

	mu                sync.Mutex
	cond              *sync.Cond
	inFlight, maxSeen int
	started, finished []string
}

func newGatedReader(t *testing.T, gate func(r *gatedReader, namespace string)) *gatedReader {
	r := &gatedReader{gate: gate, fail: map[string]bool{}, deadline: time.Now().Add(10 * time.Second)}
	r.cond = sync.NewCond(&r.mu)
	// Wake the waiters now and then, for them to see the deadline.
	tick := time.NewTicker(20 * time.Millisecond)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-tick.C:
				r.cond.Broadcast()
			case <-done:
				return
			}
		}
	}()
	t.Cleanup(func() {
		tick.Stop()
		close(done)
	})
	return r
}

// expired reports whether the reads have waited too long for each other.
func (r *gatedReader) expired() bool { return time.Now().After(r.deadline) }

func (r *gatedReader) Read(ctx context.Context, namespace string, workloads []WorkloadRef) (map[WorkloadRef]Usage, error) {
	got, err := r.ReadEach(ctx, namespace, map[Settings][]WorkloadRef{{}: workloads}, nil)
	return got[Settings{}], err
}

func (r *gatedReader) ReadEach(_ context.Context, namespace string, groups map[Settings][]WorkloadRef, _ FoldFunc) (map[Settings]map[WorkloadRef]Usage, error) {
	r.mu.Lock()
	r.inFlight++
	r.maxSeen = max(r.maxSeen, r.inFlight)
	r.started = append(r.started, namespace)
	r.cond.Broadcast()
	r.gate(r, namespace)
	r.inFlight--
	r.finished = append(r.finished, namespace)
	r.cond.Broadcast()
	r.mu.Unlock()
	if r.fail[namespace] {
		return nil, fmt.Errorf("reading namespace %s: no answer", namespace)
	}
	out := map[Settings]map[WorkloadRef]Usage{}
	for s, refs := range groups {
		out[s] = map[WorkloadRef]Usage{}
		for _, w := range refs {
			out[s][w] = Usage{"app": {corev1.ResourceCPU: &History{Values: []float64{float64(len(w.Namespace + w.Name))}, Window: s.Window}}}
		}
	}
	return out, nil
}

// wantsIn returns two workloads in each of n namespaces, one with a window
// of its own.
func wantsIn(n int) []Want {
	var wants []Want
	for i := range n {
		ns := fmt.Sprintf("ns-%02d", i)
		wants = append(wants,
			Want{Ref: WorkloadRef{Kind: "Deployment", Namespace: ns, Name: "web"}},
			Want{Ref: WorkloadRef{Kind: "Deployment", Namespace: ns, Name: "api"}, Settings: Settings{Window: 48 * time.Hour}})
	}
	return wants
}

func TestReadAllReadsWithinTheBound(t *testing.T) {
	const namespaces = 10
	for _, tt := range []struct {
		name string
		opts []ReadAllOption
		want int
	}{
		{name: "one at a time by default", want: 1},
		{name: "three at a time", opts: []ReadAllOption{WithConcurrency(3)}, want: 3},
		{name: "no more than there are namespaces", opts: []ReadAllOption{WithConcurrency(64)}, want: namespaces},
		{name: "zero is one", opts: []ReadAllOption{WithConcurrency(0)}, want: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Each read waits until as many as the bound are under way, or
			// every read has started: the bound is reached, and holds.
			r := newGatedReader(t, func(r *gatedReader, _ string) {
				for r.inFlight < tt.want && len(r.started) < namespaces && !r.expired() {
					r.cond.Wait()
				}
			})
			h, err := ReadAll(context.Background(), r, wantsIn(namespaces), slog.New(slog.DiscardHandler), tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if r.maxSeen != tt.want {
				t.Errorf("at most %d reads under way, want %d", r.maxSeen, tt.want)
			}
			if len(r.started) != namespaces || h.Workloads() != 2*namespaces {
				t.Errorf("read %d namespaces, %d workloads; want %d and %d", len(r.started), h.Workloads(), namespaces, 2*namespaces)
			}
		})
	}
}

// TestReadAllDoesNotDependOnCompletionOrder makes reads end in the reverse
// order of the namespaces' names: the histories, the errors and the logs
// are those of a read of one namespace after the other.
func TestReadAllDoesNotDependOnCompletionOrder(t *testing.T) {
	const namespaces = 6
	wants := wantsIn(namespaces)
	type result struct {
		h    *Histories
		err  error
		logs string
		r    *gatedReader
	}
	run := func(t *testing.T, fail []string, opts ...ReadAllOption) result {
		t.Helper()
		reverse := len(opts) > 0
		r := newGatedReader(t, func(r *gatedReader, namespace string) {
			if !reverse {
				return
			}
			// Wait for every read to start, then for the next namespace's
			// read to end.
			for len(r.started) < namespaces && !r.expired() {
				r.cond.Wait()
			}
			var i int
			fmt.Sscanf(namespace, "ns-%d", &i)
			next := fmt.Sprintf("ns-%02d", i+1)
			for i+1 < namespaces && !slices.Contains(r.finished, next) && !r.expired() {
				r.cond.Wait()
			}
		})
		for _, ns := range fail {
			r.fail[ns] = true
		}
		var logs bytes.Buffer
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
		h, err := ReadAll(context.Background(), r, wants, log, opts...)
		return result{h, err, logs.String(), r}
	}
	for _, fail := range [][]string{nil, {"ns-01", "ns-04"}, {"ns-00", "ns-01", "ns-02", "ns-03", "ns-04", "ns-05"}} {
		t.Run(fmt.Sprintf("%d failing", len(fail)), func(t *testing.T) {
			want, got := run(t, fail), run(t, fail, WithConcurrency(namespaces))
			wantH, wantErr, wantLogs := want.h, want.err, want.logs
			gotH, gotErr, gotLogs, r := got.h, got.err, got.logs, got.r
			if r.finished[0] != fmt.Sprintf("ns-%02d", namespaces-1) || r.maxSeen != namespaces {
				t.Fatalf("reads ended in the order %v, %d at a time; want the reverse order, all at once", r.finished, r.maxSeen)
			}
			if fmt.Sprint(wantErr) != fmt.Sprint(gotErr) || errors.Is(wantErr, ErrUnavailable) != errors.Is(gotErr, ErrUnavailable) {
				t.Errorf("error = %v, want %v", gotErr, wantErr)
			}
			if wantH.Workloads() != gotH.Workloads() || gotH.Workloads() != 2*(namespaces-len(fail)) {
				t.Errorf("histories of %d workloads, want %d", gotH.Workloads(), wantH.Workloads())
			}
			for _, w := range wants {
				want, wantErr := wantH.Of(w)
				got, gotErr := gotH.Of(w)
				if diff := cmp.Diff(want, got); diff != "" || fmt.Sprint(wantErr) != fmt.Sprint(gotErr) {
					t.Errorf("Of(%v) = %v, %v; want %v, %v", w, got, gotErr, want, wantErr)
				}
			}
			// One line per failed namespace, whatever the order.
			if got, want := sortedLines(gotLogs), sortedLines(wantLogs); got != want || strings.Count(got, "cannot read usage history") != len(fail) {
				t.Errorf("logs = %q, want %q", got, want)
			}
		})
	}
}

func sortedLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
