package edits

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

const hpaV2 = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
  metrics:
  - type: Resource
    resource:
      name: cpu
      target:
        type: Utilization
        averageUtilization: 80 # tuned
  - type: ContainerResource
    containerResource:
      name: memory
      container: app
      target:
        type: Utilization
        averageUtilization: 70
  - type: Resource
    resource:
      name: memory
      target:
        type: AverageValue
        averageValue: 1Gi
`

const hpaV1 = "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: web\nspec:\n  maxReplicas: 3\n  targetCPUUtilizationPercentage: 80\n"

// TestSetUtilization covers splicing utilisation targets into an HPA's
// manifest, and the refusals where the manifest's metric is not the one
// the live object scales on.
func TestSetUtilization(t *testing.T) {
	cpu := func(index int, pct int32) plan.Utilization {
		return plan.Utilization{Index: index, Resource: corev1.ResourceCPU, Percent: pct}
	}
	tests := []struct {
		name    string
		in      string
		us      []plan.Utilization
		want    string // "" when the input must stay as it is
		changed bool
		err     error
	}{{
		name:    "a resource metric, its comment kept",
		in:      hpaV2,
		us:      []plan.Utilization{cpu(0, 60)},
		want:    strings.Replace(hpaV2, "averageUtilization: 80 # tuned", "averageUtilization: 60 # tuned", 1),
		changed: true,
	}, {
		name:    "a container resource metric and a resource metric at once",
		in:      hpaV2,
		us:      []plan.Utilization{cpu(0, 60), {Index: 1, Resource: corev1.ResourceMemory, Container: "app", Percent: 55}},
		want:    strings.Replace(strings.Replace(hpaV2, "80 # tuned", "60 # tuned", 1), "averageUtilization: 70", "averageUtilization: 55", 1),
		changed: true,
	}, {
		name: "the same target changes nothing",
		in:   hpaV2,
		us:   []plan.Utilization{cpu(0, 80)},
	}, {
		name:    "autoscaling/v1",
		in:      hpaV1,
		us:      []plan.Utilization{cpu(0, 65)},
		want:    strings.Replace(hpaV1, "Percentage: 80", "Percentage: 65", 1),
		changed: true,
	}, {
		name: "autoscaling/v1 scales on cpu only",
		in:   hpaV1,
		us:   []plan.Utilization{{Resource: corev1.ResourceMemory, Percent: 65}},
		err:  repoindex.ErrUnsafeFile,
	}, {
		name: "autoscaling/v1 without a target",
		in:   strings.Replace(hpaV1, "  targetCPUUtilizationPercentage: 80\n", "", 1),
		us:   []plan.Utilization{cpu(0, 65)},
		err:  repoindex.ErrUnsafeFile,
	}, {
		name: "a metric of another resource at that index",
		in:   hpaV2,
		us:   []plan.Utilization{{Index: 0, Resource: corev1.ResourceMemory, Percent: 60}},
		err:  repoindex.ErrUnsafeFile,
	}, {
		name: "a metric of another container",
		in:   hpaV2,
		us:   []plan.Utilization{{Index: 1, Resource: corev1.ResourceMemory, Container: "sidecar", Percent: 60}},
		err:  repoindex.ErrUnsafeFile,
	}, {
		name: "a target that is not a utilisation",
		in:   hpaV2,
		us:   []plan.Utilization{{Index: 2, Resource: corev1.ResourceMemory, Percent: 60}},
		err:  repoindex.ErrUnsafeFile,
	}, {
		name: "no such metric",
		in:   hpaV2,
		us:   []plan.Utilization{cpu(5, 60)},
		err:  repoindex.ErrUnsafeFile,
	}, {
		name: "no metrics",
		in:   "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: web\nspec:\n  maxReplicas: 3\n",
		us:   []plan.Utilization{cpu(0, 60)},
		err:  repoindex.ErrUnsafeFile,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fe := newFile(&repoindex.IndexedFile{Name: "hpa.yaml", Data: []byte(tt.in)})
			changed, err := SetUtilization(fe, 0, tt.us)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("error %v, want %v", err, tt.err)
				}
			} else if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			want := tt.want
			if want == "" {
				want = tt.in
			}
			if msg := firstDiff([]byte(want), fe.Data); msg != "" {
				t.Error(msg)
			}
			if changed != tt.changed || fe.Dirty() != tt.changed {
				t.Errorf("changed = %v, Dirty = %v, want %v", changed, fe.Dirty(), tt.changed)
			}
		})
	}
}

// TestMetricsPatch checks that the patch body holds every metric of the
// base, the new targets on those asked, at the step asked, and that the
// base is left as it was.
func TestMetricsPatch(t *testing.T) {
	docs, err := yamledit.ParseDocuments([]byte(hpaV2))
	if err != nil {
		t.Fatal(err)
	}
	body, err := MetricsPatch(docs[0], []plan.Utilization{{Index: 0, Resource: corev1.ResourceCPU, Percent: 60}})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []int{2, 4} {
		lines := body(step)
		if len(lines) < 2 || lines[0] != "spec:" || lines[1] != strings.Repeat(" ", step)+"metrics:" {
			t.Fatalf("step %d: patch starts %q, want spec: and metrics: at %d", step, lines[:min(2, len(lines))], step)
		}
		var patch struct {
			Spec struct {
				Metrics []struct {
					Type     string
					Resource *struct {
						Name   string
						Target map[string]any
					}
					ContainerResource *struct {
						Name, Container string
						Target          map[string]any
					} `yaml:"containerResource"`
				}
			}
		}
		if err := yaml.Unmarshal([]byte(strings.Join(lines, "\n")), &patch); err != nil {
			t.Fatalf("step %d: the patch does not parse: %v", step, err)
		}
		m := patch.Spec.Metrics
		if len(m) != 3 {
			t.Fatalf("step %d: the patch holds %d metrics, want the base's 3", step, len(m))
		}
		if got := m[0].Resource.Target["averageUtilization"]; got != 60 {
			t.Errorf("step %d: metric 0 targets %v, want 60", step, got)
		}
		if got := m[1].ContainerResource.Target["averageUtilization"]; got != 70 || m[1].ContainerResource.Container != "app" {
			t.Errorf("step %d: metric 1 = %+v, want the base's", step, m[1].ContainerResource)
		}
		if got := m[2].Resource.Target["averageValue"]; got != "1Gi" {
			t.Errorf("step %d: metric 2 targets %v, want the base's 1Gi", step, got)
		}
	}
	if out, _ := yaml.Marshal(docs[0]); !strings.Contains(string(out), "averageUtilization: 80") {
		t.Errorf("MetricsPatch changed its base:\n%s", out)
	}
	if _, err := MetricsPatch(docs[0], []plan.Utilization{{Index: 9, Resource: corev1.ResourceCPU, Percent: 60}}); !errors.Is(err, repoindex.ErrUnsafeFile) {
		t.Errorf("a metric the base does not have: error %v, want %v", err, repoindex.ErrUnsafeFile)
	}
}
