package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/recommend-job/recommend-job/hack/image"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/node"
)

// The chart's release on the node: its namespace, and the name of its
// CronJob and ServiceAccount.
const (
	nodeImage        = "testbed.local/recommend-job:dev"
	releaseNamespace = "recommend-job"
	release          = "recommend-job"
	// jobTimeout bounds one run of the chart's Job on the node.
	jobTimeout = 5 * time.Minute
)

// jobOnlyTaint keeps the demo's workloads off the node: their images are
// not there, and their requests would leave no room for the job's pod,
// which tolerates it.
const jobOnlyTaint = "recommend-job.io/demo"

// reserveNode taints the bed's node so that only pods tolerating
// jobOnlyTaint run there.
func reserveNode(ctx context.Context, bed *testbed.Bed) error {
	client, err := kubernetes.NewForConfig(bed.APIServer.RESTConfig())
	if err != nil {
		return err
	}
	patch := `{"spec":{"taints":[{"key":"` + jobOnlyTaint + `","value":"job-only","effect":"NoSchedule"}]}}`
	if _, err := client.CoreV1().Nodes().Patch(ctx, node.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("taint the node: %w", err)
	}
	return nil
}

// buildImage builds the job's image as make image does, into dir, for
// the node to import, and returns its archive.
func buildImage(ctx context.Context, root, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "recommend-job")
	if err := node.BuildStatic(ctx, root, "./cmd/recommend-job", bin); err != nil {
		return "", err
	}
	archive := filepath.Join(dir, "recommend-job.tar")
	if err := node.WriteImage(archive, image.Options{Binary: bin, Name: nodeImage}); err != nil {
		return "", err
	}
	return archive, nil
}

// installChart installs the chart on the bed, with the git token in a
// Secret and settings (key, value) as the process's flags: a run is then
// a Job made of its CronJob. It returns what makes a run named name and shows its
// pod's log.
func installChart(ctx context.Context, root, dir string, bed *testbed.Bed, n *node.Node, forge *testbed.Gitea, settings [][2]string) (func(context.Context, string) error, error) {
	helm, err := testbed.EnsureHelm(ctx, root)
	if err != nil {
		return nil, err
	}
	secret := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + releaseNamespace + "\n---\n" +
		"apiVersion: v1\nkind: Secret\nmetadata:\n  name: recommend-job-git\n  namespace: " + releaseNamespace +
		"\nstringData:\n  token: " + forge.Token() + "\n"
	if err := testbed.Apply(ctx, bed.APIServer.RESTConfig(), []byte(secret)); err != nil {
		return nil, err
	}
	var config strings.Builder
	for _, kv := range settings {
		fmt.Fprintf(&config, "  %s: %s\n", kv[0], kv[1])
	}
	values := "image:\n  repository: " + strings.Split(nodeImage, ":")[0] + "\n  tag: dev\nconfig:\n" + config.String() +
		"secretFiles:\n  - env: RECOMMEND_GIT_TOKEN_FILE\n    secretName: recommend-job-git\n    key: token\n" +
		"tolerations:\n  - key: " + jobOnlyTaint + "\n    operator: Exists\n    effect: NoSchedule\n"
	path := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(path, []byte(values), 0o600); err != nil {
		return nil, err
	}
	fmt.Print(indent(values))
	cmd := exec.CommandContext(ctx, helm, "install", release, filepath.Join(root, "charts", "recommend-job"),
		"--namespace", releaseNamespace, "--kubeconfig", bed.APIServer.KubeconfigPath, "-f", path)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(dir, "helm", "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(dir, "helm", "config"), "HELM_DATA_HOME="+filepath.Join(dir, "helm", "data"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("helm install: %w\n%s", err, out)
	}
	client, err := kubernetes.NewForConfig(bed.APIServer.RESTConfig())
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, name string) error { return runCronJob(ctx, client, n, name) }, nil
}

// runCronJob makes the Job name of the chart's CronJob, as kubectl create
// job --from=cronjob does, waits until it ends, and prints its pod's
// log, as the node's kubelet keeps it: the job's report.
func runCronJob(ctx context.Context, client kubernetes.Interface, n *node.Node, name string) error {
	cj, err := client.BatchV1().CronJobs(releaseNamespace).Get(ctx, release, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("the chart's CronJob: %w", err)
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: releaseNamespace, Labels: cj.Spec.JobTemplate.Labels,
			Annotations: map[string]string{"cronjob.kubernetes.io/instantiate": "manual"}},
		Spec: cj.Spec.JobTemplate.Spec,
	}
	if _, err := client.BatchV1().Jobs(releaseNamespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		return err
	}
	ended, err := waitJob(ctx, client, name)
	if err != nil {
		return err
	}
	pods, err := client.CoreV1().Pods(releaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + name})
	if err != nil || len(pods.Items) == 0 {
		return fmt.Errorf("the pod of job %s: %v", name, err)
	}
	pod := pods.Items[0]
	fmt.Printf("job %s: pod %s on node %s, as user %d, read-only root %t; its log:\n", name, pod.Name, pod.Spec.NodeName,
		*pod.Spec.SecurityContext.RunAsUser, *pod.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem)
	log, err := podLog(n, pod)
	if err != nil {
		return err
	}
	fmt.Print(indent(log))
	if ended.Type != batchv1.JobComplete {
		return fmt.Errorf("job %s failed: %s", name, ended.Message)
	}
	return nil
}

// podLog reads the log of the pod's container from the files the node's
// kubelet writes, each line as the container wrote it. The apiserver
// cannot ask the test bed's kubelet for it: it has no client certificate
// the kubelet trusts.
func podLog(n *node.Node, pod corev1.Pod) (string, error) {
	files, err := filepath.Glob(filepath.Join(n.Dir, "kubelet", "pod-logs",
		pod.Namespace+"_"+pod.Name+"_"+string(pod.UID), pod.Spec.Containers[0].Name, "*.log"))
	if err != nil || len(files) == 0 {
		return "", fmt.Errorf("the log of pod %s: none on the node (%v)", pod.Name, err)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		return "", fmt.Errorf("the log of pod %s: %w", pod.Name, err)
	}
	var b strings.Builder
	for line := range strings.Lines(string(data)) {
		// time stream tag line
		if fields := strings.SplitN(line, " ", 4); len(fields) == 4 {
			b.WriteString(fields[3])
		}
	}
	return b.String(), nil
}

// waitJob waits, jobTimeout at most, until the Job name is complete or
// failed, and returns that condition.
func waitJob(ctx context.Context, client kubernetes.Interface, name string) (batchv1.JobCondition, error) {
	ctx, cancel := context.WithTimeout(ctx, jobTimeout)
	defer cancel()
	for {
		got, err := client.BatchV1().Jobs(releaseNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return batchv1.JobCondition{}, fmt.Errorf("job %s: %w", name, err)
		}
		for _, c := range got.Status.Conditions {
			if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) {
				return c, nil
			}
		}
		select {
		case <-ctx.Done():
			return batchv1.JobCondition{}, fmt.Errorf("job %s not done: %w", name, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}
