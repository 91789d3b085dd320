package gitops

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
	if strs < 12 {
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
