package chartfetch

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/common"
	repo "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helm/helmtest"
)

// chartDir is a chart directory with a subchart directory, a packaged
// subchart and a .helmignore that drops a file and a directory.
func chartDir(t *testing.T) fstest.MapFS {
	t.Helper()
	return fstest.MapFS{
		"apps/web/Chart.yaml":                    {Data: []byte("apiVersion: v2\nname: web\nversion: 1.4.0\n")},
		"apps/web/values.yaml":                   {Data: []byte("replicas: 2\n")},
		"apps/web/.helmignore":                   {Data: []byte("# editor files\n*.swp\nnotes/\n")},
		"apps/web/templates/deploy.yaml":         {Data: []byte("kind: Deployment\n")},
		"apps/web/templates/.scratch.yaml":       {Data: []byte("kind: Secret\n")},
		"apps/web/templates/deploy.yaml.swp":     {Data: []byte("swap")},
		"apps/web/notes/todo.md":                 {Data: []byte("later")},
		"apps/web/charts/cache/Chart.yaml":       {Data: []byte("apiVersion: v2\nname: cache\nversion: 0.3.0\n")},
		"apps/web/charts/cache/templates/s.yaml": {Data: []byte("kind: StatefulSet\n")},
		"apps/web/charts/db-2.0.0.tgz": {Data: helmtest.Package(t, "db", "2.0.0", map[string]string{
			"templates/db.yaml": "kind: StatefulSet\n",
		})},
		"apps/other/Chart.yaml": {Data: []byte("apiVersion: v2\nname: other\nversion: 9.9.9\n")},
	}
}

func TestLoadDir(t *testing.T) {
	fsys := chartDir(t)
	c, err := LoadDir(fsys, "apps/web")
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "web" || c.Version != "1.4.0" || c.Source != "apps/web" {
		t.Errorf("LoadDir() = %q %q from %q, want web 1.4.0 from apps/web", c.Name, c.Version, c.Source)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(c.Digest) {
		t.Errorf("Digest = %q, want hex sha256", c.Digest)
	}

	var templates []string
	for _, f := range c.Loaded().Templates {
		templates = append(templates, f.Name)
	}
	if diff := cmp.Diff([]string{"templates/deploy.yaml"}, templates); diff != "" {
		t.Errorf("templates (-want +got), ignored and dot files must be left out:\n%s", diff)
	}
	for _, f := range c.Loaded().Files {
		if strings.HasPrefix(f.Name, "notes/") {
			t.Errorf("file %s of an ignored directory was loaded", f.Name)
		}
	}
	var deps []string
	for _, d := range c.Loaded().Dependencies() {
		deps = append(deps, d.Name()+" "+d.Metadata.Version+" "+strings.Join(templateNames(d.Templates), ","))
	}
	slices.Sort(deps)
	want := []string{"cache 0.3.0 templates/s.yaml", "db 2.0.0 templates/db.yaml"}
	if diff := cmp.Diff(want, deps); diff != "" {
		t.Errorf("subcharts (-want +got):\n%s", diff)
	}
	if got := c.Loaded().Values["replicas"]; got != float64(2) {
		t.Errorf("values replicas = %v, want 2", got)
	}
}

func templateNames(files []*common.File) []string {
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	return names
}

// TestLoadDirTop loads a chart that is the whole of fsys.
func TestLoadDirTop(t *testing.T) {
	fsys := fstest.MapFS{
		"Chart.yaml":             {Data: []byte("apiVersion: v2\nname: top\nversion: 0.1.0\n")},
		".helmignore":            {Data: []byte("ci/\n")},
		"ci/values.yaml":         {Data: []byte("a: 1\n")},
		"templates/svc.yaml":     {Data: []byte("kind: Service\n")},
		"templates/.gitkeep":     {Data: nil},
		"charts/sub/values.yaml": {Data: []byte("b: 2\n")},
		"charts/sub/Chart.yaml":  {Data: []byte("apiVersion: v2\nname: sub\nversion: 0.2.0\n")},
	}
	c, err := LoadDir(fsys, ".")
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "top" || c.Source != "." {
		t.Errorf("LoadDir() = %s from %q, want top from .", c.Name, c.Source)
	}
	if diff := cmp.Diff([]string{"templates/svc.yaml"}, sortedTemplateNames(c)); diff != "" {
		t.Errorf("templates (-want +got):\n%s", diff)
	}
	for _, f := range c.Loaded().Files {
		if strings.HasPrefix(f.Name, "ci/") {
			t.Errorf("file %s of an ignored directory was loaded", f.Name)
		}
	}
	if deps := c.Loaded().Dependencies(); len(deps) != 1 || deps[0].Values["b"] != float64(2) {
		t.Errorf("subcharts = %v, want sub with its values", deps)
	}
}

// TestLoadDirDigestIsNewChart proves that a chart directory and the same
// files given to helm.NewChart have one digest: renders are cached by it.
func TestLoadDirDigestIsNewChart(t *testing.T) {
	files := helmtest.Bytes(helmtest.Resources())
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys["charts/resources/"+name] = &fstest.MapFile{Data: data}
	}
	dir, err := LoadDir(fsys, "charts/resources")
	if err != nil {
		t.Fatal(err)
	}
	fromFiles, err := helm.NewChart("resources", files)
	if err != nil {
		t.Fatal(err)
	}
	if dir.Digest != fromFiles.Digest {
		t.Errorf("LoadDir digest %s, NewChart digest %s of the same files: want one", dir.Digest, fromFiles.Digest)
	}
}

// TestLoadDirDigest proves that the digest follows what the chart is
// made of, and only that.
func TestLoadDirDigest(t *testing.T) {
	base, err := LoadDir(chartDir(t), "apps/web")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		change func(fstest.MapFS)
		same   bool
	}{
		{"unchanged", func(fstest.MapFS) {}, true},
		{"ignored file edited", func(m fstest.MapFS) { m["apps/web/notes/todo.md"] = &fstest.MapFile{Data: []byte("now")} }, true},
		{"file of another chart edited", func(m fstest.MapFS) { m["apps/other/values.yaml"] = &fstest.MapFile{Data: []byte("a: 1\n")} }, true},
		{"template edited", func(m fstest.MapFS) {
			m["apps/web/templates/deploy.yaml"] = &fstest.MapFile{Data: []byte("kind: DaemonSet\n")}
		}, false},
		{"subchart edited", func(m fstest.MapFS) {
			m["apps/web/charts/cache/values.yaml"] = &fstest.MapFile{Data: []byte("size: 1\n")}
		}, false},
		{"file renamed", func(m fstest.MapFS) {
			m["apps/web/templates/deploy2.yaml"] = m["apps/web/templates/deploy.yaml"]
			delete(m, "apps/web/templates/deploy.yaml")
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := chartDir(t)
			tt.change(fsys)
			c, err := LoadDir(fsys, "apps/web")
			if err != nil {
				t.Fatal(err)
			}
			if (c.Digest == base.Digest) != tt.same {
				t.Errorf("digest same = %t, want %t", c.Digest == base.Digest, tt.same)
			}
		})
	}
}

func TestLoadDirErrors(t *testing.T) {
	big := make([]byte, MaxChartDirBytes/4+1)
	tests := []struct {
		name   string
		fsys   fstest.MapFS
		dir    string
		target error
		text   string
	}{
		{
			name: "one file over the budget",
			fsys: fstest.MapFS{
				"c/Chart.yaml":    {Data: []byte("apiVersion: v2\nname: c\nversion: 1.0.0\n")},
				"c/files/big.bin": {Data: make([]byte, MaxChartDirBytes+1)},
			},
			dir: "c", target: ErrTooLarge, text: "load chart directory c: read files/big.bin: too large: the chart's files hold more than 20 MiB",
		},
		{
			name: "files over the budget together",
			fsys: fstest.MapFS{
				"c/Chart.yaml":  {Data: []byte("apiVersion: v2\nname: c\nversion: 1.0.0\n")},
				"c/files/1.bin": {Data: big}, "c/files/2.bin": {Data: big},
				"c/files/3.bin": {Data: big}, "c/files/4.bin": {Data: big},
			},
			dir: "c", target: ErrTooLarge,
		},
		{
			name: "over the budget but ignored",
			fsys: fstest.MapFS{
				"c/Chart.yaml":    {Data: []byte("apiVersion: v2\nname: c\nversion: 1.0.0\n")},
				"c/.helmignore":   {Data: []byte("*.bin\n")},
				"c/files/big.bin": {Data: make([]byte, MaxChartDirBytes+1)},
			},
			dir: "c",
		},
		{name: "missing directory", fsys: fstest.MapFS{}, dir: "c", target: fs.ErrNotExist},
		{name: "not a relative path", fsys: fstest.MapFS{}, dir: "../c", text: `load chart directory "../c": not a slash-separated relative path`},
		{
			name: "no Chart.yaml", fsys: fstest.MapFS{"c/values.yaml": {Data: []byte("a: 1\n")}}, dir: "c",
			text: "load chart directory c: Chart.yaml file is missing",
		},
		{
			name: "bad .helmignore",
			fsys: fstest.MapFS{
				"c/Chart.yaml":  {Data: []byte("apiVersion: v2\nname: c\nversion: 1.0.0\n")},
				"c/.helmignore": {Data: []byte("templates/**\n")},
			},
			dir: "c", text: "load chart directory c: parse .helmignore: double-star (**) syntax is not supported",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadDir(tt.fsys, tt.dir)
			if tt.target == nil && tt.text == "" {
				if err != nil {
					t.Fatalf("LoadDir() = %v, want no error", err)
				}
				return
			}
			if err == nil {
				t.Fatal("LoadDir() succeeded, want an error")
			}
			if tt.target != nil && !errors.Is(err, tt.target) {
				t.Errorf("LoadDir() = %v, want %v", err, tt.target)
			}
			if tt.text != "" && err.Error() != tt.text {
				t.Errorf("LoadDir() = %q, want %q", err, tt.text)
			}
		})
	}
}

// TestLoadDirRoot loads through an os.Root, as the job does: a link to a
// file of the repository is read, a link out of it is refused.
func TestLoadDirRoot(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 1.0.0\n")
	write("shared/labels.tpl", `{{- define "labels" }}app: web{{ end }}`)
	write("web/templates/cm.yaml", "kind: ConfigMap\n")
	if err := os.Symlink("../../shared/labels.tpl", filepath.Join(dir, "web", "templates", "_labels.tpl")); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret.yaml")
	if err := os.WriteFile(secret, []byte("password: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	c, err := LoadDir(root.FS(), "web")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"templates/_labels.tpl", "templates/cm.yaml"}, sortedTemplateNames(c)); diff != "" {
		t.Errorf("templates (-want +got):\n%s", diff)
	}

	if err := os.Symlink(secret, filepath.Join(dir, "web", "values.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadDir(root.FS(), "web"); err == nil || !strings.Contains(err.Error(), "values.yaml") {
		t.Errorf("LoadDir() with a link out of the root = %v, want an error about values.yaml", err)
	}
}

func sortedTemplateNames(c *helm.Chart) []string {
	names := templateNames(c.Loaded().Templates)
	slices.Sort(names)
	return names
}

func TestParseIndex(t *testing.T) {
	tests := []struct {
		name   string
		data   string
		want   map[string][]string // chart → versions, newest first
		target error
	}{
		{
			name: "yaml, unsorted, with an invalid entry and a field helm does not know",
			data: `apiVersion: v1
generated: "2024-01-01T00:00:00Z"
serverInfo: {contextPath: /x}
extra: kept out
entries:
  web:
  - {name: web, version: 1.0.0, urls: [web-1.0.0.tgz]}
  - {name: web, version: 1.10.0, urls: [web-1.10.0.tgz]}
  - {name: web, version: 1.2.0, urls: [web-1.2.0.tgz]}
  - {name: web, urls: [broken.tgz]}
  -
`,
			want: map[string][]string{"web": {"1.10.0", "1.2.0", "1.0.0"}},
		},
		{
			name: "json",
			data: `{"apiVersion":"v1","entries":{"db":[{"name":"db","version":"0.1.0","urls":["db.tgz"]},{"name":"db","version":"0.2.0","urls":["db2.tgz"]}]}}`,
			want: map[string][]string{"db": {"0.2.0", "0.1.0"}},
		},
		{name: "empty", data: " \n", target: repo.ErrEmptyIndexYaml},
		{name: "no apiVersion", data: "entries: {}\n", target: repo.ErrNoAPIVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx, err := parseIndex([]byte(tt.data))
			if tt.target != nil {
				if !errors.Is(err, tt.target) {
					t.Fatalf("parseIndex() = %v, want %v", err, tt.target)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]string{}
			for name, versions := range idx.Entries {
				for _, v := range versions {
					got[name] = append(got[name], v.Version)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRedactedRaw(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://charts.example.com/stable", "https://charts.example.com/stable"},
		{"https://user:s3cret@charts.example.com/stable?x=1", "https://charts.example.com/stable?x=1"},
		{"https://user:p@ss@charts.example.com", "https://charts.example.com"},
		{"http://tok%zz@host:80/a@b", "http://host:80/a@b"},
		{"oci://ghcr.io/org/charts", "oci://ghcr.io/org/charts"},
		{"not a url", "not a url"},
	}
	for _, tt := range tests {
		if got := redactedRaw(tt.in); got != tt.want {
			t.Errorf("redactedRaw(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestMatchTag picks among the tags of an OCI repository, listed as a
// registry lists them (in no useful order) with the _ of a build given
// back as +.
func TestMatchTag(t *testing.T) {
	tags := []string{"latest", "1.2", "sha-3f2a1c", "v1.9.0", "1.10.0", "v1.10.0", "v2.0.0-rc.1", "1.8.0+build.7", "v0.5.0", "vv1.11.0"}
	tests := []struct {
		version, want string
		ok            bool
	}{
		{"", "1.10.0", true},
		{"1.x", "1.10.0", true},
		{"~1.9", "v1.9.0", true},
		{"1.9.0", "v1.9.0", true},
		{"v1.9.0", "v1.9.0", true},
		{"v1.10.0", "v1.10.0", true},
		{"<1.9", "1.8.0+build.7", true},
		{"1.8.0+build.7", "1.8.0+build.7", true},
		{">=2.0.0-0", "v2.0.0-rc.1", true},
		{"2.0.0-rc.1", "v2.0.0-rc.1", true},
		{"^0", "v0.5.0", true},
		// Tags that are no strict version count for nothing but an exact ask.
		{"latest", "latest", true},
		{"1.2", "1.2", true},
		{"1.11.0", "", false},
		{"~1.2", "", false},
		{"^3", "", false},
	}
	for _, tt := range tests {
		got, ok := matchTag(tags, tt.version)
		if got != tt.want || ok != tt.ok {
			t.Errorf("matchTag(%q) = %q, %t, want %q, %t", tt.version, got, ok, tt.want, tt.ok)
		}
	}
	if got, ok := matchTag(nil, ""); ok {
		t.Errorf("matchTag of no tags = %q, want none", got)
	}
}

func TestIsLoopback(t *testing.T) {
	tests := map[string]bool{
		"127.0.0.1": true, "127.1.2.3": true, "::1": true, "localhost": true,
		"10.0.0.1": false, "ghcr.io": false, "localhost.example.com": false, "": false,
	}
	for host, want := range tests {
		if got := isLoopback(host); got != want {
			t.Errorf("isLoopback(%q) = %t, want %t", host, got, want)
		}
	}
}

func TestChartRefString(t *testing.T) {
	tests := []struct {
		ref  ChartRef
		want string
	}{
		{ChartRef{RepoURL: "https://u:pw@charts.example.com/", Chart: "podinfo", Version: "^6"}, "https://charts.example.com/ podinfo ^6"},
		{ChartRef{RepoURL: "oci://ghcr.io/org", Chart: "podinfo"}, "oci://ghcr.io/org podinfo (latest)"},
	}
	for _, tt := range tests {
		if got := tt.ref.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestFetchRefusesBadRefs(t *testing.T) {
	tests := []struct {
		name string
		ref  ChartRef
		want string
	}{
		{"no chart", ChartRef{RepoURL: "https://charts.example.com"}, "fetch chart https://charts.example.com  (latest): no chart named"},
		{"scheme", ChartRef{RepoURL: "ftp://charts.example.com", Chart: "web"}, `fetch chart ftp://charts.example.com web (latest): the repository URL's scheme "ftp" is none of http, https and oci`},
		{"unparsable URL with a password", ChartRef{RepoURL: "https://u:se%zzcret@charts.example.com", Chart: "web"}, "fetch chart https://charts.example.com web (latest): the repository URL does not parse"},
		{"oci URL with credentials", ChartRef{RepoURL: "oci://u:secret@ghcr.io/org", Chart: "web", Version: "1.0.0"}, "fetch chart oci://ghcr.io/org web 1.0.0: an oci:// URL cannot carry credentials: give them with the loader's credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewLoader().Fetch(t.Context(), tt.ref)
			if err == nil || err.Error() != tt.want {
				t.Errorf("Fetch() = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestLoadDirFileDependencies loads the file:// dependencies a chart's
// charts/ does not hold from the directories they name, and refuses a
// cycle and a path out of the repository.
func TestLoadDirFileDependencies(t *testing.T) {
	chart := func(name, deps string) string {
		return "apiVersion: v2\nname: " + name + "\nversion: 1.0.0\n" + deps
	}
	fsys := fstest.MapFS{
		"charts/shop/Chart.yaml":          {Data: []byte(chart("shop", ""))},
		"charts/shop/templates/web.yaml":  {Data: []byte("kind: ConfigMap\n")},
		"charts/store/Chart.yaml":         {Data: []byte(chart("store", "dependencies:\n  - name: shop\n    version: 1.0.0\n    repository: file://../shop\n"))},
		"charts/loop/Chart.yaml":          {Data: []byte(chart("loop", "dependencies:\n  - name: loop\n    version: 1.0.0\n    repository: file://.\n"))},
		"charts/out/Chart.yaml":           {Data: []byte(chart("out", "dependencies:\n  - name: x\n    version: 1.0.0\n    repository: file://../../../x\n"))},
		"charts/store/templates/app.yaml": {Data: []byte("kind: ConfigMap\n")},
	}
	ch, err := LoadDir(fsys, "charts/store")
	if err != nil {
		t.Fatal(err)
	}
	deps := ch.Loaded().Dependencies()
	if len(deps) != 1 || deps[0].Name() != "shop" || len(deps[0].Templates) != 1 {
		t.Fatalf("dependencies %v, want shop with its template", deps)
	}
	alone, err := LoadDir(fsys, "charts/shop")
	if err != nil {
		t.Fatal(err)
	}
	if ch.Digest == alone.Digest {
		t.Error("the umbrella chart has its dependency's digest")
	}
	for _, dir := range []string{"charts/loop", "charts/out"} {
		if _, err := LoadDir(fsys, dir); err == nil {
			t.Errorf("LoadDir(%s) loaded, want an error", dir)
		}
	}
}
