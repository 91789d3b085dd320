package gitops

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/utils/diff"
	"github.com/sergi/go-diff/diffmatchpatch"
)

// diffContext is the number of unchanged lines shown around a change.
const diffContext = 3

// Diff returns the unified diff of files (slash-separated, relative to Dir)
// in the working tree against the base commit, without committing.
func (w *Workspace) Diff(files []string) (string, error) {
	base, err := w.repo.CommitObject(w.baseHead)
	if err != nil {
		return "", fmt.Errorf("reading the base commit: %w", err)
	}
	files = append([]string(nil), files...)
	sort.Strings(files)
	var b strings.Builder
	for _, name := range files {
		before, err := fileAt(base, name)
		if err != nil {
			return "", err
		}
		after, err := os.ReadFile(filepath.Join(w.dir, filepath.FromSlash(name)))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("reading %s: %w", name, err)
		}
		b.WriteString(unified(name, before, string(after)))
	}
	return b.String(), nil
}

func fileAt(c *object.Commit, name string) (string, error) {
	f, err := c.File(name)
	if errors.Is(err, object.ErrFileNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading %s at the base: %w", name, err)
	}
	s, err := f.Contents()
	if err != nil {
		return "", fmt.Errorf("reading %s at the base: %w", name, err)
	}
	return s, nil
}

// diffLine is one line of a line diff: ' ', '-' or '+', and its text.
type diffLine struct {
	op   byte
	text string
}

// unified formats the line diff of before and after as one file's
// unified diff; "" when they are equal.
func unified(name, before, after string) string {
	if before == after {
		return ""
	}
	var lines []diffLine
	for _, d := range diff.Do(before, after) {
		op := byte(' ')
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			op = '-'
		case diffmatchpatch.DiffInsert:
			op = '+'
		}
		text := strings.TrimSuffix(d.Text, "\n")
		for _, l := range strings.Split(text, "\n") {
			lines = append(lines, diffLine{op, l})
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", name, name)
	// Walk the lines, cutting hunks around changes with diffContext lines
	// either side; oldN and newN are 1-based line numbers.
	oldN, newN := 1, 1
	for i := 0; i < len(lines); {
		if lines[i].op == ' ' {
			i, oldN, newN = i+1, oldN+1, newN+1
			continue
		}
		start := max(0, i-diffContext)
		oldStart, newStart := oldN-(i-start), newN-(i-start)
		end := i
		for j := i; j < len(lines); j++ {
			if lines[j].op != ' ' {
				end = j
			} else if j-end > 2*diffContext {
				break
			}
		}
		stop := min(len(lines), end+diffContext+1)
		var oldLen, newLen int
		var body strings.Builder
		for _, l := range lines[start:stop] {
			body.WriteByte(l.op)
			body.WriteString(l.text)
			body.WriteByte('\n')
			if l.op != '+' {
				oldLen++
			}
			if l.op != '-' {
				newLen++
			}
		}
		// An empty side starts at the line before, as git prints it.
		if oldLen == 0 {
			oldStart--
		}
		if newLen == 0 {
			newStart--
		}
		fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n%s", oldStart, oldLen, newStart, newLen, body.String())
		for _, l := range lines[i:stop] {
			if l.op != '+' {
				oldN++
			}
			if l.op != '-' {
				newN++
			}
		}
		i = stop
	}
	return b.String()
}
