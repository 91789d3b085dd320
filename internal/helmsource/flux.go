package helmsource

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"slices"
	"strings"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/recommend-job/recommend-job/internal/helm"
	"github.com/recommend-job/recommend-job/internal/repoindex"
	"github.com/recommend-job/recommend-job/internal/tree"
)

// loadFlux reads a HelmRelease: its chart, then its values from valuesFrom
// in order and spec.values last, as helm-controller merges them.
func (a *Sources) loadFlux(ctx context.Context, r *Release, obj map[string]any, out map[string]map[string]any) (Loaded, error) {
	var hr FluxHelmRelease
	if err := Convert(obj, &hr); err != nil {
		return Loaded{}, fmt.Errorf("%s: %w", r, err)
	}
	if r.Name == "" {
		r.Name = hr.ReleaseName()
	}
	if r.Namespace == "" {
		r.Namespace = hr.Spec.TargetNamespace
		if r.Namespace == "" {
			r.Namespace = hr.Metadata.Namespace
		}
	}
	// The release is installed: helm-controller upgrades it, and either
	// flag says its author wants no schema check.
	r.SkipSchema = hr.Spec.Install.DisableSchemaValidation || hr.Spec.Upgrade.DisableSchemaValidation
	if r.Chart == nil {
		ch, err := a.fluxChart(ctx, r, &hr, out)
		if err != nil {
			return Loaded{}, err
		}
		r.Chart = ch
	}
	// valuesFrom in order, a targetPath entry setting its one value where
	// it comes; spec.values over them all.
	var layers []Layer
	for _, vf := range hr.Spec.ValuesFrom {
		l, err := ValuesFrom(vf.Kind, vf.Name, vf.ValuesKey, vf.TargetPath, hr.Metadata.Namespace, out)
		switch {
		case err != nil && vf.Optional:
			continue
		case err != nil:
			return Loaded{}, fmt.Errorf("%s: %w", r, err)
		case vf.TargetPath == "":
			a.generatedFrom(r, &l, vf.Name, OrDefault(vf.ValuesKey, "values.yaml"))
		}
		layers = append(layers, l)
	}
	layers = append(layers, Layer{
		What:     "spec.values of " + r.String(),
		Values:   hr.Spec.Values,
		Prefix:   KeysPath("spec", "values"),
		Writable: true,
	})
	return Loaded{Layers: layers, Post: hr.Spec.PostRenderers}, nil
}

// generatedFrom makes l, the values of a ConfigMap, the values file a
// configMapGenerator of the release's environment makes it from: the
// generator nearest the environment that has the key wins, as kustomize
// merges them. The layer is writable when no other environment reads the
// file, and the file holds exactly what the ConfigMap does.
func (a *Sources) generatedFrom(r *Release, l *Layer, name, key string) {
	if r.Ref.Chain == nil {
		return
	}
	env := r.Ref.Chain.Root()
	seen := map[*repoindex.Kustomization]bool{env: true}
	for queue := []*repoindex.Kustomization{env}; len(queue) > 0; queue = queue[1:] {
		k := queue[0]
		for _, g := range slices.Backward(k.Generators) {
			file, ok := g.Files[key]
			if g.Name != name && !GeneratedName(name, g.Name) || !ok {
				continue
			}
			data, err := a.fileData(file, true)
			if err != nil {
				return
			}
			var vals map[string]any
			if sigsyaml.Unmarshal(data, &vals) != nil || !reflect.DeepEqual(vals, l.Values) && len(vals)+len(l.Values) > 0 {
				return
			}
			l.What = fmt.Sprintf("the values file %s (ConfigMap %s, key %s)", file, g.Name, key)
			l.File, l.Writable = file, a.ownFile(env, file)
			return
		}
		for _, res := range k.Resources {
			if sub := a.Index.Graph.ByDir[res]; sub != nil && !seen[sub] {
				seen[sub] = true
				queue = append(queue, sub)
			}
		}
	}
}

// ownFile reports whether env is the only environment that reads file
// (with those built on it).
func (a *Sources) ownFile(env *repoindex.Kustomization, file string) bool {
	for _, k := range a.Index.Readers(file) {
		if a.Index.IsEnv(k) && k != env && !k.Includes(env) {
			return false
		}
	}
	return true
}

// fluxChart loads a HelmRelease's chart: a directory of this repository
// through a GitRepository, or a chart of a HelmRepository or
// OCIRepository through the run's chart fetcher.
func (a *Sources) fluxChart(ctx context.Context, r *Release, hr *FluxHelmRelease, out map[string]map[string]any) (*helm.Chart, error) {
	if ref := hr.Spec.ChartRef; ref != nil {
		refNS := OrDefault(ref.Namespace, hr.Metadata.Namespace)
		switch ref.Kind {
		case "OCIRepository":
		case "HelmChart":
			return a.fluxHelmChart(ctx, r, ref.Name, refNS, out)
		default:
			return nil, fmt.Errorf("%s: spec.chartRef to a %s is not supported", r, ref.Kind)
		}
		src, err := a.sourceObject("OCIRepository", ref.Name, refNS, out)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r, err)
		}
		u, _ := tree.Dig(src, "spec", "url").(string)
		// path.Dir would turn oci:// into oci:/.
		i := strings.LastIndex(u, "/")
		if i < 0 {
			return nil, fmt.Errorf("%s: the OCIRepository's url %q names no chart", r, RedactURL(u))
		}
		chartRef := sourceAccess(helm.ChartRef{RepoURL: u[:i], Chart: u[i+1:]}, src, refNS)
		// As source-controller reads spec.ref: a digest before a semver
		// range before a tag, and the tag latest without any.
		str := func(keys ...string) string { v, _ := tree.Dig(src, keys...).(string); return v }
		switch {
		case str("spec", "ref", "digest") != "":
			chartRef.Digest = str("spec", "ref", "digest")
		case str("spec", "ref", "semver") != "":
			chartRef.Version = str("spec", "ref", "semver")
		default:
			chartRef.Tag = OrDefault(str("spec", "ref", "tag"), "latest")
		}
		chartRef.Layer = helm.LayerSelector{MediaType: str("spec", "layerSelector", "mediaType"), Operation: str("spec", "layerSelector", "operation")}
		return a.fetchChart(ctx, r, chartRef)
	}
	if hr.Spec.Chart == nil {
		return nil, fmt.Errorf("%s has neither spec.chart nor spec.chartRef", r)
	}
	spec := hr.Spec.Chart.Spec
	srcNS := OrDefault(spec.SourceRef.Namespace, hr.Metadata.Namespace)
	files := spec.ValuesFiles
	if len(files) == 0 && spec.ValuesFile != "" {
		files = []string{spec.ValuesFile}
	}
	var ch *helm.Chart
	var read func(string) ([]byte, error)
	switch spec.SourceRef.Kind {
	case "HelmRepository":
		src, err := a.sourceObject("HelmRepository", spec.SourceRef.Name, srcNS, out)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r, err)
		}
		u, _ := tree.Dig(src, "spec", "url").(string)
		if ch, err = a.fetchChart(ctx, r, sourceAccess(helm.ChartRef{RepoURL: u, Chart: spec.Chart, Version: spec.Version}, src, srcNS)); err != nil {
			return nil, err
		}
		// The files of a packaged chart.
		read = func(name string) ([]byte, error) {
			if data, ok := ch.File(path.Clean(name)); ok {
				return data, nil
			}
			return nil, fs.ErrNotExist
		}
	case "GitRepository":
		// Flux's own GitRepository is often made by bootstrap and not in
		// the repository: a chart path of a source that is not there is
		// looked for in this repository.
		u := ""
		if src, err := a.sourceObject("GitRepository", spec.SourceRef.Name, srcNS, out); err == nil {
			u, _ = tree.Dig(src, "spec", "url").(string)
		}
		var err error
		if ch, err = a.localChart(ctx, r, u, spec.Chart); err != nil {
			return nil, err
		}
		// Paths from the root of the repository, as source-controller reads them.
		read = func(name string) ([]byte, error) { return a.fileData(repoindex.CleanRepoPath(name), false) }
	default:
		return nil, fmt.Errorf("%s: charts from a %s are not supported", r, spec.SourceRef.Kind)
	}
	if len(files) == 0 {
		return ch, nil
	}
	return ChartValuesFiles(r, ch, files, read, spec.IgnoreMissingValuesFiles)
}

// sourceObject finds a Flux source: in the HelmRelease's build, else in
// the repository's index.
func (a *Sources) sourceObject(kind, name, ns string, out map[string]map[string]any) (map[string]any, error) {
	if obj, ok := out[repoindex.FluxSourceGroup+"/"+kind+"/"+ns+"/"+name]; ok {
		return obj, nil
	}
	var found []map[string]any
	var where []string
	for _, ref := range a.Index.Refs[repoindex.IdentKey{Group: repoindex.FluxSourceGroup, Kind: kind, Name: name}] {
		if ref.Namespace != ns && ref.Namespace != "" {
			continue
		}
		obj, ok := a.decoded(ref)
		if !ok {
			continue
		}
		if !slices.ContainsFunc(found, func(o map[string]any) bool { return EqualSpec(o, obj) }) {
			found = append(found, obj)
			where = append(where, ref.File)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("the %s %s/%s is not in the repository", kind, ns, name)
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("the %s %s/%s is defined differently in %s", kind, ns, name, strings.Join(where, ", "))
}

// fluxHelmChart loads the chart of a Flux HelmChart that a HelmRelease's
// spec.chartRef names: spec.chart and spec.version of its HelmRepository.
func (a *Sources) fluxHelmChart(ctx context.Context, r *Release, name, namespace string, out map[string]map[string]any) (*helm.Chart, error) {
	hc, err := a.sourceObject("HelmChart", name, namespace, out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r, err)
	}
	kind, _ := tree.Dig(hc, "spec", "sourceRef", "kind").(string)
	if kind != "HelmRepository" {
		return nil, fmt.Errorf("%s: the HelmChart %s/%s takes its chart from a %s, which is not supported", r, namespace, name, kind)
	}
	repoName, _ := tree.Dig(hc, "spec", "sourceRef", "name").(string)
	src, err := a.sourceObject("HelmRepository", repoName, namespace, out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r, err)
	}
	u, _ := tree.Dig(src, "spec", "url").(string)
	chart, _ := tree.Dig(hc, "spec", "chart").(string)
	version, _ := tree.Dig(hc, "spec", "version").(string)
	return a.fetchChart(ctx, r, sourceAccess(helm.ChartRef{RepoURL: u, Chart: chart, Version: version}, src, namespace))
}

// sourceAccess gives ref how a Flux source of namespace ns is reached:
// its spec.insecure (plain HTTP), and the Secrets its spec.secretRef and
// spec.certSecretRef name, in the source's namespace as Flux reads them.
func sourceAccess(ref helm.ChartRef, src map[string]any, ns string) helm.ChartRef {
	ref.PlainHTTP, _ = tree.Dig(src, "spec", "insecure").(bool)
	if name, _ := tree.Dig(src, "spec", "secretRef", "name").(string); name != "" {
		ref.SecretRef = helm.SecretRef{Namespace: ns, Name: name}
	}
	if name, _ := tree.Dig(src, "spec", "certSecretRef", "name").(string); name != "" {
		ref.CertSecretRef = helm.SecretRef{Namespace: ns, Name: name}
	}
	return ref
}
