package render

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/recommend-job/recommend-job/internal/appset"
	"github.com/recommend-job/recommend-job/internal/repoindex"
)

// DeployerObject is an Argo CD or Flux object the repository does not hold as
// written (see repoindex.External).
type DeployerObject = repoindex.External

// WithDeployers gives Apply the live Argo CD Applications and Flux
// Kustomizations: where they say a target is rendered from wins over the
// repository's files and over what its ApplicationSets generate.
func WithDeployers(ds []DeployerObject) Option {
	return func(o *options) { o.deployers = ds }
}

// WithClusterName names this cluster as Argo CD does, for the
// ApplicationSets' cluster generator; without it that generator is not
// evaluated.
func WithClusterName(name string) Option { return func(o *options) { o.cluster = name } }

// addDeployers adds to w, when a target names its deployer, the live
// deployers, the Applications the repository's ApplicationSets generate
// and those its apps of apps' charts render, in that order of precedence. It returns why some ApplicationSets
// generated nothing.
func (o *options) addDeployers(ctx context.Context, fsys fs.FS, w *repoindex.Wants) ([]string, error) {
	if !w.Pointers {
		return nil, nil
	}
	gen, err := appset.Generate(ctx, fsys, appset.Options{RepoURL: o.repoURL, Cluster: appset.Cluster{Name: o.cluster}, Limit: o.maxFileSize})
	if err != nil {
		return nil, fmt.Errorf("generating the ApplicationSets' Applications: %w", err)
	}
	apps, err := appset.AppsOfApps(ctx, fsys, o.maxFileSize)
	if err != nil {
		return nil, fmt.Errorf("rendering the apps of apps: %w", err)
	}
	w.External = slices.Concat(o.deployers, gen.Apps, apps.Apps)
	return append(gen.Unsupported, apps.Unsupported...), nil
}

// explainUnsupported records the deployer that placed each change, and
// adds to the error of a target whose Argo CD application is not known
// the ApplicationSets that could not be evaluated, which may generate it.
func explainUnsupported(changes []Change, refs []repoindex.DocRef, unsupported []string, results []Result) {
	for i, c := range changes {
		res := &results[i]
		if res.Err == nil {
			res.Deployer = refs[i].Deployer
			continue
		}
		if len(unsupported) > 0 && repoindex.ArgoApp(c.Target) != "" {
			res.Err = fmt.Errorf("%w; not evaluated: %s", res.Err, strings.Join(unsupported, "; "))
		}
	}
}
