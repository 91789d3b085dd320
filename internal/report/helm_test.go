package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// helmPlan is one ResourceRecommend whose values went through a Helm
// release: the web container's to keys under web.resources, the worker's
// to scalar keys, and the worker's memory is unchanged.
func helmPlan() *plan.Plan {
	return &plan.Plan{Items: []plan.Item{{
		Namespace: "shop", Name: "web", Valid: true,
		Target: plan.Target{APIVersion: "apps/v1", Kind: "Deployment", Name: "shop-web"},
		Containers: []plan.Container{
			{Name: "web", ValuesKeys: map[string]string{"requests.cpu": "web.resources.requests.cpu", "limits.cpu": "web.resources.limits.cpu"},
				Resources: []plan.Resource{{Resource: "cpu", Current: q("500m"), Recommended: q("250m"), Changed: true, CurrentLimit: q("1"), RecommendedLimit: q("500m")}}},
			{Name: "worker", ValuesKeys: map[string]string{"requests.cpu": "cpuRequest", "requests.memory": "memoryRequest"},
				Resources: []plan.Resource{
					{Resource: "cpu", Current: q("1"), Recommended: q("400m"), Changed: true, Reason: "capped at 400m"},
					{Resource: "memory", Current: q("1Gi"), Recommended: q("1Gi")},
				}},
		},
		Source: &plan.Source{File: "charts/shop/values-production.yaml", Changed: true, Method: plan.MethodSplice, Helm: &plan.Helm{
			Kind: "HelmRelease", Object: "shop/shop", Release: "shop", Namespace: "shop",
			Chart: "shop", Version: "1.4.0", ChartSource: "https://charts.example.com",
			Layer: "the values file charts/shop/values-production.yaml",
		}},
	}}}
}

// TestTableSaysWhereHelmValuesWent checks that each changed row of an
// item rendered by a Helm release names the release, the chart, the file
// and the row's values keys, and that no other row does.
func TestTableSaysWhereHelmValuesWent(t *testing.T) {
	const route = "via Helm release shop/shop (chart shop 1.4.0): charts/shop/values-production.yaml "
	tests := []struct {
		name  string
		edit  func(*plan.Plan)
		wants []string
		nots  []string
	}{
		{
			name: "keys per row",
			edit: func(*plan.Plan) {},
			wants: []string{
				"change, " + route + "web.resources.requests.cpu, web.resources.limits.cpu\n",
				"change (capped at 400m), " + route + "cpuRequest\n",
			},
			nots: []string{"memoryRequest"},
		},
		{
			name:  "already in git",
			edit:  func(p *plan.Plan) { p.Items[0].Source.Changed = false },
			wants: []string{"change, already in git, " + route + "cpuRequest\n"},
		},
		{
			name:  "no file: the layer",
			edit:  func(p *plan.Plan) { p.Items[0].Source.File = "" },
			wants: []string{"(chart shop 1.4.0): the values file charts/shop/values-production.yaml cpuRequest\n"},
		},
		{
			name:  "not rendered",
			edit:  func(p *plan.Plan) { p.Items[0].Source.Error = "helm: no values key sets requests.cpu" },
			wants: []string{"not rendered: helm: no values key sets requests.cpu\n"},
			nots:  []string{"via Helm"},
		},
		{
			name:  "not through Helm",
			edit:  func(p *plan.Plan) { p.Items[0].Source.Helm = nil },
			wants: []string{"change (capped at 400m)\n"},
			nots:  []string{"via Helm"},
		},
		{
			name: "untrusted text stays on its line",
			edit: func(p *plan.Plan) {
				p.Items[0].Source.Helm.Chart = "shop\n\x1b[2Jfake row\tx"
				p.Items[0].Containers[1].ValuesKeys["requests.cpu"] = "cpu\r\nRequest"
			},
			wants: []string{"(chart shop [2Jfake row x 1.4.0)", "cpu Request\n"},
			nots:  []string{"\x1b", "\r"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := helmPlan()
			tt.edit(p)
			var buf bytes.Buffer
			if err := Write(&buf, p, FormatTable); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			for _, want := range tt.wants {
				if !strings.Contains(out, want) {
					t.Errorf("table lacks %q:\n%s", want, out)
				}
			}
			for _, not := range tt.nots {
				if strings.Contains(out, not) {
					t.Errorf("table holds %q:\n%s", not, out)
				}
			}
			if n := strings.Count(out, "\n"); n != 4 {
				t.Errorf("table has %d lines, want a header and 3 rows:\n%s", n, out)
			}
		})
	}
}

// TestEncodingsCarryTheHelmRoute checks the documented field names of the
// Helm route in JSON and YAML.
func TestEncodingsCarryTheHelmRoute(t *testing.T) {
	type doc struct {
		ResourceRecommends []struct {
			Containers []struct {
				Name       string            `json:"name"`
				ValuesKeys map[string]string `json:"valuesKeys"`
			} `json:"containers"`
			Source struct {
				File string `json:"file"`
				Helm *struct {
					Kind        string `json:"kind"`
					Object      string `json:"object"`
					Release     string `json:"release"`
					Namespace   string `json:"namespace"`
					Chart       string `json:"chart"`
					Version     string `json:"version"`
					ChartSource string `json:"chartSource"`
					Layer       string `json:"layer"`
				} `json:"helm"`
			} `json:"source"`
		} `json:"resourceRecommends"`
	}
	for _, f := range []Format{FormatJSON, FormatYAML} {
		t.Run(string(f), func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, helmPlan(), f); err != nil {
				t.Fatal(err)
			}
			var d doc
			var err error
			if f == FormatJSON {
				err = json.Unmarshal(buf.Bytes(), &d)
			} else {
				err = yaml.Unmarshal(buf.Bytes(), &d)
			}
			if err != nil || len(d.ResourceRecommends) != 1 {
				t.Fatalf("decoding the report: %v\n%s", err, buf.String())
			}
			it := d.ResourceRecommends[0]
			h := it.Source.Helm
			if h == nil || h.Kind != "HelmRelease" || h.Object != "shop/shop" || h.Release != "shop" || h.Namespace != "shop" ||
				h.Chart != "shop" || h.Version != "1.4.0" || h.ChartSource != "https://charts.example.com" ||
				h.Layer != "the values file charts/shop/values-production.yaml" {
				t.Errorf("source.helm = %+v", h)
			}
			if got := it.Containers[1].ValuesKeys; got["requests.cpu"] != "cpuRequest" || got["requests.memory"] != "memoryRequest" || len(got) != 2 {
				t.Errorf("worker's valuesKeys = %v", got)
			}
		})
	}
	// An item not through Helm has neither field.
	var buf bytes.Buffer
	if err := Write(&buf, sample(), FormatJSON); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), `"helm"`) || strings.Contains(buf.String(), `"valuesKeys"`) {
		t.Errorf("a report without Helm holds its fields:\n%s", buf.String())
	}
}
