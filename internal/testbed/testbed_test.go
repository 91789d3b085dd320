//go:build integration

package testbed_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// bed is shared by the tests of this file.
var bed *testbed.Bed

// base is a minute-aligned time the histories are laid out from.
var base = time.Now().Add(-time.Hour).Truncate(time.Minute)

// startupHistory is backfilled before Prometheus starts: two days old, so
// that it lives in blocks rather than in the head.
var startupHistory = []testbed.Series{{
	Name:    "testbed_startup_value",
	Labels:  map[string]string{"pod": "web-0"},
	Samples: ramp(base.Add(-48*time.Hour), 5*time.Minute, 12, 1.5),
}}

func TestMain(m *testing.M) {
	os.Exit(testbedtest.Main(m, testbed.Options{History: startupHistory}, func(b *testbed.Bed) { bed = b }))
}

// ramp returns n samples every step from start, the i-th being i*slope.
func ramp(start time.Time, step time.Duration, n int, slope float64) []testbed.Sample {
	samples := make([]testbed.Sample, n)
	for i := range samples {
		samples[i] = testbed.Sample{Time: start.Add(time.Duration(i) * step), Value: float64(i) * slope}
	}
	return samples
}

func TestEnv(t *testing.T) {
	want := []string{
		"KUBECONFIG=" + bed.APIServer.KubeconfigPath,
		"PROMETHEUS_URL=" + bed.Prometheus.URL,
		"GIT_URL=" + bed.Git.BaseURL,
		"GIT_USERNAME=" + testbed.DefaultGitUsername,
		"GIT_TOKEN=" + bed.Git.Password(),
	}
	if diff := cmp.Diff(want, bed.Env()); diff != "" {
		t.Errorf("Env() mismatch (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(bed.Git.BaseURL, "http://127.0.0.1:") || !strings.HasSuffix(bed.Git.BaseURL, "/") {
		t.Errorf("git base URL = %q, want http://127.0.0.1:PORT/", bed.Git.BaseURL)
	}
	if len(bed.Git.Password()) < 20 {
		t.Errorf("generated git password has %d characters, want at least 20", len(bed.Git.Password()))
	}
}

func TestKubernetesThroughKubeconfig(t *testing.T) {
	cfg, err := clientcmd.BuildConfigFromFlags("", bed.APIServer.KubeconfigPath)
	if err != nil {
		t.Fatalf("load kubeconfig: %v", err)
	}
	if cfg.Insecure || len(cfg.CAData) == 0 {
		t.Errorf("kubeconfig: insecure = %v, CA data %d bytes; want verified TLS", cfg.Insecure, len(cfg.CAData))
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("create client: %v", err)
	}
	ctx := t.Context()

	want := map[string]string{"greeting": "hello"}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "testbed"}, Data: want}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ConfigMap: %v", err)
	}
	got, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "testbed", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get ConfigMap: %v", err)
	}
	if diff := cmp.Diff(want, got.Data); diff != "" {
		t.Errorf("ConfigMap data mismatch (-want +got):\n%s", diff)
	}
}

// TestWorkloadsWithoutControllerManager checks that namespaces and
// workloads can be created although no controller manager runs.
func TestWorkloadsWithoutControllerManager(t *testing.T) {
	cs := testbedtest.Clientset(t, bed)
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "workloads"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	for _, namespace := range []string{"default", "workloads"} {
		t.Run(namespace, func(t *testing.T) {
			if _, err := cs.AppsV1().Deployments(namespace).Create(ctx, deployment("web"), metav1.CreateOptions{}); err != nil {
				t.Fatalf("create Deployment: %v", err)
			}
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "web-0"},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			}
			if _, err := cs.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create Pod: %v", err)
			}
			got, err := cs.AppsV1().Deployments(namespace).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get Deployment: %v", err)
			}
			if n := *got.Spec.Replicas; n != 2 {
				t.Errorf("Deployment replicas = %d, want 2", n)
			}
		})
	}
}

func deployment(name string) *appsv1.Deployment {
	replicas := int32(2)
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "nginx"}}},
			},
		},
	}
}

func TestKubernetesRefusesWrongToken(t *testing.T) {
	cfg := rest.CopyConfig(bed.APIServer.RESTConfig())
	cfg.BearerToken = "not-the-token"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("create client: %v", err)
	}
	_, err = cs.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{})
	if !apierrors.IsUnauthorized(err) {
		t.Errorf("list namespaces with a wrong token: err = %v, want Unauthorized", err)
	}
}

func TestPrometheusStartupHistory(t *testing.T) {
	s := startupHistory[0]
	start, end := s.Samples[0].Time, s.Samples[len(s.Samples)-1].Time
	got := queryRange(t, `testbed_startup_value{pod="web-0"}`, start, end, 5*time.Minute)
	if diff := cmp.Diff(points(s.Samples), got); diff != "" {
		t.Errorf("query_range mismatch (-want +got):\n%s", diff)
	}
}

func TestPrometheusLoadHistory(t *testing.T) {
	labels := map[string]string{"namespace": "prod", "pod": `we"ird\pod`}
	cpu := testbed.Series{
		Name:    "testbed_cpu_seconds_total",
		Labels:  labels,
		Samples: ramp(base.Add(-10*24*time.Hour), time.Minute, 30, 0.25),
	}
	// Millisecond timestamps and samples in the head block's time range.
	recent := testbed.Series{
		Name:   "testbed_recent",
		Labels: labels,
		Samples: []testbed.Sample{
			{Time: base.Add(123 * time.Millisecond), Value: 1},
			{Time: base.Add(30*time.Second + 7*time.Millisecond), Value: 2},
			{Time: base.Add(time.Minute + 999*time.Millisecond), Value: 3},
		},
	}
	before := bed.Prometheus.URL
	testbedtest.LoadHistory(t, bed, []testbed.Series{cpu, recent})
	if bed.Prometheus.URL != before {
		t.Errorf("Prometheus URL changed from %s to %s on reload", before, bed.Prometheus.URL)
	}

	t.Run("query_range", func(t *testing.T) {
		start, end := cpu.Samples[0].Time, cpu.Samples[len(cpu.Samples)-1].Time
		got := queryRange(t, `testbed_cpu_seconds_total{namespace="prod"}`, start, end, time.Minute)
		if diff := cmp.Diff(points(cpu.Samples), got); diff != "" {
			t.Errorf("query_range mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("raw samples", func(t *testing.T) {
		at := base.Add(2 * time.Minute)
		got := queryRaw(t, `testbed_recent{pod="we\"ird\\pod"}[5m]`, at)
		if diff := cmp.Diff(points(recent.Samples), got); diff != "" {
			t.Errorf("raw samples mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("startup history kept", func(t *testing.T) {
		TestPrometheusStartupHistory(t)
	})
}

// point is a sample as the Prometheus API returns it.
type point struct {
	MS    int64
	Value string
}

func points(samples []testbed.Sample) []point {
	out := make([]point, len(samples))
	for i, s := range samples {
		out[i] = point{MS: s.Time.UnixMilli(), Value: strconv.FormatFloat(s.Value, 'f', -1, 64)}
	}
	return out
}

// queryRange runs a range query that must return exactly one series.
func queryRange(t *testing.T, query string, start, end time.Time, step time.Duration) []point {
	t.Helper()
	params := url.Values{
		"query": {query},
		"start": {formatTime(start)},
		"end":   {formatTime(end)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	}
	return queryMatrix(t, "/api/v1/query_range", params)
}

// queryRaw runs an instant query of a range selector, which returns the
// raw samples with their exact timestamps.
func queryRaw(t *testing.T, query string, at time.Time) []point {
	t.Helper()
	return queryMatrix(t, "/api/v1/query", url.Values{"query": {query}, "time": {formatTime(at)}})
}

func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

func queryMatrix(t *testing.T, path string, params url.Values) []point {
	t.Helper()
	resp, err := http.Get(bed.Prometheus.URL + path + "?" + params.Encode())
	if err != nil {
		t.Fatalf("query %s: %v", params.Get("query"), err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Values [][2]any          `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("query %s: decode response: %v", params.Get("query"), err)
	}
	if body.Status != "success" || body.Data.ResultType != "matrix" {
		t.Fatalf("query %s: status %q, result type %q, error %q", params.Get("query"), body.Status, body.Data.ResultType, body.Error)
	}
	if len(body.Data.Result) != 1 {
		t.Fatalf("query %s: %d series, want 1", params.Get("query"), len(body.Data.Result))
	}
	var out []point
	for _, v := range body.Data.Result[0].Values {
		ts, ok1 := v[0].(float64)
		val, ok2 := v[1].(string)
		if !ok1 || !ok2 {
			t.Fatalf("query %s: malformed point %v", params.Get("query"), v)
		}
		out = append(out, point{MS: int64(ts*1000 + 0.5), Value: val})
	}
	return out
}

func TestGitAuth(t *testing.T) {
	repoURL := testbedtest.CreateRepo(t, bed, "auth", map[string]string{"a": "a"})
	infoRefs := repoURL + "/info/refs?service=git-upload-pack"
	tests := []struct {
		name     string
		user     string
		password string
		noAuth   bool
		want     int
	}{
		{name: "no credentials", noAuth: true, want: http.StatusUnauthorized},
		{name: "wrong password", user: bed.Git.Username, password: "wrong", want: http.StatusUnauthorized},
		{name: "wrong user", user: "someone", password: bed.Git.Password(), want: http.StatusUnauthorized},
		{name: "empty password", user: bed.Git.Username, want: http.StatusUnauthorized},
		{name: "right credentials", user: bed.Git.Username, password: bed.Git.Password(), want: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, infoRefs, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.noAuth {
				req.SetBasicAuth(tt.user, tt.password)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("GET info/refs: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("GET info/refs: status %d, want %d", resp.StatusCode, tt.want)
			}
			if tt.want == http.StatusUnauthorized && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") {
				t.Errorf("WWW-Authenticate = %q, want a Basic challenge", resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
}

func TestGitCloneAndPush(t *testing.T) {
	files := map[string]string{
		"README.md":           "fleet\n",
		"apps/web/deploy.yml": "kind: Deployment\n",
	}
	repoURL := testbedtest.CreateRepo(t, bed, "org/fleet", files)
	if want := bed.Git.BaseURL + "org/fleet.git"; repoURL != want {
		t.Errorf("CreateRepo URL = %q, want %q", repoURL, want)
	}
	user, password := bed.Git.Username, bed.Git.Password()

	work := filepath.Join(t.TempDir(), "fleet")
	runGit(t, "", user, password, "clone", "--quiet", repoURL, work)
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(work, filepath.FromSlash(name)))
		if err != nil {
			t.Errorf("read %s of the clone: %v", name, err)
		} else if string(got) != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if got := runGit(t, work, user, password, "log", "-1", "--format=%an <%ae>|%D"); got != testbed.GitAuthor+"|HEAD -> main, origin/main, origin/HEAD" {
		t.Errorf("initial commit = %q, want author %s on main", got, testbed.GitAuthor)
	}

	t.Run("wrong password refused", func(t *testing.T) {
		_, err := gitCommand(t, "", user, "wrong", "clone", "--quiet", repoURL, filepath.Join(t.TempDir(), "c"))
		if err == nil {
			t.Error("clone with a wrong password succeeded")
		}
	})

	t.Run("push", func(t *testing.T) {
		writeFile(t, filepath.Join(work, "apps/web/patch.yml"), "replicas: 3\n")
		runGit(t, work, user, password, "add", "--all")
		runGit(t, work, user, password, "commit", "--quiet", "--message=scale web")
		runGit(t, work, user, password, "push", "--quiet", "origin", "main")
		assertRemoteHead(t, repoURL, user, password, runGit(t, work, user, password, "rev-parse", "HEAD"))
	})

	t.Run("push with a wrong password refused", func(t *testing.T) {
		before := runGit(t, work, user, password, "rev-parse", "HEAD")
		writeFile(t, filepath.Join(work, "rejected"), "x\n")
		runGit(t, work, user, password, "add", "--all")
		runGit(t, work, user, password, "commit", "--quiet", "--message=rejected")
		if _, err := gitCommand(t, work, user, "wrong", "push", "--quiet", "origin", "main"); err == nil {
			t.Error("push with a wrong password succeeded")
		}
		assertRemoteHead(t, repoURL, user, password, before)
		runGit(t, work, user, password, "reset", "--quiet", "--hard", "origin/main")
	})

	// Git sends bodies above http.postBuffer (1 MiB) chunked, which
	// net/http/cgi refuses unless the server buffers them.
	t.Run("large push", func(t *testing.T) {
		blob := make([]byte, 3<<20)
		if _, err := rand.Read(blob); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(work, "blob.bin"), string(blob))
		runGit(t, work, user, password, "add", "--all")
		runGit(t, work, user, password, "commit", "--quiet", "--message=large")
		runGit(t, work, user, password, "push", "--quiet", "origin", "main")
		assertRemoteHead(t, repoURL, user, password, runGit(t, work, user, password, "rev-parse", "HEAD"))
	})
}

func TestCreateRepoRejects(t *testing.T) {
	if _, err := bed.Git.CreateRepo(t.Context(), "twice", nil); err != nil {
		t.Fatalf("create repository: %v", err)
	}
	tests := []struct {
		name  string
		repo  string
		files map[string]string
		is    error
	}{
		{name: "existing repository", repo: "twice", is: fs.ErrExist},
		{name: "empty name", repo: ""},
		{name: "parent directory", repo: "../outside"},
		{name: "absolute name", repo: "/abs"},
		{name: "file outside the tree", repo: "escape", files: map[string]string{"../x": "x"}},
		{name: "file in .git", repo: "hook", files: map[string]string{".git/hooks/pre-commit": "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := bed.Git.CreateRepo(t.Context(), tt.repo, tt.files)
			if err == nil {
				t.Fatalf("CreateRepo(%q) succeeded, want an error", tt.repo)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("CreateRepo(%q) = %v, want %v", tt.repo, err, tt.is)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(bed.Git.Root, "escape.git")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("failed CreateRepo left a repository behind (stat: %v)", err)
	}
}

func TestStartFailureShowsLog(t *testing.T) {
	tools := bed.Tools
	// git does not understand Prometheus's flags: it prints its usage and
	// exits, which must surface in the error.
	tools.Prometheus = tools.Git
	_, err := testbed.StartPrometheus(t.Context(), tools, t.TempDir())
	if err == nil {
		t.Fatal("StartPrometheus with a wrong binary succeeded")
	}
	for _, want := range []string{"start prometheus", "exited before it was ready", "last lines of", "unknown option"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

// TestCredentialsNotLogged runs last: the logs have seen all requests.
func TestCredentialsNotLogged(t *testing.T) {
	secrets := map[string]string{"admin token": bed.APIServer.AdminToken, "git password": bed.Git.Password()}
	var logs int
	err := filepath.WalkDir(bed.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".log" {
			return err
		}
		logs++
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for what, secret := range secrets {
			if bytes.Contains(data, []byte(secret)) {
				t.Errorf("%s holds the %s", path, what)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", bed.Dir, err)
	}
	if logs < 4 {
		t.Errorf("found %d log files, want one per server", logs)
	}
}

// runGit runs git and fails the test if it fails; it returns the trimmed
// output.
func runGit(t *testing.T, dir, user, password string, args ...string) string {
	t.Helper()
	out, err := gitCommand(t, dir, user, password, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", args[0], err, out)
	}
	return out
}

// gitCommand runs git with basic auth for user and password in a header,
// so that credentials stay out of URLs and output, and without the
// caller's git configuration.
func gitCommand(t *testing.T, dir, user, password string, args ...string) (string, error) {
	t.Helper()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	cmd := exec.CommandContext(t.Context(), bed.Tools.Git, append([]string{"-c", "http.extraHeader=Authorization: Basic " + auth}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=tester", "GIT_AUTHOR_EMAIL=tester@example.com",
		"GIT_COMMITTER_NAME=tester", "GIT_COMMITTER_EMAIL=tester@example.com",
	)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// assertRemoteHead checks, over HTTP, that main of the repository is at
// commit want.
func assertRemoteHead(t *testing.T, repoURL, user, password, want string) {
	t.Helper()
	out := runGit(t, "", user, password, "ls-remote", repoURL, "refs/heads/main")
	if got, _, _ := strings.Cut(out, "\t"); got != want {
		t.Errorf("remote main = %q, want %q", got, want)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestAPIServerReportsItsVersion checks that the test bed's kube-apiserver
// reports the version of the Kubernetes module it is built from, as a
// release build does: Helm checks a chart's kubeVersion against it.
func TestAPIServerReportsItsVersion(t *testing.T) {
	root, err := testbed.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "hack", "tools", "kube-apiserver", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	want := ""
	for line := range strings.Lines(string(mod)) {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "k8s.io/kubernetes" {
			want = f[1]
		}
	}
	if want == "" {
		t.Fatal("go.mod of kube-apiserver requires no k8s.io/kubernetes")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", bed.APIServer.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if got.GitVersion != want || got.Major+"."+got.Minor != strings.Join(strings.Split(strings.TrimPrefix(want, "v"), ".")[:2], ".") {
		t.Errorf("server version = %s (%s.%s), want %s", got.GitVersion, got.Major, got.Minor, want)
	}
}
