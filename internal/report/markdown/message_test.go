package markdown

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// TestCommitMessageKeepsTenantTextOnItsLine renders the default template
// with names and a file path that try to add lines, such as trailers, to
// the commit message.
func TestCommitMessageKeepsTenantTextOnItsLine(t *testing.T) {
	tmpl, err := ParseCommitTemplate("")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data MessageData
		want string
	}{
		{
			name: "plain",
			data: MessageData{Workloads: []MessageWorkload{{Namespace: "shop", Name: "web", Kind: "Deployment", Target: "web", File: "apps/web.yaml",
				Containers: []MessageContainer{{Name: "app", Resources: []MessageResource{{Resource: "cpu", Current: "500m", Recommended: "390m"}}}}}}},
			want: "Right-size resource requests\n\nshop/web: Deployment web (apps/web.yaml)\n  app: cpu 500m -> 390m\n",
		},
		{
			name: "through Helm",
			data: MessageData{Workloads: []MessageWorkload{{Namespace: "shop", Name: "web", Kind: "Deployment", Target: "shop-web",
				File: "charts/shop/values-production.yaml",
				Helm: &MessageHelm{Kind: "HelmRelease", Object: "shop/shop", Release: "shop", Namespace: "shop", Chart: "shop", Version: "1.4.0",
					Layer: "the values file charts/shop/values-production.yaml"},
				Containers: []MessageContainer{
					{Name: "web", Resources: []MessageResource{
						{Resource: "cpu", Current: "500m", Recommended: "390m", Key: "web.resources.requests.cpu"},
						{Resource: "memory", Current: "512Mi", Recommended: "256Mi", Key: "web.resources.requests.memory"},
					}},
					{Name: "worker", Resources: []MessageResource{{Resource: "cpu", Current: "1", Recommended: "500m", Key: "cpuRequest"}}},
				}}}},
			want: "Right-size resource requests\n\nshop/web: Deployment shop-web (charts/shop/values-production.yaml)\n" +
				"  via Helm release shop/shop (chart shop 1.4.0): the values file charts/shop/values-production.yaml\n" +
				"  web: cpu 500m -> 390m (web.resources.requests.cpu), memory 512Mi -> 256Mi (web.resources.requests.memory)\n" +
				"  worker: cpu 1 -> 500m (cpuRequest)\n",
		},
		{
			name: "through Helm, a chart without a version",
			data: MessageData{Workloads: []MessageWorkload{{Namespace: "shop", Name: "web", Kind: "Deployment", Target: "shop-web", File: "apps/shop.yaml",
				Helm:       &MessageHelm{Release: "shop", Namespace: "shop", Chart: "shop", Layer: "spec.values of HelmRelease shop/shop (apps/shop.yaml)"},
				Containers: []MessageContainer{{Name: "web", Resources: []MessageResource{{Resource: "cpu", Current: "none", Recommended: "100m", Key: "cpu"}}}}}}},
			want: "Right-size resource requests\n\nshop/web: Deployment shop-web (apps/shop.yaml)\n" +
				"  via Helm release shop/shop (chart shop): spec.values of HelmRelease shop/shop (apps/shop.yaml)\n" +
				"  web: cpu none -> 100m (cpu)\n",
		},
		{
			name: "line breaks in what the repository says of a release",
			data: MessageData{Workloads: []MessageWorkload{{Namespace: "shop", Name: "web", Kind: "Deployment", Target: "web", File: "values.yaml",
				Helm: &MessageHelm{Release: "shop\n\nSigned-off-by: Mallory <m@example.com>", Namespace: "shop", Chart: "shop", Version: "1\r\n2",
					Layer: "the values file values.yaml\u2028Co-authored-by: Mallory <m@example.com>"},
				Containers: []MessageContainer{{Name: "app", Resources: []MessageResource{{Resource: "cpu", Current: "1", Recommended: "2",
					Key: "a\nSigned-off-by: Mallory <m@example.com>"}}}}}}},
			want: "Right-size resource requests\n\nshop/web: Deployment web (values.yaml)\n" +
				"  via Helm release shop/shop Signed-off-by: Mallory <m@example.com> (chart shop 1 2): the values file values.yaml Co-authored-by: Mallory <m@example.com>\n" +
				"  app: cpu 1 -> 2 (a Signed-off-by: Mallory <m@example.com>)\n",
		},
		{
			name: "line breaks in a path and a container name",
			data: MessageData{Workloads: []MessageWorkload{{Namespace: "shop", Name: "web", Kind: "Deployment", Target: "web",
				File:       "apps/web.yaml\n\nSigned-off-by: Mallory <m@example.com>",
				Containers: []MessageContainer{{Name: "app\r\nCo-authored-by: Mallory <m@example.com>\u2028x", Resources: []MessageResource{{Resource: "cpu", Current: "500m", Recommended: "390m"}}}}}}},
			want: "Right-size resource requests\n\nshop/web: Deployment web (apps/web.yaml Signed-off-by: Mallory <m@example.com>)\n" +
				"  app Co-authored-by: Mallory <m@example.com> x: cpu 500m -> 390m\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CommitMessage(tmpl, tt.data)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("CommitMessage() =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// TestMessageDataPlainCoversEveryField fills every string of a
// MessageData with a line break and checks that plain takes out all of
// them, so a field added later cannot be forgotten.
func TestMessageDataPlainCoversEveryField(t *testing.T) {
	var data MessageData
	fill(reflect.ValueOf(&data).Elem())
	strs := 0
	walkStrings(reflect.ValueOf(data.plain()), func(s string) {
		strs++
		if s != "a b" {
			t.Errorf("plain() left %q, want \"a b\"", s)
		}
	})
	if strs < 21 {
		t.Errorf("plain() returned %d strings, want every field filled", strs)
	}
}

// fill sets every string in v to "a\nb" and gives every slice one element.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("a\nb")
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i))
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	}
}

func walkStrings(v reflect.Value, visit func(string)) {
	switch v.Kind() {
	case reflect.String:
		visit(v.String())
	case reflect.Struct:
		for i := range v.NumField() {
			walkStrings(v.Field(i), visit)
		}
	case reflect.Slice:
		for i := range v.Len() {
			walkStrings(v.Index(i), visit)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			walkStrings(v.Elem(), visit)
		}
	}
}

func TestPlainText(t *testing.T) {
	for in, want := range map[string]string{
		"":                    "",
		"a\nb":                "a b",
		"a\r\n\tb  c":         "a b c",
		"\x1b[31mred\x1b[0m":  "[31mred [0m",
		"abc\u202edcba":       "abc dcba",
		"line\u2028separator": "line separator",
		"bad\xffutf8":         "bad\uFFFDutf8",
		"Signed-off-by: x\n":  "Signed-off-by: x",
	} {
		if got := plan.Line(in); got != want || strings.ContainsAny(got, "\n\r") {
			t.Errorf("plan.Line(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMessageDataOfListsLimits(t *testing.T) {
	p := &plan.Plan{Items: []plan.Item{
		{Namespace: "shop", Name: "web", Object: plan.Object{Kind: "Deployment", Name: "web"}, Source: &plan.Source{File: "web.yaml", Changed: true},
			Containers: []plan.Container{
				{Name: "app", Landed: true, Resources: []plan.Resource{
					{Resource: "cpu", Current: q("500m"), Recommended: q("200m"), CurrentLimit: q("1"), RecommendedLimit: q("400m"),
						Changed: true, Request: q("200m"), Limit: q("400m")},
					// LimitsOnly: the values are the limit's.
					{Resource: "memory", Current: q("1Gi"), Recommended: q("512Mi"), Changed: true, LimitsOnly: true, Limit: q("512Mi")},
					// Held back: not written, not listed.
					{Resource: "ephemeral-storage", Current: q("1Gi"), Recommended: q("1Gi"), HeldBack: true},
				}},
				// Its values were already in the file: not listed.
				{Name: "sidecar", Resources: []plan.Resource{{Resource: "cpu", Current: q("100m"), Recommended: q("50m"), Request: q("50m")}}},
			}},
		// Nothing landed for this one.
		{Namespace: "shop", Name: "api", Containers: []plan.Container{{Name: "api", Resources: []plan.Resource{{Resource: "cpu", Request: q("1")}}}}},
	}}
	data := MessageDataOf(p, "main", "recommend-job/main", ".")
	if len(data.Workloads) != 1 || data.Workloads[0].File != "web.yaml" || data.Workloads[0].Kind != "Deployment" || len(data.Workloads[0].Containers) != 1 {
		t.Fatalf("workloads = %+v, want web's app only", data.Workloads)
	}
	var got []string
	for _, r := range data.Workloads[0].Containers[0].Resources {
		got = append(got, r.Resource+" "+r.Current+" -> "+r.Recommended)
	}
	want := []string{"cpu 500m -> 200m", "cpu limit 1 -> 400m", "memory limit 1Gi -> 512Mi"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("message resources (-want +got):\n%s", d)
	}
}

// TestMessageDataOfFollowsHelm checks that a workload whose values went
// through a Helm release carries the release, and each value its values
// key: the request's, the limit's, or under LimitsOnly the limit's.
func TestMessageDataOfFollowsHelm(t *testing.T) {
	helm := &plan.Helm{Kind: "HelmRelease", Object: "shop/shop", Release: "shop", Namespace: "shop", Chart: "shop", Version: "1.4.0",
		ChartSource: "https://charts.example.com shop 1.4.0", Layer: "the values file charts/shop/values-production.yaml"}
	item := func(h *plan.Helm, keys map[string]string) *plan.Plan {
		return &plan.Plan{Items: []plan.Item{{Namespace: "shop", Name: "web", Object: plan.Object{Kind: "Deployment", Name: "shop-web"},
			Source: &plan.Source{File: "charts/shop/values-production.yaml", Changed: true, Helm: h},
			Containers: []plan.Container{{Name: "web", Landed: true, ValuesKeys: keys, Resources: []plan.Resource{
				{Resource: "cpu", Current: q("500m"), CurrentLimit: q("1"), Request: q("200m"), Limit: q("400m")},
				{Resource: "memory", Current: q("1Gi"), LimitsOnly: true, Limit: q("512Mi")},
			}}}}}}
	}
	tests := []struct {
		name     string
		plan     *plan.Plan
		wantHelm *MessageHelm
		want     []string
	}{
		{
			name: "keys at paths",
			plan: item(helm, map[string]string{"requests.cpu": "web.resources.requests.cpu", "limits.cpu": "web.resources.limits.cpu",
				"limits.memory": "web.resources.limits.memory"}),
			wantHelm: &MessageHelm{Kind: "HelmRelease", Object: "shop/shop", Release: "shop", Namespace: "shop", Chart: "shop", Version: "1.4.0",
				ChartSource: "https://charts.example.com shop 1.4.0", Layer: "the values file charts/shop/values-production.yaml"},
			want: []string{"cpu=web.resources.requests.cpu", "cpu limit=web.resources.limits.cpu", "memory limit=web.resources.limits.memory"},
		},
		{
			name: "scalar keys",
			plan: item(helm, map[string]string{"requests.cpu": "cpuRequest", "limits.cpu": "cpuLimit", "limits.memory": "memoryLimit"}),
			wantHelm: &MessageHelm{Kind: "HelmRelease", Object: "shop/shop", Release: "shop", Namespace: "shop", Chart: "shop", Version: "1.4.0",
				ChartSource: "https://charts.example.com shop 1.4.0", Layer: "the values file charts/shop/values-production.yaml"},
			want: []string{"cpu=cpuRequest", "cpu limit=cpuLimit", "memory limit=memoryLimit"},
		},
		{
			name: "not through Helm",
			plan: item(nil, nil),
			want: []string{"cpu=", "cpu limit=", "memory limit="},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := MessageDataOf(tt.plan, "main", "recommend-job/main", ".")
			if len(data.Workloads) != 1 || len(data.Workloads[0].Containers) != 1 {
				t.Fatalf("workloads = %+v, want web's web container", data.Workloads)
			}
			w := data.Workloads[0]
			if d := cmp.Diff(tt.wantHelm, w.Helm); d != "" {
				t.Errorf("Helm (-want +got):\n%s", d)
			}
			var got []string
			for _, r := range w.Containers[0].Resources {
				got = append(got, r.Resource+"="+r.Key)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("resources and keys (-want +got):\n%s", d)
			}
		})
	}
}
