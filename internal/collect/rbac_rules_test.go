package collect

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// chartRBAC renders the chart's RBAC template and returns its documents:
// the ClusterRole and its binding, then the Role of the job's record and
// its binding.
func chartRBAC(t *testing.T, set map[string]any) []*unstructured.Unstructured {
	t.Helper()
	var docs []*unstructured.Unstructured
	for _, doc := range bytes.Split(renderChartTemplate(t, "rbac.yaml", "recommend-job", set), []byte("\n---\n")) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatalf("rendered RBAC: %v\n%s", err, doc)
		}
		docs = append(docs, u)
	}
	var kinds []string
	for _, d := range docs {
		kinds = append(kinds, d.GetKind())
	}
	if !slices.Equal(kinds, []string{"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}) {
		t.Fatalf("rendered RBAC holds %v, want a ClusterRole, a Role and their bindings", kinds)
	}
	return docs
}

// ruleSummary lists a ClusterRole's rules as "group/resource:verbs".
func ruleSummary(t *testing.T, role *unstructured.Unstructured) []string {
	t.Helper()
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	var out []string
	for _, r := range rules {
		m := r.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(m, "apiGroups")
		resources, _, _ := unstructured.NestedStringSlice(m, "resources")
		verbs, _, _ := unstructured.NestedStringSlice(m, "verbs")
		for _, g := range groups {
			for _, res := range resources {
				out = append(out, g+"/"+res+":"+strings.Join(verbs, ","))
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestChartRBACRules(t *testing.T) {
	readOnly := []string{
		"/namespaces:list",
		"apps/daemonsets:list", "apps/deployments:list", "apps/replicasets:list", "apps/statefulsets:list",
		"argoproj.io/applications:list", "argoproj.io/rollouts:list",
		"autoscaling/horizontalpodautoscalers:list",
		"batch/cronjobs:list", "batch/jobs:list",
		"helm.toolkit.fluxcd.io/helmreleases:list", "kustomize.toolkit.fluxcd.io/kustomizations:list",
		"recommendation.katalyst.kubewharf.io/resourcerecommends:list",
		"source.toolkit.fluxcd.io/gitrepositories:list", "source.toolkit.fluxcd.io/ocirepositories:list",
	}
	withStatus := slices.Sorted(slices.Values(append(slices.Clone(readOnly), "recommendation.katalyst.kubewharf.io/resourcerecommends/status:patch")))
	withExtra := slices.Sorted(slices.Values(append(slices.Clone(readOnly), "example.com/widgets:list")))
	// The record, read and written by name, its pages and the
	// checkpoints, read, listed and deleted: in the job's namespace alone,
	// checkpoints or not.
	role := []string{"/configmaps:create,get,list,delete", "/configmaps:get,update"}
	tests := []struct {
		name     string
		set      map[string]any
		want     []string
		wantRole []string
	}{
		{name: "default is read-only", want: readOnly},
		{name: "write-status adds the status patch", set: map[string]any{"config": map[string]any{"write-status": true}}, want: withStatus},
		{name: "extra rules for custom kinds", set: map[string]any{"rbac": map[string]any{"extraRules": []any{
			map[string]any{"apiGroups": []any{"example.com"}, "resources": []any{"widgets"}, "verbs": []any{"list"}},
		}}}, want: withExtra},
		{name: "no checkpoints, the record's pages all the same", set: map[string]any{"config": map[string]any{"checkpoints": false}}, want: readOnly},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs := chartRBAC(t, tt.set)
			if d := cmp.Diff(tt.want, ruleSummary(t, docs[0])); d != "" {
				t.Errorf("ClusterRole rules (-want +got):\n%s", d)
			}
			wantRole := role
			if tt.wantRole != nil {
				wantRole = tt.wantRole
			}
			if d := cmp.Diff(wantRole, ruleSummary(t, docs[2])); d != "" {
				t.Errorf("Role rules (-want +got):\n%s", d)
			}
			rules, _, _ := unstructured.NestedSlice(docs[2].Object, "rules")
			names, _, _ := unstructured.NestedStringSlice(rules[0].(map[string]any), "resourceNames")
			if !slices.Equal(names, []string{"recommend-job-record"}) {
				t.Errorf("the Role gets and updates %v, want the record alone", names)
			}
		})
	}
}
