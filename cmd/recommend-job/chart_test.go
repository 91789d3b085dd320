//go:build integration

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

const chartDir = "../../charts/recommend-job"

// helm returns the helm CLI, built from source on first use.
func helm(t *testing.T) string {
	t.Helper()
	root, err := testbed.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	bin, err := testbed.EnsureHelm(ctx, root)
	if err != nil {
		t.Fatalf("building helm: %v", err)
	}
	return bin
}

func runHelm(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	if len(args) > 0 && (args[0] == "lint" || args[0] == "template") && !slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, "image.repository") }) {
		// The chart has no default image: none is published.
		args = append(args, "--set", "image.repository="+testImage)
	}
	return runHelmAsIs(t, bin, args...)
}

// testImage is the image the chart's tests render it with.
const testImage = "registry.example.com/platform/recommend-job"

// runHelmAsIs runs helm with args, in homes of its own.
func runHelmAsIs(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	err := cmd.Run()
	return out.String(), err
}

func TestChartLintAndSchema(t *testing.T) {
	bin := helm(t)
	if out, err := runHelm(t, bin, "lint", "--strict", chartDir); err != nil {
		t.Fatalf("helm lint --strict: %v\n%s", err, out)
	}
	tests := []struct {
		name string
		set  string
		want string
	}{
		{name: "schedule must be a string", set: "schedule=5", want: "schedule"},
		{name: "shards must be at least one", set: "sharding.shards=0", want: "shards"},
		{name: "unknown top-level value", set: "sheduel=x", want: "sheduel"},
		{name: "secret file needs its env", set: "secretFiles[0].secretName=s,secretFiles[0].key=k", want: "env"},
		{name: "chart secret needs its namespace", set: "chartSecrets[0].name=ghcr-auth", want: "namespace"},
		{name: "chart secret's name stays in its directory", set: "chartSecrets[0].namespace=flux-system,chartSecrets[0].name=..", want: "name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runHelm(t, bin, "template", "rj", chartDir, "--set", tt.set)
			if err == nil {
				t.Fatalf("helm template --set %s succeeded, want a schema error", tt.set)
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("helm template --set %s: %s, want an error naming %q", tt.set, out, tt.want)
			}
		})
	}
}

// TestChartNeedsAnImage checks that the chart refuses to render without
// image.repository, saying why, rather than install a CronJob whose image
// no registry serves; with one, the CronJob runs it at the chart's
// appVersion.
func TestChartNeedsAnImage(t *testing.T) {
	bin := helm(t)
	out, err := runHelmAsIs(t, bin, "template", "rj", chartDir)
	if err == nil || !strings.Contains(out, "image.repository is required: no image of recommend-job is published") {
		t.Fatalf("helm template without image.repository = %v\n%s\nwant it refused, saying why", err, out)
	}
	out, err = runHelm(t, bin, "template", "rj", chartDir, "--set", "image.repository="+testImage)
	if err != nil || !strings.Contains(out, "image: \""+testImage+":") {
		t.Fatalf("helm template with image.repository = %v, want the CronJob to run it:\n%s", err, out)
	}
}

// TestChartMountsChartSecrets renders the chart with chartSecrets: each
// Secret is mounted where chart-secrets-dir finds the Secret it stands
// for, from its copy in the job's namespace, and the job is told the
// directory.
func TestChartMountsChartSecrets(t *testing.T) {
	out, err := runHelm(t, helm(t), "template", "rj", chartDir,
		"--set", "chartSecrets[0].namespace=flux-system,chartSecrets[0].name=ghcr-auth,chartSecrets[0].secretName=flux-ghcr-auth",
		"--set", "chartSecrets[1].namespace=media,chartSecrets[1].name=registry-ca")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	for _, want := range []string{
		"- name: RECOMMEND_CHART_SECRETS_DIR\n                  value: /var/run/chart-secrets\n",
		"- name: chart-secret-0\n                  mountPath: /var/run/chart-secrets/flux-system/ghcr-auth\n                  readOnly: true\n",
		"- name: chart-secret-1\n                  mountPath: /var/run/chart-secrets/media/registry-ca\n",
		"- name: chart-secret-0\n              secret:\n                secretName: flux-ghcr-auth\n",
		"- name: chart-secret-1\n              secret:\n                secretName: registry-ca\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("helm template holds no\n%s\nin:\n%s", want, out)
		}
	}
	out, err = runHelm(t, helm(t), "template", "rj", chartDir)
	if err != nil || strings.Contains(out, "CHART_SECRETS_DIR") {
		t.Errorf("helm template without chartSecrets: %v, want no chart-secrets-dir:\n%s", err, out)
	}
}

// TestChartOnTheAPIServer installs the rendered chart into the real
// apiserver and runs the job as the chart's ServiceAccount with the chart's
// ConfigMap, as the CronJob's pod would.
func TestChartOnTheAPIServer(t *testing.T) {
	bin := helm(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	now := time.Now().Truncate(time.Minute)
	bed := testbedtest.Start(t, testbed.Options{History: webHistory(now)})
	repoURL := testbedtest.CreateRepo(t, bed, "gitops", map[string]string{"clusters/prod/web.yaml": webManifest})

	values := filepath.Join(t.TempDir(), "values.yaml")
	writeFile(t, values, `config:
  prometheus-url: `+bed.Prometheus.URL+`
  git-url: `+repoURL+`
  git-username: `+bed.Git.Username+`
  git-path: clusters
  output: json
secretFiles:
  - env: RECOMMEND_GIT_TOKEN_FILE
    secretName: gitops-token
    key: token
`)
	manifests := map[string]string{}
	for name, args := range map[string][]string{
		"plain":   {"template", "rj", chartDir, "--namespace", "recommend-job", "--include-crds", "-f", values},
		"sharded": {"template", "rj-sharded", chartDir, "--namespace", "recommend-job", "--set", "sharding.enabled=true,sharding.shards=3,serviceAccount.create=false,serviceAccount.name=rj"},
	} {
		out, err := runHelm(t, bin, args...)
		if err != nil {
			t.Fatalf("helm template (%s): %v\n%s", name, err, out)
		}
		manifests[name] = out
	}

	cfg := bed.APIServer.RESTConfig()
	setup := `apiVersion: v1
kind: Namespace
metadata:
  name: recommend-job
---
apiVersion: v1
kind: Secret
metadata:
  name: gitops-token
  namespace: recommend-job
stringData:
  token: ` + bed.Git.Password() + "\n"
	if err := testbed.Apply(ctx, cfg, []byte(setup), []byte(manifests["plain"]), []byte(manifests["sharded"])); err != nil {
		t.Fatalf("applying the chart: %v", err)
	}
	if err := testbed.Apply(ctx, cfg, shopObjects(t, false)...); err != nil {
		t.Fatalf("applying the workloads: %v", err)
	}
	// The examples the project ships are accepted by the CRD.
	examples, err := filepath.Glob("../../examples/resourcerecommends/*.yaml")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	exampleManifests := [][]byte{[]byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: data\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: jobs\n")}
	for _, path := range examples {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		exampleManifests = append(exampleManifests, b)
	}
	if err := testbed.Apply(ctx, cfg, exampleManifests...); err != nil {
		t.Fatalf("applying the examples: %v", err)
	}

	client := kubernetes.NewForConfigOrDie(cfg)
	cronJob, err := client.BatchV1().CronJobs("recommend-job").Get(ctx, "rj", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the chart's CronJob: %v", err)
	}
	pod := cronJob.Spec.JobTemplate.Spec.Template.Spec
	if cronJob.Spec.ConcurrencyPolicy != "Forbid" || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot ||
		!*pod.Containers[0].SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("CronJob is not hardened: %+v", cronJob.Spec)
	}
	sharded, err := client.BatchV1().CronJobs("recommend-job").Get(ctx, "rj-sharded", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the sharded CronJob: %v", err)
	}
	if spec := sharded.Spec.JobTemplate.Spec; spec.CompletionMode == nil || *spec.CompletionMode != "Indexed" || *spec.Completions != 3 || *spec.Parallelism != 3 {
		t.Errorf("sharded job spec = %+v, want an Indexed Job of 3", spec)
	}

	// The pod's view: the ConfigMap as its config file, the Secret as the
	// token file its environment names, and the ServiceAccount's token.
	cm, err := client.CoreV1().ConfigMaps("recommend-job").Get(ctx, "rj", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	configFile := filepath.Join(dir, "config.yaml")
	writeFile(t, configFile, cm.Data["config.yaml"])
	tokenFile := filepath.Join(dir, "token")
	writeFile(t, tokenFile, bed.Git.Password())
	var tokenEnv string
	for _, e := range pod.Containers[0].Env {
		if e.Name == "RECOMMEND_GIT_TOKEN_FILE" {
			tokenEnv = e.Value
		}
	}
	if tokenEnv != "/var/run/secrets/recommend-job/gitops-token/token" {
		t.Errorf("RECOMMEND_GIT_TOKEN_FILE = %q, want the mounted secret's path", tokenEnv)
	}
	t.Setenv("RECOMMEND_GIT_TOKEN_FILE", tokenFile)

	token, err := client.CoreV1().ServiceAccounts("recommend-job").CreateToken(ctx, "rj",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting the ServiceAccount's token: %v", err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeServiceAccountKubeconfig(t, kubeconfig, bed.APIServer.URL, bed.APIServer.CAData, token.Status.Token)

	var stdout, stderr bytes.Buffer
	if code := run(ctx, []string{"--config", configFile, "--kubeconfig", kubeconfig}, &stdout, &stderr); code != exitOK {
		t.Fatalf("run() as the chart's ServiceAccount = %d; stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), `"pushed": true`) || !strings.Contains(stdout.String(), `"recommended": "390m"`) {
		t.Errorf("report = %s, want web recommended and pushed", stdout.String())
	}
}

func writeServiceAccountKubeconfig(t *testing.T, path, server string, ca []byte, token string) {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["bed"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["sa"] = &clientcmdapi.Context{Cluster: "bed", AuthInfo: "sa"}
	cfg.CurrentContext = "sa"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
}
