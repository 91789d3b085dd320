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
	"k8s.io/client-go/kubernetes"

	"github.com/recommend-job/recommend-job/hack/image"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/node"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// nodeImage is the job's image as the node test imports it.
const nodeImage = "testbed.local/recommend-job:dev"

// chartNamespace is where the node tests install the chart, as the
// release recommend-job: its CronJob and ServiceAccount have that name.
const chartNamespace = "recommend-job"

// TestChartOnANode installs the chart as the README says, with the job's
// image as make image writes it, on a bed with a node, and runs its
// CronJob once as kubectl create job --from does: the pod, as 65532 on a
// read-only root, reads the cluster through its ServiceAccount, the
// usage from Prometheus, and pushes a branch and opens a pull request on
// Gitea, all on the node's address, requesting what the job run as a
// process recommends. The job aims its garbage collector below the
// container's memory limit, and the chart's ServiceAccount may write no
// workload and read no Secret.
func TestChartOnANode(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 25*time.Minute)
	defer cancel()
	r := startNodeRun(ctx, t, webHistory(time.Now().Truncate(time.Minute)))
	repoURL, err := r.forge.CreateRepo(ctx, "gitops", map[string]string{"clusters/prod/web.yaml": webManifest})
	if err != nil {
		t.Fatal(err)
	}
	r.install(ctx, t, r.values(r.bed.Prometheus.URL, repoURL, ""))
	r.applyWorkloads(ctx, t, shopObjects(t, false)...)

	runCronJobOnce(ctx, t, r, "first-run")
	pods, err := r.client.CoreV1().Pods(chartNamespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=first-run"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the run's pods: %v, %v; want one", pods, err)
	}
	pod := pods.Items[0]
	if sc, c := pod.Spec.SecurityContext, pod.Spec.Containers[0].SecurityContext; pod.Spec.NodeName != node.Name ||
		sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 65532 || c == nil || c.ReadOnlyRootFilesystem == nil || !*c.ReadOnlyRootFilesystem {
		t.Errorf("the run's pod ran on %q with %+v and %+v, want on the node as 65532 on a read-only root", pod.Spec.NodeName, sc, c)
	}

	assertAimsBelowLimit(t, r, pod)
	assertServiceAccountDenied(ctx, t, r)

	sdk := r.gitea(ctx, t)
	prs, _, err := sdk.ListRepoPullRequests(r.forge.Username, "gitops", gitea.ListPullRequestsOptions{State: gitea.StateOpen})
	if err != nil {
		t.Fatal(err)
	}
	if len(prs) != 1 || prs[0].Head == nil || !strings.Contains(prs[0].Body, "| app | ") {
		t.Fatalf("open pull requests = %+v, want one from the job's branch with the web Deployment's changes", prs)
	}
	branch, _, err := sdk.GetRepoBranch(r.forge.Username, "gitops", prs[0].Head.Ref)
	if err != nil || branch.Commit == nil || branch.Commit.ID != prs[0].Head.Sha {
		t.Errorf("the pull request's branch %s: %+v, %v; want it pushed at %s", prs[0].Head.Ref, branch, err, prs[0].Head.Sha)
	}
	assertAsAProcess(ctx, t, r, sdk, repoURL, prs[0].Head.Sha)
}

// assertAsAProcess runs the job as a process over the same cluster,
// Prometheus and repository, as a dry run, and checks that web's file at
// the pod's commit requests what the process recommends.
func assertAsAProcess(ctx context.Context, t *testing.T, r *nodeRun, sdk *gitea.Client, repoURL, commit string) {
	t.Helper()
	rep := runJSON(t, ctx, giteaRunArgs(t, r.bed, r.forge, repoURL, "--dry-run"))
	want := map[string]string{}
	for _, c := range entry(t, rep, "shop", "web").Containers {
		for _, res := range c.Resources {
			if res.Changed {
				want[c.Name+"/"+string(res.Resource)] = quantity(res.Recommended)
			}
		}
	}
	if len(want) == 0 {
		t.Fatalf("the process changes nothing of shop/web: %+v", rep.Items)
	}
	pushed, _, err := sdk.GetFile(r.forge.Username, "gitops", commit, "clusters/prod/web.yaml")
	if err != nil {
		t.Fatalf("reading web's file at the pod's commit %s: %v", commit, err)
	}
	t.Logf("the process recommends %v", want)
	assertRequests(t, string(pushed), want)
}

// nodeRun is a test bed with a node, the job's image imported, and a
// Gitea beside it on the node's address, for the chart's pods to reach.
type nodeRun struct {
	bed    *testbed.Bed
	node   *node.Node
	forge  *testbed.Gitea
	client kubernetes.Interface
	// helm is the helm CLI; dir the test's scratch directory.
	helm, dir string
}

// startNodeRun builds the job's image as make image does (a static build
// compiles everything again, once), and starts the bed with history, its
// node and Gitea.
func startNodeRun(ctx context.Context, t *testing.T, history []testbed.Series) *nodeRun {
	t.Helper()
	r := &nodeRun{helm: helm(t), dir: t.TempDir()}
	root, err := testbed.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	job := filepath.Join(r.dir, "recommend-job")
	if err := node.BuildStatic(ctx, root, "./cmd/recommend-job", job); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(r.dir, "recommend-job.tar")
	if err := node.WriteImage(archive, image.Options{Binary: job, Name: nodeImage}); err != nil {
		t.Fatal(err)
	}
	r.node = node.New(archive)
	r.bed = testbedtest.Start(t, testbed.Options{History: history, Node: r.node})
	r.forge = testbedtest.Gitea(t, testbed.BindAddress(node.Address))
	r.client = testbedtest.Clientset(t, r.bed)
	return r
}

// values are the chart's values of a run against the Prometheus at
// prometheusURL and the Gitea repository at repoURL, with the git token
// from a Secret, as the README says; more adds top-level values.
func (r *nodeRun) values(prometheusURL, repoURL, more string) string {
	return `image:
  repository: ` + strings.Split(nodeImage, ":")[0] + `
  tag: dev
config:
  prometheus-url: ` + prometheusURL + `
  git-url: ` + repoURL + `
  git-branch: main
  git-path: clusters
  git-username: ` + r.forge.Username + `
  forge: gitea
  forge-api-url: ` + r.forge.APIURL() + `
secretFiles:
  - env: RECOMMEND_GIT_TOKEN_FILE
    secretName: recommend-job-git
    key: token
` + more
}

// install creates the chart's namespace, where the restricted Pod
// Security Standard is enforced, and the git token's Secret, and installs
// the chart there with values.
func (r *nodeRun) install(ctx context.Context, t *testing.T, values string) {
	t.Helper()
	path := filepath.Join(r.dir, "values.yaml")
	writeFile(t, path, values)
	secret := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + chartNamespace +
		"\n  labels:\n    pod-security.kubernetes.io/enforce: restricted\n---\n" +
		"apiVersion: v1\nkind: Secret\nmetadata:\n  name: recommend-job-git\n  namespace: " + chartNamespace +
		"\nstringData:\n  token: " + r.forge.Token() + "\n"
	if err := testbed.Apply(ctx, r.bed.APIServer.RESTConfig(), []byte(secret)); err != nil {
		t.Fatal(err)
	}
	if out, err := runHelmAsIs(t, r.helm, "install", "recommend-job", chartDir, "--namespace", chartNamespace,
		"--kubeconfig", r.bed.APIServer.KubeconfigPath, "-f", path); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
}

// applyWorkloads applies objs, the workloads' pods never pulled: their
// images are not on the node.
func (r *nodeRun) applyWorkloads(ctx context.Context, t *testing.T, objs ...[]byte) {
	t.Helper()
	var never [][]byte
	for _, o := range objs {
		never = append(never, []byte(strings.ReplaceAll(string(o), "        image: ", "        imagePullPolicy: Never\n        image: ")))
	}
	if err := testbed.Apply(ctx, r.bed.APIServer.RESTConfig(), never...); err != nil {
		t.Fatalf("applying the workloads: %v", err)
	}
}

// gitea is a client of the Gitea API as its admin.
func (r *nodeRun) gitea(ctx context.Context, t *testing.T) *gitea.Client {
	t.Helper()
	sdk, err := gitea.NewClient(r.forge.APIURL(), gitea.SetToken(r.forge.Token()), gitea.SetContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	return sdk
}

// jobFromCronJob is the Job kubectl create job --from=cronjob makes of
// the chart's CronJob.
func jobFromCronJob(ctx context.Context, t *testing.T, client kubernetes.Interface, name string) *batchv1.Job {
	t.Helper()
	cj, err := client.BatchV1().CronJobs(chartNamespace).Get(ctx, "recommend-job", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the chart's CronJob: %v", err)
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: chartNamespace, Labels: cj.Spec.JobTemplate.Labels,
			Annotations: map[string]string{"cronjob.kubernetes.io/instantiate": "manual"}},
		Spec: cj.Spec.JobTemplate.Spec,
	}
}

// runCronJobOnce creates a Job from the chart's CronJob, as kubectl
// create job --from=cronjob does, and waits for it to complete; when it
// fails, the pod's log from the node tells why.
func runCronJobOnce(ctx context.Context, t *testing.T, r *nodeRun, name string) {
	t.Helper()
	if _, err := r.client.BatchV1().Jobs(chartNamespace).Create(ctx, jobFromCronJob(ctx, t, r.client, name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitJobDone(ctx, t, r, name, 5*time.Minute)
	if c := jobFinished(got); c.Type != batchv1.JobComplete {
		t.Fatalf("job %s failed (%s: %s); the pod's log:\n%s", name, c.Reason, c.Message, podLogs(r.node, chartNamespace, name))
	}
}

// waitJobDone waits, within limit, until the Job name is complete or
// failed, and returns it.
func waitJobDone(ctx context.Context, t *testing.T, r *nodeRun, name string, limit time.Duration) *batchv1.Job {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		got, err := r.client.BatchV1().Jobs(chartNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if jobFinished(got).Type != "" {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s not done after %s: %+v; the pod's log:\n%s", name, limit, got.Status, podLogs(r.node, chartNamespace, name))
		}
		time.Sleep(time.Second)
	}
}

// jobFinished is the Job's Complete or Failed condition, or none while
// it runs.
func jobFinished(job *batchv1.Job) batchv1.JobCondition {
	for _, c := range job.Status.Conditions {
		if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) {
			return c
		}
	}
	return batchv1.JobCondition{}
}

// podLogs reads the ends of the logs the kubelet keeps of the job's pods.
func podLogs(n *node.Node, namespace, job string) string {
	var b strings.Builder
	for container, log := range podLogFiles(n, namespace, job) {
		b.WriteString("--- " + container + "\n" + tailString(log, 8000) + "\n")
	}
	return b.String()
}

// podLogFiles reads the logs the kubelet keeps of the job's pods, by
// container, each line as the kubelet writes it: the time, the stream,
// a tag, then the line the container wrote.
func podLogFiles(n *node.Node, namespace, job string) map[string]string {
	files, _ := filepath.Glob(filepath.Join(n.Dir, "kubelet", "pod-logs", namespace+"_"+job+"-*", "*", "*.log"))
	logs := map[string]string{}
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil {
			logs[filepath.Base(filepath.Dir(filepath.Dir(f)))+"/"+filepath.Base(filepath.Dir(f))] += string(data)
		}
	}
	return logs
}

// tailString returns the last n bytes of s.
func tailString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
