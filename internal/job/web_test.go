package job

import (
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// webDeployment is the repository's manifest of the workload the tests
// right-size: app requests 500m CPU.
const webDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  template:
    spec:
      containers:
      - name: app
        image: nginx:1.27
        resources:
          requests:
            cpu: 500m  # launch-day guess
            memory: 512Mi
`

// webPlan is one run's plan: app's CPU request set to cpu.
func webPlan(cpu string) *plan.Plan {
	current, rec := resource.MustParse("500m"), resource.MustParse(cpu)
	mem := resource.MustParse("512Mi")
	return &plan.Plan{Items: []plan.Item{{
		Namespace: "shop", Name: "web-rec", Valid: true,
		Target: plan.Target{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		Object: plan.Object{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
		Containers: []plan.Container{{Name: "app", Resources: []plan.Resource{
			{Resource: "cpu", Current: &current, Recommended: &rec, Request: &rec, Changed: cpu != "500m",
				Evidence: &plan.Evidence{Window: "168h0m0s", Samples: 2016, Percentile: 0.9, BufferPercent: 10}},
			{Resource: "memory", Current: &mem, Reason: "too little history"},
		}}},
	}}}
}
