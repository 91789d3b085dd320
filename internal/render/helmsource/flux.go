package helmsource

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"slices"
	"strings"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/recommend-job/recommend-job/internal/render/helm"
	"github.com/recommend-job/recommend-job/internal/render/helm/chartfetch"
	"github.com/recommend-job/recommend-job/internal/render/repoindex"
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
		r.Namespace = OrDefault(hr.Spec.TargetNamespace, a.releaseNamespace(r, hr.Metadata.Namespace))
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
	// A reference without a namespace is to the HelmRelease's namespace
	// as Flux applies it (a Kustomization's targetNamespace), which its
	// build may not show.
	at := lookup{built: hr.Metadata.Namespace, applied: a.releaseNamespace(r, hr.Metadata.Namespace), out: out}
	if ref := hr.Spec.ChartRef; ref != nil {
		refNS := OrDefault(ref.Namespace, at.applied)
		switch ref.Kind {
		case "OCIRepository":
		case "HelmChart":
			return a.fluxHelmChart(ctx, r, ref.Name, refNS, at)
		default:
			return nil, fmt.Errorf("%s: spec.chartRef to a %s is not supported", r, ref.Kind)
		}
		src, err := a.sourceObject(r, "OCIRepository", ref.Name, refNS, at)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r, err)
		}
		u, _ := tree.Dig(src.obj, "spec", "url").(string)
		// path.Dir would turn oci:// into oci:/.
		i := strings.LastIndex(u, "/")
		if i < 0 {
			return nil, fmt.Errorf("%s: the OCIRepository's url %q names no chart", r, repoindex.RedactURL(u))
		}
		chartRef, err := sourceAccess(chartfetch.ChartRef{RepoURL: u[:i], Chart: u[i+1:]}, src, "OCIRepository", ref.Name, refNS)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r, err)
		}
		// As source-controller reads spec.ref: a digest before a semver
		// range before a tag, and the tag latest without any.
		str := func(keys ...string) string { v, _ := tree.Dig(src.obj, keys...).(string); return v }
		switch {
		case str("spec", "ref", "digest") != "":
			chartRef.Digest = str("spec", "ref", "digest")
		case str("spec", "ref", "semver") != "":
			chartRef.Version = str("spec", "ref", "semver")
		default:
			chartRef.Tag = OrDefault(str("spec", "ref", "tag"), "latest")
		}
		chartRef.Layer = chartfetch.LayerSelector{MediaType: str("spec", "layerSelector", "mediaType"), Operation: str("spec", "layerSelector", "operation")}
		return a.fetchChart(ctx, r, chartRef)
	}
	if hr.Spec.Chart == nil {
		return nil, fmt.Errorf("%s has neither spec.chart nor spec.chartRef", r)
	}
	spec := hr.Spec.Chart.Spec
	srcNS := OrDefault(spec.SourceRef.Namespace, at.applied)
	files := spec.ValuesFiles
	if len(files) == 0 && spec.ValuesFile != "" {
		files = []string{spec.ValuesFile}
	}
	var ch *helm.Chart
	var read func(string) ([]byte, error)
	switch spec.SourceRef.Kind {
	case "HelmRepository":
		src, err := a.sourceObject(r, "HelmRepository", spec.SourceRef.Name, srcNS, at)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r, err)
		}
		u, _ := tree.Dig(src.obj, "spec", "url").(string)
		ref, err := sourceAccess(chartfetch.ChartRef{RepoURL: u, Chart: spec.Chart, Version: spec.Version}, src, "HelmRepository", spec.SourceRef.Name, srcNS)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r, err)
		}
		if ch, err = a.fetchChart(ctx, r, ref); err != nil {
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
		if src, err := a.sourceObject(r, "GitRepository", spec.SourceRef.Name, srcNS, at); err == nil {
			u, _ = tree.Dig(src.obj, "spec", "url").(string)
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

// lookup is where a HelmRelease's sources are looked for: the output of
// the build that renders it (out, nil when none does), the HelmRelease's
// namespace there (built) and as Flux applies it (applied).
type lookup struct {
	built, applied string
	out            map[string]map[string]any
}

// source is a Flux source object as a release reads it, and whether the
// namespace it is read in is established (repoindex.FluxApply): only
// then may the Secrets it names be read.
type source struct {
	obj         map[string]any
	established bool
	// why says, when not established, why not.
	why string
}

// appliedNamespace is the namespace Flux applies ref's object into: the
// one the Flux Kustomizations of the index that render it agree on, else
// built, its namespace as rendered.
func (a *Sources) appliedNamespace(ref repoindex.DocRef, built string) string {
	return appliedIn(a.Index.FluxApplies(ref), built)
}

// releaseNamespace is the namespace the HelmRelease r is in: where Flux
// applies it (appliedNamespace), else, when nothing of the repository
// says, where the cluster has it (helm-controller's labels on the
// target).
func (a *Sources) releaseNamespace(r *Release, built string) string {
	return OrDefault(a.appliedNamespace(r.Ref, built), r.LiveNamespace)
}

// appliedIn is the namespace applies agree on, else built.
func appliedIn(applies []repoindex.FluxApply, built string) string {
	ns := ""
	for i, ap := range applies {
		if i > 0 && ap.Namespace != ns {
			return built
		}
		ns = ap.Namespace
	}
	return OrDefault(ns, built)
}

// sourceObject finds the Flux source kind/name of namespace ns that r
// reads: in the HelmRelease's build, else in the repository's index, in
// the namespace Flux applies each into.
func (a *Sources) sourceObject(r *Release, kind, name, ns string, at lookup) (source, error) {
	key := repoindex.IdentKey{Group: repoindex.FluxSourceGroup, Kind: kind, Name: name}
	id := func(ns string) string { return key.Group + "/" + kind + "/" + ns + "/" + name }
	obj, ok := at.out[id(ns)]
	if !ok && at.built != ns && at.applied == ns {
		// Beside the HelmRelease in its build, without a namespace of
		// its own: Flux applies both into the same one.
		obj, ok = at.out[id(at.built)]
	}
	if ok {
		var built []repoindex.DocRef
		for _, ref := range a.Index.Refs[key] {
			if ref.Chain != nil && r.Ref.Chain != nil && ref.Chain.Root() == r.Ref.Chain.Root() {
				built = append(built, ref)
			}
		}
		return a.trusted(r, source{obj: obj}, built, ns), nil
	}
	var found []map[string]any
	var where []string
	var refs []repoindex.DocRef
	for _, ref := range a.Index.Refs[key] {
		applies := a.Index.FluxApplies(ref)
		if appliedIn(applies, ref.Namespace) != ns && !(ref.Namespace == "" && len(applies) == 0) {
			continue
		}
		obj, ok := a.decoded(ref)
		if !ok {
			continue
		}
		refs = append(refs, ref)
		if !slices.ContainsFunc(found, func(o map[string]any) bool { return EqualSpec(o, obj) }) {
			found = append(found, obj)
			where = append(where, ref.File)
		}
	}
	switch len(found) {
	case 0:
		return source{}, fmt.Errorf("the %s %s/%s is not in the repository", kind, ns, name)
	case 1:
		return a.trusted(r, source{obj: found[0]}, refs, ns), nil
	}
	return source{}, fmt.Errorf("the %s %s/%s is defined differently in %s", kind, ns, name, strings.Join(where, ", "))
}

// trusted says whether s, defined by refs, is established in namespace
// ns: a Flux Kustomization applies one of refs into ns and may (see
// repoindex.FluxApply); or, where no Flux Kustomization of the index
// applies it, it is rendered with the HelmRelease r, whose namespace the
// cluster gives as ns. A file's own word for its namespace establishes
// nothing: a tenant's file may claim any.
func (a *Sources) trusted(r *Release, s source, refs []repoindex.DocRef, ns string) source {
	var why []string
	for _, ref := range refs {
		applies := a.Index.FluxApplies(ref)
		for _, ap := range applies {
			if ap.Namespace == ns && ap.Established {
				s.established = true
				return s
			}
			if ap.Namespace == ns {
				why = append(why, fmt.Sprintf("%s applies %s as the service account %s, which may write only to %s", ap.By, ref.File, ap.By.ServiceAccountName, ap.By.Namespace))
			}
		}
		if len(applies) > 0 {
			continue
		}
		sameBuild := ref.File == r.Ref.File || ref.Chain != nil && r.Ref.Chain != nil && ref.Chain.Root() == r.Ref.Chain.Root()
		switch {
		case sameBuild && r.LiveNamespace != "" && r.LiveNamespace == ns:
			s.established = true
			return s
		case sameBuild:
			why = append(why, fmt.Sprintf("no Flux Kustomization of the repository applies %s, and the cluster puts the HelmRelease in %q", ref.File, r.LiveNamespace))
		default:
			why = append(why, fmt.Sprintf("no Flux Kustomization of the repository applies %s, and it is not rendered with the HelmRelease", ref.File))
		}
	}
	if len(why) == 0 {
		why = append(why, "it is not defined by a file of the repository")
	}
	s.why = strings.Join(why, "; ")
	return s
}

// fluxHelmChart loads the chart of a Flux HelmChart that a HelmRelease's
// spec.chartRef names: spec.chart and spec.version of its HelmRepository.
func (a *Sources) fluxHelmChart(ctx context.Context, r *Release, name, namespace string, at lookup) (*helm.Chart, error) {
	hc, err := a.sourceObject(r, "HelmChart", name, namespace, at)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r, err)
	}
	kind, _ := tree.Dig(hc.obj, "spec", "sourceRef", "kind").(string)
	if kind != "HelmRepository" {
		return nil, fmt.Errorf("%s: the HelmChart %s/%s takes its chart from a %s, which is not supported", r, namespace, name, kind)
	}
	repoName, _ := tree.Dig(hc.obj, "spec", "sourceRef", "name").(string)
	src, err := a.sourceObject(r, "HelmRepository", repoName, namespace, at)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r, err)
	}
	u, _ := tree.Dig(src.obj, "spec", "url").(string)
	chart, _ := tree.Dig(hc.obj, "spec", "chart").(string)
	version, _ := tree.Dig(hc.obj, "spec", "version").(string)
	ref, err := sourceAccess(chartfetch.ChartRef{RepoURL: u, Chart: chart, Version: version}, src, "HelmRepository", repoName, namespace)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r, err)
	}
	return a.fetchChart(ctx, r, ref)
}

// ErrSecretNotBound means a Flux source names Secrets of a namespace
// that nothing establishes it is in: they are not read, and its chart is
// not fetched.
var ErrSecretNotBound = errors.New("its Secrets are not read")

// sourceAccess gives ref how the Flux source kind/name of namespace ns is
// reached: its spec.insecure (plain HTTP), and the Secrets its
// spec.secretRef and spec.certSecretRef name, in the source's namespace as
// Flux reads them, when that namespace is established.
func sourceAccess(ref chartfetch.ChartRef, src source, kind, name, ns string) (chartfetch.ChartRef, error) {
	ref.PlainHTTP, _ = tree.Dig(src.obj, "spec", "insecure").(bool)
	secret, _ := tree.Dig(src.obj, "spec", "secretRef", "name").(string)
	cert, _ := tree.Dig(src.obj, "spec", "certSecretRef", "name").(string)
	if (secret != "" || cert != "") && !src.established {
		return chartfetch.ChartRef{}, fmt.Errorf("%w: the %s %s/%s names Secrets of %s, and nothing establishes that it is in %s: %s",
			ErrSecretNotBound, kind, ns, name, ns, ns, src.why)
	}
	if secret != "" {
		ref.SecretRef = chartfetch.SecretRef{Namespace: ns, Name: secret}
	}
	if cert != "" {
		ref.CertSecretRef = chartfetch.SecretRef{Namespace: ns, Name: cert}
	}
	return ref, nil
}
