package render

import (
	"io/fs"

	"github.com/recommend-job/recommend-job/internal/helm"
	"github.com/recommend-job/recommend-job/internal/helmsource"
	"github.com/recommend-job/recommend-job/internal/repoindex"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Sources reads what puts each Helm release together: the HelmRelease or
// Application that installs it, its chart (from the repository, a chart
// repository or a registry) and its values layers, through the run's edits.
type Sources struct {
	idx   *repoindex.Index
	fsys  fs.FS
	limit int64 // files above it are not read; <= 0: no limit
	// charts fetches remote charts; repoURL is the URL of this repository.
	charts      ChartFetcher
	repoURL     string
	localCharts map[string]*helm.Chart
	// fetched are the remote charts fetched, or failed to; wanted, while
	// the releases are surveyed, the charts they need.
	fetched map[helm.ChartRef]helmsource.FetchedChart
	wanted  map[helm.ChartRef]bool
	// releaseNames are the HelmReleases by the release they install.
	releaseNames map[string][]helmsource.NamedRelease
	edits        Edits
}

// Edits are the repository's files as the run has edited them, and the
// kustomizations that read and build them.
type Edits interface {
	// doc returns document i of file, with the run's edits.
	doc(file string, i int) (*yaml.Node, error)
	// fileEdits returns a file's bytes as edited and as they were, when
	// the run has opened it.
	fileEdits(name string) (data, orig []byte, ok bool)
	// readers returns the kustomizations that read file.
	readers(file string) []*repoindex.Kustomization
	// buildEnv builds the kustomization in dir, with the run's edits when
	// edited.
	buildEnv(dir string, edited bool) (map[string]map[string]any, error)
}
