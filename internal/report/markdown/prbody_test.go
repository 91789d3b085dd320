package markdown

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// mib is a mebibyte, for memory in a test's evidence.
const mib = 1 << 20

// usageOf is observed usage for a test's evidence.
func usageOf(p50, p90, max float64) (*float64, *float64, *float64) { return &p50, &p90, &max }

// bodyReport is a run over two workloads that change and some that do
// not: web's app container moves its CPU request down and its memory up
// to the OOM floor (two kills), its sidecar gains a CPU request and keeps
// its memory within the threshold; api's memory request and limit move
// down while an HPA holds its CPU; cart's change could not be rendered,
// queue has too little history, and db is invalid.
func bodyReport() *plan.Plan {
	week := func(ev plan.Evidence) *plan.Evidence {
		ev.Window, ev.WindowDays, ev.Span, ev.SpanDays, ev.HalfLife = "168h0m0s", 7, "167h55m0s", 7, "24h0m0s"
		ev.Percentile = 0.9
		return &ev
	}
	cpu := func(p50, p90, max, raw float64, buffer int32, step string) *plan.Evidence {
		ev := plan.Evidence{Samples: 6048, RawValue: raw, BufferPercent: buffer, BufferedValue: raw * (1 + float64(buffer)/100), RoundingStep: step}
		ev.UsageP50, ev.UsageP90, ev.UsageMax = usageOf(p50, p90, max)
		return week(ev)
	}
	memory := func(p50, p90, max, raw float64, buffer int32, step string) *plan.Evidence {
		ev := plan.Evidence{Samples: 168, RawValue: raw, BufferPercent: buffer, BufferedValue: raw * (1 + float64(buffer)/100), RoundingStep: step}
		ev.UsageP50, ev.UsageP90, ev.UsageMax = usageOf(p50, p90, max)
		return week(ev)
	}
	// app's memory: the p90 bucket ends at 455Mi, +10% is 500.5Mi; two
	// kills at a peak of 498Mi put the floor at 598Mi, rounded up to 600Mi.
	appMemory := memory(380*mib, 452*mib, 498*mib, 455*mib, 10, "4Mi")
	appMemory.OOMKilled, appMemory.OOMKills, appMemory.OOMFloor = true, 2, 598*mib
	sidecarMemory := memory(41*mib, 52*mib, 58*mib, 54.5*mib, 10, "1Mi")
	sidecarMemory.HeldBack = "request 60Mi is 6.2% from the current 64Mi, below the 10% change threshold"
	hpa := "HorizontalPodAutoscaler shop/api scales on cpu utilization (70%)"
	apiCPU := week(plan.Evidence{Samples: 8064, BufferPercent: 20, HPA: hpa})
	apiCPU.UsageP50, apiCPU.UsageP90, apiCPU.UsageMax = usageOf(0.41, 0.72, 1.8)
	apiMemory := memory(590*mib, 640*mib, 702*mib, 640*mib, 20, "32Mi")
	apiMemory.LimitRatio, apiMemory.Limit = 2, "1536Mi"
	return &plan.Plan{Items: []plan.Item{
		{Namespace: "shop", Name: "web-rec", Valid: true, Target: plan.Target{Kind: "Deployment", Name: "web"},
			Source: &plan.Source{File: "apps/web.yaml", Changed: true},
			Containers: []plan.Container{
				{Name: "app", Resources: []plan.Resource{
					{Resource: "cpu", Current: q("500m"), Recommended: q("390m"), Changed: true, LiveLimit: q("1"),
						Evidence: cpu(0.121, 0.3105, 1.24, 0.352, 10, "5m")},
					{Resource: "memory", Current: q("512Mi"), Recommended: q("600Mi"), Changed: true, LiveLimit: q("1Gi"), Evidence: appMemory},
				}},
				{Name: "sidecar", Resources: []plan.Resource{
					{Resource: "cpu", Recommended: q("50m"), Changed: true, Evidence: cpu(0.018, 0.041, 0.09, 0.045, 10, "1m")},
					{Resource: "memory", Current: q("64Mi"), Recommended: q("60Mi"), LiveLimit: q("128Mi"), HeldBack: true,
						Reason: "held back: " + sidecarMemory.HeldBack, Evidence: sidecarMemory},
				}},
			}},
		{Namespace: "shop", Name: "api-rec", Valid: true, Target: plan.Target{Kind: "Deployment", Name: "api"},
			Source: &plan.Source{File: "apps/api.yaml", Changed: true},
			Containers: []plan.Container{{Name: "api", Resources: []plan.Resource{
				{Resource: "cpu", Current: q("1"), LiveLimit: q("2"), HeldBack: true, Reason: "held back: " + hpa, Evidence: apiCPU},
				{Resource: "memory", Current: q("1Gi"), Recommended: q("768Mi"), Changed: true, LiveLimit: q("2Gi"),
					CurrentLimit: q("2Gi"), RecommendedLimit: q("1536Mi"), Evidence: apiMemory},
			}}}},
		{Namespace: "shop", Name: "cart-rec", Valid: true, Target: plan.Target{Kind: "Deployment", Name: "cart"},
			Source: &plan.Source{Error: "no manifest found"},
			Containers: []plan.Container{{Name: "cart", Resources: []plan.Resource{
				{Resource: "cpu", Current: q("1"), Recommended: q("800m"), Changed: true, Evidence: cpu(0.3, 0.6, 0.9, 0.65, 20, "50m")},
			}}}},
		{Namespace: "shop", Name: "queue-rec", Valid: true, Target: plan.Target{Kind: "StatefulSet", Name: "queue"},
			Containers: []plan.Container{{Name: "queue", Resources: []plan.Resource{
				{Resource: "memory", Current: q("512Mi"), Reason: "insufficient data: 10 samples over 9h0m0s, need 12 over 24h0m0s",
					Evidence: &plan.Evidence{Samples: 10, Span: "9h0m0s", Window: "168h0m0s", WindowDays: 7, SpanDays: 0.38}},
			}}}},
		{Namespace: "shop", Name: "db-rec", Target: plan.Target{Kind: "StatefulSet", Name: "db"},
			Error: &plan.Error{Code: "ContainersNotFound", Message: "container main is not found"}},
	}}
}

func TestPullRequestBody(t *testing.T) {
	// The change set: web's three changed requests and api's memory with
	// its limit; cart's is not rendered.
	preimage := "shop\x00api-rec\x00Deployment\x00api\x00api\x00memory\x00768Mi\x00limit\x001536Mi\n" +
		"shop\x00web-rec\x00Deployment\x00web\x00app\x00cpu\x00390m\n" +
		"shop\x00web-rec\x00Deployment\x00web\x00app\x00memory\x00600Mi\n" +
		"shop\x00web-rec\x00Deployment\x00web\x00sidecar\x00cpu\x0050m"
	sum := sha256.Sum256([]byte(preimage))
	hash := hex.EncodeToString(sum[:])

	// cpu: 500m -> 390m and none -> 50m, -60m; memory: 512Mi -> 600Mi and
	// 1Gi -> 768Mi, -168Mi. 390m against 500m is -22.0%, 600Mi against
	// 512Mi +17.2%. Usage shows to the millicore and the MiB.
	const evidenceHead = "<details><summary>Evidence: percentile, buffer, OOM floor, rounding, caps</summary>\n\n" +
		"| Container | Resource | Decaying histogram | Percentile value | Buffer | Buffered | OOM floor | Rounded up to | Caps and limit |\n" +
		"|---|---|---|---|---|---|---|---|---|\n"
	const summaryHead = "| Container | Resource | Current | Proposed | Change | Limit | Usage p50 / p90 / max | Window | OOM kills |\n" +
		"|---|---|---|---|---|---|---|---|---|\n"
	want := "<!-- recommend-job: sha256=" + hash + " -->\n" +
		"This pull request sets resource requests to the usage-based recommendations of the ResourceRecommends below.\n" +
		"\n**Change in total requests, per replica:** cpu -60m (500m → 440m over 2 requests), memory -168Mi (1536Mi → 1368Mi over 2 requests): " +
		"the proposed minus the current requests, summed over the containers. A container without a request counts from zero.\n" +
		"\n_Usage is what each window observed, neither decayed nor weighted: p50, p90 and max of the CPU of every pod at every step, " +
		"and of the memory peaks per interval. The proposed values come from the decaying histograms in each workload's evidence._\n" +
		"\n### shop/web-rec: Deployment web in `apps/web.yaml`\n\n" + summaryHead +
		"| app | cpu | 500m | 390m | -22.0% | 1, unchanged | 121m / 311m / 1240m | 7d: 6048 samples over 7d | - |\n" +
		"| app | memory | 512Mi | 600Mi | +17.2% | 1Gi, unchanged | 380Mi / 452Mi / 498Mi | 7d: 168 samples over 7d | 2, floor 598Mi set the value |\n" +
		"| sidecar | cpu | none | 50m | new | none | 18m / 41m / 90m | 7d: 6048 samples over 7d | - |\n" +
		"| sidecar | memory | 64Mi | 64Mi | held back | 128Mi, unchanged | 41Mi / 52Mi / 58Mi | 7d: 168 samples over 7d | 0 |\n" +
		"\n" + evidenceHead +
		"| app | cpu | p90, half-life 24h0m0s, 6048 samples over 167h55m0s of 168h0m0s | 352m | +10% | 387m | - | 5m | - |\n" +
		"| app | memory | p90, half-life 24h0m0s, 168 samples over 167h55m0s of 168h0m0s | 455Mi | +10% | 501Mi | 598Mi | 4Mi | - |\n" +
		"| sidecar | cpu | p90, half-life 24h0m0s, 6048 samples over 167h55m0s of 168h0m0s | 45m | +10% | 50m | - | 1m | - |\n" +
		"| sidecar | memory | p90, half-life 24h0m0s, 168 samples over 167h55m0s of 168h0m0s | 55Mi | +10% | 60Mi | - | 1Mi | - |\n" +
		"\n</details>\n" +
		"\n### shop/api-rec: Deployment api in `apps/api.yaml`\n\n" + summaryHead +
		"| api | cpu | 1 | 1 | held back: HPA | 2, unchanged | 410m / 720m / 1800m | 7d: 8064 samples over 7d | - |\n" +
		"| api | memory | 1Gi | 768Mi | -25.0% | 2Gi → 1536Mi (-25.0%, ratio kept) | 590Mi / 640Mi / 702Mi | 7d: 168 samples over 7d | 0 |\n" +
		"\n" + evidenceHead +
		"| api | cpu | p90, half-life 24h0m0s, 8064 samples over 167h55m0s of 168h0m0s | - | +20% | - | - | - | - |\n" +
		"| api | memory | p90, half-life 24h0m0s, 168 samples over 167h55m0s of 168h0m0s | 640Mi | +20% | 768Mi | - | 32Mi | limit 1536Mi keeps the ratio 2 |\n" +
		"\n</details>\n" +
		"\n### Held back\n\n" +
		"| ResourceRecommend | Container | Held back | Current | Recommended | Why |\n|---|---|---|---|---|---|\n" +
		"| shop/web-rec | sidecar | memory request | 64Mi | 60Mi | request 60Mi is 6.2% from the current 64Mi, below the 10% change threshold |\n" +
		"| shop/api-rec | api | cpu request | 1 | - | HorizontalPodAutoscaler shop/api scales on cpu utilization \\(70%\\) |\n" +
		"| shop/cart-rec | cart | cpu request | 1 | 800m | not rendered: no manifest found |\n" +
		"\n### No recommendation\n\n" +
		"<details><summary>1 value without a recommendation</summary>\n\n" +
		"| ResourceRecommend | Container | Resource | Current | Why |\n|---|---|---|---|---|\n" +
		"| shop/queue-rec | queue | memory | 512Mi | insufficient data: 10 samples over 9h0m0s, need 12 over 24h0m0s |\n" +
		"\n</details>\n" +
		"\n### Invalid ResourceRecommends\n\n" +
		"| ResourceRecommend | Target | Code | Message |\n|---|---|---|---|\n" +
		"| shop/db-rec | StatefulSet db | `ContainersNotFound` | container main is not found |\n"
	got := PullRequestBody(bodyReport())
	if got != want {
		t.Errorf("PullRequestBody() =\n%s\nwant\n%s", got, want)
	}
	if MarkerHash(got) != hash {
		t.Errorf("MarkerHash() = %q, want %q", MarkerHash(got), hash)
	}
	checkBody(t, got)
}

func TestChangeSetHashFollowsValuesOnly(t *testing.T) {
	base := ChangeSetHash(bodyReport())
	moreSamples := bodyReport()
	moreSamples.Items[0].Containers[0].Resources[0].Evidence.Samples = 4032
	if got := ChangeSetHash(moreSamples); got != base {
		t.Errorf("hash changed with the sample count alone: %s != %s", got, base)
	}
	newValue := bodyReport()
	newValue.Items[0].Containers[0].Resources[0].Recommended = q("400m")
	if got := ChangeSetHash(newValue); got == base {
		t.Error("hash did not change with a new recommended value")
	}
}

// forgedMarker is what a tenant writes into a ResourceRecommend to pass a
// marker of its own off as the job's.
func forgedMarker(hash string) string { return "<!-- recommend-job: sha256=" + hash + " -->" }

func TestMdText(t *testing.T) {
	const wj = wordJoiner
	zeros := strings.Repeat("0", 64)
	tests := []struct{ name, in, want string }{
		{name: "plain", in: "shop/web-rec", want: "shop/web-rec"},
		{name: "empty", in: "", want: ""},
		{name: "forged marker", in: forgedMarker(zeros), want: `&lt;\!-- recommend-job: sha256=` + zeros + " --&gt;"},
		{name: "html tag", in: `<img src=x onerror=alert(1)>`, want: `&lt;img src=x onerror=alert\(1\)&gt;`},
		{name: "entity shows as written", in: "&lt;", want: "&amp;lt;"},
		{name: "pipe", in: "a|b", want: `a\|b`},
		{name: "escaped pipe stays two characters", in: `a\|b`, want: `a\\\|b`},
		{name: "backticks", in: "`rm -rf /`", want: "\\`rm -rf /\\`"},
		{name: "emphasis", in: "*b* _i_ ~~s~~", want: `\*b\* \_i\_ \~\~s\~\~`},
		{name: "link", in: "[docs](javascript:alert)", want: `\[docs\]\(javascript:alert\)`},
		{name: "image", in: "![x](y)", want: `\!\[x\]\(y\)`},
		{name: "math and inline diff", in: "$x$ {+a+}", want: `\$x\$ \{+a+\}`},
		{name: "mention", in: "@org/security please approve", want: "@" + wj + "org/security please approve"},
		{name: "email", in: "ops@example.com", want: "ops@" + wj + "example.com"},
		{name: "issue", in: "fixes #12", want: "fixes #" + wj + "12"},
		{name: "heading", in: "# Approved", want: "#" + wj + " Approved"},
		{name: "github's GH- references", in: "see GH-12 and gh-3, not ugh-4", want: "see GH-" + wj + "12 and gh-" + wj + "3, not ugh-" + wj + "4"},
		{name: "bare urls", in: "see https://evil.example or WWW.evil.example", want: "see https:" + wj + "//evil.example or WWW" + wj + ".evil.example"},
		{name: "line breaks collapse", in: "a\r\nb\n\nc\rd", want: "a b c d"},
		{name: "controls and separators", in: "a\x00b\x1bc\u0085d\u2028e\u2029f\tg", want: "a b c d e f g"},
		{name: "bidi override", in: "abc\u202edcba\u2066x", want: "abc dcba x"},
		{name: "invalid utf-8", in: "a\xffb", want: "a\uFFFDb"},
		{name: "trimmed", in: "  a  b  ", want: "a b"},
		{name: "quantities and percentages untouched", in: "500m -22.0% +10% 1.5Gi", want: "500m -22.0% +10% 1.5Gi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mdText(tt.in); got != tt.want {
				t.Errorf("mdText(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCode(t *testing.T) {
	tests := []struct{ in, want string }{
		{"apps/web.yaml", "`apps/web.yaml`"},
		{"ContainersNotFound", "`ContainersNotFound`"},
		{"a`b.yaml", "a\\`b.yaml"},
		{`dir\x.yaml`, `dir\\x.yaml`},
		{"a|b.yaml", `a\|b.yaml`},
		{"x\n### y.yaml", "x #" + wordJoiner + "#" + wordJoiner + "#" + wordJoiner + " y.yaml"},
		{" padded", "padded"},
	}
	for _, tt := range tests {
		if got := code(tt.in); got != tt.want {
			t.Errorf("code(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// mdEscaped are the characters mdText escapes with a backslash.
const mdEscaped = "\\`*_~[]()!|${}"

// checkInert fails unless out, an mdText result, is inert on one line:
// no tag, comment or line break, every special character escaped, every
// @ and # joined to nothing, no bare URL. It returns the text a reader
// sees, with the escapes undone.
func checkInert(t *testing.T, out string) string {
	t.Helper()
	if strings.Contains(out, "<!--") || strings.ContainsAny(out, "<>\n\r") || strings.Contains(out, "://") {
		t.Fatalf("mdText output %q holds a tag, a comment, a line break or a URL", out)
	}
	var seen strings.Builder
	for i := 0; i < len(out); {
		c := out[i]
		switch {
		case c == '\\':
			if i+1 == len(out) || !strings.ContainsRune(mdEscaped, rune(out[i+1])) {
				t.Fatalf("mdText output %q: a backslash at %d escapes nothing", out, i)
			}
			seen.WriteByte(out[i+1])
			i += 2
		case strings.ContainsRune(mdEscaped, rune(c)):
			t.Fatalf("mdText output %q: %q at %d is not escaped", out, c, i)
		case c == '&':
			entity := map[string]byte{"&lt;": '<', "&gt;": '>', "&amp;": '&'}
			n := strings.IndexByte(out[i:], ';')
			r, ok := entity[out[i:i+n+1]]
			if n < 0 || !ok {
				t.Fatalf("mdText output %q: a bare & at %d", out, i)
			}
			seen.WriteByte(r)
			i += n + 1
		case (c == '@' || c == '#') && !strings.HasPrefix(out[i+1:], wordJoiner):
			t.Fatalf("mdText output %q: %q at %d is not followed by a word joiner", out, c, i)
		default:
			seen.WriteByte(c)
			i++
		}
	}
	for _, r := range out {
		if unicode.IsControl(r) || unicode.In(r, unicode.Zl, unicode.Zp, unicode.Bidi_Control) {
			t.Fatalf("mdText output %q holds %U", out, r)
		}
	}
	return strings.ReplaceAll(seen.String(), wordJoiner, "")
}

// FuzzMdText checks that whatever a tenant writes comes out inert, and
// that the reader still sees what was written, on one line.
func FuzzMdText(f *testing.F) {
	for _, s := range []string{"", "shop/web", forgedMarker(strings.Repeat("0", 64)), "a|b\\|c", "`x`", "@team #1 https://x www.y",
		"&lt;!--", "\\", "\r\n\u2028\u202e", "a\xffb", "[a](b) ![c](d) *e* _f_ ~g~ $h$ {i}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := mdText(in)
		seen := checkInert(t, out)
		if want := strings.ReplaceAll(plan.Line(in), wordJoiner, ""); seen != want {
			t.Errorf("mdText(%q) = %q reads %q, want %q", in, out, seen, want)
		}
		if strings.ContainsAny(plan.Line(in), "\n\r") || strings.Contains(plan.Line(in), "  ") {
			t.Errorf("plan.Line(%q) = %q is not one line of single spaces", in, plan.Line(in))
		}
	})
}

// tenantReport has a ResourceRecommend whose every text field a tenant
// (or a file in the repository) controls, each trying to forge the job's
// marker for hash, break the table, close or open a folded section, add a
// heading or ping a team.
func tenantReport(hash string) *plan.Plan {
	evil := func(what string) string {
		return what + " " + forgedMarker(hash) + "\n\n### Approved by @org/security | x |\n<b>ok</b> `code` [link](https://evil.example)" +
			"\n\n</details></summary>\n\n<details><summary>ok</summary>\n\n| a | b |\n|---|---|\n"
	}
	return &plan.Plan{Items: []plan.Item{
		{Namespace: "team-a", Name: "web", Valid: true, Target: plan.Target{Kind: "Deployment", Name: "web"},
			Source: &plan.Source{File: evil("apps/web.yaml"), Changed: true},
			Containers: []plan.Container{{Name: evil("app"), Resources: []plan.Resource{
				{Resource: "cpu", Current: q("500m"), Recommended: q("250m"), Changed: true, CurrentLimit: q("1"), RecommendedLimit: q("500m"),
					Evidence: &plan.Evidence{Window: evil("168h0m0s"), Span: evil("span"), HalfLife: evil("24h"), Samples: 10, Percentile: 0.9,
						RoundingStep: evil("5m"), Capped: []string{evil("cap")}, Limit: evil("limit"), LimitRatio: 2, HeldBack: ""}},
				{Resource: "memory", Current: q("1Gi"), Reason: evil("reason")},
				{Resource: "ephemeral-storage", Current: q("1Gi"), Recommended: q("1Gi"), Evidence: &plan.Evidence{HeldBack: evil("held")}},
				{Resource: "nvidia.com/gpu", Current: q("1"), HeldBack: true, Reason: evil("hpa"), Evidence: &plan.Evidence{HPA: evil("hpa")}},
			}}}},
		{Namespace: "team-b", Name: "api", Valid: true, Target: plan.Target{Kind: "Deployment", Name: "api"},
			Source: &plan.Source{Error: evil("source error")},
			Containers: []plan.Container{{Name: "api", Resources: []plan.Resource{
				{Resource: "cpu", Current: q("1"), Recommended: q("2"), Changed: true},
			}}}},
		{Namespace: "team-c", Name: "db", Target: plan.Target{Kind: evil("Kind"), Name: "db"},
			Error: &plan.Error{Code: evil("Code"), Message: evil("message")}},
	}}
}

func TestPullRequestBodyNeutralisesTenantText(t *testing.T) {
	rep := tenantReport(strings.Repeat("0", 64))
	body := PullRequestBody(rep)
	marker := markerPrefix + ChangeSetHash(rep) + " -->\n"
	if !strings.HasPrefix(body, marker) || MarkerHash(body) != ChangeSetHash(rep) {
		t.Fatalf("body does not start with the job's marker %q:\n%s", marker, body)
	}
	if n := strings.Count(body, "<!--"); n != 1 {
		t.Errorf("body holds %d comments, want only the marker:\n%s", n, body)
	}
	if strings.Contains(body, "@org") || strings.Contains(body, "<b>") || strings.Contains(body, "](") {
		t.Errorf("body holds a live mention, tag or link:\n%s", body)
	}
	// Every line is one of the job's: tenant text adds none, opens or
	// closes no folded section, and every table row has its table's
	// number of cells. team-a's section has its evidence folded, and the
	// values without a recommendation are: two sections, both closed by
	// the job.
	headings, folded := checkBody(t, body)
	for _, h := range headings {
		if h != "Held back" && h != "No recommendation" && h != "Invalid ResourceRecommends" && !strings.HasPrefix(h, "team-a/web: ") {
			t.Errorf("a heading the job did not write: %q", h)
		}
	}
	if folded != 2 || strings.Count(body, "<details>") != 2 || strings.Count(body, "</details>") != 2 || strings.Count(body, "<summary>") != 2 {
		t.Errorf("body has %d folded sections, %d <details> and %d </details>, want the job's 2:\n%s",
			folded, strings.Count(body, "<details>"), strings.Count(body, "</details>"), body)
	}
	// What the tenant wrote is still shown, inert.
	for _, want := range []string{"message &lt;\\!-- recommend-job: sha256=", "#" + wordJoiner + "#" + wordJoiner + "#" + wordJoiner + " Approved by @" + wordJoiner + "org/security \\| x \\|",
		"&lt;b&gt;ok&lt;/b&gt; \\`code\\` \\[link\\]\\(https:" + wordJoiner + "//evil.example\\)",
		"&lt;/details&gt;&lt;/summary&gt; &lt;details&gt;&lt;summary&gt;ok&lt;/summary&gt; \\| a \\| b \\| \\|---\\|---\\|"} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
}

// jobLines are the beginnings of the lines of text the job writes
// outside tables and headings.
var jobLines = []string{
	"This pull request sets ", "**Change in total requests, per replica:** ", "_Usage is what each window observed", "No request changes.",
	"Through Helm release ", "_Truncated: the job's report lists everything._", "HorizontalPodAutoscaler ",
	"**Monthly change:** ", "**Cost:** ",
	"Usage of ", chartsLeftOut,
}

// summaryRE is a folded section's start as the job writes it: its own
// words only, then a blank line.
var summaryRE = regexp.MustCompile(`^<details><summary>[A-Za-z0-9 ,:]+</summary>$`)

// checkBody fails unless body is built of the job's lines only: the
// marker, its headings, its text lines, tables whose head is followed by
// its delimiter row and whose rows have the head's number of cells, and
// folded sections, never nested, each opened and closed on a line of its
// own and with blank lines around its content. It returns the headings
// and how many sections are folded.
func checkBody(t *testing.T, body string) (headings []string, folded int) {
	t.Helper()
	if !strings.HasSuffix(body, "\n") {
		t.Errorf("body does not end with a line end: %q", body[max(0, len(body)-80):])
	}
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	if MarkerHash(body) == "" {
		t.Errorf("body does not start with the marker: %q", lines[0])
	}
	inDetails, cells := false, 0
	for i := 1; i < len(lines); i++ {
		line := lines[i]
		switch {
		case line == "":
			cells = 0
		case strings.HasPrefix(line, "### "):
			if cells != 0 {
				t.Errorf("line %d: a heading inside a table: %q", i, line)
			}
			headings = append(headings, strings.TrimPrefix(line, "### "))
		case summaryRE.MatchString(line):
			if inDetails || cells != 0 || lines[i-1] != "" || i+1 >= len(lines) || lines[i+1] != "" {
				t.Errorf("line %d: a folded section opened inside another or a table, or without blank lines around it: %q", i, line)
			}
			inDetails = true
			folded++
		case line == "```mermaid":
			// A chart: its lines parse as Mermaid's, up to the fence's end.
			if !inDetails || lines[i-1] != "" {
				t.Errorf("line %d: a chart outside a folded section or right after text", i)
			}
			end := slices.Index(lines[i+1:], "```")
			if end < 0 {
				t.Fatalf("line %d: a chart whose fence is not closed", i)
			}
			checkChart(t, lines[i+1:i+1+end])
			i += end + 1
		case line == "</details>":
			if !inDetails || lines[i-1] != "" {
				t.Errorf("line %d: a folded section closed that is not open, or right after a table row", i)
			}
			inDetails = false
		case strings.HasPrefix(line, "| ") && strings.HasSuffix(line, " |"):
			n := unescapedPipes(line)
			switch {
			case cells == 0:
				// A table's head, then its delimiter row.
				if i+1 >= len(lines) || lines[i+1] != strings.Repeat("|---", n-1)+"|" || lines[i-1] != "" {
					t.Fatalf("line %d: a table head without its delimiter row, or not after a blank line: %q", i, line)
				}
				cells = n
				i++
			case n != cells:
				t.Errorf("line %d has %d cell separators, want %d: %q", i, n, cells, line)
			}
		default:
			if !slices.ContainsFunc(jobLines, func(p string) bool { return strings.HasPrefix(line, p) }) {
				t.Errorf("line %d is not the job's: %q", i, line)
			}
		}
	}
	if inDetails {
		t.Errorf("body ends inside a folded section:\n%s", body)
	}
	return headings, folded
}

// unescapedPipes counts the cell separators of a table row.
func unescapedPipes(line string) int {
	n := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case '|':
			n++
		}
	}
	return n
}

// manyWorkloads is a plan of n workloads like web-rec of bodyReport, each
// with a value held back, a value without a recommendation and an
// invalid ResourceRecommend beside it, so that every section is long.
func manyWorkloads(n int) *plan.Plan {
	base := bodyReport()
	rep := &plan.Plan{}
	for i := range n {
		web, queue, db := base.Items[0], base.Items[3], base.Items[4]
		web.Name, queue.Name, db.Name = "web-"+strconv.Itoa(i), "queue-"+strconv.Itoa(i), "db-"+strconv.Itoa(i)
		rep.Items = append(rep.Items, web, queue, db)
	}
	return rep
}

// BenchmarkPullRequestBody renders the body of a run over 1,000
// ResourceRecommends of two containers each.
func BenchmarkPullRequestBody(b *testing.B) {
	one := bodyReport().Items[0]
	rep := &plan.Plan{}
	for i := range 1000 {
		e := one
		e.Name = "web-" + strings.Repeat("x", i%7) + string(rune('a'+i%26))
		rep.Items = append(rep.Items, e)
	}
	b.ReportAllocs()
	for b.Loop() {
		PullRequestBody(rep)
	}
}

func TestPullRequestBodyIsBounded(t *testing.T) {
	rep := manyWorkloads(2000)
	body := PullRequestBody(rep)
	if len(body) > MaxBodyLength {
		t.Errorf("body is %d characters, want at most %d", len(body), MaxBodyLength)
	}
	if !strings.HasSuffix(body, "\n_Truncated: the job's report lists everything._\n") || MarkerHash(body) != ChangeSetHash(rep) {
		t.Errorf("a truncated body must say so and keep the marker; it ends:\n%s", body[len(body)-300:])
	}
	// The totals are the whole pull request's, though its tables are cut:
	// 2,000 x (-110m + 50m) and 2,000 x 88Mi.
	if !strings.Contains(body, "cpu -120 (1000 → 880 over 4000 requests), memory +171.9Gi (1000Gi → 1171.9Gi over 2000 requests)") {
		t.Errorf("body lacks the totals of every change:\n%s", body[:1000])
	}
	checkBody(t, body)
}

// TestDescriptionStaysUnderTheForgeLimit puts together the longest
// description the job writes, as it writes them: a body cut at
// MaxBodyLength, the line of the values it proposes, the line of
// reviewers, and, when the job closes it, the note that says why. Each
// stays under GitHub's limit, the least of the forges'.
func TestDescriptionStaysUnderTheForgeLimit(t *testing.T) {
	rep := manyWorkloads(2000)
	body := PullRequestBody(rep)
	values := ProposedOf(rep).Line()
	if len(body) < MaxBodyLength-2000 || len(values) < maxProposedLength-200 {
		t.Fatalf("body %d and values line %d characters: the case does not fill them", len(body), len(values))
	}
	// As the job composes it (writeback's pullRequestBody, then
	// forge.SyncPullRequest's line of reviewers, which it bounds at
	// reviewersLineBound characters).
	const reviewersLineBound = 1000
	reviewers := "<!-- recommend-job: reviewers " + strings.Repeat("@org/team-with-a-long-name ", 40)
	reviewers = reviewers[:reviewersLineBound-len(" -->\n")] + " -->\n"
	full := strings.TrimRight(body, "\n") + "\n\n" + values + "\n" + reviewers
	closed := ClosedBody(full, strings.Repeat("nothing left. ", 100))
	for name, d := range map[string]string{"open": full, "closed": closed} {
		if n := utf8.RuneCountInString(d); n > forgeBodyLimit {
			t.Errorf("%s description is %d characters, over %d", name, n, forgeBodyLimit)
		}
	}
	if got := ParseProposed(full); len(got) < 1000 {
		t.Errorf("the values line records %d values, want the first 1,000 or more", len(got))
	}
}

// TestPullRequestBodyCutsCleanly cuts the same body at every length from
// its marker to its whole: wherever the cut falls (in a summary table,
// in folded evidence, in the held back, folded or invalid sections), it
// falls after a whole row, closes the folded section it is in, and says
// so.
func TestPullRequestBodyCutsCleanly(t *testing.T) {
	rep := manyWorkloads(3)
	whole := PullRequestBody(rep)
	minimum := len(markerPrefix) + 64 + len(" -->\n") + len(truncatedNote) + 120
	closedIn := map[string]bool{}
	for limit := minimum; limit <= len(whole)+1; limit++ {
		body := pullRequestBody(rep, limit)
		if limit >= len(whole) {
			if body != whole {
				t.Fatalf("limit %d: body cut though it fits", limit)
			}
			continue
		}
		if len(body) > limit || !strings.HasSuffix(body, truncatedNote) {
			t.Fatalf("limit %d: body of %d characters, ending %q", limit, len(body), body[max(0, len(body)-80):])
		}
		checkBody(t, body)
		if t.Failed() {
			t.Fatalf("limit %d: body\n%s", limit, body)
		}
		rest := strings.TrimSuffix(body, truncatedNote)
		if strings.HasSuffix(rest, "|\n\n</details>\n") {
			// Which folded section the cut closed.
			closedIn[rest[strings.LastIndex(rest, "<summary>"):strings.LastIndex(rest, "</summary>")]] = true
		}
	}
	if !closedIn["<summary>Evidence: percentile, buffer, OOM floor, rounding, caps"] || !closedIn["<summary>3 values without a recommendation"] {
		t.Errorf("no cut closed the evidence and the values without a recommendation: %v", closedIn)
	}
}

// q is a quantity for a test's plan.
func q(s string) *resource.Quantity {
	v := resource.MustParse(s)
	return &v
}

func TestPullRequestBodyShowsHPAArithmetic(t *testing.T) {
	p := &plan.Plan{Items: []plan.Item{{
		Namespace: "shop", Name: "web-rec", Valid: true, Target: plan.Target{Kind: "Deployment", Name: "web"},
		Source: &plan.Source{File: "apps/web.yaml", Changed: true},
		Containers: []plan.Container{{Name: "app", Resources: []plan.Resource{
			{Resource: "cpu", Current: q("500m"), Recommended: q("250m"), Changed: true},
		}}},
		Autoscalers: []plan.Autoscaler{{Name: "web", File: "apps/hpa.yaml", Changed: true, Targets: []plan.UtilizationTarget{
			{Index: 1, Resource: "cpu", From: 40, To: 80, RequestFrom: q("500m"), RequestTo: q("250m")},
			{Index: 2, Resource: "memory", Container: "app", From: 70, To: 70, RequestFrom: q("1Gi"), RequestTo: q("1Gi")},
		}}},
	}}}
	body := PullRequestBody(p)
	want := "\nHorizontalPodAutoscaler `web` in `apps/hpa.yaml`: cpu utilization target **40% → 80%** = round(40% × 500m / 250m), " +
		"so that it still adds pods at 200m of cpu per pod.\n"
	if !strings.Contains(body, want) {
		t.Errorf("body lacks the HPA's arithmetic %q:\n%s", want, body)
	}
	if strings.Contains(body, "memory utilization target") {
		t.Errorf("body shows a target that does not move:\n%s", body)
	}
	checkBody(t, body)
}

// TestPullRequestBodyShowsStartupPeak: a memory request raised to the
// startup peak says so in the summary and the evidence; one whose peak
// stayed below the buffered value shows nothing of it.
func TestPullRequestBodyShowsStartupPeak(t *testing.T) {
	memory := func(startup float64, floor bool, capped ...string) *plan.Evidence {
		ev := &plan.Evidence{Samples: 168, Span: "167h0m0s", Window: "168h0m0s", WindowDays: 7, SpanDays: 6.96, Percentile: 0.9,
			HalfLife: "24h0m0s", RawValue: 206 * mib, BufferPercent: 30, BufferedValue: 267.5 * mib, RoundingStep: "4Mi",
			StartupPeak: startup, StartupFloor: floor, Capped: capped}
		ev.UsageP50, ev.UsageP90, ev.UsageMax = usageOf(200*mib, 200*mib, 700*mib)
		return ev
	}
	tests := []struct {
		name        string
		evidence    *plan.Evidence
		recommended string
		wantSummary string
		wantCells   string
	}{
		{name: "floor set the value", evidence: memory(700*mib, true), recommended: "700Mi",
			wantSummary: "| 7d: 168 samples over 7d | 0, startup peak 700Mi set the value |\n",
			wantCells:   "| 206Mi | +30% | 268Mi | startup peak 700Mi | 4Mi | - |\n"},
		{name: "capped below it", evidence: memory(700*mib, true, "maxAllowed 512Mi, below the startup peak 700Mi"), recommended: "512Mi",
			wantSummary: "| 0, startup peak 700Mi set the value |\n",
			wantCells:   "| startup peak 700Mi | 4Mi | maxAllowed 512Mi, below the startup peak 700Mi |\n"},
		{name: "peak below the buffered value", evidence: memory(150*mib, false), recommended: "268Mi",
			wantSummary: "| 7d: 168 samples over 7d | 0 |\n",
			wantCells:   "| 206Mi | +30% | 268Mi | - | 4Mi | - |\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &plan.Plan{Items: []plan.Item{{Namespace: "shop", Name: "jvm", Valid: true, Target: plan.Target{Kind: "Deployment", Name: "jvm"},
				Source: &plan.Source{File: "apps/jvm.yaml", Changed: true},
				Containers: []plan.Container{{Name: "app", Resources: []plan.Resource{
					{Resource: "memory", Current: q("256Mi"), Recommended: q(tt.recommended), Changed: true, Evidence: tt.evidence},
				}}}}}}
			got := PullRequestBody(p)
			if !strings.Contains(got, tt.wantSummary) || !strings.Contains(got, tt.wantCells) {
				t.Errorf("PullRequestBody() =\n%s\nwant it to hold %q and %q", got, tt.wantSummary, tt.wantCells)
			}
			checkBody(t, got)
		})
	}
}
