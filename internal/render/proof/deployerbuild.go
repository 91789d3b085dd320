package proof

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/recommend-job/recommend-job/internal/render/repoindex"
	"github.com/recommend-job/recommend-job/internal/render/yamledit"
)

// SameDeployer reports whether x and y are one source of one object.
func SameDeployer(x, y *repoindex.Deployer) bool {
	return x.File == y.File && x.Doc == y.Doc && x.Source == y.Source
}

// Redecode reads d again from docs, its file's documents at another time.
func Redecode(docs []*yaml.Node, d *repoindex.Deployer) *repoindex.Deployer {
	if d.Doc >= len(docs) {
		return nil
	}
	for _, x := range repoindex.DecodeDeployers(docs[d.Doc], d.Origin, d.File, d.Doc) {
		if x.Source == d.Source {
			return x
		}
	}
	return nil
}

// BuildAs builds the path of d as d does, from the repository with files
// laid over it: the kustomization there with d's overrides merged into
// it, as Argo CD's kustomize edits and kustomize-controller do, or the
// one kustomize-controller generates for a directory without one; then
// d's destination namespace on objects without one, and its postBuild
// substitution.
func (repo Repo) BuildAs(files map[string][]byte, d *repoindex.Deployer) (map[string]map[string]any, error) {
	fsys := repoindex.ProofFS{FileSystem: filesys.MakeFsOnDisk(), Root: repo.Abs, Limit: repo.Limit, Files: maps2(files)}
	dir := filepath.Join(repo.Abs, filepath.FromSlash(d.Path))
	// The path is the repository's to name: through a symlink, it must not
	// lead the build out of the checkout.
	if real, err := filepath.EvalSymlinks(dir); err != nil || real != dir {
		return nil, fmt.Errorf("path %s is not a directory of the repository", d.Path)
	}
	kfile := filepath.Join(dir, "kustomization.yaml")
	var kust map[string]any
	if k := repo.Index.Graph.ByDir[d.Path]; k != nil {
		kfile = filepath.Join(repo.Abs, filepath.FromSlash(k.File))
		data, err := fsys.ReadFile(kfile)
		if err != nil {
			return nil, err
		}
		if err := yaml.Unmarshal(data, &kust); err != nil {
			return nil, fmt.Errorf("%s: %w", k.File, err)
		}
	} else {
		res, err := generatedResources(dir, d, repo.Limit)
		if err != nil {
			return nil, err
		}
		kust = map[string]any{"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": res}
	}
	if kust == nil {
		kust = map[string]any{}
	}
	if d.TargetNamespace != "" {
		kust["namespace"] = d.TargetNamespace
	}
	if d.NamePrefix != "" {
		kust["namePrefix"] = d.NamePrefix
	}
	if d.NameSuffix != "" {
		kust["nameSuffix"] = d.NameSuffix
	}
	appendList := func(key string, items []any) {
		if len(items) == 0 {
			return
		}
		have, _ := kust[key].([]any)
		kust[key] = append(have, items...)
	}
	appendList("patches", d.Patches)
	appendList("replicas", d.Replicas)
	appendList("images", kustomizeImages(d.Images))
	if len(d.CommonLabels) > 0 {
		// Argo CD's commonLabels, as kustomize's labels that also select,
		// which is what commonLabels did before kustomize deprecated it.
		labels, _ := kust["labels"].([]any)
		kust["labels"] = append(labels, map[string]any{"pairs": d.CommonLabels, "includeSelectors": true})
	}
	data, err := yaml.Marshal(kust)
	if err != nil {
		return nil, err
	}
	fsys.Files[kfile] = data
	out, err := fsys.Build(dir)
	if err != nil {
		return nil, err
	}
	final := map[string]map[string]any{}
	for id, obj := range out {
		if len(d.Substitute) > 0 {
			obj = substituteVars(obj, d.Substitute).(map[string]any)
		}
		if meta, _ := obj["metadata"].(map[string]any); meta != nil && d.Destination != "" {
			if ns, _ := meta["namespace"].(string); ns == "" {
				meta["namespace"] = d.Destination
				parts := strings.SplitN(id, "/", 4)
				id = parts[0] + "/" + parts[1] + "/" + d.Destination + "/" + parts[3]
			}
		}
		final[id] = obj
	}
	return final, nil
}

// maps2 copies files, so that a build's own kustomization stays its own.
func maps2(files map[string][]byte) map[string][]byte {
	out := make(map[string][]byte, len(files)+1)
	for k, v := range files {
		out[k] = v
	}
	return out
}

// generatedResources lists what a directory without a kustomization
// renders for d: for Argo CD, its YAML files (and those below when it
// recurses) that include and exclude let through; for Flux, what
// kustomize-controller's generated kustomization lists: its YAML files and
// the directories below with a kustomization of their own, else their
// files.
func generatedResources(dir string, d *repoindex.Deployer, limit int64) ([]any, error) {
	var out []any
	var walk func(sub string) error
	walk = func(sub string) error {
		entries, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(sub)))
		if err != nil {
			return err
		}
		for _, e := range entries {
			rel := path.Join(sub, e.Name())
			switch {
			case strings.HasPrefix(e.Name(), "."):
			case e.IsDir() && d.Kind == repoindex.FluxKustomization:
				if hasKustomization(filepath.Join(dir, filepath.FromSlash(rel))) {
					out = append(out, rel)
				} else if err := walk(rel); err != nil {
					return err
				}
			case e.IsDir() && d.Recurse:
				if err := walk(rel); err != nil {
					return err
				}
			case !e.Type().IsRegular() || !repoindex.IsYAMLName(e.Name()) || !holdsObjects(filepath.Join(dir, filepath.FromSlash(rel)), limit):
				// Values files and the like: neither controller applies them.
			case d.Kind != repoindex.ArgoApplication ||
				(d.Include == "" || repoindex.ArgoGlob(d.Include, rel)) && (d.Exclude == "" || !repoindex.ArgoGlob(d.Exclude, rel)):
				out = append(out, rel)
			}
		}
		return nil
	}
	err := walk(".")
	for i, r := range out {
		out[i] = strings.TrimPrefix(r.(string), "./")
	}
	return out, err
}

// holdsObjects reports whether the YAML file at name holds Kubernetes
// objects, as kustomize-controller's generated kustomization and Argo CD
// ask of a file before they apply it.
func holdsObjects(name string, limit int64) bool {
	if info, err := os.Stat(name); err == nil && limit > 0 && info.Size() > limit {
		return true // the build refuses it, and says why
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return false
	}
	docs, err := yamledit.ParseDocuments(data)
	if err != nil {
		return true // kustomize says what is wrong with it
	}
	for _, d := range docs {
		if _, _, ok := repoindex.Identify(d); ok {
			return true
		}
	}
	return false
}

// hasKustomization reports whether dir holds a kustomization file.
func hasKustomization(dir string) bool {
	for _, n := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}

// kustomizeImages turns Argo CD's image overrides ("name=new:tag",
// "name:tag") into kustomize's; Flux's are kustomize's already.
func kustomizeImages(images []any) []any {
	var out []any
	for _, im := range images {
		s, ok := im.(string)
		if !ok {
			out = append(out, im)
			continue
		}
		name, image, found := strings.Cut(s, "=")
		if !found {
			image = s
		}
		m := map[string]any{}
		ref, digest, hasDigest := strings.Cut(image, "@")
		repo, tag := ref, ""
		if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
			repo, tag = ref[:i], ref[i+1:]
		}
		if !found {
			name = repo
		} else if repo != name {
			m["newName"] = repo
		}
		m["name"] = name
		if tag != "" {
			m["newTag"] = tag
		}
		if hasDigest {
			m["digest"] = digest
		}
		out = append(out, m)
	}
	return out
}

// fluxVar is a variable reference of Flux's postBuild substitution.
var fluxVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?([-=])([^}]*))?\}`)

// substituteVars replaces, in every string of v, the variables vars sets,
// and those with a default that vars does not set by their default, as
// kustomize-controller does; others stay as written.
func substituteVars(v any, vars map[string]string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = substituteVars(e, vars)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = substituteVars(e, vars)
		}
		return x
	case string:
		return fluxVar.ReplaceAllStringFunc(x, func(m string) string {
			g := fluxVar.FindStringSubmatch(m)
			if val, ok := vars[g[1]]; ok {
				return val
			}
			if g[2] != "" {
				return g[3]
			}
			return m
		})
	}
	return v
}
