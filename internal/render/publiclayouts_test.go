package render

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recommend-job/recommend-job/internal/kinds"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// guestbookUI is the guestbook's Deployment as Argo CD's examples write
// it, in namespace guestbook, running image.
func guestbookUI(image string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: guestbook-ui
spec:
  selector:
    matchLabels: {app: guestbook-ui}
  template:
    metadata:
      labels: {app: guestbook-ui}
    spec:
      containers:
        - name: guestbook-ui
          image: ` + image + `
          resources:
            requests:
              cpu: 100m
`
}

// guestbookAppSet is an ApplicationSet of a list generator that names
// its Applications <cluster>-guestbook; per, when set, is the path the
// generator's own template puts in place of the set's.
func guestbookAppSet(name, path, per string) string {
	s := `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: ` + name + `
  namespace: argocd
spec:
  goTemplate: true
  generators:
    - list:
        elements:
          - cluster: engineering-dev
            url: https://kubernetes.default.svc
`
	if per != "" {
		s += `        template:
          metadata: {}
          spec:
            project: default
            source: {repoURL: https://git.example.com/org/gitops.git, targetRevision: HEAD, path: '` + per + `'}
            destination: {}
`
	}
	return s + `  template:
    metadata:
      name: '{{.cluster}}-guestbook'
    spec:
      project: default
      source: {repoURL: https://git.example.com/org/gitops.git, targetRevision: HEAD, path: '` + path + `'}
      destination: {server: '{{.url}}', namespace: guestbook}
`
}

// TestDuplicateApplicationSetsChosenByLiveTemplate follows the layout of
// Argo CD's ApplicationSet examples, where a list generator and a list
// generator with a template override both name an Application
// engineering-dev-guestbook, each with a path of its own: the live
// Deployment decides which of them the cluster runs, and when it matches
// neither the target is refused naming each with its first difference.
func TestDuplicateApplicationSetsChosenByLiveTemplate(t *testing.T) {
	const image = "gcr.io/heptio-images/ks-guestbook-demo:"
	files := map[string]string{
		"appsets/list.yaml":     guestbookAppSet("guestbook-list", "list-generator/guestbook/{{.cluster}}", ""),
		"appsets/override.yaml": guestbookAppSet("guestbook-override", "template-override/default", "template-override/{{.cluster}}-override"),
		"list-generator/guestbook/engineering-dev/guestbook-ui-deployment.yaml":   guestbookUI(image + "0.1"),
		"template-override/engineering-dev-override/kustomization.yaml":           "resources:\n  - guestbook-ui-deployment.yaml\n",
		"template-override/engineering-dev-override/guestbook-ui-deployment.yaml": guestbookUI(image + "0.2"),
		"template-override/default/kustomization.yaml":                            "resources: []\n",
	}
	tests := []struct {
		name   string
		live   string
		landed string // "" when refused
		want   []string
	}{
		{name: "the second matches", live: image + "0.2", landed: "template-override/engineering-dev-override/",
			want: []string{"list-generator/guestbook/engineering-dev/guestbook-ui-deployment.yaml: container guestbook-ui image " + image + "0.1, live " + image + "0.2",
				"template-override/engineering-dev-override: as live"}},
		{name: "none matches", live: image + "0.3",
			want: []string{"none of them builds the live pod template",
				"list-generator/guestbook/engineering-dev/guestbook-ui-deployment.yaml: container guestbook-ui image " + image + "0.1, live " + image + "0.3",
				"template-override/engineering-dev-override: container guestbook-ui image " + image + "0.2, live " + image + "0.3",
				"ApplicationSet argocd/guestbook-list", "ApplicationSet argocd/guestbook-override"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTree(t, files)
			target := Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui",
				Annotations: map[string]string{ArgoTrackingID: "engineering-dev-guestbook:apps/Deployment:guestbook/guestbook-ui"},
				PodPrint:    printOf(t, "guestbook-ui", tt.live)}
			out := applyGuestbook(t, dir, target)
			text := choice(t, out, tt.landed)
			saysAll(t, text, tt.want)
			unchanged(t, dir, files, tt.landed)
		})
	}
}

// applyGuestbook applies a CPU request of 1 to target's guestbook-ui
// container in the repository at dir, with opts besides its URL.
func applyGuestbook(t *testing.T, dir string, target Target, opts ...Option) *Outcome {
	t.Helper()
	c := Change{Target: target, Container: "guestbook-ui", Requests: quantities(map[string]string{"cpu": "1"})}
	out, err := Apply(context.Background(), dir, ".", []Change{c}, append([]Option{WithRepositoryURL("https://git.example.com/org/gitops.git")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// saysAll checks that text says each of want.
func saysAll(t *testing.T, text string, want []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%q does not say %q", text, w)
		}
	}
}

// choice checks out's one result: refused as ambiguous, with no file
// written, when landed is ""; else changed in landed, a file or a
// directory ending in "/". It returns what the result says of the choice:
// the refusal, or why the source was chosen.
func choice(t *testing.T, out *Outcome, landed string) string {
	t.Helper()
	r := out.Results[0]
	if landed == "" {
		if !errors.Is(r.Err, ErrAmbiguousTarget) || len(out.Files) != 0 {
			t.Fatalf("Err = %v, files %v; want refused as ambiguous", r.Err, out.Files)
		}
		return r.Err.Error()
	}
	in := r.File == landed || strings.HasSuffix(landed, "/") && strings.HasPrefix(r.File, landed)
	if r.Err != nil || !r.Changed || !in {
		t.Fatalf("File %q, Changed %v, Err %v; want a change in %s", r.File, r.Changed, r.Err, landed)
	}
	return r.Chosen
}

// unchanged checks that every file of files outside landed is as written.
func unchanged(t *testing.T, dir string, files map[string]string, landed string) {
	t.Helper()
	for f, want := range files {
		if landed != "" && strings.HasPrefix(f, landed) {
			continue
		}
		if got, _ := os.ReadFile(filepath.Join(dir, f)); string(got) != want {
			t.Errorf("%s changed:\n%s", f, got)
		}
	}
}

// printOf is the print of a live Deployment whose one container runs
// image, with resources of its own.
func printOf(t *testing.T, container, image string) kinds.PodPrint {
	t.Helper()
	p, ok := kinds.PodPrintOf("apps", "Deployment", map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": container, "image": image,
			"resources": map[string]any{"requests": map[string]any{"cpu": "2"}}}},
	}}}})
	if !ok {
		t.Fatal("no print")
	}
	return p
}

// guestbookApp is an Application of the repository named guestbook, as
// argocd-example-apps' README creates it, deploying path into namespace
// guestbook.
func guestbookApp(path string) string {
	return `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: guestbook
  namespace: argocd
spec:
  project: default
  source: {repoURL: https://git.example.com/org/gitops.git, targetRevision: HEAD, path: ` + path + `}
  destination: {server: https://kubernetes.default.svc, namespace: guestbook}
`
}

// TestDecoyApplication follows argocd-example-apps' guestbook, with a
// tenant's copy of it: team-b's Application is named guestbook, like the
// instance label Argo CD put on the victim's live Deployment, and points
// at the copy in team-b's directory. The label alone never makes the
// tenant's copy the source: the live build chooses the victim's file,
// with and without the victim's own Application file, and a copy that
// builds what the cluster runs too is refused, naming the decoy.
func TestDecoyApplication(t *testing.T) {
	const image = "quay.io/argoprojlabs/argocd-e2e-container:"
	tests := []struct {
		name   string
		files  map[string]string
		landed string // "" when refused
		want   []string
	}{
		{name: "without the victim's Application", landed: "guestbook/guestbook-ui-deployment.yaml",
			files: map[string]string{
				"guestbook/guestbook-ui-deployment.yaml":                guestbookUI(image + "0.2"),
				"tenants/team-b/guestbook/guestbook-ui-deployment.yaml": guestbookUI(image + "0.1"),
				"tenants/team-b/apps/guestbook.yaml":                    guestbookApp("tenants/team-b/guestbook"),
			},
			want: []string{"tenants/team-b/guestbook/guestbook-ui-deployment.yaml: container guestbook-ui image " + image + "0.1, live " + image + "0.2",
				"guestbook/guestbook-ui-deployment.yaml: as live"}},
		{name: "beside the victim's Application", landed: "guestbook/guestbook-ui-deployment.yaml",
			files: map[string]string{
				"guestbook/guestbook-ui-deployment.yaml":                guestbookUI(image + "0.2"),
				"apps/guestbook.yaml":                                   guestbookApp("guestbook"),
				"tenants/team-b/guestbook/guestbook-ui-deployment.yaml": guestbookUI(image + "0.1"),
				"tenants/team-b/apps/guestbook.yaml":                    guestbookApp("tenants/team-b/guestbook"),
			},
			want: []string{"tenants/team-b/guestbook/guestbook-ui-deployment.yaml: container guestbook-ui image " + image + "0.1, live " + image + "0.2",
				"guestbook/guestbook-ui-deployment.yaml: as live"}},
		{name: "a copy that builds the live template too",
			files: map[string]string{
				"guestbook/guestbook-ui-deployment.yaml":                guestbookUI(image + "0.2"),
				"tenants/team-b/guestbook/guestbook-ui-deployment.yaml": guestbookUI(image + "0.2"),
				"tenants/team-b/apps/guestbook.yaml":                    guestbookApp("tenants/team-b/guestbook"),
			},
			want: []string{"2 of them build the live pod template", "tenants/team-b/guestbook/guestbook-ui-deployment.yaml",
				"guestbook/guestbook-ui-deployment.yaml", "Argo CD application guestbook"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTree(t, tt.files)
			target := Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui",
				Labels:   map[string]string{InstanceLabel: "guestbook"},
				PodPrint: printOf(t, "guestbook-ui", image+"0.2")}
			out := applyGuestbook(t, dir, target)
			text := choice(t, out, tt.landed)
			saysAll(t, text, tt.want)
			unchanged(t, dir, tt.files, tt.landed)
		})
	}
}

// devTeamFiles is flux2-multi-tenancy's dev-team branch cut down: the
// podinfo HelmRelease in base/, patched with patchesStrategicMerge by
// staging/ and production/ (production's runs another image), its chart
// in the repository rather than a HelmRepository.
func devTeamFiles() map[string]string {
	values := func(replicas string) string {
		return "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: podinfo\n  namespace: apps\nspec:\n  values:\n    replicaCount: " + replicas + "\n"
	}
	env := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../base\npatchesStrategicMerge:\n  - podinfo-values.yaml\n"
	return map[string]string{
		"base/kustomization.yaml": "resources:\n  - podinfo-release.yaml\n",
		"base/podinfo-release.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: apps
spec:
  releaseName: podinfo
  chart:
    spec:
      chart: ./charts/podinfo
      sourceRef: {kind: GitRepository, name: dev-team}
  interval: 5m
`,
		"staging/kustomization.yaml":      env,
		"staging/podinfo-values.yaml":     values("1"),
		"production/kustomization.yaml":   env,
		"production/podinfo-values.yaml":  values("2") + "    image: {tag: 6.14.0}\n",
		"charts/podinfo/Chart.yaml":       "apiVersion: v1\nname: podinfo\nversion: 6.14.1\n",
		"charts/podinfo/values.yaml":      "replicaCount: 1\nimage: {tag: 6.14.1}\nresources:\n  requests:\n    cpu: 1m\n",
		"charts/podinfo/templates/d.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  replicas: {{ .Values.replicaCount }}\n  template:\n    spec:\n      containers:\n        - name: podinfo\n          image: ghcr.io/stefanprodan/podinfo:{{ .Values.image.tag }}\n          resources:\n{{ toYaml .Values.resources | indent 12 }}\n",
	}
}

// TestMultiTenancyHelmRelease follows flux2-multi-tenancy's dev-team
// branch: the tenant's HelmRelease in base/, patched with
// patchesStrategicMerge by staging/ and production/, and a Deployment of
// its release whose only pointer is helm-controller's labels. The live
// Kustomization the live HelmRelease's kustomize-controller labels name
// deploys ./staging: the values go into staging's patch alone. Without
// the live objects, nothing tells the environments apart.
func TestMultiTenancyHelmRelease(t *testing.T) {
	files := devTeamFiles()
	liveKustomization := repoindex.DeployerObject{Origin: repoindex.FromCluster, Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": "dev-team", "namespace": "apps"},
		"spec":     map[string]any{"path": "./staging", "sourceRef": map[string]any{"kind": "GitRepository", "name": "dev-team"}}}}
	liveRelease := repoindex.DeployerObject{Origin: repoindex.FromCluster, Object: map[string]any{
		"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
		"metadata": map[string]any{"name": "podinfo", "namespace": "apps", "labels": map[string]any{
			"kustomize.toolkit.fluxcd.io/name": "dev-team", "kustomize.toolkit.fluxcd.io/namespace": "apps"}},
		"spec": map[string]any{"releaseName": "podinfo", "interval": "5m", "values": map[string]any{"replicaCount": float64(1)},
			"chart": map[string]any{"spec": map[string]any{"chart": "./charts/podinfo", "sourceRef": map[string]any{"kind": "GitRepository", "name": "dev-team"}}}}}}
	target := Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "apps", Name: "podinfo",
		Labels:      map[string]string{"helm.toolkit.fluxcd.io/name": "podinfo", "helm.toolkit.fluxcd.io/namespace": "apps"},
		Annotations: map[string]string{"meta.helm.sh/release-name": "podinfo", "meta.helm.sh/release-namespace": "apps"}}
	// As the lister marks a live deployer whose GitRepository tracks
	// another branch than the job's.
	const branch = "https://git.example.com/org/dev-team.git at branch dev-team (the GitRepository apps/dev-team)"
	for _, tc := range []struct {
		name  string
		live  []repoindex.DeployerObject
		image string // the live Deployment's, "" for none
		err   string // "" when staging's values are edited
	}{
		{name: "the live release and Kustomization", live: []repoindex.DeployerObject{liveKustomization, liveRelease}},
		{name: "without them", err: "ambiguous"},
		// Without the live deployers, the live Deployment's image is
		// what staging's release renders, not production's.
		{name: "without them, the live pod template", image: "ghcr.io/stefanprodan/podinfo:6.14.1"},
		{name: "without them, a pod template neither renders", image: "ghcr.io/stefanprodan/podinfo:6.13.0",
			err: "none of them renders the live pod template (production: container podinfo image ghcr.io/stefanprodan/podinfo:6.14.0, live ghcr.io/stefanprodan/podinfo:6.13.0; staging: container podinfo image ghcr.io/stefanprodan/podinfo:6.14.1, live"},
		{name: "the live Kustomization on another branch", err: branch, live: func() []repoindex.DeployerObject {
			k := liveKustomization
			k.Elsewhere = branch
			return []repoindex.DeployerObject{k, liveRelease}
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTree(t, files)
			c := Change{Target: target, Container: "podinfo", Requests: quantities(map[string]string{"cpu": "65m"})}
			if tc.image != "" {
				c.Target.PodPrint = printOf(t, "podinfo", tc.image)
			}
			out, err := Apply(context.Background(), dir, ".", []Change{c}, WithDeployers(tc.live))
			if err != nil {
				t.Fatal(err)
			}
			r := out.Results[0]
			if tc.err != "" {
				if r.Err == nil || !strings.Contains(r.Err.Error(), tc.err) || len(out.Files) != 0 {
					t.Fatalf("Err = %v, files %v; want refused, %q", r.Err, out.Files, tc.err)
				}
				return
			}
			if r.Err != nil || !r.Changed || r.File != "staging/podinfo-values.yaml" {
				t.Fatalf("File %q, Changed %v, Err %v; want staging/podinfo-values.yaml changed", r.File, r.Changed, r.Err)
			}
			if tc.image != "" && !strings.Contains(r.Chosen, "staging: as live") {
				t.Errorf("Chosen = %q, want it to say staging renders the live pod template", r.Chosen)
			}
			unchanged(t, dir, files, "staging/podinfo-values.yaml")
			got, _ := os.ReadFile(filepath.Join(dir, "staging", "podinfo-values.yaml"))
			if !strings.Contains(string(got), "cpu: 65m") {
				t.Errorf("staging/podinfo-values.yaml:\n%s", got)
			}
		})
	}
}

// TestMarkerInSharedBaseChosenByLiveTemplate follows the same layout with
// a $recommend marker on the base HelmRelease's values, which staging
// and production both render: the environment whose release renders the
// live pod template gets the values in its patch, and without the live
// template the marker is refused as before.
func TestMarkerInSharedBaseChosenByLiveTemplate(t *testing.T) {
	files := devTeamFiles()
	files["base/podinfo-release.yaml"] += "  values:\n    resources: # {\"$recommend\": \"apps/podinfo:podinfo\"}\n      requests:\n        cpu: 1m\n"
	target := Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "apps", Name: "podinfo"}
	for _, tc := range []struct {
		name, image string
		err         string // "" when staging's patch gets the values
	}{
		{name: "staging's image", image: "ghcr.io/stefanprodan/podinfo:6.14.1"},
		{name: "no live template", err: "production, staging all render"},
		{name: "an image neither renders", image: "ghcr.io/stefanprodan/podinfo:6.13.0",
			err: "none of them renders the live pod template (production: container podinfo image ghcr.io/stefanprodan/podinfo:6.14.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTree(t, files)
			c := Change{Target: target, Container: "podinfo", Requests: quantities(map[string]string{"cpu": "65m"})}
			if tc.image != "" {
				c.Target.PodPrint = printOf(t, "podinfo", tc.image)
			}
			out, err := Apply(context.Background(), dir, ".", []Change{c})
			if err != nil {
				t.Fatal(err)
			}
			r := out.Results[0]
			if tc.err != "" {
				if !errors.Is(r.Err, ErrAmbiguousTarget) || !strings.Contains(r.Err.Error(), tc.err) || len(out.Files) != 0 {
					t.Fatalf("Err = %v, files %v; want refused, %q", r.Err, out.Files, tc.err)
				}
				return
			}
			if r.Err != nil || !r.Changed || !strings.HasPrefix(r.File, "staging/") || !strings.Contains(r.Chosen, "staging: as live") {
				t.Fatalf("File %q, Changed %v, Chosen %q, Err %v; want a change in staging/", r.File, r.Changed, r.Chosen, r.Err)
			}
			unchanged(t, dir, files, "staging/")
		})
	}
}

// TestDuplicateApplicationsOfOtherClusters follows a monorepo read by an
// Argo CD per cluster: two ApplicationSets generate guestbook, one for the
// cluster dev and one for prod, each deploying its own directory, whose
// builds are alike. The destination decides where argocd-cluster-name is
// set; without it, the target is refused naming both.
func TestDuplicateApplicationsOfOtherClusters(t *testing.T) {
	appSet := func(cluster string) string {
		return `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: guestbook-` + cluster + `
  namespace: argocd
spec:
  goTemplate: true
  generators:
    - list:
        elements:
          - cluster: ` + cluster + `
  template:
    metadata:
      name: guestbook
    spec:
      project: default
      source: {repoURL: https://git.example.com/org/gitops.git, targetRevision: HEAD, path: 'envs/{{.cluster}}'}
      destination: {name: '{{.cluster}}', namespace: guestbook}
`
	}
	const image = "gcr.io/google-samples/gb-frontend:v5"
	files := map[string]string{
		"appsets/dev.yaml":                       appSet("dev"),
		"appsets/prod.yaml":                      appSet("prod"),
		"envs/dev/guestbook-ui-deployment.yaml":  guestbookUI(image),
		"envs/prod/guestbook-ui-deployment.yaml": guestbookUI(image),
	}
	// prodFile is prod's Application written as a file, in place of its
	// ApplicationSet.
	const prodFile = `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: guestbook
  namespace: argocd
spec:
  project: default
  source: {repoURL: https://git.example.com/org/gitops.git, targetRevision: HEAD, path: envs/prod}
  destination: {name: prod, namespace: guestbook}
`
	for _, tc := range []struct {
		name, cluster, landed string
		file                  bool // prod's Application is a file
	}{
		{name: "in prod", cluster: "prod", landed: "envs/prod/guestbook-ui-deployment.yaml"},
		{name: "in dev", cluster: "dev", landed: "envs/dev/guestbook-ui-deployment.yaml"},
		{name: "cluster not named"},
		{name: "in prod, its Application a file", cluster: "prod", file: true, landed: "envs/prod/guestbook-ui-deployment.yaml"},
		{name: "in dev, prod's Application a file", cluster: "dev", file: true, landed: "envs/dev/guestbook-ui-deployment.yaml"},
		{name: "cluster not named, prod's Application a file", file: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := maps.Clone(files)
			if tc.file {
				delete(files, "appsets/prod.yaml")
				files["argocd/guestbook-prod.yaml"] = prodFile
			}
			dir := writeTree(t, files)
			target := Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui",
				Annotations: map[string]string{ArgoTrackingID: "guestbook:apps/Deployment:guestbook/guestbook-ui"},
				PodPrint:    printOf(t, "guestbook-ui", image)}
			out := applyGuestbook(t, dir, target, WithClusterName(tc.cluster))
			text := choice(t, out, tc.landed)
			if tc.landed == "" {
				if !strings.Contains(text, "argocd/guestbook-dev") || !strings.Contains(text, "guestbook-prod") {
					t.Fatalf("%q; want refused naming both ApplicationSets", text)
				}
				return
			}
			unchanged(t, dir, files, tc.landed)
		})
	}
}
