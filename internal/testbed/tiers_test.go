package testbed

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// unitForbidden are the calls that start a server or run a program, by
// package name: a test file calling one belongs to the integration tier.
var unitForbidden = map[string][]string{
	"testbed": {"Up", "StartEtcd", "StartAPIServer", "StartPrometheus", "StartPrometheusWithHistory",
		"StartGitServer", "StartGitea", "EnsureTools", "EnsureHelm", "EnsureGitea", "CreateBareRepo", "NewGitHandler"},
	"testbedtest": {"Start", "Main", "Gitea"},
	"exec":        {"Command", "CommandContext", "LookPath"},
}

// TestUnitTierStartsNothing keeps the tiers apart: no test file that go
// test compiles without the integration tag starts a server or runs a
// program.
func TestUnitTierStartsNothing(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
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
		for _, call := range forbiddenCalls(t, path) {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s calls %s, which starts a server or runs a program: tag the file //go:build integration", rel, call)
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

// forbiddenCalls returns the calls of unitForbidden in the Go file at path;
// in package testbed itself, unqualified ones count too.
func forbiddenCalls(t *testing.T, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	is := func(pkg, name string) bool {
		for _, n := range unitForbidden[pkg] {
			if n == name {
				return true
			}
		}
		return false
	}
	var calls []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		switch fun := call.Fun.(type) {
		case *ast.SelectorExpr:
			if pkg, ok := fun.X.(*ast.Ident); ok && is(pkg.Name, fun.Sel.Name) {
				calls = append(calls, pkg.Name+"."+fun.Sel.Name)
			}
		case *ast.Ident:
			if f.Name.Name == "testbed" && is("testbed", fun.Name) {
				calls = append(calls, fun.Name)
			}
		}
		return true
	})
	return calls
}

func TestForbiddenCalls(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x_test.go")
	src := `package x

func f() {
	bed := testbedtest.Start(t, testbed.Options{})
	_ = testbedtest.BranchFile(t, url, nil, "main", "a")
	_, _ = exec.LookPath("git")
	_ = strings.Contains("a", "b")
}
`
	if err := writeFileAtomic(path, []byte(src)); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(forbiddenCalls(t, path), " ")
	if want := "testbedtest.Start exec.LookPath"; got != want {
		t.Errorf("forbiddenCalls() = %q, want %q", got, want)
	}
}
