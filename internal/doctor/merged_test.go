package doctor

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
	"github.com/recommend-job/recommend-job/internal/usage"
	"github.com/recommend-job/recommend-job/internal/verify"
)

// commitAs pushes a commit of message by author at when to the main
// branch of the repository at url.
func commitAs(t *testing.T, url, message string, author *object.Signature) string {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainClone(dir, false, &git.CloneOptions{URL: url, ReferenceName: plumbing.NewBranchReferenceName("main")})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "apps", "web.yaml"), []byte(message), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Add("apps/web.yaml"); err != nil {
		t.Fatal(err)
	}
	h, err := wt.Commit(message, &git.CommitOptions{Author: author, Committer: author})
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	return h.String()
}

// record is the job's record, holding pushed.
type record struct{ pushed []gitops.Pushed }

func (r *record) Load(context.Context) ([]gitops.Pushed, error) { return r.pushed, nil }

// watchPrometheus answers the queries of a watch from answers, by query,
// and every other query as prometheus does.
type watchPrometheus struct {
	*prometheus
	answers map[string]model.Matrix
}

func (p watchPrometheus) QueryRange(ctx context.Context, q string, r promv1.Range, opts ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error) {
	if m, ok := p.answers[q]; ok {
		return m, nil, nil, nil
	}
	return p.prometheus.QueryRange(ctx, q, r, opts...)
}

// TestMergedChanges runs doctor on a repository that holds a memory cut
// of the job's, by its author, followed by OOM kills: doctor explains the
// regression with the numbers, the correction and the queries behind
// them; a repository without the job's commits is no failure.
func TestMergedChanges(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Hour)
	options := []usage.Option{usage.WithClock(func() time.Time { return now }), usage.WithOwnership(false)}
	committed := now.Add(-48 * time.Hour)
	job := &object.Signature{Name: "recommend-job", Email: "recommend-job@example.com", When: committed}
	person := &object.Signature{Name: "someone", Email: "someone@example.com", When: committed}

	web := item(t, "shop", "web", `{}`)
	web.Workload.Containers = []collect.Container{{Name: "app",
		Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}
	ref := usage.WorkloadRef{Kind: "Deployment", Namespace: "shop", Name: "web"}
	queries, err := usage.NewReader(&prometheus{}, options...).WatchQueries("shop", []usage.WorkloadRef{ref})
	if err != nil {
		t.Fatal(err)
	}
	series := func(labels model.Metric, points map[time.Time]float64) *model.SampleStream {
		// In time order, as Prometheus answers: the watch counts an OOM
		// kill in consecutive hours once, by comparing neighbours.
		s := &model.SampleStream{Metric: labels}
		for _, at := range slices.SortedFunc(maps.Keys(points), time.Time.Compare) {
			s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(at.UnixNano()), Value: model.SampleValue(points[at])})
		}
		return s
	}
	pod := model.Metric{"pod": "web-6d4b9c8f6d-bcdfg", "container": "app"}
	withResource := model.Metric{"pod": "web-6d4b9c8f6d-bcdfg", "container": "app", "resource": "memory"}
	answers := map[string]model.Matrix{
		queries["requests"]: {series(withResource, map[time.Time]float64{
			committed.Add(-2 * time.Hour): 512 << 20, committed.Add(time.Hour): 256 << 20, now: 256 << 20})},
		queries["oom"]:       {series(pod, map[time.Time]float64{now.Add(-24 * time.Hour): 1, now.Add(-10 * time.Hour): 1})},
		queries["restarts"]:  {series(pod, map[time.Time]float64{now.Add(-24 * time.Hour): 1, now.Add(-10 * time.Hour): 1})},
		queries["throttled"]: {},
		queries["periods"]:   {},
		queries["memory"]: {series(pod, map[time.Time]float64{
			committed.Add(-5 * time.Hour): 300 << 20, now.Add(-10 * time.Hour): 250 << 20})},
	}

	tests := []struct {
		name    string
		message string
		author  *object.Signature
		// recorded puts the commit in the job's record.
		recorded bool
		verify   verify.Thresholds
		want     []string
		lack     []string
	}{
		{name: "a regression explained", author: job, recorded: true,
			message: "Right-size resource requests\n\nRecommend-Job-Change: shop/web app memory 512Mi 256Mi\n",
			want: []string{
				"\nmerged changes\n",
				"ok    1 merged change of the job in the last 30 days",
				"shop/web app memory 512Mi -> 256Mi (commit ",
				": REGRESSED: 2 OOM kills after, 0 before",
				"  took effect " + committed.Add(time.Hour).Format(timeLayout),
				"  before " + committed.Add(-71*time.Hour).Format(timeLayout) + " to " + committed.Add(time.Hour).Format(timeLayout) +
					" (3d): 0 OOM kills, 0 restarts, throttled -, memory peak 300Mi",
				"  after  " + committed.Add(time.Hour).Format(timeLayout) + " to " + now.Format(timeLayout) +
					" (2d): 2 OOM kills, 2 restarts, throttled -, memory peak 250Mi",
				// 250Mi plus the OOM bump of 100Mi, above the 512Mi before.
				"  correction: memory 512Mi",
				"  queries behind it:",
				"    oom       <- " + queries["oom"],
				"    memory    <- " + queries["memory"],
				"    requests  <- " + queries["requests"],
			}},
		{name: "someone else's trailer is not the job's change", author: person,
			message: "Copy\n\nRecommend-Job-Change: shop/web app memory 512Mi 256Mi\n",
			want:    []string{"ok    no merged changes of the job in the last 30 days"}, lack: []string{"REGRESSED"}},
		// The job's author and a co-author line are anyone's to write.
		{name: "a commit dressed as the job's is not the job's change", author: job,
			message: "Right-size resource requests\n\nRecommend-Job-Change: shop/web app memory 512Mi 256Mi\n\nCo-authored-by: recommend-job <recommend-job@example.com>\n",
			want:    []string{"ok    no merged changes of the job in the last 30 days"}, lack: []string{"REGRESSED"}},
		{name: "verify-period 0", author: job, verify: verify.Thresholds{},
			message: "Right-size resource requests\n\nRecommend-Job-Change: shop/web app memory 512Mi 256Mi\n",
			want:    []string{"verify-period 0: merged changes are not verified"}, lack: []string{"REGRESSED"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := testbedtest.FileRemote(t, map[string]string{"apps/web.yaml": "memory: 512Mi\n"})
			hash := commitAs(t, url, tt.message, tt.author)
			rec := &record{}
			if tt.recorded {
				rec.pushed = []gitops.Pushed{{Commit: hash, Branch: "main", Time: committed,
					Changes: "Recommend-Job-Change: shop/web app memory 512Mi 256Mi\n"}}
			}
			th := tt.verify
			if tt.name != "verify-period 0" {
				th = verify.Thresholds{Period: verify.DefaultPeriod}
			}
			var out bytes.Buffer
			err := Run(context.Background(), Config{Version: &apiserver{}, Access: &apiserver{}, Collector: collector{items: []collect.Item{web}},
				Prometheus: watchPrometheus{prometheus: &prometheus{pods: pods}, answers: answers}, ReaderOptions: options,
				Git:    gitops.Options{URL: url, BaseBranch: "main", PushBranch: "recommend-job/main", AuthorEmail: "recommend-job@example.com"},
				Verify: th, Record: rec, Now: func() time.Time { return now }}, &out)
			if err != nil {
				t.Errorf("Run() error = %v, want none: a regression is a finding\n%s", err, out.String())
			}
			for _, want := range tt.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
			for _, lack := range tt.lack {
				if strings.Contains(out.String(), lack) {
					t.Errorf("output holds %q:\n%s", lack, out.String())
				}
			}
		})
	}
}

// TestMergedCorrectionsAsARunReadsThem runs doctor on a repository whose
// base branch holds one change of the job's, committed days ago: doctor
// reads the merged changes as far back as a run (verify.ReadMerged), so a
// correction past the watch period that still keeps a run's
// recommendations up is shown holding its value, and a change older than
// the look-back is not read at all.
func TestMergedCorrectionsAsARunReadsThem(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Hour)
	web := item(t, "shop", "web", `{}`)
	web.Workload.Containers = []collect.Container{{Name: "app",
		Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}}}
	const (
		correction = "Recommend-Job-Correction: shop/web app memory 256Mi 512Mi\n"
		change     = "Recommend-Job-Change: shop/web app memory 512Mi 256Mi\n"
	)
	tests := []struct {
		name    string
		age     time.Duration
		trailer string
		want    []string
		lack    []string
	}{
		{name: "a correction 20 days old holds its value", age: 20 * 24 * time.Hour, trailer: correction,
			want: []string{
				"ok    1 merged change of the job in the last 30 days",
				"shop/web app memory 256Mi -> 512Mi (commit ",
				", a correction: past the watch period and the history window; not watched, but holds the recommendations at or above 512Mi until " +
					now.Add(10*24*time.Hour).Format(timeLayout),
			}},
		{name: "a change 20 days old is not watched and holds nothing", age: 20 * 24 * time.Hour, trailer: change,
			want: []string{
				"ok    1 merged change of the job in the last 30 days",
				"shop/web app memory 512Mi -> 256Mi (commit ",
				": past the watch period and the history window; not watched\n",
			},
			lack: []string{"holds"}},
		{name: "a correction 31 days old is past the look-back", age: 31 * 24 * time.Hour, trailer: correction,
			want: []string{"ok    no merged changes of the job in the last 30 days (1 commit in its record)"},
			lack: []string{"holds"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			committed := now.Add(-tt.age)
			job := &object.Signature{Name: "recommend-job", Email: "recommend-job@example.com", When: committed}
			url := testbedtest.FileRemote(t, map[string]string{"apps/web.yaml": "memory: 256Mi\n"})
			hash := commitAs(t, url, "Right-size resource requests\n\n"+tt.trailer, job)
			rec := &record{pushed: []gitops.Pushed{{Commit: hash, Branch: "main", Time: committed, Changes: tt.trailer}}}
			var out bytes.Buffer
			err := Run(context.Background(), Config{Version: &apiserver{}, Access: &apiserver{}, Collector: collector{items: []collect.Item{web}},
				Prometheus:    &prometheus{pods: pods},
				ReaderOptions: []usage.Option{usage.WithClock(func() time.Time { return now }), usage.WithOwnership(false)},
				Git:           gitops.Options{URL: url, BaseBranch: "main", PushBranch: "recommend-job/main", AuthorEmail: "recommend-job@example.com"},
				Verify:        verify.Thresholds{Period: verify.DefaultPeriod}, Record: rec, Now: func() time.Time { return now }}, &out)
			if err != nil {
				t.Errorf("Run() error = %v, want none\n%s", err, out.String())
			}
			at := strings.Index(out.String(), "\nmerged changes\n")
			if at < 0 {
				t.Fatalf("no merged changes section:\n%s", out.String())
			}
			merged := out.String()[at:]
			for _, want := range tt.want {
				if !strings.Contains(merged, want) {
					t.Errorf("merged changes lack %q:\n%s", want, merged)
				}
			}
			for _, lack := range tt.lack {
				if strings.Contains(merged, lack) {
					t.Errorf("merged changes hold %q:\n%s", lack, merged)
				}
			}
		})
	}
}
