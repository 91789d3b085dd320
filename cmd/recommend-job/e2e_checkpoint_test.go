//go:build integration

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

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
// one, and the evidence says where the history came from each time.
func TestEndToEndCheckpoints(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	now := time.Now().Truncate(time.Minute)
	bed := testbedtest.Start(t, testbed.Options{History: webHistory(now)})
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

// assertHistory checks the CPU evidence of every container of it says
// want of its history (empty: nothing).
func assertHistory(t *testing.T, run string, it plan.Item, want string) {
	t.Helper()
	for _, c := range it.Containers {
		for _, r := range c.Resources {
			if r.Resource != "cpu" || r.Evidence == nil {
				continue
			}
			got := r.Evidence.History
			t.Logf("%s: %s cpu: %s", run, c.Name, got)
			if (want == "" && got != "") || (want != "" && !strings.Contains(got, want)) {
				t.Errorf("%s run: %s cpu history %q, want %q", run, c.Name, got, want)
			}
		}
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
			if ea.RawValue != eb.RawValue || *ea.UsageP90 != *eb.UsageP90 || *ea.UsageMax != *eb.UsageMax {
				t.Errorf("%s run: %s p%v %v, usage p90 %v max %v; the stateless run %v, %v, %v", run, key, eb.Percentile*100,
					eb.RawValue, *eb.UsageP90, *eb.UsageMax, ea.RawValue, *ea.UsageP90, *ea.UsageMax)
			}
		}
	}
}
