package helm

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestNoPackageState fails on a package-level variable in the package's
// own files other than an error sentinel or a compiled regular
// expression: how charts render (the render process, the cluster, the
// time bound) belongs to an Engine its callers pass, never to state that
// every render of the process shares and tests must reassign.
func TestNoPackageState(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, found := range packageState(fset, f) {
			t.Errorf("%s: package-level state; make it a constant, a function or a field of a value callers pass", found)
		}
	}
}

// TestPackageState checks the check of TestNoPackageState on sources of
// its own.
func TestPackageState(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{name: "sentinels", src: "var ErrX = errors.New(\"x\")\nvar (\n\terrY = fmt.Errorf(\"%w: y\", ErrX)\n\tpattern = regexp.MustCompile(`x`)\n)\nvar _ fmt.Stringer = Path(nil)\n"},
		{name: "an atomic", src: "var isolated atomic.Pointer[child]\n", want: []string{"x.go:2: isolated"}},
		{name: "a setting", src: "var MaxRenderTime = 30 * time.Second\n", want: []string{"x.go:2: MaxRenderTime"}},
		{name: "a slice among sentinels", src: "var (\n\tErrX = errors.New(\"x\")\n\tFields = []Field{RequestsCPU}\n)\n", want: []string{"x.go:4: Fields"}},
		{name: "a call of another function", src: "var limits = DefaultLimits()\n", want: []string{"x.go:2: limits"}},
		{name: "two names", src: "var a, b = errors.New(\"a\"), 1\n", want: []string{"x.go:2: b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "x.go", "package helm\n"+tt.src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, packageState(fset, f)); diff != "" {
				t.Errorf("packageState (-want +got):\n%s", diff)
			}
		})
	}
}

// packageState lists, as file:line: name, the package-level variables of
// f that are not error sentinels (errors.New, fmt.Errorf), compiled
// regular expressions (regexp.MustCompile) or blank.
func packageState(fset *token.FileSet, f *ast.File) []string {
	var found []string
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.VAR {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if name.Name == "_" || (len(vs.Values) == len(vs.Names) && immutable(vs.Values[i])) {
					continue
				}
				pos := fset.Position(name.Pos())
				found = append(found, fmt.Sprintf("%s:%d: %s", pos.Filename, pos.Line, name.Name))
			}
		}
	}
	return found
}

// immutable reports whether e is a call that makes an error sentinel or a
// compiled regular expression, which nothing changes once made.
func immutable(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok {
		return false
	}
	switch pkg.Name + "." + sel.Sel.Name {
	case "errors.New", "fmt.Errorf", "regexp.MustCompile":
		return true
	}
	return false
}
