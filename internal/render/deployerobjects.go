package render

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/recommend-job/recommend-job/internal/render/appset"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// WithDeployers gives Apply the live Argo CD Applications and Flux
// Kustomizations: where they say a target is rendered from wins over the
// repository's files and over what its ApplicationSets generate.
func WithDeployers(ds []repoindex.DeployerObject) Option {
	return func(o *options) { o.deployers = ds }
}

// WithClusterName names this cluster as Argo CD does, for the
// ApplicationSets' cluster generator, and so that Applications of the
// repository whose destination names another cluster deploy nothing
// here; without it that generator is not evaluated, and every
// destination counts.
func WithClusterName(name string) Option { return func(o *options) { o.cluster = name } }

// addDeployers adds to w, when a target names its deployer, the live
// deployers, the Applications the repository's ApplicationSets generate
// those its apps of apps' charts render and those its kustomizations of
// Applications build, in that order of precedence. It returns why some
// ApplicationSets, charts or kustomizations gave nothing. The
// kustomizations of Applications, which may be any team's, are built only
// when a change's Application is not live.
func (o *options) addDeployers(ctx context.Context, fsys fs.FS, abs string, w *repoindex.Wants, changes []Change) ([]string, error) {
	w.Cluster = o.cluster
	if !w.Pointers {
		if w.Helm {
			// A HelmRelease's target names no deployer, yet the live
			// HelmRelease is what its release is, and the live
			// Kustomization its labels name is the environment that
			// applies it.
			w.DeployerObjects = slices.DeleteFunc(slices.Clone(o.deployers), func(d repoindex.DeployerObject) bool {
				return d.Object["kind"] != "HelmRelease" && d.Object["kind"] != "Kustomization"
			})
		}
		return nil, nil
	}
	gen, err := appset.Generate(ctx, fsys, appset.Options{RepoURL: o.repoURL, Cluster: appset.Cluster{Name: o.cluster}, Limit: o.maxFileSize})
	if err != nil {
		return nil, fmt.Errorf("generating the ApplicationSets' Applications: %w", err)
	}
	apps, err := appset.AppsOfApps(ctx, fsys, o.maxFileSize, o.engine)
	if err != nil {
		return nil, fmt.Errorf("rendering the apps of apps: %w", err)
	}
	var built []repoindex.DeployerObject
	var unbuilt []string
	if !o.allLive(changes) {
		if built, unbuilt, err = o.kustomizedApps(ctx, fsys, abs); err != nil {
			return nil, fmt.Errorf("building the kustomizations of Applications: %w", err)
		}
	}
	w.DeployerObjects = slices.Concat(o.deployers, o.thisCluster(gen.Apps), o.thisCluster(apps.Apps), o.thisCluster(built))
	return slices.Concat(gen.Unsupported, apps.Unsupported, unbuilt), nil
}

// thisCluster drops, when the run names its cluster (argocd-cluster-name),
// the Applications of the repository whose destination names another
// cluster: an Argo CD per cluster may read one repository, each deploying
// its own definition of a name.
func (o *options) thisCluster(apps []repoindex.DeployerObject) []repoindex.DeployerObject {
	if o.cluster == "" {
		return apps
	}
	return slices.DeleteFunc(apps, func(d repoindex.DeployerObject) bool {
		spec, _ := d.Object["spec"].(map[string]any)
		dest, _ := spec["destination"].(map[string]any)
		name, _ := dest["name"].(string)
		return name != "" && name != o.cluster
	})
}

// allLive reports whether every change that names an Argo CD Application
// names one the cluster runs: the live one is then what counts, and no
// kustomization of Applications needs to be built.
func (o *options) allLive(changes []Change) bool {
	live := map[string]bool{}
	for _, d := range o.deployers {
		md, _ := d.Object["metadata"].(map[string]any)
		if name, _ := md["name"].(string); d.Object["kind"] == "Application" && name != "" {
			live[name] = true
		}
	}
	for _, c := range changes {
		if app := repoindex.ArgoApp(c.Target); app != "" && !live[app] {
			return false
		}
	}
	return true
}

// kustomizedApps builds the kustomizations of the repository (under its
// absolute root abs) that list Argo CD Applications, and returns the
// Applications as built: Argo CD runs those, with the kustomizations'
// namePrefix, namespace and patches. A kustomization that does not build
// is named in the second result.
func (o *options) kustomizedApps(ctx context.Context, fsys fs.FS, abs string) ([]repoindex.DeployerObject, []string, error) {
	dirs, err := repoindex.ApplicationKustomizations(ctx, fsys, o.maxFileSize)
	if err != nil {
		return nil, nil, err
	}
	var apps []repoindex.DeployerObject
	var unbuilt []string
	for _, dir := range dirs {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		out, err := repoindex.ProofFS{FileSystem: filesys.MakeFsOnDisk(), Root: abs, Limit: o.maxFileSize}.Build(filepath.Join(abs, filepath.FromSlash(dir)))
		if err != nil {
			unbuilt = append(unbuilt, fmt.Sprintf("the kustomization of Applications %s: %v", dir, err))
			continue
		}
		for _, id := range slices.Sorted(maps.Keys(out)) {
			if strings.HasPrefix(id, repoindex.ArgoGroup+"/Application/") {
				obj := out[id]
				if md, ok := obj["metadata"].(map[string]any); ok && md["namespace"] == nil {
					md["namespace"] = appset.ArgoNamespace
				}
				apps = append(apps, repoindex.DeployerObject{Object: obj, Origin: "built by the kustomization " + dir, Built: true})
			}
		}
	}
	return apps, unbuilt, nil
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
