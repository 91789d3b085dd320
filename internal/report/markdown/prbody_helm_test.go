package markdown

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// helmItem is a workload a Helm release renders: the web container's
// requests went to two keys under web.resources, the worker's to scalar
// keys, its limit with them.
func helmItem() plan.Item {
	ev := func(p50, p90, max float64) *plan.Evidence {
		ev := &plan.Evidence{Window: "168h0m0s", WindowDays: 7, Samples: 2016, Span: "167h55m0s", SpanDays: 7, Percentile: 0.9, BufferPercent: 10}
		ev.UsageP50, ev.UsageP90, ev.UsageMax = usageOf(p50, p90, max)
		return ev
	}
	return plan.Item{Namespace: "shop", Name: "web-rec", Valid: true, Target: plan.Target{Kind: "Deployment", Name: "shop-web"},
		Source: &plan.Source{File: "charts/shop/values-production.yaml", Changed: true, Method: plan.MethodSplice, Helm: &plan.Helm{
			Kind: "HelmRelease", Object: "flux-system/shop", Release: "shop", Namespace: "shop",
			Chart: "shop", Version: "1.4.0", ChartSource: "https://charts.example.com shop 1.4.0",
			Layer: "the values file charts/shop/values-production.yaml",
		}},
		Containers: []plan.Container{
			{Name: "web", ValuesKeys: map[string]string{"requests.cpu": "web.resources.requests.cpu", "requests.memory": "web.resources.requests.memory"},
				Resources: []plan.Resource{
					{Resource: "cpu", Current: q("500m"), Recommended: q("390m"), Changed: true, LiveLimit: q("1"), Evidence: ev(0.12, 0.31, 0.62)},
					{Resource: "memory", Current: q("512Mi"), Recommended: q("256Mi"), Changed: true, Evidence: ev(180*mib, 210*mib, 230*mib)},
				}},
			{Name: "worker", ValuesKeys: map[string]string{"requests.cpu": "cpuRequest", "limits.cpu": "cpuLimit"},
				Resources: []plan.Resource{
					{Resource: "cpu", Current: q("1"), Recommended: q("500m"), Changed: true, LiveLimit: q("2"), CurrentLimit: q("2"), RecommendedLimit: q("1"),
						Evidence: ev(0.2, 0.41, 0.75)},
				}},
		}}
}

func TestPullRequestBodyThroughHelm(t *testing.T) {
	const table = "| Container | Resource | Current | Proposed | Change | Limit | Usage p50 / p90 / max | Window | OOM kills | Values key |\n" +
		"|---|---|---|---|---|---|---|---|---|---|\n"
	const web = "| web | cpu | 500m | 390m | -22.0% | 1, unchanged | 120m / 310m / 620m | 7d: 2016 samples over 7d | - | `web.resources.requests.cpu` |\n" +
		"| web | memory | 512Mi | 256Mi | -50.0% | none | 180Mi / 210Mi / 230Mi | 7d: 2016 samples over 7d | 0 | `web.resources.requests.memory` |\n"
	const worker = "| worker | cpu | 1 | 500m | -50.0% | 2 → 1 (-50.0%, ratio kept) | 200m / 410m / 750m | 7d: 2016 samples over 7d | - | `cpuRequest`, limit `cpuLimit` |\n"
	tests := []struct {
		name string
		edit func(*plan.Item)
		want string
	}{
		{
			name: "values file",
			edit: func(*plan.Item) {},
			want: "\n### shop/web-rec: Deployment shop-web in `charts/shop/values-production.yaml`\n\n" +
				"Through Helm release `shop/shop`, installed by HelmRelease `flux-system/shop`, chart `shop` `1.4.0` from `https://charts.example.com shop 1.4.0`; " +
				"values written to the values file charts/shop/values-production.yaml.\n\n" + table + web + worker,
		},
		{
			name: "values of the object, chart in the repository",
			edit: func(it *plan.Item) {
				h := it.Source.Helm
				it.Source.File, h.Kind, h.Object = "apps/shop.yaml", "Application", "argocd/shop"
				h.Version, h.ChartSource, h.Layer = "", "charts/shop", "helm.valuesObject of Application argocd/shop (apps/shop.yaml)"
			},
			want: "\n### shop/web-rec: Deployment shop-web in `apps/shop.yaml`\n\n" +
				"Through Helm release `shop/shop`, installed by Application `argocd/shop`, chart `shop` from `charts/shop`; " +
				"values written to helm.valuesObject of Application argocd/shop \\(apps/shop.yaml\\).\n\n" + table + web + worker,
		},
		{
			name: "a value without a key shows a dash",
			edit: func(it *plan.Item) { delete(it.Containers[1].ValuesKeys, "limits.cpu") },
			want: "| worker | cpu | 1 | 500m | -50.0% | 2 → 1 (-50.0%, ratio kept) | 200m / 410m / 750m | 7d: 2016 samples over 7d | - | `cpuRequest`, limit - |\n",
		},
		{
			name: "limits only: the limit's key",
			edit: func(it *plan.Item) {
				it.Containers[1].ValuesKeys = map[string]string{"limits.cpu": "cpuLimit"}
				it.Containers[1].Resources[0] = plan.Resource{Resource: "cpu", Current: q("2"), Recommended: q("1"), Changed: true, LimitsOnly: true, LiveLimit: q("2")}
			},
			want: "| worker | cpu limit | 2 | 1 | -50.0% | this row; the request stays | - | - | - | `cpuLimit` |\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it := helmItem()
			tt.edit(&it)
			body := PullRequestBody(&plan.Plan{Items: []plan.Item{it}})
			if !strings.Contains(body, tt.want) {
				t.Errorf("PullRequestBody() =\n%s\nlacks\n%s", body, tt.want)
			}
		})
	}
}

// codeSpan is a code span as code writes it.
var codeSpan = regexp.MustCompile("`[A-Za-z0-9 ._/:=+,-]+`")

// TestPullRequestBodyNeutralisesHelmText checks that what the repository
// says of a Helm release (its names, chart, source, values layer and
// keys) stays inert text on the job's lines.
func TestPullRequestBodyNeutralisesHelmText(t *testing.T) {
	evil := func(what string) string {
		return what + " " + forgedMarker(strings.Repeat("0", 64)) + "\n\n### Approved by @org/security | x |\n<b>ok</b> `code` [link](https://evil.example)"
	}
	it := helmItem()
	it.Source.Helm = &plan.Helm{Kind: evil("Kind"), Object: evil("object"), Release: evil("release"), Namespace: "shop",
		Chart: evil("chart"), Version: evil("1.0"), ChartSource: evil("source"), Layer: evil("layer")}
	it.Containers[0].ValuesKeys["requests.cpu"] = evil("key")
	body := PullRequestBody(&plan.Plan{Items: []plan.Item{it}})
	if n := strings.Count(body, "<!--"); n != 1 {
		t.Errorf("body holds %d comments, want only the marker:\n%s", n, body)
	}
	if strings.Contains(body, "@org") || strings.Contains(body, "<b>") || strings.Contains(body, "](") || strings.Contains(body, "\n###"+" Approved") {
		t.Errorf("body holds a live mention, tag, link or heading:\n%s", body)
	}
	checkBody(t, body)
	var helmLines, rows int
	for _, line := range strings.Split(body, "\n") {
		switch {
		case strings.HasPrefix(line, "Through Helm release "):
			helmLines++
			// Code spans hold plain text only; the rest must be inert.
			checkInert(t, codeSpan.ReplaceAllString(line, ""))
		case strings.HasPrefix(line, "| web |"), strings.HasPrefix(line, "| worker |"):
			rows++
		}
	}
	// Three rows in the summary, three in the evidence.
	if helmLines != 1 || rows != 6 {
		t.Errorf("body has %d Helm lines and %d rows, want 1 and 6:\n%s", helmLines, rows, body)
	}
}

// TestPullRequestBodyThroughHelmIsBounded checks that a body of many Helm
// workloads is cut at a whole line, as any other.
func TestPullRequestBodyThroughHelmIsBounded(t *testing.T) {
	rep := &plan.Plan{}
	for i := range 1000 {
		it := helmItem()
		it.Name = "web-" + strconv.Itoa(i)
		rep.Items = append(rep.Items, it)
	}
	body := PullRequestBody(rep)
	if len(body) > MaxBodyLength {
		t.Errorf("body is %d characters, want at most %d", len(body), MaxBodyLength)
	}
	if !strings.HasSuffix(body, "\n_Truncated: the job's report lists everything._\n") {
		t.Errorf("a truncated body must say so; it ends:\n%s", body[len(body)-300:])
	}
	checkBody(t, body)
}
