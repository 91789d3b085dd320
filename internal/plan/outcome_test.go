package plan

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

func TestPartial(t *testing.T) {
	q := resource.MustParse("100m")
	complete := Item{Namespace: "a", Name: "web", Valid: true, Source: &Source{File: "web.yaml", Changed: true},
		Containers: []Container{{Name: "app", Resources: []Resource{{Resource: "cpu", Recommended: &q}}}}}
	tests := []struct {
		name  string
		items []Item
		want  bool
	}{
		{name: "nothing", want: false},
		{name: "complete", items: []Item{complete}, want: false},
		{name: "held back by a cap is complete", items: []Item{{Containers: []Container{{Resources: []Resource{{Recommended: &q, Reason: "capped at the limit 1"}}}}}}, want: false},
		{name: "held back by an HPA is complete", items: []Item{{Containers: []Container{{Resources: []Resource{{Reason: "held back: HorizontalPodAutoscaler a/web scales on cpu", HeldBack: true}}}}}}, want: false},
		{name: "invalid", items: []Item{complete, {Error: &Error{Code: "WorkloadNotFound"}}}, want: true},
		{name: "no history", items: []Item{{Containers: []Container{{Resources: []Resource{{Reason: "insufficient data: no samples in the window"}}}}}}, want: true},
		{name: "not rendered", items: []Item{{Source: &Source{Error: "target not found"}}}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Plan{Items: tt.items}
			if got := r.Partial(); got != tt.want {
				t.Errorf("Partial() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIncomplete(t *testing.T) {
	tests := []struct {
		name   string
		res    Resource
		err    *Error
		source *Source
		// unverified is the plan's Unverified.
		unverified string
		want       bool
	}{
		{name: "too little history is a steady state", res: Resource{Reason: "insufficient data: 3 samples over 2h0m0s, need 24h0m0s"}, want: false},
		{name: "history unavailable this run", res: Resource{Reason: ReasonHistoryUnavailable + "connection refused"}, want: true},
		{name: "invalid", err: &Error{Code: "WorkloadNotFound"}, want: true},
		{name: "not rendered", source: &Source{Error: "target not found"}, want: true},
		{name: "merged changes not all checked", unverified: "cannot read what followed the merged changes in namespaces shop", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Plan{Unverified: tt.unverified, Items: []Item{{Error: tt.err, Source: tt.source, Containers: []Container{{Resources: []Resource{tt.res}}}}}}
			if got := r.Incomplete(); got != tt.want {
				t.Errorf("Incomplete() = %v, want %v", got, tt.want)
			}
		})
	}
}
