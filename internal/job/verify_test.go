package job

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
	"github.com/recommend-job/recommend-job/internal/usage"
	"github.com/recommend-job/recommend-job/internal/verify"
)

// loadedRecord is a record that holds pushed and writes nothing.
type loadedRecord struct{ pushed []gitops.Pushed }

func (r loadedRecord) Load(context.Context) ([]gitops.Pushed, error) { return r.pushed, nil }
func (loadedRecord) Update(context.Context, func([]gitops.Pushed) []gitops.Pushed) error {
	return nil
}

// noWatch reads nothing of what followed a change.
type noWatch struct{}

func (noWatch) ReadWatch(context.Context, string, []usage.WorkloadRef, time.Time) (map[usage.WorkloadRef]map[string]*usage.Watched, error) {
	return nil, nil
}

// TestVerifyMergedHoldsACorrectionPastTheWatch is the run's side of
// doctor's TestMergedCorrectionsAsARunReadsThem: a correction merged 20
// days ago, past the watch period and the history window, keeps the
// container's recommendation from going below it; one merged 31 days ago
// is past verify.LookBack and keeps nothing.
func TestVerifyMergedHoldsACorrectionPastTheWatch(t *testing.T) {
	const correction = "Recommend-Job-Correction: shop/web app memory 256Mi 512Mi\n"
	for _, tt := range []struct {
		name     string
		age      time.Duration
		wantHeld bool
	}{
		{name: "20 days old", age: 20 * 24 * time.Hour, wantHeld: true},
		{name: "31 days old", age: 31 * 24 * time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			committed := time.Now().Add(-tt.age)
			url := testbedtest.FileRemote(t, map[string]string{"web.yaml": "memory: 256Mi\n"})
			dir := t.TempDir()
			repo, err := git.PlainClone(dir, false, &git.CloneOptions{URL: url, ReferenceName: plumbing.NewBranchReferenceName("main")})
			if err != nil {
				t.Fatal(err)
			}
			wt, err := repo.Worktree()
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte("memory: 512Mi\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := wt.Add("web.yaml"); err != nil {
				t.Fatal(err)
			}
			sig := &object.Signature{Name: "recommend-job", Email: "recommend-job@example.com", When: committed}
			hash, err := wt.Commit("Right-size resource requests\n\n"+correction, &git.CommitOptions{Author: sig, Committer: sig})
			if err != nil {
				t.Fatal(err)
			}
			if err := repo.Push(&git.PushOptions{}); err != nil {
				t.Fatal(err)
			}

			live, lower := resource.MustParse("512Mi"), resource.MustParse("300Mi")
			p := &plan.Plan{Items: []plan.Item{{Namespace: "shop", Name: "web", Valid: true, Target: plan.Target{Kind: "Deployment", Name: "web"},
				Containers: []plan.Container{{Name: "app", Resources: []plan.Resource{{Resource: corev1.ResourceMemory,
					Current: &live, Recommended: &lower, Request: &lower, Changed: true}}}}}}}
			cfg := Config{Git: gitops.Options{URL: url, BaseBranch: "main"}, Verify: verify.Thresholds{Period: verify.DefaultPeriod},
				Record: loadedRecord{pushed: []gitops.Pushed{{Commit: hash.String(), Branch: "main", Time: committed, Changes: correction}}}}
			if err := verifyMerged(context.Background(), newRun(cfg), p, noWatch{}, slog.New(slog.DiscardHandler)); err != nil {
				t.Fatal(err)
			}
			r := p.Items[0].Containers[0].Resources[0]
			if len(p.Items[0].Watches) != 0 {
				t.Errorf("watches = %+v, want none: the correction is past the watch", p.Items[0].Watches)
			}
			held := r.HeldBack && r.Request == nil && strings.Contains(r.Reason, "recommendations stay at or above it for 30 days")
			if held != tt.wantHeld {
				t.Errorf("held = %v (request %v, reason %q), want %v", held, r.Request, r.Reason, tt.wantHeld)
			}
		})
	}
}
