//go:build integration

package chartfetch

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/recommend-job/recommend-job/internal/render/helm/helmtest"
)

// versionedRegistry holds podinfo in several versions, a prerelease
// newest, each with a template that names its version, pushed as helm
// pushes charts. It returns the archives by version.
func versionedRegistry(t *testing.T, opts ...helmtest.RepoOption) (*helmtest.Registry, map[string][]byte) {
	t.Helper()
	r := helmtest.NewRegistry(t, opts...)
	archives := map[string][]byte{}
	for _, v := range []string{"0.9.0", "1.0.0", "1.2.0", "1.2.3", "1.5.0", "2.0.0", "2.1.0-rc.1", "2.0.1+build.7"} {
		archives[v] = helmtest.Package(t, "podinfo", v, map[string]string{
			"templates/cm.yaml": "kind: ConfigMap\nversion: " + v + "\n",
		})
		r.PushArchive(t, archives[v])
	}
	return r, archives
}

// TestFetchOCIVersions pulls from a real OCI registry with helm's
// registry client and checks the version each constraint resolves to by
// the chart's content.
func TestFetchOCIVersions(t *testing.T) {
	r, archives := versionedRegistry(t)
	l := NewLoader(WithPlainHTTP())
	tests := []struct{ version, want string }{
		{"1.2.3", "1.2.3"},
		{"^1.0.0", "1.5.0"},
		{"~1.2", "1.2.3"},
		{">=1.0 <2.0", "1.5.0"},
		{"", "2.0.1+build.7"},
		{"2.1.0-rc.1", "2.1.0-rc.1"},
		{"2.0.1+build.7", "2.0.1+build.7"},
	}
	for _, tt := range tests {
		t.Run(cmp.Or(tt.version, "latest"), func(t *testing.T) {
			c, err := l.Fetch(t.Context(), ChartRef{RepoURL: r.URL, Chart: "podinfo", Version: tt.version})
			if err != nil {
				t.Fatal(err)
			}
			if c.Name != "podinfo" || c.Version != tt.want {
				t.Errorf("Fetch() = %s %s, want podinfo %s", c.Name, c.Version, tt.want)
			}
			if want := r.URL + "/podinfo:" + tt.want; c.Source != want {
				t.Errorf("Source = %q, want %q", c.Source, want)
			}
			if want := sha256Hex(archives[tt.want]); c.Digest != want {
				t.Errorf("Digest = %s, want the archive's sha256 %s", c.Digest, want)
			}
			if got := string(c.Loaded().Templates[0].Data); !strings.Contains(got, "version: "+tt.want) {
				t.Errorf("template = %q, want the one of %s", got, tt.want)
			}
		})
	}
}

// TestFetchOCINotFound proves that a chart or version the registry does
// not hold wraps ErrChartNotFound and says what was asked.
func TestFetchOCINotFound(t *testing.T) {
	r, _ := versionedRegistry(t)
	tests := []struct {
		name string
		ref  ChartRef
		want string
	}{
		{"missing chart, exact version", ChartRef{RepoURL: r.URL, Chart: "nginx", Version: "1.0.0"}, "fetch chart " + r.URL + " nginx 1.0.0: pull "},
		{"missing chart, constraint", ChartRef{RepoURL: r.URL, Chart: "nginx", Version: "^1"}, "fetch chart " + r.URL + " nginx ^1: list the tags of "},
		{"missing exact version", ChartRef{RepoURL: r.URL, Chart: "podinfo", Version: "1.2.4"}, "fetch chart " + r.URL + " podinfo 1.2.4: pull "},
		{"no version matches", ChartRef{RepoURL: r.URL, Chart: "podinfo", Version: "^3.0.0"},
			"fetch chart " + r.URL + " podinfo ^3.0.0: chart not found: no tag of " + strings.TrimPrefix(r.URL, "oci://") + `/podinfo matches "^3.0.0"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewLoader(WithPlainHTTP()).Fetch(t.Context(), tt.ref)
			if !errors.Is(err, ErrChartNotFound) {
				t.Fatalf("Fetch() = %v, want ErrChartNotFound", err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Fetch() = %q\nwant it to start %q", err, tt.want)
			}
		})
	}
}

// TestFetchOCIBasicAuth pulls from a registry behind basic auth, with
// credentials given, missing and wrong, and checks that no error shows
// them.
func TestFetchOCIBasicAuth(t *testing.T) {
	const user, password = "reader", "pw-7f3a9c1e"
	r := helmtest.NewRegistry(t, helmtest.WithBasicAuth(user, password))
	r.Push(t, "podinfo", "1.0.0", map[string]string{"templates/cm.yaml": "kind: ConfigMap\n"})
	creds := func(user, password string) LoaderOption {
		return WithCredentials(func(repoURL string) (Credentials, bool) {
			if repoURL != r.URL {
				t.Errorf("credentials asked for %q, want %q", repoURL, r.URL)
			}
			return Credentials{Username: user, Password: password}, true
		})
	}
	tests := []struct {
		name    string
		opts    []LoaderOption
		version string
		ok      bool
	}{
		{"credentials given", []LoaderOption{creds(user, password)}, "1.0.0", true},
		{"credentials given, constraint", []LoaderOption{creds(user, password)}, "^1", true},
		{"no credentials", nil, "1.0.0", false},
		{"wrong password", []LoaderOption{creds(user, "pw-wrong-1b2c")}, "1.0.0", false},
		{"wrong password, constraint", []LoaderOption{creds(user, "pw-wrong-1b2c")}, "^1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := append([]LoaderOption{WithPlainHTTP()}, tt.opts...)
			c, err := NewLoader(opts...).Fetch(t.Context(), ChartRef{RepoURL: r.URL, Chart: "podinfo", Version: tt.version})
			if tt.ok {
				if err != nil {
					t.Fatal(err)
				}
				if c.Version != "1.0.0" {
					t.Errorf("Fetch() = %s, want 1.0.0", c.Version)
				}
				return
			}
			if err == nil {
				t.Fatal("Fetch() succeeded, want access refused")
			}
			if errors.Is(err, ErrChartNotFound) || !strings.Contains(err.Error(), "access refused: the registry's credentials are missing or wrong") {
				t.Errorf("Fetch() = %v, want access refused", err)
			}
			for _, secret := range []string{password, "pw-wrong-1b2c"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error shows %q: %v", secret, err)
				}
			}
		})
	}
}

// TestFetchOCICaches proves that a Loader lists a chart's tags and pulls
// a chart version once for a run, for repeated and concurrent asks.
func TestFetchOCICaches(t *testing.T) {
	r, _ := versionedRegistry(t)
	l := NewLoader(WithPlainHTTP())
	ref := ChartRef{RepoURL: r.URL, Chart: "podinfo", Version: "^1.0.0"}
	first, err := l.Fetch(t.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	const tags, manifest = "charts/podinfo/tags/list", "charts/podinfo/manifests/1.5.0"
	once := [2]int{r.Requests(tags), r.Requests(manifest)}
	if once[0] == 0 || once[1] == 0 {
		t.Fatalf("requests for the tags and the manifest = %v, want some", once)
	}

	asks := []ChartRef{ref, {RepoURL: r.URL + "/", Chart: "podinfo", Version: "1.5.0"}, {RepoURL: r.URL, Chart: "podinfo", Version: ">=1.4 <2"}}
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			c, err := l.Fetch(t.Context(), asks[i%len(asks)])
			if err != nil {
				t.Error(err)
				return
			}
			if c != first {
				t.Errorf("Fetch(%v) gave another chart than the first fetch", asks[i%len(asks)])
			}
		})
	}
	wg.Wait()
	if got := [2]int{r.Requests(tags), r.Requests(manifest)}; got != once {
		t.Errorf("requests for the tags and the manifest = %v after more fetches, want %v as after the first", got, once)
	}
	if _, err := NewLoader(WithPlainHTTP()).Fetch(t.Context(), ref); err != nil {
		t.Fatal(err)
	}
	if got := [2]int{r.Requests(tags), r.Requests(manifest)}; got != [2]int{2 * once[0], 2 * once[1]} {
		t.Errorf("requests for the tags and the manifest = %v after a new run, want %v", got, [2]int{2 * once[0], 2 * once[1]})
	}
}

// TestFetchOCIPlainHTTP proves that plain HTTP is used only when allowed
// and only for loopback: without WithPlainHTTP the loader speaks HTTPS to
// the registry, which fails.
func TestFetchOCIPlainHTTP(t *testing.T) {
	r, _ := versionedRegistry(t)
	_, err := NewLoader().Fetch(t.Context(), ChartRef{RepoURL: r.URL, Chart: "podinfo", Version: "1.0.0"})
	if err == nil || !strings.Contains(err.Error(), "https://") {
		t.Errorf("Fetch() without WithPlainHTTP = %v, want a failed HTTPS request", err)
	}
	if n := r.Requests("charts/podinfo/manifests/1.0.0"); n != 0 {
		t.Errorf("the registry answered %d requests, want none over plain HTTP", n)
	}
}

// TestFetchOCIContextCancelled cancels the context while the registry
// holds back its answer: helm's registry client has no context of its
// own, so this proves the loader's reaches its requests.
func TestFetchOCIContextCancelled(t *testing.T) {
	for _, ask := range []struct{ version, path string }{{"^1", "/tags/list"}, {"1.0.0", "/manifests/1.0.0"}} {
		t.Run(ask.version, func(t *testing.T) {
			var cancel atomic.Pointer[context.CancelFunc]
			hook := func(req *http.Request) {
				if c := cancel.Load(); c != nil && strings.HasSuffix(req.URL.Path, ask.path) {
					(*c)()
					<-req.Context().Done() // the client hung up
				}
			}
			r := helmtest.NewRegistry(t, helmtest.WithRequestHook(hook))
			r.Push(t, "podinfo", "1.0.0", map[string]string{"templates/cm.yaml": "kind: ConfigMap\n"})
			l := NewLoader(WithPlainHTTP())
			ref := ChartRef{RepoURL: r.URL, Chart: "podinfo", Version: ask.version}

			ctx, c := context.WithCancel(t.Context())
			cancel.Store(&c)
			if _, err := l.Fetch(ctx, ref); !errors.Is(err, context.Canceled) {
				t.Fatalf("Fetch() = %v, want context.Canceled", err)
			}
			cancel.Store(nil)
			if _, err := l.Fetch(t.Context(), ref); err != nil {
				t.Fatalf("Fetch() after a cancelled one: %v", err)
			}
		})
	}
}

// TestFetchOCITooLarge proves that a chart layer over
// MaxChartArchiveBytes is refused.
func TestFetchOCITooLarge(t *testing.T) {
	r := helmtest.NewRegistry(t)
	r.PushArchive(t, bigArchive(t))
	_, err := NewLoader(WithPlainHTTP()).Fetch(t.Context(), ChartRef{RepoURL: r.URL, Chart: "big", Version: "1.0.0"})
	if !errors.Is(err, ErrTooLarge) {
		t.Errorf("Fetch() = %v, want ErrTooLarge", err)
	}
}

// TestFetchOCIVPrefixedTags pulls charts published with a v before their
// version, as cert-manager publishes its charts (tags v1.16.2, …), from
// a registry that also holds tags without one: each version asked finds
// the tag Flux's OCIRepository would, and the chart is pulled by its tag
// as published.
func TestFetchOCIVPrefixedTags(t *testing.T) {
	r := helmtest.NewRegistry(t)
	archives := map[string][]byte{}
	for _, v := range []string{"v1.18.0", "1.18.0", "1.19.0", "v1.20.0", "v1.21.1", "v1.22.0-alpha.1"} {
		archives[v] = helmtest.Package(t, "cert-manager", v, map[string]string{
			"templates/cm.yaml": "kind: ConfigMap\nversion: " + v + "\n",
		})
		r.PushArchive(t, archives[v])
	}
	tests := []struct{ version, want string }{
		{"1.x", "v1.21.1"},
		{"v1.21.1", "v1.21.1"},
		// An exact version finds its tag without the v.
		{"1.21.1", "v1.21.1"},
		{">=1.0.0", "v1.21.1"},
		{"", "v1.21.1"},
		{"~1.20", "v1.20.0"},
		{"1.22.0-alpha.1", "v1.22.0-alpha.1"},
		{">=1.22.0-0", "v1.22.0-alpha.1"},
		{"<1.20", "1.19.0"},
		{"1.19.0", "1.19.0"},
		// Of two tags of one version, the one helm push would write.
		{"~1.18", "1.18.0"},
		{"v1.18.0", "v1.18.0"},
	}
	l := NewLoader(WithPlainHTTP())
	for _, tt := range tests {
		t.Run(cmp.Or(tt.version, "latest"), func(t *testing.T) {
			c, err := l.Fetch(t.Context(), ChartRef{RepoURL: r.URL, Chart: "cert-manager", Version: tt.version})
			if err != nil {
				t.Fatal(err)
			}
			if c.Name != "cert-manager" || c.Version != tt.want {
				t.Errorf("Fetch() = %s %s, want cert-manager %s", c.Name, c.Version, tt.want)
			}
			if want := r.URL + "/cert-manager:" + tt.want; c.Source != want {
				t.Errorf("Source = %q, want %q", c.Source, want)
			}
			if want := sha256Hex(archives[tt.want]); c.Digest != want {
				t.Errorf("Digest = %s, want the archive's sha256 %s", c.Digest, want)
			}
			if n := r.Requests("charts/cert-manager/manifests/" + tt.want); n == 0 {
				t.Errorf("the registry served no manifest tagged %s", tt.want)
			}
		})
	}

	for _, version := range []string{"2.x", "1.21.2", "v1.21.2"} {
		_, err := l.Fetch(t.Context(), ChartRef{RepoURL: r.URL, Chart: "cert-manager", Version: version})
		if !errors.Is(err, ErrChartNotFound) {
			t.Errorf("Fetch(%q) = %v, want ErrChartNotFound", version, err)
		}
	}
}
