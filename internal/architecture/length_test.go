package architecture

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFunctionLines is the longest a function of the project's code may
// be, its signature and closing brace counted: past it, a function does
// more than one thing, and reads as such.
const maxFunctionLines = 120

// TestFunctionLength fails on a function or method of the project's
// non-test code longer than maxFunctionLines, naming it.
func TestFunctionLength(t *testing.T) {
	fset := token.NewFileSet()
	for _, root := range []string{"../../internal", "../../cmd", "../../hack"} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
				if n := end.Line - start.Line + 1; n > maxFunctionLines {
					t.Errorf("%s:%d: %s is %d lines, more than %d: split it by what it does", filepath.ToSlash(strings.TrimPrefix(p, "../../")), start.Line, fn.Name.Name, n, maxFunctionLines)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
