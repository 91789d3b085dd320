package appset

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"

	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helm/chartfetch"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
)

// AppsOfApps renders the charts of the repository whose templates make
// Argo CD Applications (an app of apps, as argocd-example-apps' apps/)
// with their own values, and returns those Applications, in the
// namespace Argo CD keeps them in unless they name one. A chart that does
// not render is named in Unsupported. The charts render with engine.
func AppsOfApps(ctx context.Context, fsys fs.FS, limit int64, engine helm.Engine) (Generated, error) {
	var charts []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && p != "." && d.Name()[0] == '.' {
			return fs.SkipDir
		}
		if d.Name() == "Chart.yaml" && makesApplications(fsys, path.Dir(p), limit) {
			charts = append(charts, path.Dir(p))
		}
		return nil
	})
	if err != nil {
		return Generated{}, err
	}
	var out Generated
	for _, dir := range charts {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		ch, err := chartfetch.LoadDir(fsys, dir)
		var objs []helm.Object
		if err == nil {
			objs, err = engine.Render(ctx, helm.Release{Name: path.Base(dir), Namespace: ArgoNamespace, Chart: ch})
		}
		if err != nil {
			out.Unsupported = append(out.Unsupported, fmt.Sprintf("the app of apps chart %s: %v", dir, err))
			continue
		}
		for _, o := range objs {
			if o.Kind != "Application" || repoindex.Group(o.APIVersion) != repoindex.ArgoGroup {
				continue
			}
			if md, ok := o.Body["metadata"].(map[string]any); ok && md["namespace"] == nil {
				md["namespace"] = ArgoNamespace
			}
			out.Apps = append(out.Apps, repoindex.DeployerObject{Object: o.Body, Origin: "rendered by the app of apps chart " + dir})
		}
	}
	return out, nil
}

// ArgoNamespace is where Argo CD keeps its Applications by default.
const ArgoNamespace = "argocd"

// makesApplications reports whether a template of the chart in dir names
// Argo CD's Application kind.
func makesApplications(fsys fs.FS, dir string, limit int64) bool {
	entries, err := fs.ReadDir(fsys, path.Join(dir, "templates"))
	if err != nil {
		return false
	}
	return slices.ContainsFunc(entries, func(e fs.DirEntry) bool {
		if !e.Type().IsRegular() || !repoindex.IsYAMLName(e.Name()) {
			return false
		}
		data, _, err := repoindex.ReadLimited(fsys, path.Join(dir, "templates", e.Name()), limit)
		return err == nil && bytes.Contains(data, []byte(repoindex.ArgoGroup)) && bytes.Contains(data, []byte("kind: Application\n"))
	})
}
