package architecture

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxPackageLines is the most non-test lines a package may hold: past
// it, a package does more than one thing.
const maxPackageLines = 4000

// maxRenderLines is render's own share: it orders the rendering, and each
// concern it grows goes to a package nested under it.
const maxRenderLines = 3000

// minTestRatio is the least a package's test lines may be, as a share of
// its code: each package is tested on its own API, not only through the
// packages that use it.
const minTestRatio = 0.3

// testSupport are packages that exist for tests: they are tested by the
// tests that use them.
var testSupport = map[string]bool{
	"internal/testbed/testbedtest":  true,
	"internal/render/helm/helmtest": true,
	"internal/architecture":         true,
}

// packageLines counts, for each directory of internal/ and cmd/ holding
// Go files, the lines of its non-test and of its test files.
func packageLines(t *testing.T) (code, tests map[string]int) {
	t.Helper()
	code, tests = map[string]int{}, map[string]int{}
	for _, root := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join("..", "..", root), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(p, ".go") {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			dir := filepath.ToSlash(strings.TrimPrefix(filepath.Dir(p), filepath.Join("..", "..")+string(filepath.Separator)))
			if strings.HasSuffix(p, "_test.go") {
				tests[dir] += bytes.Count(data, []byte("\n"))
			} else {
				code[dir] += bytes.Count(data, []byte("\n"))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(code) < 20 {
		t.Fatalf("found %d packages, want the project's (20 or more)", len(code))
	}
	return code, tests
}

// TestPackageSize fails on a package over maxPackageLines non-test lines,
// and on render over maxRenderLines.
func TestPackageSize(t *testing.T) {
	code, _ := packageLines(t)
	for dir, n := range code {
		limit := maxPackageLines
		if dir == "internal/render" {
			limit = maxRenderLines
		}
		if n > limit {
			t.Errorf("%s has %d non-test lines, more than %d: move a concern to a package of its own", dir, n, limit)
		}
	}
}

// TestTestsWhereTheCodeIs fails on a package, test support aside, whose
// tests are less than minTestRatio of its code.
func TestTestsWhereTheCodeIs(t *testing.T) {
	code, tests := packageLines(t)
	for dir, n := range code {
		if testSupport[dir] {
			continue
		}
		if ratio := float64(tests[dir]) / float64(n); ratio < minTestRatio {
			t.Errorf("%s has %d lines of tests for %d of code (%.2fx), less than %.1fx: test its own API", dir, tests[dir], n, ratio, minTestRatio)
		}
	}
}
