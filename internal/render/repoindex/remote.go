package repoindex

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"
)

// ErrRemote marks a kustomization tree that kustomize would make reach
// the network (a URL, a git repository) or that cannot be shown not to.
// The job builds no such tree: a file of the repository must not make the
// job's process fetch anything, nor wait on a server.
var ErrRemote = errors.New("refers to the network")

// scpUser is the user part of a git URL in scp style (user@host:path or
// user@host/path), which kustomize clones.
var scpUser = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*@`)

// IsRemote reports whether an entry that kustomize loads names something
// it would fetch rather than read from the tree: a URL of any scheme
// (http, https, ssh, file, git::...), a git repository in scp style, or a
// repository of a well-known host without a scheme. It errs towards
// remote: a path with a colon before its first slash counts too.
func IsRemote(entry string) bool {
	s := strings.TrimSpace(entry)
	if i := strings.IndexAny(s, ":/"); i > 0 && s[i] == ':' {
		return true // a scheme, git::, or host:path
	}
	if strings.HasPrefix(s, "//") || scpUser.MatchString(s) {
		return true
	}
	lower := strings.ToLower(s)
	for _, host := range []string{"github.com/", "gitlab.com/", "bitbucket.org/"} {
		if strings.HasPrefix(lower, host) {
			return true
		}
	}
	return false
}

// inline reports whether a patch entry is the patch itself rather than a
// file's name: kustomize loads nothing for it.
func inline(entry string) bool {
	s := strings.TrimSpace(entry)
	return strings.Contains(s, "\n") || strings.HasPrefix(s, "{") || strings.Contains(s, ": ")
}

// resourceFactory is kustomize's own decoder of resources and plugin
// configurations, so that what is checked is what kustomize reads; made
// once, when first needed.
var resourceFactory = sync.OnceValue(func() *resource.Factory {
	return provider.NewDefaultDepProvider().GetResourceFactory()
})

// pluginConfig is what the builtin plugins of kustomize load, under the
// names their configurations give it (PatchTransformer's path,
// PatchStrategicMergeTransformer's paths, ReplacementTransformer's
// replacements, ValueAddTransformer's targetFilePath, the generators'
// files and envs). Decoded as kustomize decodes them: names match
// whatever their case.
type pluginConfig struct {
	Path           string                   `json:"path"`
	Paths          []string                 `json:"paths"`
	TargetFilePath string                   `json:"targetFilePath"`
	Replacements   []types.ReplacementField `json:"replacements"`
	types.KvPairSources
}

// kustomization is a kustomization file decoded as kustomize decodes it,
// and what it names that kustomize would fetch.
type kustomization struct {
	types.Kustomization
	// remote lists "field: entry" for each entry fetched from the network.
	remote []string
	// plugins are the configuration files its generators, transformers
	// and validators name (the inline ones are checked with it).
	plugins []pluginEntry
}

// pluginEntry is an entry of a kustomization's generators, transformers
// or validators that names a file or directory.
type pluginEntry struct{ field, entry string }

// pluginFields are the fields of a kustomization whose entries are plugin
// configurations: a file, a directory kustomize builds into
// configurations, or the configuration itself, inline.
var pluginFields = []struct {
	name string
	of   func(*types.Kustomization) []string
}{
	{"generators", func(k *types.Kustomization) []string { return k.Generators }},
	{"transformers", func(k *types.Kustomization) []string { return k.Transformers }},
	{"validators", func(k *types.Kustomization) []string { return k.Validators }},
}

// decodeKustomization decodes a kustomization file as kustomize does and
// finds every entry in it that kustomize would fetch, inline plugin
// configurations included. A file that kustomize could not read either is
// an error.
func decodeKustomization(data []byte) (*kustomization, error) {
	k := &kustomization{}
	if err := k.Unmarshal(data); err != nil {
		return nil, err
	}
	k.FixKustomization() // bases into resources, env into envs, as kustomize does
	entries := func(field string, list []string, loaded bool) {
		for _, e := range list {
			if loaded && inline(e) {
				continue
			}
			if IsRemote(e) {
				k.remote = append(k.remote, field+": "+e)
			}
		}
	}
	entries("resources", k.Resources, false)
	entries("components", k.Components, false)
	entries("crds", k.Crds, true)
	entries("configurations", k.Configurations, true)
	for _, p := range k.PatchesStrategicMerge {
		entries("patchesStrategicMerge", []string{string(p)}, true)
	}
	for _, p := range k.Patches {
		entries("patches.path", []string{p.Path}, true)
	}
	for _, p := range k.PatchesJson6902 {
		entries("patchesJson6902.path", []string{p.Path}, true)
	}
	for _, r := range k.Replacements {
		entries("replacements.path", []string{r.Path}, true)
	}
	entries("openapi.path", []string{k.OpenAPI["path"]}, true)
	for _, g := range k.ConfigMapGenerator {
		entries("configMapGenerator.files", generatorFiles(g.KvPairSources), true)
		entries("configMapGenerator.envs", g.EnvSources, true)
	}
	for _, g := range k.SecretGenerator {
		entries("secretGenerator.files", generatorFiles(g.KvPairSources), true)
		entries("secretGenerator.envs", g.EnvSources, true)
	}
	if len(k.HelmCharts) > 0 || k.HelmGlobals != nil {
		// kustomize inflates charts only with --enable-helm, which the job
		// never gives; say why rather than let it fail later.
		k.remote = append(k.remote, "helmCharts: charts are not inflated")
	}
	for _, field := range pluginFields {
		for _, e := range field.of(&k.Kustomization) {
			refs, isInline, err := inlinePlugins([]byte(e))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", field.name, err)
			}
			if isInline {
				for _, r := range refs {
					k.remote = append(k.remote, field.name+": "+r)
				}
				continue
			}
			if IsRemote(e) {
				k.remote = append(k.remote, field.name+": "+e)
				continue
			}
			k.plugins = append(k.plugins, pluginEntry{field.name, e})
		}
	}
	return k, nil
}

// generatorFiles returns the files a generator's files field reads, each
// perhaps given as key=path.
func generatorFiles(s types.KvPairSources) []string {
	var out []string
	for _, f := range s.FileSources {
		if _, file, ok := strings.Cut(f, "="); ok && !IsRemote(f) {
			f = file
		}
		out = append(out, f)
	}
	return out
}

// inlinePlugins reports whether a generators, transformers or validators
// entry is a configuration rather than a file's name, as kustomize tells
// (the entry decodes as objects), and what in it would be fetched.
func inlinePlugins(entry []byte) ([]string, bool, error) {
	objects, err := resourceFactory().SliceFromBytes(entry)
	if err != nil || len(objects) == 0 {
		return nil, false, nil // a file's name
	}
	refs, err := pluginRefs(objects)
	return refs, true, err
}

// pluginFileRefs decodes a file of plugin configurations as kustomize
// does and returns what in them would be fetched.
func pluginFileRefs(data []byte) ([]string, error) {
	objects, err := resourceFactory().SliceFromBytes(data)
	if err != nil {
		return nil, err
	}
	return pluginRefs(objects)
}

// pluginRefs returns "kind field: entry" for each entry of the plugin
// configurations that would be fetched.
func pluginRefs(objects []*resource.Resource) ([]string, error) {
	var refs []string
	for _, o := range objects {
		y, err := o.AsYAML()
		if err != nil {
			return nil, err
		}
		var c pluginConfig
		if err := sigsyaml.Unmarshal(y, &c); err != nil {
			return nil, fmt.Errorf("the configuration of %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		var replaced []string
		for _, r := range c.Replacements {
			replaced = append(replaced, r.Path)
		}
		loads := []struct {
			field   string
			entries []string
		}{
			{"path", []string{c.Path}}, {"paths", c.Paths}, {"targetFilePath", []string{c.TargetFilePath}},
			{"replacements.path", replaced}, {"files", generatorFiles(c.KvPairSources)},
			{"envs", append(c.EnvSources, c.EnvSource)},
		}
		for _, l := range loads {
			for _, e := range l.entries {
				if !inline(e) && IsRemote(e) {
					refs = append(refs, o.GetKind()+" "+o.GetName()+" "+l.field+": "+e)
				}
			}
		}
	}
	return refs, nil
}

// CheckLocal refuses, before kustomize runs, a build of the kustomization
// in dir that would fetch anything from the network. It reads through
// p, as kustomize will, the kustomization there, every one its
// resources and components reach, and the plugin configurations they
// name, and returns an error wrapping ErrRemote that names the file and
// the field. A plugin configuration that is a directory is refused too:
// what kustomize would build there cannot be checked before it runs.
func (p ProofFS) CheckLocal(dir string) error {
	fsys, rel := filesys.FileSystem(p), p.rel
	seen := map[string]bool{}
	var walk func(d string) error
	walk = func(d string) error {
		d = filepath.Clean(d)
		if seen[d] {
			return nil
		}
		seen[d] = true
		for _, name := range kustomizationNames {
			file := filepath.Join(d, name)
			if !fsys.Exists(file) || fsys.IsDir(file) {
				continue
			}
			k, err := readChecked(fsys, file, rel)
			if err != nil {
				return err
			}
			for _, e := range slices.Concat(k.Resources, k.Components) {
				if p, ok := localPath(d, e); ok && fsys.IsDir(p) {
					if err := walk(p); err != nil {
						return err
					}
				}
			}
			for _, p := range k.plugins {
				if err := checkPluginFile(fsys, d, file, p.field, p.entry, rel); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(dir)
}

// localPath is an entry of the kustomization in dir as a path of fsys.
func localPath(dir, entry string) (string, bool) {
	if entry == "" || filepath.IsAbs(entry) {
		return "", false
	}
	return filepath.Join(dir, filepath.FromSlash(entry)), true
}

// readChecked reads and decodes a kustomization file and refuses it when
// it names anything kustomize would fetch.
func readChecked(fsys filesys.FileSystem, file string, rel func(string) string) (*kustomization, error) {
	data, err := fsys.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if err := CheckAliases(data); err != nil {
		return nil, fmt.Errorf("%s: %w", rel(file), err)
	}
	k, err := decodeKustomization(data)
	if err != nil {
		return nil, fmt.Errorf("%s %w: it cannot be checked for remote entries: %w", rel(file), ErrRemote, err)
	}
	if len(k.remote) > 0 {
		return nil, fmt.Errorf("%s %w: %s; not built: nothing remote is fetched", rel(file), ErrRemote, strings.Join(k.remote, ", "))
	}
	return k, nil
}

// checkPluginFile refuses the plugin configuration entry of field in the
// kustomization file of dir when it is a directory or a file naming
// anything kustomize would fetch.
func checkPluginFile(fsys filesys.FileSystem, dir, file, field, entry string, rel func(string) string) error {
	p, ok := localPath(dir, entry)
	if !ok || !fsys.Exists(p) {
		return nil // kustomize reports it
	}
	if fsys.IsDir(p) {
		return fmt.Errorf("%s %w: %s: %s is a directory, whose build cannot be checked before it runs; not built: list its files", rel(file), ErrRemote, field, entry)
	}
	data, err := fsys.ReadFile(p)
	if err != nil {
		return err
	}
	if err := CheckAliases(data); err != nil {
		return fmt.Errorf("%s: %w", rel(p), err)
	}
	refs, err := pluginFileRefs(data)
	if err != nil {
		return fmt.Errorf("%s %w: it cannot be checked for remote entries: %w", rel(p), ErrRemote, err)
	}
	if len(refs) > 0 {
		return fmt.Errorf("%s %w: %s; not built: nothing remote is fetched", rel(p), ErrRemote, strings.Join(refs, ", "))
	}
	return nil
}
