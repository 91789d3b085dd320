//go:build integration

package collect

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// podTemplate is a pod template with one container app (cpu request cpu),
// indented to sit under a key at indent spaces. extra is more pod spec.
func podTemplate(indent int, cpu, extra string) string {
	t := `template:
  metadata: {labels: {app: x}}
  spec:
    containers:
      - {name: app, image: app, resources: {requests: {cpu: ` + cpu + `}}}
` + extra
	pad := strings.Repeat(" ", indent)
	return strings.TrimSuffix(pad+strings.ReplaceAll(t, "\n", "\n"+pad), pad)
}

// recommendYAML is a ResourceRecommend of every container's cpu.
func recommendYAML(ns, name, apiVersion, kind, target, extra string) string {
	av := ""
	if apiVersion != "" {
		av = "apiVersion: " + apiVersion + ", "
	}
	return fmt.Sprintf(`apiVersion: recommendation.katalyst.kubewharf.io/v1alpha1
kind: ResourceRecommend
metadata: {namespace: %s, name: %s}
spec:
  targetRef: {%skind: %s, name: %s}
  resourcePolicy:
    algorithmPolicy: {%s}
    containerPolicies:
      - containerName: "*"
        controlledResourcesPolicies: [{resourceName: cpu}]
`, ns, name, av, kind, target, extra)
}

func TestCollectKinds(t *testing.T) {
	installCRDs(t)
	const ns = "kinds"
	sel := "    selector: {matchLabels: {app: x}}\n"
	apply(t,
		"apiVersion: v1\nkind: Namespace\nmetadata: {name: kinds}\n",
		// A native sidecar and a one-shot init container.
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {namespace: kinds, name: web, annotations: {argocd.argoproj.io/tracking-id: 'shop:apps/Deployment:kinds/web'}}\nspec:\n"+sel+
			podTemplate(4, "500m", `    initContainers:
      - {name: migrate, image: m}
      - {name: proxy, image: p, restartPolicy: Always, resources: {requests: {cpu: 50m}}}
`),
		"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {namespace: kinds, name: db}\nspec:\n    serviceName: db\n"+sel+podTemplate(4, "1", ""),
		"apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {namespace: kinds, name: agent}\nspec:\n"+sel+podTemplate(4, "100m", ""),
		"apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {namespace: kinds, name: rs}\nspec:\n"+sel+podTemplate(4, "100m", ""),
		"apiVersion: batch/v1\nkind: Job\nmetadata: {namespace: kinds, name: once}\nspec:\n"+podTemplate(4, "2", "    restartPolicy: Never\n"),
		"apiVersion: batch/v1\nkind: CronJob\nmetadata: {namespace: kinds, name: nightly}\nspec:\n  schedule: '0 1 * * *'\n  jobTemplate:\n    spec:\n"+podTemplate(6, "3", "    restartPolicy: Never\n"),
		"apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {namespace: kinds, name: canary}\nspec:\n"+sel+podTemplate(4, "250m", ""),
		// The pod template of this Rollout is the Deployment's.
		"apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {namespace: kinds, name: byref}\nspec:\n  workloadRef: {apiVersion: apps/v1, kind: Deployment, name: byref-template}\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {namespace: kinds, name: byref-template, labels: {kustomize.toolkit.fluxcd.io/name: apps}}\nspec:\n    replicas: 0\n"+sel+podTemplate(4, "750m", ""),
		"apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {namespace: kinds, name: dangling}\nspec:\n  workloadRef: {apiVersion: apps/v1, kind: Deployment, name: nowhere}\n",
		"apiVersion: example.com/v1\nkind: Widget\nmetadata: {namespace: kinds, name: w}\nspec:\n"+podTemplate(4, "10m", ""),
		"apiVersion: example.com/v1\nkind: Gadget\nmetadata: {namespace: kinds, name: g}\nspec: {size: 3}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: kinds, name: settings}\ndata: {a: b}\n",
		"apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {namespace: kinds, name: web}\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  minReplicas: 1\n  maxReplicas: 5\n  metrics:\n    - type: Resource\n      resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}\n",

		recommendYAML(ns, "web", "apps/v1", "Deployment", "web", ""),
		recommendYAML(ns, "db", "apps/v1", "StatefulSet", "db", ""),
		// apiVersion left out: only apps serves StatefulSet.
		recommendYAML(ns, "db-noversion", "", "StatefulSet", "db", ""),
		recommendYAML(ns, "agent", "apps/v1", "DaemonSet", "agent", ""),
		recommendYAML(ns, "rs", "apps/v1", "ReplicaSet", "rs", ""),
		recommendYAML(ns, "once", "batch/v1", "Job", "once", ""),
		recommendYAML(ns, "nightly", "batch/v1", "CronJob", "nightly", ""),
		recommendYAML(ns, "canary", "argoproj.io/v1alpha1", "Rollout", "canary", ""),
		recommendYAML(ns, "byref", "argoproj.io/v1alpha1", "Rollout", "byref", ""),
		recommendYAML(ns, "dangling", "argoproj.io/v1alpha1", "Rollout", "dangling", ""),
		recommendYAML(ns, "widget", "example.com/v1", "Widget", "w", ""),
		recommendYAML(ns, "gadget", "example.com/v1", "Gadget", "g", ""),
		recommendYAML(ns, "configmap", "v1", "ConfigMap", "settings", ""),
		recommendYAML(ns, "ghost", "apps/v1", "Deployment", "ghost", ""),
		recommendYAML(ns, "unserved", "apps/v1", "Widget", "w", ""),
		recommendYAML(ns, "lowercase", "", "deployment", "web", ""),
		recommendYAML(ns, "percentile", "apps/v1", "Deployment", "web", "extensions: {percentile: 0.95, window: 72h}"),
		recommendYAML(ns, "bad-percentile", "apps/v1", "Deployment", "web", "extensions: {percentile: 95}"),
		recommendYAML(ns, "elsewhere", "apps/v1", "Deployment", "web", "recommender: vpa"),
	)

	items, err := realCollector(t, WithNamespaces(ns), WithPageSize(5)).Collect(t.Context())
	if err != nil {
		t.Fatalf("Collect() error = %v", err)
	}
	type summary struct {
		Code       string
		Containers string // name=cpu request, a * marks a sidecar
		Source     string
		HeldBack   string
		Cause      string
	}
	got := map[string]summary{}
	for _, it := range items {
		var s summary
		if it.Invalid != nil {
			s.Code = it.Invalid.Code
		}
		if it.Cause != nil && it.Invalid != nil {
			s.Cause = it.Cause.Error()
		}
		if w := it.Workload; w != nil {
			var cs []string
			for _, c := range w.Containers {
				mark := ""
				if c.Sidecar {
					mark = "*"
				}
				q := c.Requests["cpu"]
				cs = append(cs, c.Name+mark+"="+q.String())
			}
			s.Containers = strings.Join(cs, " ")
			if w.Source != nil {
				s.Source = fmt.Sprintf("%s %s %s/%s %v", w.Source.APIVersion, w.Source.Kind, w.Source.Namespace, w.Source.Name, w.Source.Labels)
			}
		}
		var held []string
		for r, why := range it.HeldBack {
			held = append(held, string(r)+": "+why)
		}
		sort.Strings(held)
		s.HeldBack = strings.Join(held, "; ")
		got[it.Name] = s
	}
	want := map[string]summary{
		// web conflicts with percentile, which names the same Deployment.
		"web": {Code: CodeTargetConflict, Containers: "app=500m proxy*=50m",
			HeldBack: "cpu: HorizontalPodAutoscaler kinds/web scales on cpu utilization (60%)"},
		// Two ResourceRecommends on one target conflict; both still resolve.
		"db":           {Code: CodeTargetConflict, Containers: "app=1"},
		"db-noversion": {Code: CodeTargetConflict, Containers: "app=1"},
		"agent":        {Containers: "app=100m"},
		"rs":           {Containers: "app=100m"},
		"once":         {Containers: "app=2"},
		"nightly":      {Containers: "app=3"},
		"canary":       {Containers: "app=250m"},
		"byref": {Containers: "app=750m",
			Source: "apps/v1 Deployment kinds/byref-template map[kustomize.toolkit.fluxcd.io/name:apps]"},
		"dangling": {Code: CodeContainersMatchError,
			Cause: "Rollout.argoproj.io kinds/dangling: spec.workloadRef Deployment.apps kinds/nowhere not found: workload has no pod template"},
		"widget": {Containers: "app=10m"},
		"gadget": {Code: CodeWorkloadsUnsupported,
			Cause: "Gadget.example.com kinds/g has no pod template: kind has no pod template"},
		"configmap": {Code: CodeWorkloadsUnsupported,
			Cause: "ConfigMap has no pod template: kind has no pod template"},
		"ghost": {Code: CodeWorkloadNotFound, Cause: "Deployment.apps kinds/ghost: workload not found"},
		"unserved": {Code: CodeWorkloadMatchError,
			Cause: `resolving Widget apps/v1: no matches for kind "Widget" in version "apps/v1"`},
		// Kinds are case-sensitive, as in katalyst.
		"lowercase": {Code: CodeWorkloadMatchError,
			Cause: `resolving deployment: no matches for kind "deployment" in group ""`},
		"percentile": {Code: CodeTargetConflict, Containers: "app=500m proxy*=50m",
			HeldBack: "cpu: HorizontalPodAutoscaler kinds/web scales on cpu utilization (60%)"},
		"bad-percentile": {Code: CodeExtensionsInvalid},
		// elsewhere belongs to another recommender: skipped.
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Collect() (-want +got):\n%s", d)
	}
	for _, it := range items {
		switch it.Name {
		case "web":
			if it.Workload.Annotations["argocd.argoproj.io/tracking-id"] != "shop:apps/Deployment:kinds/web" {
				t.Errorf("web annotations = %v, want Argo CD's tracking id", it.Workload.Annotations)
			}
		case "percentile":
			if it.Extensions.Percentile != 0.95 || it.Extensions.Window.Hours() != 72 {
				t.Errorf("percentile extensions = %+v, want percentile 0.95 and window 72h", it.Extensions)
			}
		}
	}
}
