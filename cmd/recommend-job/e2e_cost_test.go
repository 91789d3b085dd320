//go:build integration

package main

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/recommend-job/recommend-job/internal/plan"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// costAutoscaler is an HPA that scales name on the CPU per pod in cores,
// a target that does not depend on the request: the request changes, and
// the HPA sets the replicas.
func costAutoscaler(name string) string {
	return `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: ` + name + `
  namespace: shop
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: ` + name + `
  minReplicas: 2
  maxReplicas: 10
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: AverageValue
          averageValue: 200m
`
}

// TestEndToEndCost runs the job on three Deployments whose CPU requests
// fall from 500m to 250m, and opens its pull request on Gitea: web, which
// an HPA scales, ran 2 replicas for half the week and 5 for the other half
// by kube-state-metrics' series, read in the namespace's history read, so
// its figures are of 3.5 replicas; api, scaled too but without series, is
// counted at its HPA's current 4; worker, which no HPA scales, at its
// spec's 3, and its ResourceRecommend sets its own price of a core-hour.
// The report carries the figures, and the pull request's body opens with
// the monthly change and gives each workload's own.
func TestEndToEndCost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	end := time.Now().Truncate(time.Minute).Add(-10 * time.Minute)
	start := end.Add(-7 * 24 * time.Hour)
	var containers []history.Container
	for _, name := range []string{"web", "api", "worker"} {
		for _, pod := range history.Rollouts(name, 2, 1, start, end)[0].Pods {
			containers = append(containers, history.Container{Namespace: "shop", Pod: pod, Container: "app", Start: start, End: end,
				CPU: history.Constant(0.05), Memory: history.Constant(100 * mib)})
		}
	}
	series := append(history.Series(containers, time.Minute),
		history.Replicas("shop", "Deployment", "web", history.Step(2, 5, start.Add(end.Sub(start)/2)), start, end, time.Minute))
	bed := testbedtest.Start(t, testbed.Options{History: series})
	forge := testbedtest.Gitea(t)

	inShop := func(manifest string) string {
		return strings.Replace(manifest, "metadata:\n", "metadata:\n  namespace: shop\n", 1)
	}
	worker := strings.Replace(inShop(hpaDeployment("worker")), "spec:\n", "spec:\n  replicas: 3\n", 1)
	workerRecommend := strings.Replace(hpaRecommend("worker"), "metadata:\n",
		"metadata:\n  annotations:\n    recommend-job.io/price-cpu-core-hour: \"0.05\"\n", 1)
	cluster := []string{inShop(hpaDeployment("web")), inShop(hpaDeployment("api")), worker,
		hpaRecommend("web"), hpaRecommend("api"), workerRecommend, costAutoscaler("web"), costAutoscaler("api")}
	objects := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n---\n" + strings.Join(cluster, "---\n")
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), shopObjects(t, true)[0], []byte(objects)); err != nil {
		t.Fatalf("applying cluster objects: %v", err)
	}
	// No controller runs on the test bed: api's HPA is given the status
	// one would write.
	dyn, err := dynamic.NewForConfig(bed.APIServer.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	hpas := dyn.Resource(schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}).Namespace("shop")
	hpa, err := hpas.Get(ctx, "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(hpa.Object, map[string]any{"currentReplicas": int64(4), "desiredReplicas": int64(4)}, "status"); err != nil {
		t.Fatal(err)
	}
	if _, err := hpas.UpdateStatus(ctx, hpa, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing api's HPA status: %v", err)
	}

	repoURL, err := forge.CreateRepo(ctx, "gitops", map[string]string{
		"clusters/shop/web.yaml":    inShop(hpaDeployment("web")),
		"clusters/shop/api.yaml":    inShop(hpaDeployment("api")),
		"clusters/shop/worker.yaml": worker,
	})
	if err != nil {
		t.Fatal(err)
	}
	rep := runJSON(t, ctx, giteaRunArgs(t, bed, forge, repoURL, "--pr-group-by", "none", "--dashboard"))

	hours := float64(plan.HoursPerMonth)
	for _, tt := range []struct {
		name     string
		replicas float64
		source   string
		cpuPrice float64
	}{
		{"web", 3.5, "average over 7d, kube-state-metrics", 0.031611},
		{"api", 4, "HPA current, no kube-state-metrics series", 0.031611},
		{"worker", 3, "spec", 0.05},
	} {
		it := entry(t, rep, "shop", tt.name)
		c := it.Cost
		if c == nil {
			t.Fatalf("%s has no cost in the report", tt.name)
		}
		if c.Replicas != tt.replicas || c.ReplicasSource != tt.source {
			t.Errorf("%s: replicas %v (%s), want %v (%s)", tt.name, c.Replicas, c.ReplicasSource, tt.replicas, tt.source)
		}
		if r := resourceOf(it, "app", "cpu"); !r.Changed || quantity(r.Recommended) != "250m" {
			t.Fatalf("%s's cpu = %+v, want 500m → 250m", tt.name, r)
		}
		mem := resourceOf(it, "app", "memory")
		gib := (mem.Recommended.AsApproximateFloat64() - mem.Current.AsApproximateFloat64()) / (1 << 30) * tt.replicas
		wantMoney := -0.25*tt.replicas*tt.cpuPrice*hours + gib*0.004237*hours
		if math.Abs(c.CPUCores.Net+0.25*tt.replicas) > 1e-9 || c.CPUCores.Raised != 0 || math.Abs(c.MemoryGiB.Net-gib) > 1e-9 ||
			math.Abs(c.Monthly.Net-wantMoney) > 1e-9 || c.Prices.CPUCoreHour != tt.cpuPrice {
			t.Errorf("%s: cost %+v, want %v cores, %v GiB, %v a month at %v a core-hour", tt.name, c, -0.25*tt.replicas, gib, wantMoney, tt.cpuPrice)
		}
	}

	pr := rep.Git.PullRequest
	if pr == nil || pr.Action != plan.PRCreated {
		t.Fatalf("git = %+v, want a pull request created", rep.Git)
	}
	sdk, err := gitea.NewClient(forge.APIURL(), gitea.SetToken(forge.Token()), gitea.SetContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := sdk.GetPullRequest(forge.Username, "gitops", int64(pr.Number))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(got.Body, "\n")
	cores := -0.25 * (3.5 + 4 + 3)
	opening := fmt.Sprintf("**Monthly change:** USD −%s per month, cpu −%s cores, memory ", money(rep), hundredths(-cores))
	if len(lines) < 2 || !strings.HasPrefix(lines[1], opening) || !strings.Contains(lines[1], "over all replicas of 3 workloads (730 hours a month") {
		t.Errorf("the pull request's body opens with\n%s\nwant\n%s…", lines[1], opening)
	}
	for _, want := range []string{
		"replicas 3.5 (average over 7d, kube-state-metrics), at USD 0.031611 per core-hour and 0.004237 per GiB-hour (the run's prices).",
		"replicas 4 (HPA current, no kube-state-metrics series), at USD 0.031611 per core-hour",
		"replicas 3 (spec), at USD 0.05 per core-hour and 0.004237 per GiB-hour (the ResourceRecommend's prices).",
	} {
		if !strings.Contains(got.Body, "\n**Cost:** USD −") || !strings.Contains(got.Body, want) {
			t.Errorf("the pull request's body lacks %q:\n%s", want, got.Body)
		}
	}

	// The dashboard gives the fleet's total, the same, and the workloads
	// by savings: web's 3.5 replicas save less than api's 4.
	issues, _, err := sdk.ListRepoIssues(forge.Username, "gitops", gitea.ListIssueOption{State: gitea.StateOpen, Type: gitea.IssueTypeIssue})
	if err != nil {
		t.Fatal(err)
	}
	if len(issues) != 1 {
		t.Fatalf("%d dashboard issues, want 1", len(issues))
	}
	dash := issues[0].Body
	fleet := "**Fleet:** " + strings.TrimPrefix(lines[1], "**Monthly change:** ")
	fleet = fleet[:strings.Index(fleet, " (730 hours")]
	api, web := strings.Index(dash, "| shop/api | Deployment api | 4 (HPA current"), strings.Index(dash, "| shop/web | Deployment web | 3.5 (average")
	if !strings.Contains(dash, fleet) || !strings.Contains(dash, "### Top 10 savings") || api < 0 || web < api {
		t.Errorf("the dashboard lacks the fleet's %q or the savings, api's first:\n%s", fleet, dash)
	}
}

// money is the report's monthly saving of all its items, as the body
// shows it: to a hundredth, without its sign.
func money(rep *plan.Plan) string {
	var net float64
	for _, it := range rep.Items {
		if it.Cost != nil {
			net += it.Cost.Monthly.Net
		}
	}
	return hundredths(math.Abs(net))
}

// hundredths shows v >= 0 to a hundredth, half away from zero, as the
// body rounds.
func hundredths(v float64) string {
	c := int64(math.Round(v * 100))
	return fmt.Sprintf("%d.%02d", c/100, c%100)
}
