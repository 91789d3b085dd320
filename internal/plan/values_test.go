package plan

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestDelta checks that increases and decreases are kept apart, so that a
// raise is never hidden in a net saving, and that Merge adds both sides.
func TestDelta(t *testing.T) {
	tests := []struct {
		name               string
		adds               []float64
		net, raised, cut   float64
		mergedRaised, mCut float64
	}{
		{name: "nothing", mergedRaised: 1, mCut: -1},
		{name: "a raise hidden in a saving", adds: []float64{2, -5}, net: -3, raised: 2, cut: -5, mergedRaised: 3, mCut: -6},
		{name: "raises only", adds: []float64{1, 0.5}, net: 1.5, raised: 1.5, mergedRaised: 2.5, mCut: -1},
		{name: "zero counts nowhere", adds: []float64{0}, mergedRaised: 1, mCut: -1},
	}
	for _, tt := range tests {
		var d Delta
		for _, v := range tt.adds {
			d.Add(v)
		}
		if d.Net != tt.net || d.Raised != tt.raised || d.Cut != tt.cut {
			t.Errorf("%s: %+v, want net %v raised %v cut %v", tt.name, d, tt.net, tt.raised, tt.cut)
		}
		if d.Raised < 0 || d.Cut > 0 || d.Net != d.Raised+d.Cut {
			t.Errorf("%s: %+v breaks Raised >= 0, Cut <= 0, Net = Raised + Cut", tt.name, d)
		}
		d.Merge(Delta{Net: 0, Raised: 1, Cut: -1})
		if d.Raised != tt.mergedRaised || d.Cut != tt.mCut || d.Net != tt.net {
			t.Errorf("%s: merged %+v, want raised %v cut %v net %v", tt.name, d, tt.mergedRaised, tt.mCut, tt.net)
		}
	}
}

// TestLine checks that text from the cluster or the repository can never
// start a line of its own or drive a terminal.
func TestLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"two\nlines", "two lines"},
		{"a\r\nSigned-off-by: x", "a Signed-off-by: x"},
		{"  runs \t of   space  ", "runs of space"},
		{"esc\x1b[31mred", "esc [31mred"},
		{"line\u2028sep\u2029para", "line sep para"},
		{"bidi\u202eevil\u2066", "bidi evil"},
		{"bad \xff byte", "bad \uFFFD byte"},
		{"", ""},
	}
	for _, tt := range tests {
		got := Line(tt.in)
		if got != tt.want {
			t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if strings.ContainsAny(got, "\n\r\u2028\u2029") {
			t.Errorf("Line(%q) = %q still breaks lines", tt.in, got)
		}
	}
}

// TestItemViews checks an item's key, whether it regressed, and when
// AllResources stops early.
func TestItemViews(t *testing.T) {
	q := resource.MustParse("100m")
	it := Item{Namespace: "shop", Name: "web", Containers: []Container{
		{Name: "a", Resources: []Resource{{Resource: corev1.ResourceCPU}, {Resource: corev1.ResourceMemory}}},
		{Name: "b", Resources: []Resource{{Resource: corev1.ResourceCPU}}},
	}}
	if it.Key() != "shop/web" {
		t.Errorf("Key = %q", it.Key())
	}
	n := 0
	for range it.AllResources() {
		n++
		if n == 2 {
			break
		}
	}
	if n != 2 {
		t.Errorf("stopped after %d resources, want 2", n)
	}
	for _, tt := range []struct {
		name    string
		watches []Watch
		want    bool
	}{
		{"none", nil, false},
		{"regressed without a correction", []Watch{{State: WatchRegressed}}, false},
		{"verified with a correction", []Watch{{State: WatchVerified, Correction: &q}}, false},
		{"regressed with a correction", []Watch{{State: WatchWatching}, {State: WatchRegressed, Correction: &q}}, true},
	} {
		it.Watches = tt.watches
		if got := it.Regressed(); got != tt.want {
			t.Errorf("%s: Regressed = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestResourceViews checks what a container requests now and whether it
// has a value to write.
func TestResourceViews(t *testing.T) {
	req, lim := resource.MustParse("100m"), resource.MustParse("1")
	for _, tt := range []struct {
		name string
		r    Resource
		want *resource.Quantity
	}{
		{"request", Resource{Current: &req, LiveLimit: &lim}, &req},
		{"limit alone, requested for it", Resource{LiveLimit: &lim}, &lim},
		{"neither", Resource{}, nil},
	} {
		if got := tt.r.HeldRequest(); got != tt.want {
			t.Errorf("%s: HeldRequest = %v, want %v", tt.name, got, tt.want)
		}
	}
	for _, tt := range []struct {
		name string
		c    Container
		want bool
	}{
		{"nothing", Container{}, false},
		{"held back", Container{Resources: []Resource{{Recommended: &req, HeldBack: true}}}, false},
		{"a request", Container{Resources: []Resource{{}, {Request: &req}}}, true},
		{"a limit", Container{Resources: []Resource{{Limit: &lim}}}, true},
	} {
		if got := tt.c.Writes(); got != tt.want {
			t.Errorf("%s: Writes = %v, want %v", tt.name, got, tt.want)
		}
	}
	u := UtilizationTarget{From: 80, To: 80}
	if u.Changes() {
		t.Error("a target that stays changes")
	}
	u.To = 60
	if !u.Changes() {
		t.Error("a target that moves does not change")
	}
}

// TestReportLeavesOut checks that fields a stage needs but a reader does
// not stay out of the report, and the report's names are those the README
// documents.
func TestReportLeavesOut(t *testing.T) {
	q := resource.MustParse("100m")
	p := Plan{Items: []Item{{
		Namespace: "shop", Name: "web", Valid: true,
		Labels:     map[string]string{"secret-label": "x"},
		Object:     Object{Name: "object-name"},
		Containers: []Container{{Name: "app", Landed: true, Resources: []Resource{{Resource: "cpu", Recommended: &q, Request: &q, LimitsOnly: true}}}},
	}}}
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for _, gone := range []string{"secret-label", "object-name", "Landed", "LimitsOnly", `"Request"`} {
		if strings.Contains(s, gone) {
			t.Errorf("report holds %s: %s", gone, s)
		}
	}
	for _, kept := range []string{`"resourceRecommends":[`, `"recommended":"100m"`, `"dryRun":false`} {
		if !strings.Contains(s, kept) {
			t.Errorf("report lacks %s: %s", kept, s)
		}
	}
}
