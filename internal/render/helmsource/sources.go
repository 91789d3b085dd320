package helmsource

import (
	"context"
	"errors"
	"io/fs"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helm/chartfetch"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// Sources reads what puts each Helm release together: the HelmRelease or
// Application that installs it, its chart (from the repository, a chart
// repository or a registry) and its values layers, through the run's edits.
type Sources struct {
	Index *repoindex.Index
	FS    fs.FS
	Limit int64 // files above it are not read; <= 0: no limit
	// Charts fetches remote charts; repoURL is the URL of this repository.
	Charts  ChartFetcher
	RepoURL string
	// ClusterName is this cluster as Argo CD names it, for the
	// ApplicationSets' cluster generator ("": not evaluated).
	ClusterName string
	LocalCharts map[string]*helm.Chart
	// Fetched are the remote charts fetched, or failed to; wanted, while
	// the releases are surveyed, the charts they need.
	Fetched map[chartfetch.ChartRef]FetchedChart
	Wanted  map[chartfetch.ChartRef]bool
	// releaseNames are the HelmReleases by the release they install.
	releaseNames map[string][]NamedRelease
	Edits        Edits
	// appSets are the ApplicationSets expanded, appSetRun what the run's
	// budget of their expansion has left.
	appSets   map[docKey]expandedSet
	appSetRun int64
}

// Edits are the repository's files as the run has edited them, and the
// kustomizations that read and build them.
type Edits interface {
	// Doc returns document i of file, with the run's edits.
	Doc(file string, i int) (*yaml.Node, error)
	// FileEdits returns a file's bytes as edited and as they were, when
	// the run has opened it.
	FileEdits(name string) (data, orig []byte, ok bool)
	// BuildEnv builds the kustomization in dir, with the run's edits when
	// edited.
	BuildEnv(dir string, edited bool) (map[string]map[string]any, error)
}

// ChartFetcher fetches the charts of chart repositories and OCI registries
// (chartfetch.Loader does, once per run).
type ChartFetcher interface {
	Fetch(ctx context.Context, ref chartfetch.ChartRef) (*helm.Chart, error)
	// LoadDir loads a chart directory of the repository with the
	// dependencies it takes from chart repositories.
	LoadDir(ctx context.Context, fsys fs.FS, dir string) (*helm.Chart, error)
}

// ErrNotHelm marks a target that an Argo CD application tracks but whose
// application has no Helm source: the index's own error stands.
var ErrNotHelm = errors.New("not a helm release")
