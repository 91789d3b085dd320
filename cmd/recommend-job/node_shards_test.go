//go:build integration

package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/recommend-job/recommend-job/internal/collect"
	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
)

// TestChartOnANodeShards runs the chart's CronJob with sharding on: the
// Indexed Job's two pods each take the ResourceRecommend that hashes to
// its index, push a branch of their own and open its pull request, and
// together change each target once.
func TestChartOnANodeShards(t *testing.T) {
	// The two ResourceRecommends fall in different shards.
	targets := []string{"web", "front"}
	if collect.Shard("shop", targets[0], 2) == collect.Shard("shop", targets[1], 2) {
		t.Fatalf("shop/%s and shop/%s hash to one shard of two; the test needs one in each", targets[0], targets[1])
	}
	ctx, cancel := context.WithTimeout(t.Context(), 25*time.Minute)
	defer cancel()
	now := time.Now().Truncate(time.Minute)
	r := startNodeRun(ctx, t, append(webHistory(now), frontHistory(now)...))
	frontManifest := strings.ReplaceAll(webManifest, "web", "front")
	repoURL, err := r.forge.CreateRepo(ctx, "gitops", map[string]string{
		"clusters/prod/web.yaml":   webManifest,
		"clusters/prod/front.yaml": frontManifest,
	})
	if err != nil {
		t.Fatal(err)
	}
	r.install(ctx, t, r.values(r.bed.Prometheus.URL, repoURL, "sharding:\n  enabled: true\n  shards: 2\n"))
	deployment := func(m string) []byte { return []byte(m[strings.Index(m, "---")+4:]) }
	r.applyWorkloads(ctx, t, []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n"),
		[]byte(webRecommend), []byte(strings.ReplaceAll(webRecommend, "web", "front")),
		deployment(webManifest), deployment(frontManifest))

	runCronJobOnce(ctx, t, r, "sharded")
	pods, err := r.client.CoreV1().Pods(chartNamespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=sharded"})
	if err != nil {
		t.Fatal(err)
	}
	var indexes []string
	for _, p := range pods.Items {
		indexes = append(indexes, p.Annotations["batch.kubernetes.io/job-completion-index"])
	}
	if slices.Sort(indexes); !slices.Equal(indexes, []string{"0", "1"}) {
		t.Errorf("the sharded run's pods have completion indexes %v, want 0 and 1", indexes)
	}

	changed := map[string][]string{}
	for _, pr := range openPullRequestFiles(ctx, t, r) {
		for _, f := range pr.files {
			changed[f] = append(changed[f], pr.branch)
		}
	}
	for i, target := range targets {
		file := "clusters/prod/" + target + ".yaml"
		shard := "-shard-" + string(rune('0'+collect.Shard("shop", target, 2)))
		if len(changed[file]) != 1 || !strings.Contains(changed[file][0], shard) {
			t.Errorf("target %d, %s, changed by the pull requests of branches %v, want once, by shard%s's", i, file, changed[file], shard)
		}
	}
	if len(changed) != len(targets) {
		t.Errorf("the pull requests change %v, want the targets' files only", changed)
	}
}

// pullRequestFiles are the files an open pull request changes, and its
// branch.
type pullRequestFiles struct {
	branch string
	files  []string
}

// openPullRequestFiles lists the open pull requests of the repository
// gitops and the files each changes.
func openPullRequestFiles(ctx context.Context, t *testing.T, r *nodeRun) []pullRequestFiles {
	t.Helper()
	sdk := r.gitea(ctx, t)
	prs, _, err := sdk.ListRepoPullRequests(r.forge.Username, "gitops", gitea.ListPullRequestsOptions{State: gitea.StateOpen})
	if err != nil {
		t.Fatal(err)
	}
	var all []pullRequestFiles
	for _, pr := range prs {
		files, _, err := sdk.ListPullRequestFiles(r.forge.Username, "gitops", pr.Index, gitea.ListPullRequestFilesOptions{})
		if err != nil || pr.Head == nil {
			t.Fatalf("pull request #%d's files: %v (head %+v)", pr.Index, err, pr.Head)
		}
		got := pullRequestFiles{branch: pr.Head.Ref}
		for _, f := range files {
			got.files = append(got.files, f.Filename)
		}
		all = append(all, got)
	}
	return all
}

// frontHistory is a week of the front Deployment's usage, two pods over
// two rollouts: app at 0.2 cores and 300Mi, the sidecar at 0.02 cores
// and 50Mi.
func frontHistory(end time.Time) []testbed.Series {
	var containers []history.Container
	for _, span := range history.Rollouts("front", 2, 2, end.Add(-7*24*time.Hour), end) {
		for _, pod := range span.Pods {
			containers = append(containers,
				history.Container{Namespace: "shop", Pod: pod, Container: "app", Start: span.Start, End: span.End,
					CPU: history.Constant(0.2), Memory: history.Constant(300 * mib)},
				history.Container{Namespace: "shop", Pod: pod, Container: "sidecar", Start: span.Start, End: span.End,
					CPU: history.Constant(0.02), Memory: history.Constant(50 * mib)})
		}
	}
	return history.Series(containers, time.Minute)
}
