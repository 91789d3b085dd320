package gitops

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
	ev := &plan.Evidence{Window: "168h0m0s", Samples: 2016, Percentile: 0.9, BufferPercent: 10}
	return plan.Item{Namespace: "shop", Name: "web-rec", Valid: true, Target: plan.Target{Kind: "Deployment", Name: "shop-web"},
		Source: &plan.Source{File: "charts/shop/values-production.yaml", Changed: true, Method: plan.MethodSplice, Helm: &plan.Helm{
			Kind: "HelmRelease", Object: "flux-system/shop", Release: "shop", Namespace: "shop",
			Chart: "shop", Version: "1.4.0", ChartSource: "https://charts.example.com shop 1.4.0",
			Layer: "the values file charts/shop/values-production.yaml",
		}},
		Containers: []plan.Container{
			{Name: "web", ValuesKeys: map[string]string{"requests.cpu": "web.resources.requests.cpu", "requests.memory": "web.resources.requests.memory"},
				Resources: []plan.Resource{
					{Resource: "cpu", Current: q("500m"), Recommended: q("390m"), Changed: true, Evidence: ev},
					{Resource: "memory", Current: q("512Mi"), Recommended: q("256Mi"), Changed: true, Evidence: ev},
				}},
			{Name: "worker", ValuesKeys: map[string]string{"requests.cpu": "cpuRequest", "limits.cpu": "cpuLimit"},
				Resources: []plan.Resource{
					{Resource: "cpu", Current: q("1"), Recommended: q("500m"), Changed: true, CurrentLimit: q("2"), RecommendedLimit: q("1"), Evidence: ev},
				}},
		}}
}

func TestPullRequestBodyThroughHelm(t *testing.T) {
	const table = "| Container | Resource | Current | Recommended | Change | Window | Samples | Percentile | Buffer | Caps | Values key |\n" +
		"|---|---|---|---|---|---|---|---|---|---|---|\n"
	const web = "| web | cpu | 500m | 390m | -22.0% | 168h0m0s | 2016 | p90 | +10% | - | `web.resources.requests.cpu` |\n" +
		"| web | memory | 512Mi | 256Mi | -50.0% | 168h0m0s | 2016 | p90 | +10% | - | `web.resources.requests.memory` |\n"
	const worker = "| worker | cpu | 1 | 500m | -50.0% | 168h0m0s | 2016 | p90 | +10% | - | `cpuRequest` |\n" +
		"| worker | cpu limit | 2 | 1 | -50.0% |  |  |  |  | ratio kept | `cpuLimit` |\n"
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
			want: "| worker | cpu limit | 2 | 1 | -50.0% |  |  |  |  | ratio kept | - |\n",
		},
		{
			name: "limits only: the limit's key",
			edit: func(it *plan.Item) {
				it.Containers[1].ValuesKeys = map[string]string{"limits.cpu": "cpuLimit"}
				it.Containers[1].Resources[0] = plan.Resource{Resource: "cpu", Current: q("2"), Recommended: q("1"), Changed: true, LimitsOnly: true}
			},
			want: "| worker | cpu | 2 | 1 | -50.0% |  |  |  |  |  | `cpuLimit` |\n",
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
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	var helmLines, rows int
	for _, line := range lines[1:] {
		switch {
		case line == "", strings.HasPrefix(line, "This pull request sets"), strings.HasPrefix(line, "### shop/web-rec: "), strings.HasPrefix(line, "|---"),
			strings.HasPrefix(line, "| Container |"):
		case strings.HasPrefix(line, "Through Helm release "):
			helmLines++
			// Code spans hold plain text only; the rest must be inert.
			checkInert(t, codeSpan.ReplaceAllString(line, ""))
		case strings.HasPrefix(line, "| ") && strings.HasSuffix(line, " |"):
			rows++
			if n := unescapedPipes(line); n != 12 {
				t.Errorf("row has %d cell separators, want 12: %q", n, line)
			}
		default:
			t.Errorf("line is not the job's: %q", line)
		}
	}
	if helmLines != 1 || rows != 4 {
		t.Errorf("body has %d Helm lines and %d rows, want 1 and 4:\n%s", helmLines, rows, body)
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
	for _, line := range strings.Split(body, "\n") {
		if (strings.HasPrefix(line, "|") && !strings.HasSuffix(line, "|")) || (strings.HasPrefix(line, "Through Helm") && !strings.HasSuffix(line, ".")) {
			t.Fatalf("cut inside a line: %q", line)
		}
	}
}
