package gitops

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/plan"
)

func TestChangeTrailersRoundTrip(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	p := &plan.Plan{Items: []plan.Item{{
		Namespace: "shop", Name: "web",
		Containers: []plan.Container{
			{Name: "app", Landed: true, Resources: []plan.Resource{
				{Resource: corev1.ResourceCPU, Current: q("500m"), Request: q("250m"), Changed: true},
				{Resource: corev1.ResourceMemory, Current: q("256Mi"), Request: q("512Mi"), Changed: true, Correction: true},
			}},
			{Name: "sidecar", Landed: true, Resources: []plan.Resource{
				// Written because the repository disagrees, not a change.
				{Resource: corev1.ResourceCPU, Current: q("100m"), Request: q("100m"), Changed: true},
				{Resource: corev1.ResourceMemory, Request: q("64Mi"), Changed: true},
			}},
			{Name: "unlanded", Resources: []plan.Resource{
				{Resource: corev1.ResourceCPU, Current: q("1"), Request: q("2"), Changed: true},
			}},
			{Name: "limits", Landed: true, Resources: []plan.Resource{
				{Resource: corev1.ResourceCPU, Current: q("1"), Limit: q("2"), Changed: true, LimitsOnly: true},
			}},
		},
	}, {
		// A name no Kubernetes object has cannot add a line.
		Namespace: "shop\nRecommend-Job-Change: x/y", Name: "z",
		Containers: []plan.Container{{Name: "app", Landed: true, Resources: []plan.Resource{
			{Resource: corev1.ResourceCPU, Current: q("1"), Request: q("2"), Changed: true},
		}}},
	}}}
	trailers := ChangeTrailers(p)
	want := "Recommend-Job-Change: shop/web app cpu 500m 250m\n" +
		"Recommend-Job-Correction: shop/web app memory 256Mi 512Mi\n" +
		"Recommend-Job-Change: shop/web sidecar memory none 64Mi\n"
	if trailers != want {
		t.Fatalf("ChangeTrailers() =\n%s\nwant\n%s", trailers, want)
	}
	msg := WithTrailers("Right-size resource requests\n\nshop/web: Deployment web\n", trailers)
	if !strings.HasSuffix(msg, "Deployment web\n\n"+want) {
		t.Errorf("WithTrailers() = %q, want the trailers as the last paragraph", msg)
	}
	got := ParseChanges(msg)
	if len(got) != 3 {
		t.Fatalf("ParseChanges() = %d changes, want 3: %+v", len(got), got)
	}
	if c := got[0]; c.Item != "shop/web" || c.Container != "app" || c.Resource != corev1.ResourceCPU || c.From.String() != "500m" || c.To.String() != "250m" || c.Correction {
		t.Errorf("first change = %+v", c)
	}
	if c := got[1]; !c.Correction || c.To.String() != "512Mi" {
		t.Errorf("second change = %+v, want the correction to 512Mi", c)
	}
	if c := got[2]; c.From != nil || c.To.String() != "64Mi" {
		t.Errorf("third change = %+v, want from none to 64Mi", c)
	}
}

func TestWebURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://github.com/acme/gitops.git", "https://github.com/acme/gitops"},
		{"http://127.0.0.1:3000/acme/gitops.git", "http://127.0.0.1:3000/acme/gitops"},
		{"git@gitlab.com:acme/gitops.git", "https://gitlab.com/acme/gitops"},
		{"ssh://git@github.com:22/acme/gitops.git", "https://github.com/acme/gitops"},
		{"file:///srv/gitops.git", ""},
	} {
		if got := webURL(parseGitURL(tc.in)); got != tc.want {
			t.Errorf("webURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
