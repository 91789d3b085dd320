package kinds

import (
	"regexp"
	"slices"
	"testing"
)

func TestPodNamePattern(t *testing.T) {
	tests := []struct {
		kind, name string
		match      []string
		noMatch    []string
	}{
		{kind: "Deployment", name: "web",
			match: []string{"web-7d9f8c6b5-x2k4p", "web-5f6d-b2c4d"},
			noMatch: []string{"web-api-7d9f8c6b5-x2k4p", "web-x2k4p", "web", "aweb-7d9f8c6b5-x2k4p", "web-7d9f8c6b5-x2k4p-extra",
				"web-migrate-x2k4p", "web-28312345-x2k4p", "web-5f6d-abcde"}},
		// A Rollout's ReplicaSets are named after it, as a Deployment's,
		// whether it has a template or a workloadRef.
		{kind: "Rollout", name: "checkout",
			match:   []string{"checkout-6c9b8f7d4-qz2xw", "checkout-5b7c9d-h4j6k"},
			noMatch: []string{"checkout-qz2xw", "checkout-canary-6c9b8f7d4-qz2xw", "checkout-0"}},
		{kind: "StatefulSet", name: "db",
			match:   []string{"db-0", "db-12"},
			noMatch: []string{"db-a", "db-0-x2k4p", "db-primary-0"}},
		{kind: "DaemonSet", name: "agent",
			match:   []string{"agent-x2k4p"},
			noMatch: []string{"agent-7d9f8c6b5-x2k4p", "agent-1"}},
		{kind: "CronJob", name: "report",
			match:   []string{"report-29012345-x2k4p"},
			noMatch: []string{"report-x2k4p", "report-daily-29012345-x2k4p"}},
		{kind: "Job", name: "migrate",
			match:   []string{"migrate-x2k4p"},
			noMatch: []string{"migrate-29012345-x2k4p"}},
		{kind: "ReplicationController", name: "legacy",
			match: []string{"legacy-x2k4p"}},
		{kind: "Database", name: "pg",
			match:   []string{"pg-x2k4p"},
			noMatch: []string{"pg-0"}},
	}
	for _, tt := range tests {
		t.Run(tt.kind+"/"+tt.name, func(t *testing.T) {
			re := regexp.MustCompile("^(?:" + PodNamePattern(tt.kind, tt.name) + ")$")
			for _, p := range tt.match {
				if !re.MatchString(p) {
					t.Errorf("%s does not match %s", re, p)
				}
			}
			for _, p := range tt.noMatch {
				if re.MatchString(p) {
					t.Errorf("%s matches %s", re, p)
				}
			}
		})
	}
}

func TestPodSpecPaths(t *testing.T) {
	for _, tc := range []struct {
		group, kind string
		want        string
	}{
		{"apps", "Deployment", "spec.template.spec"},
		{"batch", "CronJob", "spec.jobTemplate.spec.template.spec"},
		{"argoproj.io", "Rollout", "spec.template.spec"},
		// A kind of another group is not the known one.
		{"example.com", "CronJob", "spec.template.spec or spec.jobTemplate.spec.template.spec"},
		{"example.com", "Database", "spec.template.spec or spec.jobTemplate.spec.template.spec"},
	} {
		if got := PodSpecPathsText(tc.group, tc.kind); got != tc.want {
			t.Errorf("PodSpecPathsText(%q, %q) = %q, want %q", tc.group, tc.kind, got, tc.want)
		}
	}
	if !Known("argoproj.io", "Rollout") || Known("", "ConfigMap") || Known("apps", "Rollout") {
		t.Error("Known: want Rollout of argoproj.io only")
	}
	k, _ := Lookup("argoproj.io", "Rollout")
	if !slices.Equal(k.TemplateRef, []string{"spec", "workloadRef"}) {
		t.Errorf("Rollout's TemplateRef = %v", k.TemplateRef)
	}
}

func TestWithoutTemplate(t *testing.T) {
	tests := []struct {
		group, kind string
		want        bool
	}{
		{"", "ConfigMap", true},
		{"", "Secret", true},
		{"networking.k8s.io", "Ingress", true},
		{"policy", "PodDisruptionBudget", true},
		{"", "ReplicationController", false},
		{"apps", "Deployment", false},
		{"argoproj.io", "Rollout", false},
		// A custom kind may have a template: it is read to tell.
		{"example.com", "Widget", false},
	}
	for _, tt := range tests {
		if got := WithoutTemplate(tt.group, tt.kind); got != tt.want {
			t.Errorf("WithoutTemplate(%q, %q) = %v, want %v", tt.group, tt.kind, got, tt.want)
		}
	}
}
