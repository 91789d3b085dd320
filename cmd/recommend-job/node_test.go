//go:build integration

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/recommend-job/recommend-job/hack/image"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/node"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// nodeImage is the job's image as the node test imports it.
const nodeImage = "testbed.local/recommend-job:dev"

// TestChartOnANode installs the chart as the README says, with the job's
// image as make image writes it, on a bed with a node, and runs its
// CronJob once as kubectl create job --from does: the pod, as 65532 on a
// read-only root, reads the cluster through its ServiceAccount, the
// usage from Prometheus, and pushes a branch and opens a pull request on
// Gitea, all on the node's address.
func TestChartOnANode(t *testing.T) {
	bin := helm(t)
	root, err := testbed.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// A static build of the job compiles everything again, once.
	ctx, cancel := context.WithTimeout(t.Context(), 25*time.Minute)
	defer cancel()
	dir := t.TempDir()
	job := filepath.Join(dir, "recommend-job")
	if err := node.BuildStatic(ctx, root, "./cmd/recommend-job", job); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "recommend-job.tar")
	if err := node.WriteImage(archive, image.Options{Binary: job, Name: nodeImage}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Minute)
	n := node.New(archive)
	bed := testbedtest.Start(t, testbed.Options{History: webHistory(now), Node: n})
	forge := testbedtest.Gitea(t, testbed.BindAddress(node.Address))
	repoURL, err := forge.CreateRepo(ctx, "gitops", map[string]string{"clusters/prod/web.yaml": webManifest})
	if err != nil {
		t.Fatal(err)
	}

	values := filepath.Join(dir, "values.yaml")
	writeFile(t, values, `image:
  repository: `+strings.Split(nodeImage, ":")[0]+`
  tag: dev
config:
  prometheus-url: `+bed.Prometheus.URL+`
  git-url: `+repoURL+`
  git-branch: main
  git-path: clusters
  git-username: `+forge.Username+`
  forge: gitea
  forge-api-url: `+forge.APIURL()+`
secretFiles:
  - env: RECOMMEND_GIT_TOKEN_FILE
    secretName: recommend-job-git
    key: token
`)
	cfg := bed.APIServer.RESTConfig()
	secret := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: recommend-job\n---\n" +
		"apiVersion: v1\nkind: Secret\nmetadata:\n  name: recommend-job-git\n  namespace: recommend-job\nstringData:\n  token: " + forge.Token() + "\n"
	if err := testbed.Apply(ctx, cfg, []byte(secret)); err != nil {
		t.Fatal(err)
	}
	if out, err := runHelmAsIs(t, bin, "install", "recommend-job", chartDir, "--namespace", "recommend-job",
		"--kubeconfig", bed.APIServer.KubeconfigPath, "-f", values); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	// The web pods are never pulled: their images are not on the node.
	var objs [][]byte
	for _, o := range shopObjects(t, false) {
		objs = append(objs, []byte(strings.ReplaceAll(string(o), "        image: ", "        imagePullPolicy: Never\n        image: ")))
	}
	if err := testbed.Apply(ctx, cfg, objs...); err != nil {
		t.Fatalf("applying the workloads: %v", err)
	}

	runCronJobOnce(ctx, t, bed, n, "recommend-job", "recommend-job", "first-run")
	pods, err := testbedtest.Clientset(t, bed).CoreV1().Pods("recommend-job").List(ctx, metav1.ListOptions{LabelSelector: "job-name=first-run"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the run's pods: %v, %v; want one", pods, err)
	}
	pod := pods.Items[0]
	if sc, c := pod.Spec.SecurityContext, pod.Spec.Containers[0].SecurityContext; pod.Spec.NodeName != node.Name ||
		sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 65532 || c == nil || c.ReadOnlyRootFilesystem == nil || !*c.ReadOnlyRootFilesystem {
		t.Errorf("the run's pod ran on %q with %+v and %+v, want on the node as 65532 on a read-only root", pod.Spec.NodeName, sc, c)
	}

	sdk, err := gitea.NewClient(forge.APIURL(), gitea.SetToken(forge.Token()), gitea.SetContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	prs, _, err := sdk.ListRepoPullRequests(forge.Username, "gitops", gitea.ListPullRequestsOptions{State: gitea.StateOpen})
	if err != nil {
		t.Fatal(err)
	}
	if len(prs) != 1 || prs[0].Head == nil || !strings.Contains(prs[0].Body, "| app | ") {
		t.Fatalf("open pull requests = %+v, want one from the job's branch with the web Deployment's changes", prs)
	}
	branch, _, err := sdk.GetRepoBranch(forge.Username, "gitops", prs[0].Head.Ref)
	if err != nil || branch.Commit == nil || branch.Commit.ID != prs[0].Head.Sha {
		t.Errorf("the pull request's branch %s: %+v, %v; want it pushed at %s", prs[0].Head.Ref, branch, err, prs[0].Head.Sha)
	}
}

// runCronJobOnce creates a Job from the CronJob namespace/name, as
// kubectl create job --from=cronjob does, and waits for it to complete;
// when it fails, the pod's log from the node tells why.
func runCronJobOnce(ctx context.Context, t *testing.T, bed *testbed.Bed, n *node.Node, namespace, cronJob, name string) {
	t.Helper()
	client := testbedtest.Clientset(t, bed)
	cj, err := client.BatchV1().CronJobs(namespace).Get(ctx, cronJob, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the chart's CronJob: %v", err)
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: cj.Spec.JobTemplate.Labels,
			Annotations: map[string]string{"cronjob.kubernetes.io/instantiate": "manual"}},
		Spec: cj.Spec.JobTemplate.Spec,
	}
	if _, err := client.BatchV1().Jobs(namespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		got, err := client.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range got.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				continue
			}
			switch c.Type {
			case batchv1.JobComplete:
				return
			case batchv1.JobFailed:
				t.Fatalf("job %s failed (%s: %s); the pod's log:\n%s", name, c.Reason, c.Message, podLogs(t, n, namespace, name))
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s not done after 5 minutes: %+v; the pod's log:\n%s", name, got.Status, podLogs(t, n, namespace, name))
		}
		time.Sleep(time.Second)
	}
}

// podLogs reads the logs the kubelet keeps of the job's pods.
func podLogs(t *testing.T, n *node.Node, namespace, job string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(n.Dir, "kubelet", "pod-logs", namespace+"_"+job+"-*", "*", "*.log"))
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		b.WriteString("--- " + filepath.Base(filepath.Dir(f)) + "\n" + tailString(string(data), 8000) + "\n")
	}
	return b.String()
}

// tailString returns the last n bytes of s.
func tailString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
