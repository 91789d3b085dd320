package job

import (
	"github.com/recommend-job/recommend-job/internal/recommend"
	"github.com/recommend-job/recommend-job/internal/render"
	"github.com/recommend-job/recommend-job/internal/report"
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

// plan is one run's report and render plan: app's CPU request set to cpu.
func plan(cpu string) (*report.Report, []render.Change, []int) {
	rep := &report.Report{ResourceRecommends: []report.Entry{{
		Namespace: "shop", Name: "web-rec", Valid: true,
		Target: report.Target{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		Containers: []report.Container{{Name: "app", Resources: []report.Resource{
			{Resource: "cpu", Current: "500m", Recommended: cpu, Changed: cpu != "500m",
				Evidence: &recommend.Evidence{Window: "168h0m0s", Samples: 2016, Percentile: 0.9, BufferPercent: 10}},
			{Resource: "memory", Current: "512Mi", Reason: "too little history"},
		}}},
	}}}
	changes := []render.Change{{
		Target:    render.Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
		Container: "app", Requests: map[string]string{"cpu": cpu},
	}}
	return rep, changes, []int{0}
}
