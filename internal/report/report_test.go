package report

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/plan"
)

func sample() *plan.Plan {
	return &plan.Plan{
		Items: []plan.Item{
			{
				Namespace: "shop", Name: "web", Valid: true,
				Target: plan.Target{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
				Containers: []plan.Container{{Name: "app", Resources: []plan.Resource{
					{Resource: "cpu", Current: q("500m"), Recommended: q("390m"), Changed: true,
						Evidence: &plan.Evidence{Samples: 10080, Percentile: 0.9, RawValue: 0.3, BufferPercent: 30}},
					{Resource: "memory", Current: q("256Mi"), Reason: "insufficient data: no samples in the window"},
				}}},
				Source: &plan.Source{File: "apps/web.yaml", Changed: true},
			},
			{
				Namespace: "shop", Name: "worker",
				Target: plan.Target{Kind: "Deployment", Name: "worker"},
				Error:  &plan.Error{Code: "ContainersNotFound", Message: "container main is not found"},
			},
		},
		Git: &plan.Git{Branch: "recommend-job/main", Commit: "0123456789abcdef", Pushed: true, Files: []string{"apps/web.yaml"}},
	}
}

func TestWriteJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, sample(), FormatJSON); err != nil {
		t.Fatal(err)
	}
	// The field names are a documented interface: check them by name.
	var doc struct {
		DryRun             *bool `json:"dryRun"`
		ResourceRecommends []struct {
			Namespace  string `json:"namespace"`
			Name       string `json:"name"`
			Valid      *bool  `json:"valid"`
			Error      *struct{ Code, Message string }
			Containers []struct {
				Name      string `json:"name"`
				Resources []struct {
					Resource    string          `json:"resource"`
					Current     string          `json:"current"`
					Recommended string          `json:"recommended"`
					Changed     bool            `json:"changed"`
					Reason      string          `json:"reason"`
					Evidence    json.RawMessage `json:"evidence"`
				} `json:"resources"`
			} `json:"containers"`
			Source *struct {
				File    string `json:"file"`
				Changed bool   `json:"changed"`
			} `json:"source"`
		} `json:"resourceRecommends"`
		Git *struct {
			Branch string   `json:"branch"`
			Commit string   `json:"commit"`
			Pushed bool     `json:"pushed"`
			Files  []string `json:"files"`
		} `json:"git"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, buf.String())
	}
	if doc.DryRun == nil || len(doc.ResourceRecommends) != 2 || doc.Git == nil {
		t.Fatalf("missing top-level fields in %s", buf.String())
	}
	web := doc.ResourceRecommends[0]
	cpu := web.Containers[0].Resources[0]
	if web.Valid == nil || !*web.Valid || cpu.Current != "500m" || cpu.Recommended != "390m" || !cpu.Changed || len(cpu.Evidence) == 0 {
		t.Errorf("web entry = %+v", web)
	}
	if mem := web.Containers[0].Resources[1]; mem.Recommended != "" || !strings.HasPrefix(mem.Reason, "insufficient data") {
		t.Errorf("memory without data = %+v, want no recommendation and a reason", mem)
	}
	if !strings.Contains(buf.String(), `"percentileValue": 0.3`) {
		t.Errorf("evidence lacks percentileValue: %s", buf.String())
	}
	worker := doc.ResourceRecommends[1]
	if worker.Valid == nil || *worker.Valid || worker.Error == nil || worker.Error.Code != "ContainersNotFound" {
		t.Errorf("worker entry = %+v, want invalid with its code", worker)
	}
	if doc.Git.Commit != "0123456789abcdef" || !doc.Git.Pushed || doc.Git.Files[0] != "apps/web.yaml" {
		t.Errorf("git = %+v", doc.Git)
	}
}

func TestWriteTable(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, sample(), FormatTable); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"RESOURCERECOMMEND",
		"shop/web",
		"500m",
		"390m",
		"insufficient data: no samples in the window",
		"invalid: ContainersNotFound: container main is not found",
		"pushed 0123456789ab to branch recommend-job/main (apps/web.yaml)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if lines := strings.Count(out, "\n"); lines != 6 {
		t.Errorf("table has %d lines, want a header, 3 rows, a blank line and the git line:\n%s", lines, out)
	}
}

func TestWriteUnknownFormat(t *testing.T) {
	if err := Write(&bytes.Buffer{}, sample(), "xml"); err == nil {
		t.Error("Write(xml) error = nil")
	}
}

// q is a quantity for a test's plan.
func q(s string) *resource.Quantity {
	v := resource.MustParse(s)
	return &v
}

func TestTableShowsTenantTextInert(t *testing.T) {
	p := &plan.Plan{Items: []plan.Item{{
		Namespace: "shop", Name: "web\x1b[2J\x1b[31mfake\nshop/evil",
		Target: plan.Target{Kind: "Deployment", Name: "web\tx"},
		Error:  &plan.Error{Code: "X", Message: "bad\r\n\x1b]0;title\x07"},
	}}, Git: &plan.Git{Branch: "b", Diff: "+ a\x1b[1mb\n", Files: []string{"a.yaml"}}, DryRun: true}
	var buf bytes.Buffer
	if err := Write(&buf, p, FormatTable); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.ContainsAny(out, "\x1b\r\x07") {
		t.Errorf("table holds control characters: %q", out)
	}
	rows, _, _ := strings.Cut(out, "\n\n")
	if n := strings.Count(rows, "\n"); n != 1 {
		t.Errorf("table has %d rows, want the header and one: %q", n+1, out)
	}
	if !strings.Contains(out, "+ a\uFFFD[1mb\n") {
		t.Errorf("diff lines = %q, want the escape shown as U+FFFD and the line kept", out)
	}
}

// TestTableGroupsSummed checks that the run-wide git, when it only sums
// up the groups, is not printed as a branch of its own: each group's line
// says what happened to it; the JSON keeps the sum.
func TestTableGroupsSummed(t *testing.T) {
	p := &plan.Plan{
		Git: &plan.Git{Pushed: true, Files: []string{"a.yaml"}, Branches: []string{"rj-a"}},
		Groups: []plan.Group{
			{Name: "namespace/a", Git: &plan.Git{Branch: "rj-a", Commit: "0123456789abcdef", Pushed: true, Files: []string{"a.yaml"}}},
		},
	}
	var buf bytes.Buffer
	if err := Write(&buf, p, FormatTable); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if n := strings.Count(out, "pushed "); n != 1 || !strings.Contains(out, "group namespace/a:\npushed 0123456789ab to branch rj-a") {
		t.Errorf("table prints %d pushed lines, want the group's alone:\n%s", n, out)
	}
	buf.Reset()
	if err := Write(&buf, p, FormatJSON); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"branches":["rj-a"]`) && !strings.Contains(buf.String(), `"branches": [`) {
		t.Errorf("JSON lacks git.branches:\n%s", buf.String())
	}
}

// TestTableMissingCurrent checks that a request that was not set shows as
// none, not as a quantity of 0 nor a dash a reader could take for one.
func TestTableMissingCurrent(t *testing.T) {
	p := &plan.Plan{Items: []plan.Item{{
		Namespace: "demo1", Name: "guestbook-ui", Valid: true,
		Target: plan.Target{Kind: "Deployment", Name: "guestbook-ui"},
		Containers: []plan.Container{{Name: "guestbook-ui", Resources: []plan.Resource{
			{Resource: "memory", Recommended: q("54Mi"), Request: q("54Mi"), Changed: true},
		}}},
	}}}
	var buf bytes.Buffer
	if err := Write(&buf, p, FormatTable); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`memory\s+none\s+54Mi`).MatchString(buf.String()) {
		t.Errorf("table does not show the missing request as none:\n%s", buf.String())
	}
}

// TestWriteJSONAsTheEncoderDoes checks that the report written an item at a
// time is, to the byte, what encoding the whole plan at once gives.
func TestWriteJSONAsTheEncoderDoes(t *testing.T) {
	withGroups := sample()
	withGroups.Groups = []plan.Group{{Name: "shop", Items: []string{"shop/web"}}}
	withGroups.Failed = "a <tag> & \"quotes\""
	for name, p := range map[string]*plan.Plan{
		"items":    sample(),
		"one item": {Items: sample().Items[:1]},
		"no items": {Items: []plan.Item{}, DryRun: true},
		"nil":      {},
		"groups":   withGroups,
	} {
		t.Run(name, func(t *testing.T) {
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetIndent("", "  ")
			if err := enc.Encode(p); err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := Write(&got, p, FormatJSON); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("report:\n%s\nwant, as encoded at once:\n%s", got.String(), want.String())
			}
		})
	}
}

// TestWriteJSONWritesNothingOfAReportItCannotEncode checks that an item
// the encoder refuses fails the report before any of it is written.
func TestWriteJSONWritesNothingOfAReportItCannotEncode(t *testing.T) {
	p := sample()
	// Enough items before it to fill the writer's buffer more than once.
	for range 100 {
		p.Items = append(p.Items, sample().Items...)
	}
	p.Items = append(p.Items, plan.Item{Namespace: "shop", Name: "bad", Cost: &plan.Cost{Replicas: math.Inf(1)}})
	var buf bytes.Buffer
	if err := Write(&buf, p, FormatJSON); err == nil || buf.Len() != 0 {
		t.Errorf("Write() = %v, wrote %d bytes; want an error and nothing written", err, buf.Len())
	}
}
