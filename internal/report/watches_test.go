package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// TestWriteTableWatches checks the section of merged changes: a row per
// container resource with the short commit, regressed ones first, what
// each watch found, and the cluster's text on one line.
func TestWriteTableWatches(t *testing.T) {
	effective := time.Date(2026, 11, 22, 1, 16, 0, 0, time.UTC)
	watch := func(state string, res corev1.ResourceName, from, to string) plan.Watch {
		w := plan.Watch{Container: "app", Resource: res, From: q(from), To: *q(to), Commit: "d29e36b61cfb0cefdea1ba2c9c2ba43175fae59e",
			Committed: effective.Add(-time.Hour), State: state}
		if state != plan.WatchPending {
			w.Effective = &effective
		}
		return w
	}
	regressed := watch(plan.WatchRegressed, corev1.ResourceMemory, "512Mi", "256Mi")
	regressed.Regression, regressed.Correction = "2 OOM kills after, 0 before", q("512Mi")
	corrective := watch(plan.WatchWatching, corev1.ResourceMemory, "256Mi", "512Mi")
	corrective.Corrective = true
	tests := []struct {
		name    string
		items   []plan.Item
		want    []string // lines, in order
		lack    []string
		section bool
	}{
		{name: "every state, regressed first", section: true, items: []plan.Item{
			{Namespace: "shop", Name: "api", Valid: true, Watches: []plan.Watch{
				watch(plan.WatchVerified, corev1.ResourceCPU, "1", "500m"),
				watch(plan.WatchPending, corev1.ResourceMemory, "1Gi", "768Mi"),
				watch(plan.WatchWatching, "cpu", "2", "1")}},
			{Namespace: "shop", Name: "web", Valid: true, Group: "regression/shop/web", Watches: []plan.Watch{regressed}},
		}, want: []string{
			"merged changes of the job:",
			"RESOURCERECOMMEND  CONTAINER  RESOURCE  CHANGE          COMMIT        STATE      DETAIL",
			"shop/web           app        memory    512Mi -> 256Mi  d29e36b61cfb  regressed  2 OOM kills after, 0 before; correction 512Mi in group regression/shop/web (took effect 2026-11-22 01:16 UTC)",
			"shop/api           app        cpu       2 -> 1          d29e36b61cfb  watching   took effect 2026-11-22 01:16 UTC; nothing worse so far",
			"shop/api           app        memory    1Gi -> 768Mi    d29e36b61cfb  pending    committed 2026-11-22 00:16 UTC; not yet what the cluster runs",
			"shop/api           app        cpu       1 -> 500m       d29e36b61cfb  verified   took effect 2026-11-22 01:16 UTC; nothing worse in the period",
		}},
		{name: "a correction under watch", section: true, items: []plan.Item{{Namespace: "shop", Name: "web", Valid: true, Watches: []plan.Watch{corrective}}},
			want: []string{"256Mi -> 512Mi (a correction)"}},
		{name: "a hostile container stays on its line", section: true, items: []plan.Item{{Namespace: "shop", Name: "web", Valid: true,
			Watches: []plan.Watch{func() plan.Watch { w := corrective; w.Container = "app\n\x1b[2Jevil"; return w }()}}},
			want: []string{"shop/web           app [2Jevil  memory"}, lack: []string{"\x1b", "\nevil"}},
		{name: "no watches, no section", items: []plan.Item{{Namespace: "shop", Name: "web", Valid: true}},
			lack: []string{"merged changes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, &plan.Plan{Items: tt.items}, FormatTable); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			if got := strings.Contains(out, "merged changes of the job:"); got != tt.section {
				t.Errorf("section shown = %v, want %v:\n%s", got, tt.section, out)
			}
			at := 0
			for _, want := range tt.want {
				i := strings.Index(out[at:], want)
				if i < 0 {
					t.Errorf("output lacks %q after offset %d:\n%s", want, at, out)
					continue
				}
				at += i + len(want)
			}
			for _, lack := range tt.lack {
				if strings.Contains(out, lack) {
					t.Errorf("output holds %q:\n%s", lack, out)
				}
			}
		})
	}
}

// TestWriteJSONWatches checks the documented fields of .watches[].
func TestWriteJSONWatches(t *testing.T) {
	effective := time.Date(2026, 11, 22, 1, 16, 0, 0, time.UTC)
	peak := float64(240 << 20)
	p := &plan.Plan{Items: []plan.Item{{Namespace: "shop", Name: "web", Valid: true, Watches: []plan.Watch{{
		Container: "app", Resource: corev1.ResourceMemory, From: q("512Mi"), To: *q("256Mi"), Commit: "d29e36b6", CommitURL: "https://forge.example/c/d29e36b6",
		Committed: effective, Effective: &effective, State: plan.WatchRegressed,
		Before:     &plan.Observed{From: effective.Add(-72 * time.Hour), To: effective},
		After:      &plan.Observed{From: effective, To: effective.Add(time.Hour), OOMKills: 2, MemoryPeak: &peak},
		Regression: "2 OOM kills after, 0 before", Correction: q("512Mi"),
	}}}}}
	var buf bytes.Buffer
	if err := Write(&buf, p, FormatJSON); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ResourceRecommends []struct {
			Watches []map[string]json.RawMessage `json:"watches"`
		} `json:"resourceRecommends"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.ResourceRecommends) != 1 || len(doc.ResourceRecommends[0].Watches) != 1 {
		t.Fatalf("no watch in %s", buf.String())
	}
	w := doc.ResourceRecommends[0].Watches[0]
	for _, field := range []string{"container", "resource", "from", "to", "commit", "commitURL", "committed", "effective", "state", "before", "after", "regression", "correction"} {
		if _, ok := w[field]; !ok {
			t.Errorf(".watches[0] lacks %q: %s", field, buf.String())
		}
	}
	var after map[string]json.RawMessage
	if err := json.Unmarshal(w["after"], &after); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"from", "to", "oomKills", "memoryPeak"} {
		if _, ok := after[field]; !ok {
			t.Errorf(".watches[0].after lacks %q: %s", field, w["after"])
		}
	}
}

// TestWriteTableAutoscalers checks the section of HPA targets that move
// with the requests: a row per moving target, none for one that stays.
func TestWriteTableAutoscalers(t *testing.T) {
	p := &plan.Plan{Items: []plan.Item{{Namespace: "shop", Name: "web", Valid: true, Autoscalers: []plan.Autoscaler{{
		Name: "web", File: "apps/hpa.yaml", Targets: []plan.UtilizationTarget{
			{Resource: "cpu", From: 40, To: 80, RequestFrom: q("500m"), RequestTo: q("250m")},
			{Resource: "memory", Container: "app", From: 70, To: 70, RequestFrom: q("1Gi"), RequestTo: q("1Gi")},
		}}}}}}
	var out bytes.Buffer
	if err := Write(&out, p, FormatTable); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"autoscaler targets moved with the requests:\n",
		"RESOURCERECOMMEND  HPA  RESOURCE  OF   TARGET      REQUEST       FILE\n",
		"shop/web           web  cpu       pod  40% -> 80%  500m -> 250m  apps/hpa.yaml\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "70% -> 70%") {
		t.Errorf("report lists a target that stays:\n%s", out.String())
	}
}

// TestWriteTableUnverified checks that a run that could not check every
// merged change says so, on one line.
func TestWriteTableUnverified(t *testing.T) {
	var out bytes.Buffer
	p := &plan.Plan{Unverified: "cannot read what followed the merged changes in namespaces shop\n\x1b[2Jx"}
	if err := Write(&out, p, FormatTable); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "\nmerged changes not all checked: cannot read what followed the merged changes in namespaces shop") ||
		strings.Contains(out.String(), "\x1b") {
		t.Errorf("report:\n%q", out.String())
	}
}

// TestWriteTableUnrecorded checks that a run whose record could not be
// written says so, on one line.
func TestWriteTableUnrecorded(t *testing.T) {
	var out bytes.Buffer
	p := &plan.Plan{Unrecorded: "writing the record recommend-job/recommend-job-record: forbidden\n\x1b[2Jx"}
	if err := Write(&out, p, FormatTable); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "\nthis run's pushes not recorded, so not verified once merged: writing the record recommend-job/recommend-job-record: forbidden") ||
		strings.Contains(out.String(), "\x1b") {
		t.Errorf("report:\n%q", out.String())
	}
}
