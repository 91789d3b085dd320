package job

import (
	"bytes"
	"context"
	"crypto/sha1"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/recommend-job/recommend-job/internal/forge"
	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/record"
)

// apiserverLimit is the apiserver's bound on a ConfigMap's data and
// binary data together.
const apiserverLimit = 1 << 20

// limitedConfigMaps returns a fake apiserver's ConfigMaps that refuses,
// as the apiserver does, a ConfigMap whose data and binary data take more
// than 1 MiB together; largest is the most one held.
func limitedConfigMaps(t *testing.T) (*fake.Clientset, *int) {
	t.Helper()
	client := fake.NewClientset()
	largest := new(int)
	check := func(a k8stesting.Action) (bool, runtime.Object, error) {
		cm := a.(interface{ GetObject() runtime.Object }).GetObject().(*corev1.ConfigMap)
		size := 0
		for _, v := range cm.Data {
			size += len(v)
		}
		for _, v := range cm.BinaryData {
			size += len(v)
		}
		if size > apiserverLimit {
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, cm.Name,
				field.ErrorList{field.TooLong(field.NewPath(""), "", apiserverLimit)})
		}
		*largest = max(*largest, size)
		return false, nil, nil
	}
	client.PrependReactor("create", "configmaps", check)
	client.PrependReactor("update", "configmaps", check)
	return client, largest
}

// forgePRs is a forge's pull requests, by number.
type forgePRs map[int]*forge.PullRequest

func (f forgePRs) Get(_ context.Context, number int) (*forge.PullRequest, error) {
	if pr, ok := f[number]; ok {
		return pr, nil
	}
	return &forge.PullRequest{Number: number}, nil
}

// fleet is a cluster's ResourceRecommends by group (pr-group-by
// namespace): each with its containers, named as a company's are.
type fleet struct {
	groups [][]string // per group, "namespace/name container" per container
	names  []string   // the groups' namespaces
}

func newFleet(r *rand.Rand, items int) fleet {
	teams := []string{"payments", "checkout", "search", "catalog", "identity", "billing", "ledger", "fraud", "shipping", "inventory",
		"notifications", "reporting", "recs", "pricing", "media", "auth", "gateway", "orders", "loyalty", "support"}
	envs := []string{"prod", "staging", "dev", "eu-prod", "us-prod"}
	comps := []string{"api", "worker", "consumer", "scheduler", "frontend", "backend", "sync", "indexer", "cache", "proxy",
		"exporter", "cron", "webhook", "grpc", "importer"}
	sidecars := []string{"istio-proxy", "envoy", "fluent-bit", "otel-collector", "vault-agent", "cloudsql-proxy"}
	var f fleet
	for _, env := range envs {
		for _, team := range teams {
			f.names = append(f.names, team+"-"+env)
			f.groups = append(f.groups, nil)
		}
	}
	for i := range items {
		g := i % len(f.names)
		ns := f.names[g]
		comp := comps[r.IntN(len(comps))]
		name := fmt.Sprintf("%s-%s-%s", strings.SplitN(ns, "-", 2)[0], comp, fmt.Sprintf("%x", r.Uint32())[:5])
		f.groups[g] = append(f.groups[g], ns+"/"+name+" "+comp)
		if r.IntN(3) == 0 {
			f.groups[g] = append(f.groups[g], ns+"/"+name+" "+sidecars[r.IntN(len(sidecars))])
		}
	}
	return f
}

// changes are the trailers of a push of group g: every container's CPU
// and memory, at values of the day.
func (f fleet) changes(r *rand.Rand, g int) string {
	var b strings.Builder
	for _, c := range f.groups[g] {
		fmt.Fprintf(&b, "Recommend-Job-Change: %s cpu %dm %dm\n", c, 10+r.IntN(4000), 10+r.IntN(4000))
		fmt.Fprintf(&b, "Recommend-Job-Change: %s memory %dMi %dMi\n", c, 16+r.IntN(8000), 16+r.IntN(8000))
	}
	return b.String()
}

// TestRecordSixtyRunsAtScale drives the record through 60 daily runs at
// 20,000 ResourceRecommends in 100 groups, each group's pull request
// updated by every run and squash-merged once a week, the groups' merges
// spread over the days: each run reads the record, finds what was merged
// (forge.ReadMerged, against a repository and a forge), learns and
// pushes as a run does (ledger), and writes the record. Every write must
// be accepted by a ConfigMaps that refuses what the apiserver refuses,
// leave nothing out, and each run must find every change merged in the
// last 30 days. Before, the one ConfigMap of the record passed 1 MiB at
// the second run and every later write was refused.
func TestRecordSixtyRunsAtScale(t *testing.T) {
	const items, runs, mergeEvery = 20000, 60, 7
	ctx := context.Background()
	r := rand.New(rand.NewPCG(5, 6))
	f := newFleet(r, items)

	base := newBase(t, time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC))
	opts := gitops.Options{URL: base.url, BaseBranch: "main"}
	prs := forgePRs{}
	client, largest := limitedConfigMaps(t)
	cms := client.CoreV1().ConfigMaps("recommend-job")
	var logs bytes.Buffer
	store := record.New(cms, "recommend-job", "", record.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))

	type mergedChange struct {
		at   time.Time
		keys []string
	}
	var wantMerged []mergedChange // each squash merge: its time and its changes
	open := make([]int, len(f.names))
	head := make([]gitops.Pushed, len(f.names))
	nextPR := 1
	start := time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)
	var took []time.Duration
	for day := range runs {
		now := start.Add(time.Duration(day) * 24 * time.Hour)
		// A person merges a week's pull requests overnight.
		for g := range f.names {
			if open[g] == 0 || (g+day)%mergeEvery != 0 {
				continue
			}
			at := now.Add(-time.Duration(1+g%5) * time.Hour)
			squash := base.commit(t, "squash of "+head[g].Branch, at)
			prs[open[g]] = &forge.PullRequest{Number: open[g], Merged: true, HeadCommit: head[g].Commit,
				MergeCommit: squash.String(), ClosedAt: at}
			m := mergedChange{at: at}
			for _, c := range gitops.ParseChanges(head[g].Changes) {
				m.keys = append(m.keys, changeKey(squash.String(), c))
			}
			wantMerged = append(wantMerged, m)
			open[g] = 0
		}

		// The run: what was merged, then a push to every group's pull
		// request, then the record.
		l := &ledger{}
		pushed, err := store.Load(ctx)
		if err != nil {
			t.Fatalf("run %d: %v", day, err)
		}
		since := now.Add(-30 * 24 * time.Hour)
		merged, err := forge.ReadMerged(ctx, opts, prs, pushed, since, 0)
		if err != nil {
			t.Fatalf("run %d: %v", day, err)
		}
		found := map[string]bool{}
		for _, c := range merged.Changes {
			found[changeKey(c.Commit, c)] = true
		}
		for _, m := range wantMerged {
			if m.at.Before(since) {
				continue
			}
			for _, k := range m.keys {
				if !found[k] {
					t.Fatalf("run %d: the change %s merged %s ago is not found", day, k, now.Sub(m.at))
				}
			}
		}
		l.learnt(pushed, merged)
		for g, ns := range f.names {
			if open[g] == 0 {
				open[g], nextPR = nextPR, nextPR+1
			}
			sum := sha1.Sum(fmt.Appendf(nil, "%d/%d", day, g))
			head[g] = gitops.Pushed{Commit: fmt.Sprintf("%x", sum), Branch: "recommend-job/" + ns, PullRequest: open[g],
				Time: now.Add(time.Duration(g) * time.Second), Changes: f.changes(r, g)}
			l.added = append(l.added, head[g])
		}
		began := time.Now()
		if err := store.Update(ctx, func(cur []gitops.Pushed) []gitops.Pushed { return l.merge(cur, now) }); err != nil {
			t.Fatalf("run %d: %v", day, err)
		}
		took = append(took, time.Since(began))
	}

	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	size := 0
	for _, cm := range list.Items {
		size += len(cm.BinaryData["pushed.json.gz"])
	}
	entries, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if *largest > record.MaxPage {
		t.Errorf("a ConfigMap of the record held %d bytes, want at most %d", *largest, record.MaxPage)
	}
	if strings.Contains(logs.String(), "left out") {
		t.Errorf("the record left commits out:\n%s", logs.String())
	}
	var total time.Duration
	for _, d := range took {
		total += d
	}
	t.Logf("after %d runs at %d ResourceRecommends: %d bytes in %d ConfigMaps (largest %d), %d entries; Update took %s on average, %s the last",
		runs, items, size, len(list.Items), *largest, len(entries), total/time.Duration(len(took)), took[len(took)-1])
}

// changeKey identifies a merged change: its commit, container, resource
// and request.
func changeKey(commit string, c gitops.RecordedChange) string {
	return commit + " " + c.Item + " " + c.Container + " " + string(c.Resource) + " " + c.To.String()
}

// baseBranch is the base branch "main" of a bare repository, whose
// commits change no file.
type baseBranch struct {
	repo *git.Repository
	url  string
	tree plumbing.Hash
	head plumbing.Hash
}

// newBase returns a bare repository with one commit at at on main.
func newBase(t *testing.T, at time.Time) *baseBranch {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fleet.git")
	repo, err := git.PlainInit(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	obj := repo.Storer.NewEncodedObject()
	if err := (&object.Tree{}).Encode(obj); err != nil {
		t.Fatal(err)
	}
	tree, err := repo.Storer.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	b := &baseBranch{repo: repo, url: "file://" + dir, tree: tree}
	b.commit(t, "the fleet", at)
	main := plumbing.NewBranchReferenceName("main")
	if err := repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, main)); err != nil {
		t.Fatal(err)
	}
	return b
}

// commit adds a commit made at at to main, and returns it.
func (b *baseBranch) commit(t *testing.T, message string, at time.Time) plumbing.Hash {
	t.Helper()
	sig := object.Signature{Name: "A Person", Email: "person@example.com", When: at}
	c := &object.Commit{Author: sig, Committer: sig, Message: message, TreeHash: b.tree}
	if !b.head.IsZero() {
		c.ParentHashes = []plumbing.Hash{b.head}
	}
	obj := b.repo.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		t.Fatal(err)
	}
	h, err := b.repo.Storer.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName("main"), h)); err != nil {
		t.Fatal(err)
	}
	b.head = h
	return h
}
