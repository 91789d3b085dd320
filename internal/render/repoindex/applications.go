package repoindex

import (
	"bytes"
	"context"
	"io/fs"
	"slices"
)

// ApplicationKustomizations returns the directories of the root
// kustomizations (those nothing else includes) that list, directly or
// through the kustomizations they include, a file holding an Argo CD
// Application: an app of apps as a kustomize directory. What Argo CD runs
// is their build, with its namePrefix, namespace and patches, not the
// files as written.
func ApplicationKustomizations(ctx context.Context, fsys fs.FS, limit int64) ([]string, error) {
	var ks []*Kustomization
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() && p != "." && d.Name()[0] == '.' {
			return fs.SkipDir
		}
		if !d.Type().IsRegular() || !IsKustomizationName(d.Name()) {
			return nil
		}
		if k, err := parseKustomization(fsys, p, limit); err == nil && k != nil {
			ks = append(ks, k)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	g := newKgraph(ks)
	var roots []string
	seen := map[*Kustomization]bool{}
	var up func(k *Kustomization)
	up = func(k *Kustomization) {
		if seen[k] {
			return
		}
		seen[k] = true
		if k.isRoot() {
			roots = append(roots, k.Dir)
		}
		for _, p := range k.Parents {
			up(p)
		}
	}
	for _, k := range g.ByDir {
		if slices.ContainsFunc(k.Resources, func(r string) bool { return g.ByDir[r] == nil && holdsApplication(fsys, r, limit) }) {
			up(k)
		}
	}
	slices.Sort(roots)
	return roots, nil
}

// holdsApplication reports whether the file name may hold an Argo CD
// Application.
func holdsApplication(fsys fs.FS, name string, limit int64) bool {
	if !IsYAMLName(name) {
		return false
	}
	data, _, err := ReadLimited(fsys, name, limit)
	return err == nil && bytes.Contains(data, []byte(ArgoGroup)) && bytes.Contains(data, []byte("Application"))
}
