package architecture

import (
	"errors"
	"go/build"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is the project's module path.
const module = "github.com/recommend-job/recommend-job/"

// mayImport is, for each package of internal/ and cmd/, the packages of
// the project it may import (relative to the module), as ARCHITECTURE.md's
// "Who may import whom" and "Rendering, by package" say. A package
// missing here fails the test: a new package states its place.
var mayImport = map[string][]string{
	"internal/api/v1alpha1":    {},
	"internal/kinds":           {},
	"internal/plan":            {},
	"internal/tree":            {},
	"internal/render/yamledit": {},
	"internal/memlimit":        {},
	"internal/checkpoint":      {},
	"internal/architecture":    {},

	// Rendering: each package below render imports only those below it.
	"internal/render/helm":            {"internal/kinds"},
	"internal/render/helm/chartfetch": {"internal/render/helm"},
	"internal/render/repoindex":       {"internal/render/yamledit", "internal/kinds"},
	"internal/render/appset":          {"internal/render/helm", "internal/render/helm/chartfetch", "internal/render/repoindex", "internal/tree"},
	"internal/render/helmsource": {"internal/render/appset", "internal/render/repoindex", "internal/render/helm", "internal/render/helm/chartfetch",
		"internal/render/yamledit", "internal/tree", "internal/kinds"},
	"internal/render/edits": {"internal/render/helm", "internal/render/helmsource", "internal/render/repoindex", "internal/render/yamledit", "internal/plan"},
	"internal/render/proof": {"internal/render/edits", "internal/render/helm", "internal/render/helmsource", "internal/render/repoindex",
		"internal/render/yamledit", "internal/kinds", "internal/tree"},
	"internal/deployers": {"internal/render/repoindex", "internal/tree"},
	"internal/render": {"internal/render/appset", "internal/render/edits", "internal/render/proof", "internal/render/helm", "internal/render/helm/chartfetch",
		"internal/render/helmsource", "internal/render/repoindex",
		"internal/render/yamledit", "internal/tree", "internal/kinds", "internal/plan"},

	// The stages, in order; none imports one downstream of it.
	"internal/collect":   {"internal/api/v1alpha1", "internal/kinds", "internal/plan"},
	"internal/usage":     {"internal/kinds"},
	"internal/recommend": {"internal/api/v1alpha1", "internal/collect", "internal/plan", "internal/usage"},
	"internal/redact":    {},
	"internal/gitops":    {"internal/plan", "internal/redact"},
	"internal/forge":     {"internal/gitops", "internal/plan", "internal/redact"},

	"internal/cost":        {"internal/plan"},
	"internal/corrections": {"internal/plan", "internal/gitops", "internal/verify"},
	"internal/record":      {"internal/gitops"},
	"internal/verify":      {"internal/forge", "internal/gitops", "internal/usage", "internal/recommend", "internal/plan"},
	"internal/report":      {"internal/plan"},
	// The Markdown views of a plan: the pull request's body, the
	// dashboard, the commit message.
	"internal/report/markdown": {"internal/plan"},

	// job orders every stage of a run but report; doctor repeats the
	// reads of a run through interfaces of its own; config builds the
	// stages' options.
	"internal/job": {"internal/checkpoint", "internal/collect", "internal/corrections", "internal/cost", "internal/forge", "internal/gitops", "internal/kinds",
		"internal/plan", "internal/recommend", "internal/record", "internal/render", "internal/render/repoindex", "internal/report/markdown", "internal/usage", "internal/verify"},
	"internal/doctor": {"internal/api/v1alpha1", "internal/checkpoint", "internal/collect", "internal/forge", "internal/gitops", "internal/plan",
		"internal/recommend", "internal/usage", "internal/verify"},
	"internal/config": {"internal/collect", "internal/cost", "internal/deployers", "internal/forge", "internal/gitops", "internal/render/helm", "internal/render/helm/chartfetch",
		"internal/plan", "internal/recommend", "internal/render", "internal/report", "internal/report/markdown", "internal/usage", "internal/verify"},

	// Test support: no list above names it, so no stage imports it.
	"internal/testbed":              {},
	"internal/testbed/history":      {"internal/testbed"},
	"internal/testbed/node":         {"hack/image", "internal/testbed"},
	"internal/testbed/testbedtest":  {"internal/testbed"},
	"internal/render/helm/helmtest": {},

	"cmd/recommend-job": {"internal/checkpoint", "internal/collect", "internal/config", "internal/deployers", "internal/doctor",
		"internal/render/helm", "internal/job", "internal/memlimit", "internal/plan", "internal/record",
		"internal/render", "internal/report", "internal/report/markdown", "internal/usage"},
}

// projectPackages lists the packages of internal/ and cmd/ with the
// project's packages each imports, test files left out, as the go
// command's default build context sees them.
func projectPackages(t *testing.T) map[string][]string {
	t.Helper()
	pkgs := map[string][]string{}
	for _, root := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join("..", "..", root), func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			bp, err := build.Default.ImportDir(p, 0)
			var none *build.NoGoError
			if errors.As(err, &none) {
				return nil
			}
			if err != nil {
				return err
			}
			name := filepath.ToSlash(strings.TrimPrefix(p, filepath.Join("..", "..")+string(filepath.Separator)))
			var own []string
			for _, imp := range bp.Imports {
				if rel, ok := strings.CutPrefix(imp, module); ok {
					own = append(own, rel)
				}
			}
			pkgs[name] = own
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(pkgs) < 20 {
		t.Fatalf("found %d packages, want the project's (20 or more)", len(pkgs))
	}
	return pkgs
}

// TestImports fails on an import that ARCHITECTURE.md forbids, and on a
// package it does not place.
func TestImports(t *testing.T) {
	for name, imports := range projectPackages(t) {
		allowed, ok := mayImport[name]
		if !ok {
			t.Errorf("%s is not placed in mayImport: say which packages it may import, and where ARCHITECTURE.md puts it", name)
			continue
		}
		for _, imp := range imports {
			if !slices.Contains(allowed, imp) {
				t.Errorf("%s imports %s, which ARCHITECTURE.md does not allow it", name, imp)
			}
		}
	}
}
