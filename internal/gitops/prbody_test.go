package gitops

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// bodyReport has a workload with a changed and a new request, a memory
// request without recommendation, one held back, a workload whose file
// could not be edited, and an invalid ResourceRecommend.
func bodyReport() *plan.Plan {
	ev := func(capped ...string) *plan.Evidence {
		return &plan.Evidence{Window: "168h0m0s", Samples: 2016, Percentile: 0.9, BufferPercent: 10, Capped: capped}
	}
	return &plan.Plan{Items: []plan.Item{
		{Namespace: "shop", Name: "web-rec", Valid: true, Target: plan.Target{Kind: "Deployment", Name: "web"},
			Source: &plan.Source{File: "apps/web.yaml", Changed: true},
			Containers: []plan.Container{
				{Name: "app", Resources: []plan.Resource{
					{Resource: "cpu", Current: q("500m"), Recommended: q("390m"), Changed: true, Evidence: ev("maxAllowed 2")},
					{Resource: "memory", Current: q("512Mi"), Reason: "insufficient data: 10 samples over 1h0m0s, need 24h0m0s"},
				}},
				{Name: "sidecar", Resources: []plan.Resource{
					{Resource: "cpu", Recommended: q("50m"), Changed: true, Evidence: ev()},
					{Resource: "memory", Current: q("64Mi"), Recommended: q("64Mi"), Evidence: &plan.Evidence{HeldBack: "change below threshold 5%"}},
				}},
			}},
		{Namespace: "shop", Name: "api-rec", Valid: true, Target: plan.Target{Kind: "Deployment", Name: "api"},
			Source: &plan.Source{Error: "no manifest found"},
			Containers: []plan.Container{{Name: "api", Resources: []plan.Resource{
				{Resource: "cpu", Current: q("1"), Recommended: q("800m"), Changed: true, Evidence: ev()},
			}}}},
		{Namespace: "shop", Name: "db-rec", Target: plan.Target{Kind: "StatefulSet", Name: "db"},
			Error: &plan.Error{Code: "ContainersNotFound", Message: "container main is not found"}},
	}}
}

func TestPullRequestBody(t *testing.T) {
	// The change set: web's two changed requests; api's is not rendered.
	preimage := "shop\x00web-rec\x00Deployment\x00web\x00app\x00cpu\x00390m\n" +
		"shop\x00web-rec\x00Deployment\x00web\x00sidecar\x00cpu\x0050m"
	sum := sha256.Sum256([]byte(preimage))
	hash := hex.EncodeToString(sum[:])

	// 390m against 500m is -110/500 = -22.0%; sidecar had no request.
	want := "<!-- recommend-job: sha256=" + hash + " -->\n" +
		"This pull request sets resource requests to the usage-based recommendations of the ResourceRecommends below.\n" +
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
		"| shop/db-rec | StatefulSet db | `ContainersNotFound` | container main is not found |\n"
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
// marker for hash, break the table, add a heading or ping a team.
func tenantReport(hash string) *plan.Plan {
	evil := func(what string) string {
		return what + " " + forgedMarker(hash) + "\n\n### Approved by @org/security | x |\n<b>ok</b> `code` [link](https://evil.example)"
	}
	return &plan.Plan{Items: []plan.Item{
		{Namespace: "team-a", Name: "web", Valid: true, Target: plan.Target{Kind: "Deployment", Name: "web"},
			Source: &plan.Source{File: evil("apps/web.yaml"), Changed: true},
			Containers: []plan.Container{{Name: evil("app"), Resources: []plan.Resource{
				{Resource: "cpu", Current: q("500m"), Recommended: q("250m"), Changed: true, CurrentLimit: q("1"), RecommendedLimit: q("500m"),
					Evidence: &plan.Evidence{Window: "168h0m0s", Samples: 10, Percentile: 0.9, Capped: []string{evil("cap")}}},
				{Resource: "memory", Current: q("1Gi"), Reason: evil("reason")},
				{Resource: "ephemeral-storage", Current: q("1Gi"), Recommended: q("1Gi"), Evidence: &plan.Evidence{HeldBack: evil("held")}},
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
	// Every line is one of the job's: tenant text adds none, and every
	// table row has its table's number of cells.
	cells := 0
	for i, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		switch {
		case i == 0:
		case line == "", strings.HasPrefix(line, "This pull request sets"):
		case strings.HasPrefix(line, "### "):
			if h := strings.TrimPrefix(line, "### "); h != "Held back" && h != "Invalid ResourceRecommends" &&
				!strings.HasPrefix(h, "team-a/web: ") {
				t.Errorf("line %d is a heading the job did not write: %q", i, line)
			}
		case strings.HasPrefix(line, "|---"):
			cells = strings.Count(line, "|")
		case strings.HasPrefix(line, "| ") && strings.HasSuffix(line, " |"):
			if n := unescapedPipes(line); n != cells && !strings.HasPrefix(line, "| Container |") && !strings.HasPrefix(line, "| ResourceRecommend |") {
				t.Errorf("line %d has %d cell separators, want %d: %q", i, n, cells, line)
			}
		default:
			t.Errorf("line %d is not the job's: %q", i, line)
		}
	}
	// What the tenant wrote is still shown, inert.
	for _, want := range []string{"message &lt;\\!-- recommend-job: sha256=", "#" + wordJoiner + "#" + wordJoiner + "#" + wordJoiner + " Approved by @" + wordJoiner + "org/security \\| x \\|",
		"&lt;b&gt;ok&lt;/b&gt; \\`code\\` \\[link\\]\\(https:" + wordJoiner + "//evil.example\\)"} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
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
	one := bodyReport().Items[0]
	rep := &plan.Plan{}
	for i := range 2000 {
		e := one
		e.Name = "web-" + strconv.Itoa(i)
		rep.Items = append(rep.Items, e)
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
	entry := func(limit string) *plan.Plan {
		return &plan.Plan{Items: []plan.Item{{Namespace: "shop", Name: "web", Valid: true,
			Target: plan.Target{Kind: "Deployment", Name: "web"},
			Source: &plan.Source{File: "web.yaml", Changed: true},
			Containers: []plan.Container{{Name: "app", Resources: []plan.Resource{
				{Resource: "cpu", Current: q("500m"), Recommended: q("250m"), Changed: true, CurrentLimit: q("1"), RecommendedLimit: q(limit)},
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

// q is a quantity for a test's plan.
func q(s string) *resource.Quantity {
	v := resource.MustParse(s)
	return &v
}
