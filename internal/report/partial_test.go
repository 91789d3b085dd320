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

func TestIncomplete(t *testing.T) {
	tests := []struct {
		name   string
		res    Resource
		err    *Error
		source *Source
		want   bool
	}{
		{name: "too little history is a steady state", res: Resource{Reason: "insufficient data: 3 samples over 2h0m0s, need 24h0m0s"}, want: false},
		{name: "history unavailable this run", res: Resource{Reason: ReasonHistoryUnavailable + "connection refused"}, want: true},
		{name: "invalid", err: &Error{Code: "WorkloadNotFound"}, want: true},
		{name: "not rendered", source: &Source{Error: "target not found"}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Report{ResourceRecommends: []Entry{{Error: tt.err, Source: tt.source, Containers: []Container{{Resources: []Resource{tt.res}}}}}}
			if got := r.Incomplete(); got != tt.want {
				t.Errorf("Incomplete() = %v, want %v", got, tt.want)
			}
		})
	}
}
