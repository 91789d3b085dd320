//go:build integration

package chartfetch

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helm/helmtest"
)

// TestLoaderLoadDirFetchesRemoteDependencies loads a chart directory whose
// Chart.yaml takes a dependency from a real chart repository (on loopback,
// behind basic auth) that its charts/ does not hold: the Loader fetches it
// with Helm's dependency manager at the version Chart.lock pins, with the
// repository's credentials, once for the run, and the release renders the
// dependency's objects. Without the Loader, rendering refuses the chart,
// as it did before.
func TestLoaderLoadDirFetchesRemoteDependencies(t *testing.T) {
	repo := helmtest.NewRepo(t, helmtest.WithBasicAuth("chart-user", "chart-pw"))
	for _, v := range []string{"1.2.0", "1.3.0"} {
		repo.Add(t, "cache", v, map[string]string{
			"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cache-" + strings.ReplaceAll(v, ".", "-") + "\n",
		})
	}
	fsys := fstest.MapFS{
		"charts/app/Chart.yaml": {Data: []byte("apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n" +
			"  - name: cache\n    version: ^1.0.0\n    repository: " + repo.URL + "\n")},
		"charts/app/Chart.lock": {Data: []byte("dependencies:\n  - name: cache\n    version: 1.2.0\n    repository: " + repo.URL +
			"\ndigest: sha256:0000\ngenerated: \"2026-11-01T00:00:00Z\"\n")},
		"charts/app/templates/own.yaml": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: own\n")},
	}
	creds := func(u string) (Credentials, bool) {
		return Credentials{Username: "chart-user", Password: "chart-pw"}, u == repo.URL
	}
	names := func(ch *helm.Chart) []string {
		t.Helper()
		objs, err := (helm.Engine{}).Render(t.Context(), helm.Release{Name: "app", Namespace: "shop", Chart: ch})
		if err != nil {
			t.Fatalf("render: %v", err)
		}
		var out []string
		for _, o := range objs {
			out = append(out, o.Name)
		}
		slices.Sort(out)
		return out
	}

	host := strings.TrimPrefix(repo.URL, "http://")
	host, _, _ = strings.Cut(host, "/")
	if _, err := NewLoader(WithCredentials(creds)).LoadDir(t.Context(), fsys, "charts/app"); !errors.Is(err, ErrDependencyRefused) ||
		!strings.Contains(err.Error(), "chart app takes the dependency cache from "+repo.URL) {
		t.Fatalf("without its host allowed: %v, want ErrDependencyRefused naming the dependency and its repository", err)
	}
	if n := repo.Requests("index.yaml"); n != 0 {
		t.Fatalf("without its host allowed, the repository's index was asked for %d times", n)
	}

	l := NewLoader(WithCredentials(creds), WithDependencyHosts([]string{"example.com", host}))
	first, err := l.LoadDir(t.Context(), fsys, "charts/app")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(first); !slices.Equal(got, []string{"cache-1-2-0", "own"}) {
		t.Errorf("rendered %q, want own and the dependency at 1.2.0, as Chart.lock pins", got)
	}
	again, err := l.LoadDir(t.Context(), fsys, "charts/app")
	if err != nil || again.Digest != first.Digest {
		t.Fatalf("second load: %v, digest %s, want %s", err, again.Digest, first.Digest)
	}
	if n := repo.Requests(helmtest.ArchiveName("cache", "1.2.0")); n != 1 {
		t.Errorf("the dependency's archive was asked for %d times, want once for the run", n)
	}
	if plain, err := LoadDir(fsys, "charts/app"); err != nil || plain.Digest == first.Digest {
		t.Errorf("LoadDir without the Loader: %v; want the chart, with a digest of its own", err)
	} else if _, err := (helm.Engine{}).Render(t.Context(), helm.Release{Name: "app", Namespace: "shop", Chart: plain}); err == nil ||
		!strings.Contains(err.Error(), "declares dependency cache, which is not in its charts/ directory") {
		t.Errorf("rendering without the dependency: %v, want it refused", err)
	}
	if _, err := NewLoader(WithDependencyHosts([]string{host})).LoadDir(t.Context(), fsys, "charts/app"); err == nil || errors.Is(err, ErrDependencyRefused) || strings.Contains(err.Error(), "chart-pw") {
		t.Errorf("without credentials: %v, want the repository's refusal, no password", err)
	}
}
