package report

import "testing"

func TestPartial(t *testing.T) {
	complete := Entry{Namespace: "a", Name: "web", Valid: true, Source: &Source{File: "web.yaml", Changed: true},
		Containers: []Container{{Name: "app", Resources: []Resource{{Resource: "cpu", Recommended: "100m"}}}}}
	tests := []struct {
		name    string
		entries []Entry
		want    bool
	}{
		{name: "nothing", want: false},
		{name: "complete", entries: []Entry{complete}, want: false},
		{name: "held back by a cap is complete", entries: []Entry{{Containers: []Container{{Resources: []Resource{{Recommended: "1", Reason: "capped at the limit 1"}}}}}}, want: false},
		{name: "held back by an HPA is complete", entries: []Entry{{Containers: []Container{{Resources: []Resource{{Reason: "held back: HorizontalPodAutoscaler a/web scales on cpu", HeldBack: true}}}}}}, want: false},
		{name: "invalid", entries: []Entry{complete, {Error: &Error{Code: "WorkloadNotFound"}}}, want: true},
		{name: "no history", entries: []Entry{{Containers: []Container{{Resources: []Resource{{Reason: "insufficient data: no samples in the window"}}}}}}, want: true},
		{name: "not rendered", entries: []Entry{{Source: &Source{Error: "target not found"}}}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Report{ResourceRecommends: tt.entries}
			if got := r.Partial(); got != tt.want {
				t.Errorf("Partial() = %v, want %v", got, tt.want)
			}
		})
	}
}
