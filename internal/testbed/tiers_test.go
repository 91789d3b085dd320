package testbed

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// supportPackages are the test-support packages, by the directory of
// each under the repository root, keyed by the name a test calls them by.
var supportPackages = map[string]string{
	"testbed":     "internal/testbed",
	"testbedtest": "internal/testbed/testbedtest",
	"history":     "internal/testbed/history",
	"node":        "internal/testbed/node",
	"helmtest":    "internal/render/helm/helmtest",
}

// unitAllowed are the functions of the test-support packages a unit-tier
// test may call: each builds data, or serves it in process on loopback,
// and starts no program. Any other function of those packages, one added
// tomorrow included, belongs to the integration tier until it is listed
// here.
var unitAllowed = map[string][]string{
	"testbed": {"Series", "WriteBlock", "RepoRoot", "ReadOpenMetrics", "ReadMermaidPage", "writeFileAtomic",
		"kubernetesVersionFlags", "checkIntegrity", "extractFile", "FreePorts", "startWithRetry", "reportStep", "requiredVersion", "withoutDBus"},
	"testbedtest": {"FileRemote", "BranchFile", "SilentListener"},
	"node":        {"New", "newAPIServer", "splitQuoted", "unescapeMount"},
	"history": {"Series", "DailyPeak", "Container", "Constant", "Rollouts", "OOMKill", "Step", "Bursts",
		"StartTimes", "WithStartupSpike"},
	"helmtest": {"Resources", "Components", "Scalar", "Hardcoded", "Shared", "Strict", "Profiles", "Random",
		"Umbrella", "Names", "Files", "Bytes", "Package", "ArchiveName", "NewRepo", "NewRegistry",
		"WithBasicAuth", "WithTLS", "WithClientCA", "WithAbsoluteURLs", "WithChunkedResponses", "WithRequestHook"},
}

// unitForbidden are calls outside the test-support packages that run a
// program, by package name.
var unitForbidden = map[string][]string{
	"os":      {"StartProcess"},
	"syscall": {"Exec", "ForkExec", "StartProcess"},
}

// unitForbiddenImports are packages a unit-tier test may not import.
var unitForbiddenImports = []string{"os/exec"}

// TestUnitTierStartsNothing keeps the tiers apart: a test file that go
// test compiles without the integration tag calls only the test-support
// functions unitAllowed lists, and runs no program.
func TestUnitTierStartsNothing(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	funcs := supportFuncs(t, root)
	unit := build.Default
	unit.BuildTags = nil
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "tools") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		if ok, err := unit.MatchFile(filepath.Dir(path), d.Name()); err != nil || !ok {
			return err
		}
		checked++
		rel, _ := filepath.Rel(root, path)
		for _, v := range unitViolations(t, path, funcs) {
			t.Errorf("%s %s: tag the file //go:build integration, or add the function to unitAllowed if it starts nothing", rel, v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Errorf("checked %d unit test files, want the repository's (20 or more)", checked)
	}
}

// supportFuncs returns the top-level functions of each test-support
// package, read from its non-test files.
func supportFuncs(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for name, dir := range supportPackages {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil {
					out[name] = append(out[name], fn.Name.Name)
				}
			}
		}
		if len(out[name]) == 0 {
			t.Fatalf("found no functions in %s: supportPackages is out of date", dir)
		}
	}
	return out
}

// unitViolations returns what the Go file at path does that a unit-tier
// test may not: import a forbidden package, call a test-support function
// unitAllowed does not list, or call one of unitForbidden. In a support
// package's own files, unqualified calls of its functions count too.
func unitViolations(t *testing.T, path string, funcs map[string][]string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	support := map[string]string{} // local name -> supportPackages key
	for _, imp := range f.Imports {
		p := strings.Trim(imp.Path.Value, `"`)
		if slices.Contains(unitForbiddenImports, p) {
			out = append(out, "imports "+p)
		}
		for name, dir := range supportPackages {
			if strings.HasSuffix(p, "/"+dir) {
				local := name
				if imp.Name != nil {
					local = imp.Name.Name
				}
				support[local] = name
			}
		}
	}
	check := func(pkg, fn string) {
		if key, ok := support[pkg]; ok && slices.Contains(funcs[key], fn) && !slices.Contains(unitAllowed[key], fn) {
			out = append(out, "calls "+pkg+"."+fn)
		}
		if _, ok := support[pkg]; !ok && slices.Contains(unitForbidden[pkg], fn) {
			out = append(out, "calls "+pkg+"."+fn)
		}
	}
	_, own := supportPackages[f.Name.Name]
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		switch fun := call.Fun.(type) {
		case *ast.SelectorExpr:
			if pkg, ok := fun.X.(*ast.Ident); ok {
				check(pkg.Name, fun.Sel.Name)
			}
		case *ast.Ident:
			if own && slices.Contains(funcs[f.Name.Name], fun.Name) && !slices.Contains(unitAllowed[f.Name.Name], fun.Name) {
				out = append(out, "calls "+fun.Name)
			}
		}
		return true
	})
	return out
}

func TestUnitViolations(t *testing.T) {
	funcs := map[string][]string{
		"testbedtest": {"Start", "FileRemote", "BranchFile"},
		"helmtest":    {"NewRepo", "Tomorrow"},
	}
	path := filepath.Join(t.TempDir(), "x_test.go")
	src := `package x

import (
	"os/exec"

	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
	ht "github.com/recommend-job/recommend-job/internal/render/helm/helmtest"
)

func f() {
	bed := testbedtest.Start(t, testbed.Options{})
	_ = testbedtest.BranchFile(t, url, nil, "main", "a")
	_, _ = exec.LookPath("git")
	_ = ht.NewRepo(t)
	_ = ht.Tomorrow(t)
	_, _ = os.StartProcess("x", nil, nil)
	_ = strings.Contains("a", "b")
}
`
	if err := writeFileAtomic(path, []byte(src)); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(unitViolations(t, path, funcs), ", ")
	if want := "imports os/exec, calls testbedtest.Start, calls ht.Tomorrow, calls os.StartProcess"; got != want {
		t.Errorf("unitViolations() = %q, want %q", got, want)
	}
}
