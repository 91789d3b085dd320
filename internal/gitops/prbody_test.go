package gitops

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"

	"github.com/recommend-job/recommend-job/internal/recommend"
	"github.com/recommend-job/recommend-job/internal/report"
)

// bodyReport has a workload with a changed and a new request, a memory
// request without recommendation, one held back, a workload whose file
// could not be edited, and an invalid ResourceRecommend.
func bodyReport() *report.Report {
	ev := func(capped ...string) *recommend.Evidence {
		return &recommend.Evidence{Window: "168h0m0s", Samples: 2016, Percentile: 0.9, BufferPercent: 10, Capped: capped}
	}
	return &report.Report{ResourceRecommends: []report.Entry{
		{Namespace: "shop", Name: "web-rec", Valid: true, Target: report.Target{Kind: "Deployment", Name: "web"},
			Source: &report.Source{File: "apps/web.yaml", Changed: true},
			Containers: []report.Container{
				{Name: "app", Resources: []report.Resource{
					{Resource: "cpu", Current: "500m", Recommended: "390m", Changed: true, Evidence: ev("maxAllowed 2")},
					{Resource: "memory", Current: "512Mi", Reason: "insufficient data: 10 samples over 1h0m0s, need 24h0m0s"},
				}},
				{Name: "sidecar", Resources: []report.Resource{
					{Resource: "cpu", Recommended: "50m", Changed: true, Evidence: ev()},
					{Resource: "memory", Current: "64Mi", Recommended: "64Mi", Evidence: &recommend.Evidence{HeldBack: "change below threshold 5%"}},
				}},
			}},
		{Namespace: "shop", Name: "api-rec", Valid: true, Target: report.Target{Kind: "Deployment", Name: "api"},
			Source: &report.Source{Error: "no manifest found"},
			Containers: []report.Container{{Name: "api", Resources: []report.Resource{
				{Resource: "cpu", Current: "1", Recommended: "800m", Changed: true, Evidence: ev()},
			}}}},
		{Namespace: "shop", Name: "db-rec", Target: report.Target{Kind: "StatefulSet", Name: "db"},
			Error: &report.Error{Code: "ContainersNotFound", Message: "container main is not found"}},
	}}
}

func TestPullRequestBody(t *testing.T) {
	// The change set: web's two changed requests; api's is not rendered.
	preimage := "shop\x00web-rec\x00Deployment\x00web\x00app\x00cpu\x00390m\n" +
		"shop\x00web-rec\x00Deployment\x00web\x00sidecar\x00cpu\x0050m"
	sum := sha256.Sum256([]byte(preimage))
	hash := hex.EncodeToString(sum[:])

	// 390m against 500m is -110/500 = -22.0%; sidecar had no request.
	want := "This pull request sets resource requests to the usage-based recommendations of the ResourceRecommends below.\n" +
		"\n### shop/web-rec: Deployment web in `apps/web.yaml`\n\n" +
		"| Container | Resource | Current | Recommended | Change | Window | Samples | Percentile | Buffer | Caps |\n" +
		"|---|---|---|---|---|---|---|---|---|---|\n" +
		"| app | cpu | 500m | 390m | -22.0% | 168h0m0s | 2016 | p90 | +10% | maxAllowed 2 |\n" +
		"| sidecar | cpu | - | 50m | new | 168h0m0s | 2016 | p90 | +10% | - |\n" +
		"\n### Held back\n\n" +
		"| ResourceRecommend | Container | Resource | Current | Reason |\n|---|---|---|---|---|\n" +
		"| shop/web-rec | app | memory | 512Mi | insufficient data: 10 samples over 1h0m0s, need 24h0m0s |\n" +
		"| shop/web-rec | sidecar | memory | 64Mi | change below threshold 5% |\n" +
		"| shop/api-rec | api | cpu | 1 | not rendered: no manifest found |\n" +
		"\n### Invalid ResourceRecommends\n\n" +
		"| ResourceRecommend | Target | Code | Message |\n|---|---|---|---|\n" +
		"| shop/db-rec | StatefulSet db | `ContainersNotFound` | container main is not found |\n" +
		"\n<!-- recommend-job: sha256=" + hash + " -->\n"
	got := PullRequestBody(bodyReport())
	if got != want {
		t.Errorf("PullRequestBody() =\n%s\nwant\n%s", got, want)
	}
	if MarkerHash(got) != hash {
		t.Errorf("MarkerHash() = %q, want %q", MarkerHash(got), hash)
	}
}

func TestChangeSetHashFollowsValuesOnly(t *testing.T) {
	base := ChangeSetHash(bodyReport())
	moreSamples := bodyReport()
	moreSamples.ResourceRecommends[0].Containers[0].Resources[0].Evidence.Samples = 4032
	if got := ChangeSetHash(moreSamples); got != base {
		t.Errorf("hash changed with the sample count alone: %s != %s", got, base)
	}
	newValue := bodyReport()
	newValue.ResourceRecommends[0].Containers[0].Resources[0].Recommended = "400m"
	if got := ChangeSetHash(newValue); got == base {
		t.Error("hash did not change with a new recommended value")
	}
}

func TestPullRequestBodyEscapesCells(t *testing.T) {
	rep := &report.Report{ResourceRecommends: []report.Entry{{Namespace: "ns", Name: "r",
		Target: report.Target{Kind: "Deployment", Name: "w"},
		Error:  &report.Error{Code: "X", Message: "a | b\nc"}}}}
	if body := PullRequestBody(rep); !strings.Contains(body, `| a \| b c |`) {
		t.Errorf("body does not escape the cell:\n%s", body)
	}
}

// BenchmarkPullRequestBody renders the body of a run over 1,000
// ResourceRecommends of two containers each.
func BenchmarkPullRequestBody(b *testing.B) {
	one := bodyReport().ResourceRecommends[0]
	rep := &report.Report{}
	for i := range 1000 {
		e := one
		e.Name = "web-" + strings.Repeat("x", i%7) + string(rune('a'+i%26))
		rep.ResourceRecommends = append(rep.ResourceRecommends, e)
	}
	b.ReportAllocs()
	for b.Loop() {
		PullRequestBody(rep)
	}
}

func TestPullRequestBodyIsBounded(t *testing.T) {
	one := bodyReport().ResourceRecommends[0]
	rep := &report.Report{}
	for i := range 2000 {
		e := one
		e.Name = "web-" + strconv.Itoa(i)
		rep.ResourceRecommends = append(rep.ResourceRecommends, e)
	}
	body := PullRequestBody(rep)
	if len(body) > MaxBodyLength {
		t.Errorf("body is %d characters, want at most %d", len(body), MaxBodyLength)
	}
	if !strings.Contains(body, "_Truncated: the job's report lists everything._") || MarkerHash(body) != ChangeSetHash(rep) {
		t.Errorf("a truncated body must say so and keep the marker; it ends:\n%s", body[len(body)-300:])
	}
	// Cut at a line end: every table line is whole.
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "|") && !strings.HasSuffix(line, "|") {
			t.Fatalf("cut inside a table row: %q", line)
		}
	}
}

func TestPullRequestBodyShowsLimits(t *testing.T) {
	entry := func(limit string) *report.Report {
		return &report.Report{ResourceRecommends: []report.Entry{{Namespace: "shop", Name: "web", Valid: true,
			Target: report.Target{Kind: "Deployment", Name: "web"},
			Source: &report.Source{File: "web.yaml", Changed: true},
			Containers: []report.Container{{Name: "app", Resources: []report.Resource{
				{Resource: "cpu", Current: "500m", Recommended: "250m", Changed: true, CurrentLimit: "1", RecommendedLimit: limit},
			}}}}}}
	}
	// The limit keeps the 2:1 ratio: 1 -> 500m is -50.0%.
	body := PullRequestBody(entry("500m"))
	if !strings.Contains(body, "| app | cpu limit | 1 | 500m | -50.0% |  |  |  |  | ratio kept |") {
		t.Errorf("body lacks the limit row:\n%s", body)
	}
	if ChangeSetHash(entry("500m")) == ChangeSetHash(entry("600m")) {
		t.Error("the change-set hash does not follow the limit")
	}
}
