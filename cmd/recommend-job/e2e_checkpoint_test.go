//go:build integration

package main

import (
	"bytes"
	"context"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/recommend-job/recommend-job/internal/checkpoint"
	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// TestEndToEndCheckpoints runs the job on shop/web's week (three rollouts
// of two pods, two containers) four times on the same data: cold, writing
// its checkpoint; a minute later warm, its window's first day slot dropped
// and the rest of that day read again, with what is new; with checkpoints
// off, at the same moment; and with a page of the checkpoint tampered
// with. Every run gives the same values and percentiles as the stateless
// one, and the evidence of CPU and memory alike says where the history
// came from each time.
func TestEndToEndCheckpoints(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	now := time.Now().Truncate(time.Minute)
	bed := testbedtest.Start(t, testbed.Options{History: checkpointHistory(now)})
	objs := append(shopObjects(t, true), []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: recommend-job\n"))
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), objs...); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}
	repoURL := testbedtest.CreateRepo(t, bed, "gitops", map[string]string{"clusters/prod/web.yaml": webManifest})
	args := bedArgs(t, bed, repoURL, "--git-path", "clusters", "--record-namespace", "recommend-job")
	kube, err := kubernetes.NewForConfig(bed.APIServer.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	cms := kube.CoreV1().ConfigMaps("recommend-job")
	pages := func() []string {
		list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "recommend-job.io/checkpoint=true,recommend-job.io/shard=0"})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, cm := range list.Items {
			names = append(names, cm.Name)
		}
		return names
	}

	cold := entry(t, runJSON(t, ctx, args), "shop", "web")
	assertHistory(t, "cold", cold, "7d read: no checkpoint")
	first := pages()
	if len(first) != 1 {
		t.Fatalf("checkpoint pages after the cold run: %v, want one", first)
	}

	// The next minute: the window moved past the first slot's start.
	time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute + time.Second)))
	warm := entry(t, runJSON(t, ctx, args), "shop", "web")
	stateless := entry(t, runJSON(t, ctx, append(args, "--checkpoints=false")), "shop", "web")
	assertHistory(t, "warm", warm, "7d: 6d")
	assertHistory(t, "stateless", stateless, "")
	assertSameValues(t, "warm", stateless, warm)
	assertSameValues(t, "cold", stateless, cold)
	if second := pages(); len(second) != 1 || second[0] == first[0] {
		t.Errorf("checkpoint pages after the warm run: %v, want one new generation in place of %v", second, first)
	}

	// A page whose data is not what the job wrote is ignored.
	cm, err := cms.Get(ctx, pages()[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range cm.BinaryData {
		v[len(v)/2] ^= 0xff
		cm.BinaryData[k] = v
	}
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	tampered := entry(t, runJSON(t, ctx, args), "shop", "web")
	assertHistory(t, "tampered", tampered, "7d read: checkpoint unreadable")
	assertSameValues(t, "tampered", stateless, tampered)

	// doctor shows how old each namespace's checkpoint is.
	var doc, docErr bytes.Buffer
	if code := run(ctx, append([]string{"doctor"}, args...), &doc, &docErr); code != exitOK {
		t.Errorf("doctor = %d; output:\n%s\nstderr:\n%s", code, doc.String(), docErr.String())
	}
	for _, want := range []string{"checkpoint of 1 targets, written ", "namespace shop: checkpoint "} {
		if !strings.Contains(doc.String(), want) {
			t.Errorf("doctor output lacks %q:\n%s", want, doc.String())
		}
	}
}

// checkpointHistory is web's usage from a day before the window to end,
// as a workload older than the window has. Where the samples start exactly
// at the window's start, the first memory peak of a stateless read (on its
// own grid, from now) falls on the window's start and that of a
// checkpointed read (on whole hours) before any sample; between 23:00 and
// midnight that peak alone makes a first day of the usage chart, which the
// other read does not have.
func checkpointHistory(end time.Time) []testbed.Series {
	return webHistoryFrom(end.Add(-8*24*time.Hour), end)
}

// assertHistory checks the CPU and memory evidence of every container of
// it says want of its history (empty: nothing).
func assertHistory(t *testing.T, run string, it plan.Item, want string) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range it.Containers {
		for _, r := range c.Resources {
			if r.Evidence == nil {
				continue
			}
			seen[string(r.Resource)] = true
			got := r.Evidence.History
			t.Logf("%s: %s %s: %s", run, c.Name, r.Resource, got)
			if (want == "" && got != "") || (want != "" && !strings.Contains(got, want)) {
				t.Errorf("%s run: %s %s history %q, want %q", run, c.Name, r.Resource, got, want)
			}
		}
	}
	if !seen["cpu"] || !seen["memory"] {
		t.Errorf("%s run: evidence of %v, want of cpu and memory", run, seen)
	}
}

// assertSameValues checks that b recommends what a does, from the same
// percentiles and usage, as the stateless run a.
func assertSameValues(t *testing.T, run string, a, b plan.Item) {
	t.Helper()
	if len(a.Containers) != len(b.Containers) {
		t.Fatalf("%s run: %d containers, the stateless run %d", run, len(b.Containers), len(a.Containers))
	}
	for i, c := range a.Containers {
		for j, ra := range c.Resources {
			rb := b.Containers[i].Resources[j]
			key := c.Name + "/" + string(ra.Resource)
			if quantity(ra.Recommended) != quantity(rb.Recommended) {
				t.Errorf("%s run: %s recommended %s, the stateless run %s", run, key, quantity(rb.Recommended), quantity(ra.Recommended))
			}
			ea, eb := ra.Evidence, rb.Evidence
			if ea == nil || eb == nil {
				t.Errorf("%s run: %s evidence %v and %v", run, key, ea, eb)
				continue
			}
			if !sameFloat(ea.RawValue, eb.RawValue) || !sameFloat(*ea.UsageP90, *eb.UsageP90) || !sameFloat(*ea.UsageMax, *eb.UsageMax) {
				t.Errorf("%s run: %s p%v %v, usage p90 %v max %v; the stateless run %v, %v, %v", run, key, eb.Percentile*100,
					eb.RawValue, *eb.UsageP90, *eb.UsageMax, ea.RawValue, *ea.UsageP90, *ea.UsageMax)
			}
			// The usage chart's days: the same periods, p90 and max.
			if len(ea.Usage) < 7 || ea.UsagePeriod != "day" || !slices.EqualFunc(ea.Usage, eb.Usage, func(x, y plan.UsagePoint) bool {
				return x.Start.Equal(y.Start) && sameFloat(x.P90, y.P90) && sameFloat(x.Max, y.Max)
			}) {
				t.Errorf("%s run: %s usage per %s %v; the stateless run per %s %v", run, key, eb.UsagePeriod, eb.Usage, ea.UsagePeriod, ea.Usage)
			}
		}
	}
}

// sameFloat reports whether a and b are the same value but for the last
// bits: a checkpointed read ends on a whole interval and a stateless one at
// now, so Prometheus evaluates the same rates at other instants, and 0.3
// may come back as 0.30000000000000004.
func sameFloat(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// TestEndToEndCheckpointFallbacks runs the job on web's week in two
// namespaces, shop and blog, through a proxy in front of Prometheus that
// can refuse blog's memory queries: after a cold run, a run in which blog's
// read fails midway keeps blog's checkpoint where it was and moves shop's;
// a checkpoint older than the window and one of a Deployment deleted and
// created again (another UID) are read cold, say so, and give the values
// of a run without checkpoints.
func TestEndToEndCheckpointFallbacks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	now := time.Now().Truncate(time.Minute)
	shop := checkpointHistory(now)
	series := slices.Clone(shop)
	for _, s := range shop {
		if s.Labels["namespace"] != "shop" {
			continue
		}
		labels := maps.Clone(s.Labels)
		labels["namespace"] = "blog"
		series = append(series, testbed.Series{Name: s.Name, Labels: labels, Samples: s.Samples})
	}
	bed := testbedtest.Start(t, testbed.Options{History: series})
	inBlog := func(s string) []byte {
		return []byte(strings.NewReplacer("namespace: shop", "namespace: blog", "name: shop", "name: blog").Replace(s))
	}
	deployment := webManifest[strings.Index(webManifest, "---")+4:]
	objs := append(shopObjects(t, true), inBlog(clusterObjects), inBlog(deployment),
		[]byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: recommend-job\n"))
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), objs...); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}

	// The proxy refuses blog's memory queries while refuse is set: blog's
	// CPU is read and folded, then its read fails.
	var refuse atomic.Bool
	target, err := url.Parse(bed.Prometheus.URL)
	if err != nil {
		t.Fatal(err)
	}
	forward := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		q := r.Form.Get("query")
		if refuse.Load() && strings.Contains(q, `namespace="blog"`) && strings.Contains(q, "container_memory_working_set_bytes") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"refused by the test"}`))
			return
		}
		// ParseForm read the body: send the form again.
		r.Body = io.NopCloser(strings.NewReader(r.PostForm.Encode()))
		r.ContentLength = int64(len(r.PostForm.Encode()))
		forward.ServeHTTP(w, r)
	}))
	defer proxy.Close()

	repoURL := testbedtest.CreateRepo(t, bed, "gitops", map[string]string{
		"clusters/prod/web.yaml": webManifest,
		"clusters/blog/web.yaml": string(inBlog(webManifest)),
	})
	args := append(bedArgs(t, bed, repoURL, "--git-path", "clusters", "--record-namespace", "recommend-job"),
		"--prometheus-url", proxy.URL)
	kube, err := kubernetes.NewForConfig(bed.APIServer.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	store := checkpoint.New(kube.CoreV1().ConfigMaps("recommend-job"), "recommend-job", 0)
	ends := func() map[string]time.Time {
		c, err := store.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]time.Time{}
		for k, e := range c.Entries {
			out[k] = e.End
		}
		return out
	}

	assertHistory(t, "cold", entry(t, runJSON(t, ctx, args), "blog", "web"), "7d read: no checkpoint")
	before := ends()
	if _, ok := before["blog/Deployment/web"]; !ok || len(before) != 2 {
		t.Fatalf("checkpoint after the cold run: %v, want shop's and blog's web", before)
	}

	// The next minute, blog's memory cannot be read: blog's checkpoint
	// stays as it was, shop's moves on.
	time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute + time.Second)))
	refuse.Store(true)
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, &stdout, &stderr)
	refuse.Store(false)
	if !strings.Contains(stderr.String(), "refused by the test") {
		t.Fatalf("the run with blog's memory refused (exit %d) does not say so:\n%s", code, stderr.String())
	}
	after := ends()
	for k, end := range before {
		blog := strings.HasPrefix(k, "blog/")
		switch {
		case blog && !after[k].Equal(end):
			t.Errorf("after blog's failed read, its checkpoint %s ends at %s, want %s as before", k, after[k], end)
		case !blog && !after[k].After(end):
			t.Errorf("after blog's failed read, shop's checkpoint %s ends at %s, want past %s", k, after[k], end)
		}
	}

	stateless := entry(t, runJSON(t, ctx, append(args, "--checkpoints=false")), "shop", "web")

	// A checkpoint that ends before the window's start holds none of it.
	// Saved with a target's checkpoint larger than a page (its hundreds of
	// containers), which is left out and named while shop's is written.
	old, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var entries []checkpoint.Packed
	for _, p := range old.Entries {
		e, err := p.Entry()
		if err != nil {
			t.Fatal(err)
		}
		e.End = e.End.Add(-8 * 24 * time.Hour)
		if p, err = checkpoint.Pack(e); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, p)
	}
	huge := checkpoint.Entry{Namespace: "big", Kind: "Deployment", Name: "fleet", UID: "uid-fleet", End: time.Now(), Folds: map[string][]byte{}}
	rng := rand.New(rand.NewPCG(1, 2))
	for c := range 80 {
		data := make([]byte, 4096) // incompressible
		for j := range data {
			data[j] = byte(rng.IntN(256))
		}
		name := "c" + strconv.Itoa(c)
		huge.Containers = append(huge.Containers, name)
		huge.Folds[name+"/cpu"] = data
	}
	hugePacked, err := checkpoint.Pack(huge)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := store.Save(ctx, append(entries, hugePacked), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(saved.LeftOut) != 1 || saved.LeftOut[0].Key != "big/Deployment/fleet" || saved.LeftOut[0].Bytes <= checkpoint.MaxPage {
		t.Errorf("Save() left out %+v, want big/Deployment/fleet alone, larger than a page", saved.LeftOut)
	}
	loaded, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := loaded.Entries["shop/Deployment/web"]; !ok || len(loaded.Entries) != len(entries) {
		t.Errorf("Load() after a save with an entry left out = %d entries, shop's there: %v; want the %d others", len(loaded.Entries), ok, len(entries))
	}
	stale := entry(t, runJSON(t, ctx, args), "shop", "web")
	assertHistory(t, "stale", stale, "7d read: checkpoint older than the window")
	assertSameValues(t, "stale", stateless, stale)

	// The Deployment deleted and created again is another workload.
	deployments := kube.AppsV1().Deployments("shop")
	if err := deployments.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := deployments.Get(ctx, "web", metav1.GetOptions{}); apierrors.IsNotFound(err) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), []byte(deployment)); err != nil {
		t.Fatal(err)
	}
	foreign := entry(t, runJSON(t, ctx, args), "shop", "web")
	assertHistory(t, "foreign", foreign, "7d read: checkpoint of another UID")
	assertSameValues(t, "foreign", stateless, foreign)
	assertHistory(t, "blog after shop's recreation", entry(t, runJSON(t, ctx, args), "blog", "web"), "from checkpoint")
}
