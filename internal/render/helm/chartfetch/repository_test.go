//go:build integration

package chartfetch

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/recommend-job/recommend-job/internal/render/helm/helmtest"
)

// versionedRepo serves podinfo in several versions, a prerelease newest,
// each with a template that names its version. It returns the archives
// by version.
func versionedRepo(t *testing.T, opts ...helmtest.RepoOption) (*helmtest.Repo, map[string][]byte) {
	t.Helper()
	r := helmtest.NewRepo(t, opts...)
	archives := map[string][]byte{}
	for _, v := range []string{"0.9.0", "1.0.0", "1.2.0", "1.2.3", "1.5.0", "2.0.0", "2.1.0-rc.1"} {
		archives[v] = helmtest.Package(t, "podinfo", v, map[string]string{
			"templates/cm.yaml": "kind: ConfigMap\nversion: " + v + "\n",
		})
		r.AddArchive(t, archives[v])
	}
	return r, archives
}

// TestFetchVersions fetches from a real chart repository, with the
// index naming archives relative to the repository and absolutely, and
// checks the version each constraint resolves to by the chart's content.
func TestFetchVersions(t *testing.T) {
	tests := []struct{ version, want string }{
		{"1.2.3", "1.2.3"},
		{"^1.0.0", "1.5.0"},
		{"~1.2", "1.2.3"},
		{">=1.0 <2.0", "1.5.0"},
		{"", "2.0.0"},
		{"2.1.0-rc.1", "2.1.0-rc.1"},
	}
	for _, layout := range []struct {
		name string
		opts []helmtest.RepoOption
	}{{"relative URLs", nil}, {"absolute URLs", []helmtest.RepoOption{helmtest.WithAbsoluteURLs()}}} {
		t.Run(layout.name, func(t *testing.T) {
			r, archives := versionedRepo(t, layout.opts...)
			l := NewLoader()
			for _, tt := range tests {
				t.Run(cmp.Or(tt.version, "latest"), func(t *testing.T) {
					c, err := l.Fetch(t.Context(), ChartRef{RepoURL: r.URL, Chart: "podinfo", Version: tt.version})
					if err != nil {
						t.Fatal(err)
					}
					if c.Name != "podinfo" || c.Version != tt.want {
						t.Errorf("Fetch() = %s %s, want podinfo %s", c.Name, c.Version, tt.want)
					}
					if want := r.URL + " podinfo " + tt.want; c.Source != want {
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
		})
	}
}

// TestFetchNotFound proves that a chart or version the repository does
// not have wraps ErrChartNotFound and says what was asked.
func TestFetchNotFound(t *testing.T) {
	r, _ := versionedRepo(t)
	tests := []struct {
		name string
		ref  ChartRef
		want string
	}{
		{"missing chart", ChartRef{RepoURL: r.URL, Chart: "nginx", Version: "1.0.0"},
			`fetch chart ` + r.URL + ` nginx 1.0.0: chart not found: the repository's index has no chart "nginx"`},
		{"missing exact version", ChartRef{RepoURL: r.URL, Chart: "podinfo", Version: "1.2.4"},
			`fetch chart ` + r.URL + ` podinfo 1.2.4: chart not found: the repository's index has no version of podinfo matching "1.2.4"`},
		{"no version matches", ChartRef{RepoURL: r.URL, Chart: "podinfo", Version: "^3.0.0"},
			`fetch chart ` + r.URL + ` podinfo ^3.0.0: chart not found: the repository's index has no version of podinfo matching "^3.0.0"`},
		{"no repository there", ChartRef{RepoURL: r.URL + "/nothing", Chart: "podinfo"},
			`fetch chart ` + r.URL + `/nothing podinfo (latest): get ` + r.URL + `/nothing/index.yaml: chart not found: the server answers 404 Not Found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewLoader().Fetch(t.Context(), tt.ref)
			if !errors.Is(err, ErrChartNotFound) {
				t.Fatalf("Fetch() = %v, want ErrChartNotFound", err)
			}
			if err.Error() != tt.want {
				t.Errorf("Fetch() = %q\nwant %q", err, tt.want)
			}
		})
	}

	_, err := NewLoader().Fetch(t.Context(), ChartRef{RepoURL: r.URL, Chart: "podinfo", Version: "one point oh"})
	if err == nil || errors.Is(err, ErrChartNotFound) || !strings.Contains(err.Error(), `version "one point oh" is neither a version nor a semver constraint`) {
		t.Errorf("Fetch() with a malformed version = %v, want it named malformed, not missing", err)
	}
}

// TestFetchBasicAuth fetches from a repository behind basic auth, with
// credentials given, missing, wrong and in the URL, and checks that no
// error shows them.
func TestFetchBasicAuth(t *testing.T) {
	const user, password = "reader", "pw-7f3a9c1e"
	r := helmtest.NewRepo(t, helmtest.WithBasicAuth(user, password))
	r.Add(t, "podinfo", "1.0.0", map[string]string{"templates/cm.yaml": "kind: ConfigMap\n"})
	withUser := func(user, password string) string {
		u, err := url.Parse(r.URL)
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword(user, password)
		return u.String()
	}
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
		repoURL string
		opts    []LoaderOption
		ok      bool
	}{
		{"credentials given", r.URL, []LoaderOption{creds(user, password)}, true},
		{"credentials in the URL", withUser(user, password), nil, true},
		{"no credentials", r.URL, nil, false},
		{"wrong password", r.URL, []LoaderOption{creds(user, "pw-wrong-1b2c")}, false},
		{"wrong password in the URL", withUser(user, "pw-wrong-1b2c"), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewLoader(tt.opts...).Fetch(t.Context(), ChartRef{RepoURL: tt.repoURL, Chart: "podinfo", Version: "1.0.0"})
			if tt.ok {
				if err != nil {
					t.Fatal(err)
				}
				if want := r.URL + " podinfo 1.0.0"; c.Source != want {
					t.Errorf("Source = %q, want %q without credentials", c.Source, want)
				}
				return
			}
			if err == nil {
				t.Fatal("Fetch() succeeded, want access refused")
			}
			want := "fetch chart " + r.URL + " podinfo 1.0.0: get " + r.URL + "/index.yaml: access refused (401 Unauthorized): the repository's credentials are missing or wrong"
			if err.Error() != want {
				t.Errorf("Fetch() = %q\nwant %q", err, want)
			}
			for _, secret := range []string{password, "pw-wrong-1b2c", user} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error shows %q: %v", secret, err)
				}
			}
		})
	}
}

// TestFetchCaches proves that a Loader fetches a repository's index and
// a chart version once for a run: for repeated, concurrent and
// differently worded asks, while a new Loader fetches again.
func TestFetchCaches(t *testing.T) {
	r, _ := versionedRepo(t)
	l := NewLoader()
	ref := ChartRef{RepoURL: r.URL, Chart: "podinfo", Version: "^1.0.0"}
	first, err := l.Fetch(t.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}

	asks := []ChartRef{
		ref,
		{RepoURL: r.URL + "/", Chart: "podinfo", Version: "1.5.0"},
		{RepoURL: r.URL, Chart: "podinfo", Version: ">=1.4 <2"},
	}
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
	if _, err := l.Fetch(t.Context(), ChartRef{RepoURL: r.URL, Chart: "podinfo", Version: "1.0.0"}); err != nil {
		t.Fatal(err)
	}

	counts := func() [3]int {
		return [3]int{r.Requests("index.yaml"), r.Requests("podinfo-1.5.0.tgz"), r.Requests("podinfo-1.0.0.tgz")}
	}
	if got, want := counts(), [3]int{1, 1, 1}; got != want {
		t.Errorf("requests for index.yaml, 1.5.0, 1.0.0 = %v, want %v", got, want)
	}
	if _, err := NewLoader().Fetch(t.Context(), ref); err != nil {
		t.Fatal(err)
	}
	if got, want := counts(), [3]int{2, 2, 1}; got != want {
		t.Errorf("after a new run, requests for index.yaml, 1.5.0, 1.0.0 = %v, want %v", got, want)
	}
}

// TestFetchTooLarge proves that an archive over MaxChartArchiveBytes is
// refused, whether the server says its length or not.
func TestFetchTooLarge(t *testing.T) {
	archive := bigArchive(t)
	for _, tt := range []struct {
		name string
		opts []helmtest.RepoOption
	}{{"with Content-Length", nil}, {"chunked", []helmtest.RepoOption{helmtest.WithChunkedResponses()}}} {
		t.Run(tt.name, func(t *testing.T) {
			r := helmtest.NewRepo(t, tt.opts...)
			r.AddArchive(t, archive)
			r.Add(t, "small", "1.0.0", nil)
			l := NewLoader()
			_, err := l.Fetch(t.Context(), ChartRef{RepoURL: r.URL, Chart: "big", Version: "1.0.0"})
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("Fetch() = %v, want ErrTooLarge", err)
			}
			if want := "get " + r.URL + "/big-1.0.0.tgz: too large"; !strings.Contains(err.Error(), want) {
				t.Errorf("Fetch() = %q, want it to say %q", err, want)
			}
			if _, err := l.Fetch(t.Context(), ChartRef{RepoURL: r.URL, Chart: "small"}); err != nil {
				t.Errorf("a small chart of the same repository: %v", err)
			}
		})
	}
}

// TestFetchDigestMismatch proves that an archive that is not the one
// the index describes is refused.
func TestFetchDigestMismatch(t *testing.T) {
	r := helmtest.NewRepo(t)
	r.Add(t, "podinfo", "1.0.0", map[string]string{"templates/cm.yaml": "kind: ConfigMap\n"})
	other := helmtest.Package(t, "podinfo", "1.0.0", map[string]string{"templates/cm.yaml": "kind: Secret\n"})
	r.Replace(t, "podinfo-1.0.0.tgz", other)
	_, err := NewLoader().Fetch(t.Context(), ChartRef{RepoURL: r.URL, Chart: "podinfo", Version: "1.0.0"})
	sum := sha256.Sum256(other)
	if err == nil || !strings.Contains(err.Error(), "the archive's sha256 is "+hex.EncodeToString(sum[:])+", the index says ") {
		t.Errorf("Fetch() = %v, want a digest mismatch", err)
	}
}

// TestFetchContextCancelled proves that Fetch sends nothing with a
// cancelled context, and does not keep the failure for the run.
func TestFetchContextCancelled(t *testing.T) {
	r, _ := versionedRepo(t)
	l := NewLoader()
	ref := ChartRef{RepoURL: r.URL, Chart: "podinfo", Version: "1.0.0"}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := l.Fetch(ctx, ref); !errors.Is(err, context.Canceled) {
		t.Errorf("Fetch() = %v, want context.Canceled", err)
	}
	if n := r.Requests("index.yaml"); n != 0 {
		t.Errorf("the repository got %d requests for index.yaml, want none", n)
	}
	if _, err := l.Fetch(t.Context(), ref); err != nil {
		t.Errorf("Fetch() after a cancelled one: %v", err)
	}
}

// TestFetchContextCancelledInFlight cancels the context while the
// repository holds back its answer, for the index and for the archive:
// Fetch returns, and the next Fetch of the run does the work again.
func TestFetchContextCancelledInFlight(t *testing.T) {
	for _, file := range []string{"index.yaml", "podinfo-1.0.0.tgz"} {
		t.Run(file, func(t *testing.T) {
			var cancel atomic.Pointer[context.CancelFunc]
			hook := func(req *http.Request) {
				if c := cancel.Load(); c != nil && strings.HasSuffix(req.URL.Path, "/"+file) {
					(*c)()
					<-req.Context().Done() // the client hung up
				}
			}
			r := helmtest.NewRepo(t, helmtest.WithRequestHook(hook))
			r.Add(t, "podinfo", "1.0.0", map[string]string{"templates/cm.yaml": "kind: ConfigMap\n"})
			l := NewLoader()
			ref := ChartRef{RepoURL: r.URL, Chart: "podinfo", Version: "1.0.0"}

			ctx, c := context.WithCancel(t.Context())
			cancel.Store(&c)
			if _, err := l.Fetch(ctx, ref); !errors.Is(err, context.Canceled) {
				t.Fatalf("Fetch() = %v, want context.Canceled", err)
			}
			if n := r.Requests(file); n != 1 {
				t.Fatalf("the repository got %d requests for %s, want 1", n, file)
			}
			cancel.Store(nil)
			if _, err := l.Fetch(t.Context(), ref); err != nil {
				t.Fatalf("Fetch() after a cancelled one: %v", err)
			}
			if n := r.Requests(file); n != 2 {
				t.Errorf("the repository got %d requests for %s, want 2: the cancelled one is not kept", n, file)
			}
		})
	}
}

// bigArchive packages chart big 1.0.0 over MaxChartArchiveBytes: random
// bytes do not compress.
func bigArchive(t *testing.T) []byte {
	t.Helper()
	noise := make([]byte, MaxChartArchiveBytes+1<<20)
	rand.NewChaCha8([32]byte{1}).Read(noise)
	archive := helmtest.Package(t, "big", "1.0.0", map[string]string{"files/noise.bin": string(noise)})
	if len(archive) <= MaxChartArchiveBytes {
		t.Fatalf("the archive holds %d bytes, not over the limit", len(archive))
	}
	return archive
}

// TestFetchVPrefixedVersions fetches from a chart repository whose index
// holds versions with a v before them, as some projects publish their
// charts: they count as their semver version, and an exact version finds
// them with or without the v.
func TestFetchVPrefixedVersions(t *testing.T) {
	r := helmtest.NewRepo(t)
	archives := map[string][]byte{}
	for _, v := range []string{"1.19.0", "v1.20.0", "v1.21.1", "v1.22.0-alpha.1"} {
		archives[v] = helmtest.Package(t, "cert-manager", v, map[string]string{
			"templates/cm.yaml": "kind: ConfigMap\nversion: " + v + "\n",
		})
		r.AddArchive(t, archives[v])
	}
	tests := []struct{ version, want string }{
		{"1.x", "v1.21.1"},
		{"v1.21.1", "v1.21.1"},
		{"1.21.1", "v1.21.1"},
		{">=1.0.0", "v1.21.1"},
		{"", "v1.21.1"},
		{"~1.20", "v1.20.0"},
		{"1.22.0-alpha.1", "v1.22.0-alpha.1"},
		{"<1.20", "1.19.0"},
	}
	l := NewLoader()
	for _, tt := range tests {
		t.Run(cmp.Or(tt.version, "latest"), func(t *testing.T) {
			c, err := l.Fetch(t.Context(), ChartRef{RepoURL: r.URL, Chart: "cert-manager", Version: tt.version})
			if err != nil {
				t.Fatal(err)
			}
			if c.Version != tt.want {
				t.Errorf("Fetch() = %s, want %s", c.Version, tt.want)
			}
			if want := sha256Hex(archives[tt.want]); c.Digest != want {
				t.Errorf("Digest = %s, want the archive's sha256 %s", c.Digest, want)
			}
			if n := r.Requests(helmtest.ArchiveName("cert-manager", tt.want)); n == 0 {
				t.Errorf("the repository served no %s", helmtest.ArchiveName("cert-manager", tt.want))
			}
		})
	}
}
