//go:build integration

package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/recommend-job/recommend-job/internal/testbed/node"
)

// TestChartOnANodeDeadline runs the chart's CronJob every minute against
// a Prometheus that never answers, so that each run outlasts its
// deadline. With activeDeadlineSeconds 100, the chart sets the job's
// run-timeout to 90s: the first scheduled run ends itself, exit 3 with
// its report, before Kubernetes would stop it, and while it runs the
// next minute's run is not started (concurrencyPolicy Forbid). A Job
// whose deadline comes before the job's own (20s, as when its pod waited
// long for a node) is ended by Kubernetes with SIGTERM: exit 1, with its
// report. Neither pushes anything.
func TestChartOnANodeDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 25*time.Minute)
	defer cancel()
	r := startNodeRun(ctx, t, nil)
	repoURL, err := r.forge.CreateRepo(ctx, "gitops", map[string]string{"clusters/prod/web.yaml": webManifest})
	if err != nil {
		t.Fatal(err)
	}
	r.install(ctx, t, r.values(silentServer(t), repoURL, "schedule: \"* * * * *\"\nactiveDeadlineSeconds: 100\n"))
	r.applyWorkloads(ctx, t, shopObjects(t, false)...)
	ended := watchTerminations(ctx, t, r)

	first := waitScheduledJob(ctx, t, r)
	finished := onlyJobWhileRunning(ctx, t, r, first.Name)
	if c := jobFinished(finished); c.Type != batchv1.JobFailed || c.Reason == batchv1.JobReasonDeadlineExceeded {
		t.Errorf("the scheduled run ended with %+v, want failed by the job's own exit before activeDeadlineSeconds", c)
	}
	assertEnded(t, ended(first.Name), 3, "run deadline of 1m30s exceeded")
	scheduled, err := time.Parse(time.RFC3339, first.Annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"])
	if err != nil {
		t.Fatalf("the scheduled run's time: %v", err)
	}
	if end := jobFinished(finished).LastTransitionTime.Time; end.Before(scheduled.Add(70 * time.Second)) {
		t.Errorf("the scheduled run of %s ended at %s, before the next minute's run was due: Forbid was not tested", scheduled, end)
	}
	assertForbidden(ctx, t, r)

	// No more scheduled runs: the next Job is the test's.
	if _, err := r.client.BatchV1().CronJobs(chartNamespace).Patch(ctx, "recommend-job", types.MergePatchType,
		[]byte(`{"spec":{"suspend":true}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	late := jobFromCronJob(ctx, t, r.client, "past-deadline")
	late.Spec.ActiveDeadlineSeconds = ptr.To[int64](20)
	if _, err := r.client.BatchV1().Jobs(chartNamespace).Create(ctx, late, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if c := jobFinished(waitJobDone(ctx, t, r, late.Name, 3*time.Minute)); c.Type != batchv1.JobFailed || c.Reason != batchv1.JobReasonDeadlineExceeded {
		t.Errorf("the run past its Job's deadline ended with %+v, want failed with DeadlineExceeded", c)
	}
	assertEnded(t, ended(late.Name), 1, "terminated signal received")

	assertNothingPushed(ctx, t, r, "gitops")
}

// silentServer listens on the node's address and answers no request:
// each waits until its client gives up or the test ends. It returns its
// URL.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(node.Address, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })}
	go srv.Serve(l) //nolint:errcheck // ends with Close
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String()
}

// watchTerminations watches the pods of the chart's namespace and
// returns what ended the containers of a Job's pods, by the Job's name:
// a pod ended by its Job's deadline is deleted right after, so only a
// watch sees its end for sure.
func watchTerminations(ctx context.Context, t *testing.T, r *nodeRun) func(job string) []corev1.ContainerStateTerminated {
	t.Helper()
	w, err := r.client.CoreV1().Pods(chartNamespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	ended := map[string]map[string]corev1.ContainerStateTerminated{}
	go func() {
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified && ev.Type != watch.Deleted) {
				continue
			}
			for _, s := range pod.Status.ContainerStatuses {
				if s.State.Terminated == nil {
					continue
				}
				mu.Lock()
				job := pod.Labels["job-name"]
				if ended[job] == nil {
					ended[job] = map[string]corev1.ContainerStateTerminated{}
				}
				ended[job][pod.Name] = *s.State.Terminated
				mu.Unlock()
			}
		}
	}()
	return func(job string) []corev1.ContainerStateTerminated {
		mu.Lock()
		defer mu.Unlock()
		var all []corev1.ContainerStateTerminated
		for _, s := range ended[job] {
			all = append(all, s)
		}
		return all
	}
}

// assertEnded checks that one container ended, with code and a
// termination message (its last lines, the chart's
// FallbackToLogsOnError) holding want.
func assertEnded(t *testing.T, ended []corev1.ContainerStateTerminated, code int32, want string) {
	t.Helper()
	if len(ended) != 1 {
		t.Errorf("containers ended: %+v, want one", ended)
		return
	}
	if ended[0].ExitCode != code || !strings.Contains(ended[0].Message, want) {
		t.Errorf("the container ended with %d (%s), message:\n%s\nwant exit code %d and %q", ended[0].ExitCode, ended[0].Reason, ended[0].Message, code, want)
	}
}

// waitScheduledJob waits, two minutes at most, for the first Job the
// CronJob controller makes of the chart's CronJob.
func waitScheduledJob(ctx context.Context, t *testing.T, r *nodeRun) *batchv1.Job {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if jobs := scheduledJobs(ctx, t, r); len(jobs) > 0 {
			return &jobs[0]
		}
		if time.Now().After(deadline) {
			t.Fatal("the CronJob controller made no Job within two minutes of a schedule of every minute")
		}
		time.Sleep(time.Second)
	}
}

// scheduledJobs are the Jobs the CronJob controller made of the chart's
// CronJob.
func scheduledJobs(ctx context.Context, t *testing.T, r *nodeRun) []batchv1.Job {
	t.Helper()
	list, err := r.client.BatchV1().Jobs(chartNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var jobs []batchv1.Job
	for _, j := range list.Items {
		if owner := metav1.GetControllerOf(&j); owner != nil && owner.Kind == "CronJob" && owner.Name == "recommend-job" {
			jobs = append(jobs, j)
		}
	}
	return jobs
}

// onlyJobWhileRunning checks, every second until the scheduled Job name
// ends, that the CronJob controller made no other while it ran, and
// returns it ended. The run due while it ran counts as missed, and the
// controller starts it as soon as name ends: a Job listed beside name is
// fine only if name has ended in the same listing.
func onlyJobWhileRunning(ctx context.Context, t *testing.T, r *nodeRun, name string) *batchv1.Job {
	t.Helper()
	deadline := time.Now().Add(4 * time.Minute)
	for {
		jobs := scheduledJobs(ctx, t, r)
		i := slices.IndexFunc(jobs, func(j batchv1.Job) bool { return j.Name == name })
		if i < 0 {
			t.Fatalf("the scheduled job %s is gone", name)
		}
		if jobFinished(&jobs[i]).Type != "" {
			return &jobs[i]
		}
		if len(jobs) > 1 {
			t.Fatalf("the CronJob controller started another Job while %s ran, want none (concurrencyPolicy Forbid); the jobs: %s; the pods' logs:\n%s",
				name, describeJobs(jobs), podLogs(r.node, chartNamespace, name))
		}
		if time.Now().After(deadline) {
			t.Fatalf("the scheduled job %s did not end within 4 minutes; the pod's log:\n%s", name, podLogs(r.node, chartNamespace, name))
		}
		time.Sleep(time.Second)
	}
}

// assertForbidden checks that the CronJob controller said it did not
// start a run because one ran.
func assertForbidden(ctx context.Context, t *testing.T, r *nodeRun) {
	t.Helper()
	events, err := r.client.CoreV1().Events(chartNamespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=CronJob,involvedObject.name=recommend-job,reason=JobAlreadyActive"})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) == 0 {
		t.Errorf("no JobAlreadyActive event on the CronJob: the controller did not skip the run due while one ran")
	}
}

// assertNothingPushed checks that the repository name has its main
// branch only, at its first commit, and no pull request.
func assertNothingPushed(ctx context.Context, t *testing.T, r *nodeRun, name string) {
	t.Helper()
	sdk := r.gitea(ctx, t)
	branches, _, err := sdk.ListRepoBranches(r.forge.Username, name, gitea.ListRepoBranchesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(branches) != 1 || branches[0].Name != "main" {
		t.Errorf("branches of %s: %+v, want main only", name, branches)
	}
	commits, _, err := sdk.ListRepoCommits(r.forge.Username, name, gitea.ListCommitOptions{SHA: "main"})
	if err != nil || len(commits) != 1 {
		t.Errorf("commits on main: %d, %v; want the first only", len(commits), err)
	}
	prs, _, err := sdk.ListRepoPullRequests(r.forge.Username, name, gitea.ListPullRequestsOptions{State: gitea.StateAll})
	if err != nil || len(prs) != 0 {
		t.Errorf("pull requests: %+v, %v; want none", prs, err)
	}
}

// describeJobs says when each of jobs started and in what state it is.
func describeJobs(jobs []batchv1.Job) string {
	var b strings.Builder
	for _, j := range jobs {
		fmt.Fprintf(&b, "\n%s: started %v, active %d, failed %d, conditions %+v", j.Name, j.Status.StartTime, j.Status.Active, j.Status.Failed, j.Status.Conditions)
	}
	return b.String()
}
