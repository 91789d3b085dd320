package job

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/usage"
)

// errDeadline stands for the run's deadline as the command sets it.
var errDeadline = errors.New("run deadline of 1s exceeded")

// stallingCollector collects items, or stalls until its context ends.
type stallingCollector struct {
	items []collect.Item
	stall bool
}

func (s stallingCollector) Collect(ctx context.Context) ([]collect.Item, error) {
	if s.stall {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.items, nil
}

func (stallingCollector) WriteStatus(context.Context, plan.Item) error { return nil }

// stallingUsage answers partialUsage's history for the namespaces in ok;
// the query of any other namespace runs stall and then fails as a
// Prometheus client does when its context ends.
type stallingUsage struct {
	ok    map[string]bool
	stall func(ctx context.Context) error
}

func (s stallingUsage) Read(ctx context.Context, ns string, ws []usage.WorkloadRef) (map[usage.WorkloadRef]usage.Usage, error) {
	if s.ok[ns] {
		return partialUsage{}.Read(ctx, ns, ws)
	}
	return nil, s.stall(ctx)
}

// cutAfter is a context that ends with cause once it is used by a stalled
// query, as a deadline or a signal would end it mid-run.
func cutAfter(t *testing.T, cause error) (context.Context, func(ctx context.Context) error) {
	ctx, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) })
	return ctx, func(qctx context.Context) error {
		cancel(cause)
		<-qctx.Done()
		// As the usage reader does, name the cause.
		return context.Cause(qctx)
	}
}

func TestRunCutShortReportsWhatItHad(t *testing.T) {
	signal := errors.New("terminated signal received")
	timedOut := func(context.Context) error {
		return errors.New("querying cpu in namespace down: no answer within 2m0s: context deadline exceeded")
	}
	tests := []struct {
		name string
		// collector stalls, or usage reads only the namespaces of ok.
		stallCollect bool
		ok           map[string]bool
		// cause ends the run's context during the first stalled call; nil
		// leaves it alone, and stalled queries fail with timedOut.
		cause           error
		wantInterrupted string
		wantErr         error
		wantEntries     int
		// wantRecommended is the recommendation of namespace up's entry.
		wantRecommended string
		wantReason      string
	}{
		{name: "deadline during collect", stallCollect: true, cause: errDeadline,
			wantInterrupted: "run deadline of 1s exceeded during collect", wantErr: context.Canceled, wantEntries: 0},
		{name: "deadline during history of every namespace", ok: map[string]bool{}, cause: errDeadline,
			wantInterrupted: "run deadline of 1s exceeded during history", wantErr: usage.ErrUnavailable, wantEntries: 2,
			wantReason: "usage history unavailable: run deadline of 1s exceeded"},
		{name: "deadline after one namespace was read", ok: map[string]bool{"up": true}, cause: errDeadline,
			wantInterrupted: "run deadline of 1s exceeded during history", wantErr: errDeadline, wantEntries: 2,
			wantRecommended: "260m", wantReason: "usage history unavailable: run deadline of 1s exceeded"},
		{name: "signal during history", ok: map[string]bool{"up": true}, cause: signal,
			wantInterrupted: "terminated signal received during history", wantErr: signal, wantEntries: 2,
			wantRecommended: "260m", wantReason: "usage history unavailable: terminated signal received"},
		{name: "every query timed out, the run did not end", ok: map[string]bool{},
			wantErr: usage.ErrUnavailable, wantEntries: 2, wantReason: "usage history unavailable: querying cpu in namespace down: no answer within 2m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, stall := context.Background(), timedOut
			if tt.cause != nil {
				ctx, stall = cutAfter(t, tt.cause)
			}
			collector := stallingCollector{items: []collect.Item{validItem("down"), validItem("up")}, stall: tt.stallCollect}
			if tt.stallCollect {
				// The collector stalls on ctx itself: end it soon.
				c, cancel := context.WithCancelCause(context.Background())
				time.AfterFunc(10*time.Millisecond, func() { cancel(tt.cause) })
				t.Cleanup(func() { cancel(nil) })
				ctx = c
			}
			// Not a dry run and a git URL that must never be reached.
			cfg := Config{Git: gitops.Options{URL: "file:///nonexistent/never-reached"}}
			rep, err := Run(ctx, cfg, collector, stallingUsage{ok: tt.ok, stall: stall}, slog.New(slog.DiscardHandler))
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Run() error = %v, want %v", err, tt.wantErr)
			}
			if rep == nil {
				t.Fatal("Run() returned no report")
			}
			if rep.Interrupted != tt.wantInterrupted {
				t.Errorf("report interrupted = %q, want %q", rep.Interrupted, tt.wantInterrupted)
			}
			if rep.Git != nil {
				t.Errorf("report git = %+v, want git not reached", rep.Git)
			}
			if len(rep.Items) != tt.wantEntries {
				t.Fatalf("report has %d entries, want %d", len(rep.Items), tt.wantEntries)
			}
			if tt.wantEntries == 0 {
				return
			}
			down := rep.Items[0].Containers[0].Resources[0]
			if down.Recommended != nil || !strings.HasPrefix(down.Reason, tt.wantReason) {
				t.Errorf("down/web cpu = %+v, want no recommendation and reason %q", down, tt.wantReason)
			}
			if up := rep.Items[1].Containers[0].Resources[0]; qs(up.Recommended) != tt.wantRecommended {
				t.Errorf("up/web cpu recommended %q (%s), want %q", qs(up.Recommended), up.Reason, tt.wantRecommended)
			}
		})
	}
}

// TestWriteBackPushesNothingAfterTheDeadline ends the run's context between
// commit and push: the push must not start, even to a file:// remote,
// which does not heed the context.
func TestWriteBackPushesNothingAfterTheDeadline(t *testing.T) {
	url := testbedtest.FileRemote(t, map[string]string{"clusters/prod/web.yaml": webDeployment})
	bare, err := git.PlainOpen(strings.TrimPrefix(url, "file://"))
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)

	cfg := Config{Path: "clusters", Git: gitops.Options{URL: url, BaseBranch: "main", PushBranch: "recommend-job/main",
		AuthorName: "recommend-job", AuthorEmail: "recommend-job@example.com"}}
	r := newRun(cfg)
	r.beforePush = func(int) { cancel(errDeadline) }
	rep := webPlan("390m")
	err = writeBack(ctx, r, rep, slog.New(slog.DiscardHandler))
	if !errors.Is(err, errDeadline) || !strings.Contains(err.Error(), "not pushing") {
		t.Errorf("writeBack() error = %v, want it not to push because of the deadline", err)
	}
	if rep.Git != nil && rep.Git.Pushed {
		t.Errorf("git = %+v, want nothing pushed", rep.Git)
	}
	if ref, err := bare.Reference(plumbing.NewBranchReferenceName("recommend-job/main"), true); err == nil {
		t.Errorf("the remote has branch recommend-job/main at %s, want none", ref.Hash())
	}
}

// qs shows q, or "" for none.
func qs(q *resource.Quantity) string {
	if q == nil {
		return ""
	}
	return q.String()
}
