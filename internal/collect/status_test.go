package collect

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/recommend-job/recommend-job/internal/api/v1alpha1"
	"github.com/recommend-job/recommend-job/internal/plan"
)

func TestWriteStatus(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	recs := []v1alpha1.ContainerResources{
		{ContainerName: "sidecar", Requests: &v1alpha1.ContainerResourceList{Target: corev1.ResourceList{"cpu": resource.MustParse("20m")}}},
		{ContainerName: "app", Requests: &v1alpha1.ContainerResourceList{Target: corev1.ResourceList{"cpu": resource.MustParse("156m")}}},
	}
	sortedRecs := []v1alpha1.ContainerResources{recs[1], recs[0]}
	provided := v1alpha1.ResourceRecommendStatus{
		ObservedGeneration:     2,
		LastRecommendationTime: &then,
		RecommendResources:     &v1alpha1.RecommendResources{ContainerRecommendations: sortedRecs},
		Conditions: []v1alpha1.ResourceRecommendCondition{
			{Type: v1alpha1.Initialized, Status: corev1.ConditionTrue, LastTransitionTime: then},
			{Type: v1alpha1.RecommendationProvided, Status: corev1.ConditionTrue, LastTransitionTime: then},
			{Type: v1alpha1.Validated, Status: corev1.ConditionTrue, LastTransitionTime: then},
		},
	}
	valid := Item{Namespace: "shop", Name: "web", generation: 2}
	tests := []struct {
		name      string
		disabled  bool
		item      Item
		recs      []v1alpha1.ContainerResources
		provided  error
		wantPatch string // "" means no request
	}{
		{name: "disabled", disabled: true, item: valid, recs: recs},
		{
			name: "unchanged: no request",
			item: func() Item { i := valid; i.status = provided; return i }(),
			recs: recs,
		},
		{
			name: "first recommendation",
			item: valid,
			recs: recs,
			wantPatch: `{"status":{"conditions":[` +
				`{"lastTransitionTime":"NOW","status":"True","type":"Initialized"},` +
				`{"lastTransitionTime":"NOW","status":"True","type":"RecommendationProvided"},` +
				`{"lastTransitionTime":"NOW","status":"True","type":"Validated"}],` +
				`"lastRecommendationTime":"NOW","observedGeneration":2,` +
				`"recommendResources":{"containerRecommendations":[` +
				`{"containerName":"app","requests":{"target":{"cpu":"156m"}}},` +
				`{"containerName":"sidecar","requests":{"target":{"cpu":"20m"}}}]}}}`,
		},
		{
			// Katalyst clears the recommendation when none is provided;
			// the conditions whose status stayed keep their time.
			name:     "not ready clears the recommendation",
			item:     func() Item { i := valid; i.status = provided; return i }(),
			provided: errors.New("insufficient data: 10 samples over 2h0m0s, need 24h0m0s"),
			wantPatch: `{"status":{"conditions":[` +
				`{"lastTransitionTime":"2026-01-02T03:04:05Z","status":"True","type":"Initialized"},` +
				`{"lastTransitionTime":"NOW","message":"insufficient data: 10 samples over 2h0m0s, need 24h0m0s","reason":"RecommendationNotReady","status":"False","type":"RecommendationProvided"},` +
				`{"lastTransitionTime":"2026-01-02T03:04:05Z","status":"True","type":"Validated"}],` +
				`"lastRecommendationTime":null,"observedGeneration":2,"recommendResources":null}}`,
		},
		{
			name: "invalid: only Validated",
			item: func() Item {
				i := valid
				i.status = provided
				i.Invalid = &ValidationError{Code: CodeContainersNotFound, Message: "container main is not found"}
				return i
			}(),
			wantPatch: `{"status":{"conditions":[` +
				`{"lastTransitionTime":"NOW","message":"container main is not found","reason":"ContainersNotFound","status":"False","type":"Validated"}],` +
				`"lastRecommendationTime":null,"observedGeneration":2,"recommendResources":null}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, client := newFakeCollector(t)
			c.writeStatus = !tt.disabled
			var patches []string
			client.PrependReactor("patch", "resourcerecommends", func(a clienttesting.Action) (bool, runtime.Object, error) {
				p := a.(clienttesting.PatchAction)
				if p.GetSubresource() != "status" || p.GetName() != "web" || p.GetNamespace() != "shop" {
					t.Errorf("patch of %s/%s subresource %q, want the status of shop/web", p.GetNamespace(), p.GetName(), p.GetSubresource())
				}
				patches = append(patches, string(p.GetPatch()))
				return true, nil, nil
			})
			before := time.Now().UTC().Truncate(time.Second)
			if err := c.patchStatus(context.Background(), tt.item, tt.recs, tt.provided); err != nil {
				t.Fatalf("WriteStatus() error = %v", err)
			}
			if tt.wantPatch == "" {
				if len(patches) != 0 {
					t.Fatalf("patches = %q, want none", patches)
				}
				return
			}
			if len(patches) != 1 {
				t.Fatalf("patches = %q, want one", patches)
			}
			if d := cmp.Diff(tt.wantPatch, replaceNow(t, patches[0], before)); d != "" {
				t.Errorf("patch (-want +got):\n%s", d)
			}
		})
	}
}

// replaceNow replaces the times from at (or a second later, should the
// clock have ticked) in patch with NOW, and re-encodes it with sorted keys.
func replaceNow(t *testing.T, patch string, at time.Time) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(patch), &v); err != nil {
		t.Fatalf("patch %s: %v", patch, err)
	}
	nows := map[string]bool{at.Format(time.RFC3339): true, at.Add(time.Second).Format(time.RFC3339): true}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		case string:
			if nows[x] {
				return "NOW"
			}
		}
		return v
	}
	b, err := json.Marshal(walk(v))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRecommendations(t *testing.T) {
	q := func(s string) *resource.Quantity {
		v := resource.MustParse(s)
		return &v
	}
	tests := []struct {
		name         string
		res          plan.Resource
		wantRequests string
		wantLimits   string
		wantErr      string
	}{
		{name: "requests only", res: plan.Resource{Resource: "cpu", Recommended: q("200m")}, wantRequests: "200m"},
		{name: "requests and limits", res: plan.Resource{Resource: "cpu", Recommended: q("200m"), RecommendedLimit: q("400m")},
			wantRequests: "200m", wantLimits: "400m"},
		{name: "limits only", res: plan.Resource{Resource: "cpu", Recommended: q("400m"), LimitsOnly: true}, wantLimits: "400m"},
		{name: "held back on purpose", res: plan.Resource{Resource: "cpu", HeldBack: true, Reason: "held back: HPA"}},
		{name: "no history", res: plan.Resource{Resource: "cpu", Reason: "insufficient data: no samples"},
			wantErr: "container app cpu: insufficient data: no samples"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := plan.Item{Containers: []plan.Container{{Name: "app", Resources: []plan.Resource{tt.res}}}}
			recs, err := Recommendations(p)
			if tt.wantErr != "" || err != nil {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Recommendations() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			got := func(l *v1alpha1.ContainerResourceList) string {
				if l == nil {
					return ""
				}
				q := l.Target[corev1.ResourceCPU]
				return q.String()
			}
			var requests, limits string
			if len(recs) == 1 {
				requests, limits = got(recs[0].Requests), got(recs[0].Limits)
			}
			if requests != tt.wantRequests || limits != tt.wantLimits {
				t.Errorf("status requests %q limits %q, want %q and %q", requests, limits, tt.wantRequests, tt.wantLimits)
			}
		})
	}
}
