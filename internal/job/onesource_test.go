//go:build integration

package job

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/recommend-job/recommend-job/internal/plan"
)

// guestbookUI is a plain manifest without a namespace, which two Argo CD
// Applications deploy into demo1 and demo2.
const guestbookUI = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: guestbook-ui
spec:
  template:
    spec:
      containers:
        - name: guestbook-ui
          image: registry.example.com/guestbook-ui:0.2
          resources:
            requests:
              cpu: 100m
              memory: 64Mi
`

func guestbookApp(n string) string {
	return `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: demo-app` + n + `
  namespace: argocd
spec:
  project: default
  source:
    repoURL: https://git.example.com/platform/fleet.git
    path: declarative/manifests
  destination:
    server: https://kubernetes.default.svc
    namespace: demo` + n + `
`
}

// TestWriteBackOneSourceTwoItems runs the write-back with one branch for
// the run (pr-group-by none) of three items: two ResourceRecommends, in
// demo1 and demo2, whose target is the one manifest both Applications
// deploy, and shop's web in a file of its own. The pushed commit holds
// web's value alone; neither guestbook item is reported changed, nor has
// a trailer or a line in the commit message, and each says why. Before,
// the file held demo2's value while the report, the message and the
// trailers claimed demo1's too.
func TestWriteBackOneSourceTwoItems(t *testing.T) {
	ctx := t.Context()
	srv := startGitServer(t)
	url, err := srv.CreateRepo(ctx, "org/fleet", map[string]string{
		"clusters/prod/web.yaml":               webDeployment,
		"declarative/manifests/deployment.yml": guestbookUI,
		"apps/demo-app1.yaml":                  guestbookApp("1"),
		"apps/demo-app2.yaml":                  guestbookApp("2"),
	})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{url: url, auth: &githttp.BasicAuth{Username: "bot", Password: gitToken}, logs: &bytes.Buffer{}}
	cfg := f.config()
	cfg.Path = ""

	p := webPlan("300m")
	for _, w := range []struct{ ns, cpu, mem string }{{"demo1", "72m", "54Mi"}, {"demo2", "300m", "256Mi"}} {
		cpu, mem := resource.MustParse(w.cpu), resource.MustParse(w.mem)
		curCPU, curMem := resource.MustParse("100m"), resource.MustParse("64Mi")
		p.Items = append(p.Items, plan.Item{
			Namespace: w.ns, Name: "guestbook-ui", Valid: true,
			Target: plan.Target{APIVersion: "apps/v1", Kind: "Deployment", Name: "guestbook-ui"},
			Object: plan.Object{APIVersion: "apps/v1", Kind: "Deployment", Namespace: w.ns, Name: "guestbook-ui"},
			Containers: []plan.Container{{Name: "guestbook-ui", Resources: []plan.Resource{
				{Resource: "cpu", Current: &curCPU, Recommended: &cpu, Request: &cpu, Changed: true},
				{Resource: "memory", Current: &curMem, Recommended: &mem, Request: &mem, Changed: true},
			}}},
		})
	}
	if err := writeBack(ctx, newRun(cfg), p, slog.New(slog.NewTextHandler(f.logs, nil))); err != nil {
		t.Fatalf("writeBack: %v", err)
	}
	if p.Git == nil || !p.Git.Pushed || strings.Join(p.Git.Files, ",") != "clusters/prod/web.yaml" {
		t.Fatalf("git = %+v, want web.yaml alone pushed", p.Git)
	}
	got, commit := f.branchFile(t, "recommend-job/main", "declarative/manifests/deployment.yml")
	if got != guestbookUI {
		t.Errorf("the shared manifest changed on the branch:\n%s", got)
	}
	if web, _ := f.branchFile(t, "recommend-job/main", "clusters/prod/web.yaml"); !strings.Contains(web, "cpu: 300m") {
		t.Errorf("web.yaml on the branch:\n%s", web)
	}
	if !strings.Contains(commit.Message, "Recommend-Job-Change: shop/web-rec app cpu 500m 300m") {
		t.Errorf("commit message lacks web's trailer:\n%s", commit.Message)
	}
	for _, it := range p.Items[1:] {
		other := map[string]string{"demo1": "demo2", "demo2": "demo1"}[it.Namespace]
		// The source is shared by the two Applications: each refusal
		// names the other's deployer.
		if it.Source == nil || it.Source.Changed || !strings.Contains(it.Source.Error, "(into "+other+")") {
			t.Errorf("%s: source %+v, want not changed, naming the deployer into %s", it.Key(), it.Source, other)
		}
		if it.Containers[0].Landed {
			t.Errorf("%s: container reported landed", it.Key())
		}
		if strings.Contains(commit.Message, it.Namespace+"/guestbook-ui") {
			t.Errorf("commit message names %s, which the commit does not hold:\n%s", it.Key(), commit.Message)
		}
	}
}
