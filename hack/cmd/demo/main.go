// Command demo runs recommend-job end to end on the bundled example: it
// starts the local test bed and a Gitea, loads a week of synthetic usage for
// the workloads of examples/demo, creates their ResourceRecommends, pushes
// the example GitOps repository to Gitea, runs the job with --forge gitea
// and a pull request per team (the ResourceRecommends' team label), and
// shows each pull request it opened, the commit on its branch and its
// description, which holds the evidence behind each number. A second run
// shows that nothing new changes nothing. With -screenshot FILE it saves
// the first pull request's page as headless Chromium shows it, charts
// unfolded, as a PNG. With -node the job runs as a user runs it: the
// chart, installed with helm, on a node of the test bed, its CronJob's
// Jobs running make image's image in pods.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"code.gitea.io/sdk/gitea"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/history"
	"github.com/recommend-job/recommend-job/internal/testbed/node"
)

const mib = 1 << 20

func main() {
	screenshot := flag.String("screenshot", "", "save the first pull request's page, as headless Chromium shows it, as a PNG `file`")
	height := flag.Int("screenshot-height", 1800, "the screenshot's window height in CSS `pixels`; it is 1280 wide")
	onNode := flag.Bool("node", false, "run the job as the chart's CronJob does, in a pod on a node of the test bed, from make image's image (needs root)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, shot{path: *screenshot, height: *height}, *onNode)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

// shot is where the screenshot goes, if anywhere, and its height.
type shot struct {
	path   string
	height int
}

func run(ctx context.Context, screenshot shot, onNode bool) error {
	root, err := testbed.RepoRoot()
	if err != nil {
		return err
	}
	demo := filepath.Join(root, "examples", "demo")
	dir := filepath.Join(root, ".cache", "demo")
	if onNode {
		dir += "-node"
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}

	var n *node.Node
	if onNode {
		step("building the job's image as make image does (a static build: minutes, once)")
		archive, err := buildImage(ctx, root, filepath.Join(dir, "image"))
		if err != nil {
			return err
		}
		n = node.New(archive)
		step("starting the test bed (etcd, kube-apiserver, Prometheus) with a week of usage history, a node (containerd, kubelet,\n    controller-manager, scheduler, kube-proxy) with the image imported, and Gitea, all on " + node.Address)
	} else {
		step("starting the test bed (etcd, kube-apiserver, Prometheus) with a week of usage history, and Gitea")
	}
	bed, forge, stop, err := startServers(ctx, root, dir, screenshot.path != "", n)
	defer stop()
	if err != nil {
		return err
	}

	if n != nil {
		step("tainting the node so that only the job's pod runs there: the demo workloads' images are not on it")
		if err := reserveNode(ctx, bed); err != nil {
			return err
		}
	}

	step("applying the CRD, the demo workloads and their ResourceRecommends")
	if err := applyDemo(ctx, root, demo, bed); err != nil {
		return err
	}

	step("pushing examples/demo/repo to Gitea as the GitOps repository")
	files, err := readTree(filepath.Join(demo, "repo"))
	if err != nil {
		return err
	}
	repoURL, err := forge.CreateRepo(ctx, "gitops", files)
	if err != nil {
		return err
	}

	settings := [][2]string{
		{"prometheus-url", bed.Prometheus.URL},
		{"git-url", repoURL},
		{"git-username", forge.Username},
		{"forge", "gitea"},
		{"forge-api-url", forge.APIURL()},
		// A pull request per team (the ResourceRecommends' label), and
		// the dashboard issue.
		{"pr-group-by", "label:team"},
		{"dashboard", "true"},
		{"log-level", "warn"},
	}
	runJob, err := jobRunner(ctx, root, dir, bed, n, forge, settings)
	if err != nil {
		return err
	}
	if err := runJob(ctx, "demo-first-run"); err != nil {
		return err
	}

	step("the pull requests it opened, one per team; each description shows the evidence behind each number")
	prs, err := openPullRequests(ctx, forge, "gitops", 2)
	if err != nil {
		return err
	}
	for _, pr := range prs {
		fmt.Printf("%s\n%s (branch %s)\n\n", pr.HTMLURL, pr.Title, pr.Head.Ref)
		if err := showBranchHead(ctx, repoURL, forge.Username, forge.Token(), pr.Head.Ref); err != nil {
			return err
		}
		fmt.Printf("\n%s\n\n", indent(pr.Body))
		// Each opens with what it does to the team's bill.
		if !strings.Contains(pr.Body, "\n**Monthly change:** ") {
			return fmt.Errorf("pull request #%d does not open with its monthly change", pr.Index)
		}
	}

	if n == nil {
		step("running recommend-job again: nothing changed, so no commit and the pull requests stay as they are")
	} else {
		// In a pod the job keeps checkpoints in its namespace, and each
		// description says how its history was read.
		step("running the CronJob again: nothing changed, so no commit; the descriptions now say the history was read\n    from the checkpoints the first run wrote")
	}
	if err := checkUnchanged(ctx, runJob, forge, prs, n != nil); err != nil {
		return err
	}
	// After the second run, so that the time it takes does not move the
	// second run's window.
	if screenshot.path != "" {
		step("saving a screenshot of " + prs[0].HTMLURL + " as headless Chromium shows it")
		if err := saveScreenshot(ctx, prs[0].HTMLURL, screenshot); err != nil {
			return err
		}
	}
	step("done; the test bed and Gitea stop now")
	return nil
}

// jobRunner returns what runs the job once with settings, the run's
// name aside: the process, or, on the node n if there is one, a Job of
// the chart's CronJob, installed first.
func jobRunner(ctx context.Context, root, dir string, bed *testbed.Bed, n *node.Node, forge *testbed.Gitea, settings [][2]string) (func(context.Context, string) error, error) {
	if n != nil {
		step("installing the chart as its README says, with these values and the git token in a Secret")
		run, err := installChart(ctx, root, dir, bed, n, forge, settings)
		if err != nil {
			return nil, err
		}
		step("running the chart's CronJob once, as kubectl create job --from=cronjob/" + release + " does: the job runs in a pod\n    on the node, as user 65532 on a read-only root, through the chart's ServiceAccount")
		return func(ctx context.Context, name string) error {
			step("job " + name + " of the CronJob")
			return run(ctx, name)
		}, nil
	}
	// The token goes in the environment, so that it is in no command line.
	env := []string{
		"KUBECONFIG=" + bed.APIServer.KubeconfigPath,
		"RECOMMEND_GIT_TOKEN=" + forge.Token(),
	}
	args := []string{"./cmd/recommend-job"}
	for _, kv := range settings {
		if kv[1] == "true" {
			args = append(args, "--"+kv[0])
		} else {
			args = append(args, "--"+kv[0], kv[1])
		}
	}
	step("running recommend-job " + strings.Join(args[1:], " ") + "\n    (KUBECONFIG and RECOMMEND_GIT_TOKEN in the environment; compiled on first use)")
	return func(ctx context.Context, _ string) error {
		return command(ctx, root, env, filepath.Join(root, "hack", "run"), args...)
	}, nil
}

// startServers starts the test bed with the demo's week of history and
// the node n, if any, and, beside it, Gitea (with the frontend that
// renders charts when frontend is set), on the node's address when there
// is one: they build their servers on first use, which takes minutes
// once. stop stops whichever started, and is to be called whatever err.
func startServers(ctx context.Context, root, dir string, frontend bool, n *node.Node) (*testbed.Bed, *testbed.Gitea, func(), error) {
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "    "+format+"\n", args...) }
	type started struct {
		forge *testbed.Gitea
		err   error
	}
	giteaCh := make(chan started, 1)
	go func() {
		began := time.Now()
		var opts []testbed.Option
		if n != nil {
			// The job's pod reaches it on the node's address.
			opts = append(opts, testbed.BindAddress(node.Address))
		}
		if frontend {
			// Gitea built from source lacks its frontend, which renders
			// the charts; the test bed's stand-in does.
			opts = append(opts, testbed.GiteaFrontend())
		}
		forge, err := testbed.StartGitea(ctx, root, filepath.Join(dir, "gitea"), opts...)
		if err == nil {
			logf("gitea ready at %s after %s", forge.URL, time.Since(began).Round(10*time.Millisecond))
		}
		giteaCh <- started{forge, err}
	}()
	now := time.Now().Truncate(time.Minute)
	opts := testbed.Options{
		Dir:      filepath.Join(dir, "bed"),
		RepoRoot: root,
		History:  demoHistory(now),
		Logf:     logf,
	}
	if n != nil {
		opts.Node = n
	}
	bed, bedErr := testbed.Up(ctx, opts)
	g := <-giteaCh
	stop := func() {
		if g.forge != nil {
			_ = g.forge.Close()
		}
		if bed != nil {
			bed.Close()
		}
	}
	return bed, g.forge, stop, errors.Join(bedErr, g.err)
}

// checkUnchanged runs the job again and checks that it left each of prs
// as it was: its branch where it was and, unless refreshed descriptions
// are expected, its description too.
func checkUnchanged(ctx context.Context, runJob func(context.Context, string) error, forge *testbed.Gitea, prs []*gitea.PullRequest, refreshed bool) error {
	if err := runJob(ctx, "demo-second-run"); err != nil {
		return err
	}
	again, err := openPullRequests(ctx, forge, "gitops", 2)
	if err != nil {
		return err
	}
	for i, pr := range prs {
		if again[i].Index != pr.Index || again[i].Head.Sha != pr.Head.Sha {
			return fmt.Errorf("the second run moved the branch of pull request #%d from %s to %s", pr.Index, pr.Head.Sha, again[i].Head.Sha)
		}
		switch {
		case again[i].Updated.Equal(*pr.Updated):
			fmt.Printf("#%d still open, last updated %s\n", pr.Index, pr.Updated.Format(time.RFC3339))
		case refreshed:
			fmt.Printf("#%d still open at %.12s, its description refreshed%s\n", pr.Index, pr.Head.Sha, firstChange(pr.Body, again[i].Body))
		default:
			return fmt.Errorf("the second run changed pull request #%d: updated %s, was %s%s", pr.Index, again[i].Updated, pr.Updated, firstChange(pr.Body, again[i].Body))
		}
	}
	return nil
}

// firstChange says where the description after differs from before, if
// it does.
func firstChange(before, after string) string {
	b, a := strings.Split(before, "\n"), strings.Split(after, "\n")
	for i := range min(len(b), len(a)) {
		if b[i] != a[i] {
			return fmt.Sprintf("; its description's line %d was\n    %s\nand is\n    %s", i+1, b[i], a[i])
		}
	}
	if len(b) != len(a) {
		return fmt.Sprintf("; its description had %d lines and has %d", len(b), len(a))
	}
	return ""
}

// saveScreenshot saves the page at url, its charts unfolded, as a PNG,
// and says how many of its charts rendered.
func saveScreenshot(ctx context.Context, url string, screenshot shot) error {
	chromium, err := testbed.EnsureChromium(ctx)
	if err != nil {
		return err
	}
	// The stand-in frontend opens the charts' <details> on this hash.
	url += "#testbed-open-charts"
	const budget = 20 * time.Second
	dom, err := chromium.DOM(ctx, url, budget)
	if err != nil {
		return err
	}
	page := testbed.ReadMermaidPage(dom)
	fmt.Printf("%d of %d charts rendered\n", page.Rendered, page.Rendered+page.Pending)
	for _, msg := range page.Errors {
		fmt.Printf("a chart Mermaid refused: %s\n", msg)
	}
	path, err := filepath.Abs(screenshot.path)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	// At 0.75 image pixels to a CSS pixel the picture is as wide as a
	// README shows it, and its file a third smaller.
	if err := chromium.Screenshot(ctx, url, path, 1280, screenshot.height, 0.75, budget); err != nil {
		return err
	}
	fmt.Printf("saved %s\n", path)
	return nil
}

// applyDemo applies the CRD, the demo workloads and their
// ResourceRecommends to the test bed's apiserver.
func applyDemo(ctx context.Context, root, demo string, bed *testbed.Bed) error {
	manifests, err := readManifests(
		filepath.Join(root, "charts", "recommend-job", "crds"),
		filepath.Join(demo, "repo"),
		filepath.Join(demo, "resourcerecommends.yaml"),
	)
	if err != nil {
		return err
	}
	return testbed.Apply(ctx, bed.APIServer.RESTConfig(), manifests...)
}

// openPullRequests returns the open pull requests of the admin's
// repository name, by number; there must be want of them.
func openPullRequests(ctx context.Context, forge *testbed.Gitea, name string, want int) ([]*gitea.PullRequest, error) {
	client, err := gitea.NewClient(forge.APIURL(), gitea.SetToken(forge.Token()), gitea.SetContext(ctx))
	if err != nil {
		return nil, err
	}
	prs, _, err := client.ListRepoPullRequests(forge.Username, name, gitea.ListPullRequestsOptions{State: gitea.StateOpen})
	if err != nil {
		return nil, fmt.Errorf("listing pull requests: %w", err)
	}
	if len(prs) != want {
		return nil, fmt.Errorf("%d open pull requests on %s, want %d", len(prs), name, want)
	}
	slices.SortFunc(prs, func(x, y *gitea.PullRequest) int { return cmp.Compare(x.Index, y.Index) })
	for _, pr := range prs {
		if pr.Updated == nil || pr.Head == nil {
			return nil, fmt.Errorf("pull request #%d has no update time or no head", pr.Index)
		}
	}
	return prs, nil
}

// demoHistory is a week of usage for the demo workloads, from pods of
// several rollouts as a real week would have:
//   - web/app: 0.1 cores, 0.3 from 09:00 to 12:00 UTC; 180Mi;
//   - web/log-shipper: 0.015 cores; 40Mi;
//   - api/api: 0.6 cores, 0.9 from 09:00 to 18:00 UTC; 300Mi;
//   - worker/worker: 0.2 cores; 600Mi.
func demoHistory(end time.Time) []testbed.Series {
	start := end.Add(-7 * 24 * time.Hour)
	var containers []history.Container
	add := func(workload string, replicas, rollouts int, usage map[string][2]func(time.Time) float64) {
		for _, span := range history.Rollouts(workload, replicas, rollouts, start, end) {
			for _, pod := range span.Pods {
				for name, u := range usage {
					containers = append(containers, history.Container{
						Namespace: "shop", Pod: pod, Container: name, Start: span.Start, End: span.End, CPU: u[0], Memory: u[1],
					})
				}
			}
		}
	}
	add("web", 2, 3, map[string][2]func(time.Time) float64{
		"app":         {history.DailyPeak(0.1, 0.3, 9, 12), history.Constant(180 * mib)},
		"log-shipper": {history.Constant(0.015), history.Constant(40 * mib)},
	})
	add("api", 3, 2, map[string][2]func(time.Time) float64{
		"api": {history.DailyPeak(0.6, 0.9, 9, 18), history.Constant(300 * mib)},
	})
	add("worker", 1, 1, map[string][2]func(time.Time) float64{
		"worker": {history.Constant(0.2), history.Constant(600 * mib)},
	})
	return history.Series(containers, time.Minute)
}

// readManifests reads the YAML files at paths (files or directories).
func readManifests(paths ...string) ([][]byte, error) {
	var out [][]byte
	for _, p := range paths {
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
				return err
			}
			b, err := os.ReadFile(path)
			out = append(out, b)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("reading manifests: %w", err)
		}
	}
	return out, nil
}

// readTree reads every file under dir, keyed by slash-separated relative path.
func readTree(dir string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	return files, nil
}

// showBranchHead prints the tip commit of branch with its diff.
func showBranchHead(ctx context.Context, url, username, password, branch string) error {
	repo, err := git.CloneContext(ctx, memory.NewStorage(), nil, &git.CloneOptions{
		URL:           url,
		Auth:          &githttp.BasicAuth{Username: username, Password: password},
		ReferenceName: plumbing.NewBranchReferenceName(branch),
		SingleBranch:  true,
		Depth:         2,
	})
	if err != nil {
		return fmt.Errorf("cloning %s: %w", branch, err)
	}
	head, err := repo.Head()
	if err != nil {
		return err
	}
	commit, err := repo.CommitObject(head.Hash())
	if err != nil {
		return err
	}
	parent, err := commit.Parent(0)
	if err != nil {
		return err
	}
	patch, err := parent.PatchContext(ctx, commit)
	if err != nil {
		return err
	}
	fmt.Printf("commit %s\nAuthor: %s <%s>\n\n%s\n%s", commit.Hash, commit.Author.Name, commit.Author.Email,
		indent(commit.Message), patch.String())
	return nil
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	return strings.Join(lines, "\n") + "\n"
}

func command(ctx context.Context, dir string, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(name), err)
	}
	return nil
}

func step(msg string) {
	fmt.Printf("\n==> %s\n", msg)
}
