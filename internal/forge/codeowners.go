package forge

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
)

// CodeownersPaths are where forges look for a CODEOWNERS file, in the
// order GitHub and GitLab search them; the first that exists counts.
var CodeownersPaths = []string{".github/CODEOWNERS", ".gitlab/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"}

// Codeowners is a parsed CODEOWNERS file, in GitHub's syntax or GitLab's
// (which adds sections).
type Codeowners struct {
	sections []ownerSection
}

// ownerSection is a GitLab section, or the whole file: within one, the
// last matching rule wins; the owners of every section add up.
type ownerSection struct {
	name     string
	defaults []string
	rules    []ownerRule
}

// ownerRule is one line: a pattern and its owners (none: the files have
// no owner).
type ownerRule struct {
	pattern *regexp.Regexp
	owners  []string
}

// sectionHeader matches a GitLab section: [Name], ^[Name] (optional),
// [Name][2] (approvals), then the section's default owners.
var sectionHeader = regexp.MustCompile(`^\^?\[([^\]]+)\](?:\[\d+\])?\s*(.*)$`)

// ParseCodeowners reads a CODEOWNERS file. Lines it cannot read (a
// pattern that cannot be matched) are skipped, as the forges skip them.
func ParseCodeowners(data []byte) *Codeowners {
	c := &Codeowners{sections: []ownerSection{{}}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if m := sectionHeader.FindStringSubmatch(line); m != nil {
			c.sections = append(c.sections, ownerSection{name: m[1], defaults: ownersOf(m[2])})
			continue
		}
		pattern, rest := splitPattern(line)
		re, ok := codeownersPattern(pattern)
		if !ok {
			continue
		}
		s := &c.sections[len(c.sections)-1]
		owners := ownersOf(rest)
		if len(owners) == 0 && s.name != "" {
			owners = s.defaults
		}
		s.rules = append(s.rules, ownerRule{pattern: re, owners: owners})
	}
	return c
}

// splitPattern cuts a line into its pattern, where "\ " is a space of
// the pattern, and the rest.
func splitPattern(line string) (string, string) {
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case ' ', '\t':
			return strings.ReplaceAll(line[:i], `\ `, " "), line[i+1:]
		}
	}
	return strings.ReplaceAll(line, `\ `, " "), ""
}

// ownersOf reads the owners of a line, up to a comment: @user, @org/team,
// or an e-mail address.
func ownersOf(s string) []string {
	var out []string
	for _, f := range strings.Fields(s) {
		if strings.HasPrefix(f, "#") {
			break
		}
		if strings.HasPrefix(f, "@") || strings.Contains(f, "@") {
			out = append(out, f)
		}
	}
	return out
}

// codeownersPattern turns a gitignore-style pattern into a regular
// expression over slash-separated paths from the repository root: a
// leading or inner slash anchors it at the root, otherwise it matches at
// any depth; a trailing slash, or a pattern that names a directory,
// matches everything under it, but a last segment with a * matches only
// at its own depth; * and ? stay within a path segment, ** spans
// segments.
func codeownersPattern(p string) (*regexp.Regexp, bool) {
	p = strings.TrimPrefix(p, `\`) // \#file: a pattern starting with #
	if p == "" {
		return nil, false
	}
	anchored := strings.Contains(strings.TrimSuffix(p, "/"), "/")
	p = strings.TrimPrefix(p, "/")
	dirOnly := strings.HasSuffix(p, "/")
	p = strings.TrimSuffix(p, "/")
	var b strings.Builder
	b.WriteString("^")
	if !anchored {
		b.WriteString("(?:.*/)?")
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '*' && i+1 < len(p) && p[i+1] == '*':
			i++
			if i+1 < len(p) && p[i+1] == '/' {
				i++
				b.WriteString("(?:.*/)?")
			} else {
				b.WriteString(".*")
			}
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '\\' && i+1 < len(p):
			i++
			b.WriteString(regexp.QuoteMeta(string(p[i])))
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	last := p[strings.LastIndex(p, "/")+1:]
	switch {
	case dirOnly:
		b.WriteString("/.*$")
	case strings.Contains(last, "*") && !strings.Contains(last, "**"):
		// docs/* owns the files in docs, not those below (GitHub's rule).
		b.WriteString("$")
	default:
		// A pattern that names a directory owns what is under it.
		b.WriteString("(?:/.*)?$")
	}
	re, err := regexp.Compile(b.String())
	return re, err == nil
}

// Owners returns the owners of a file (slash-separated, from the
// repository root): per section the last rule that matches, all sections
// together, each owner once, in order of appearance.
func (c *Codeowners) Owners(file string) []string {
	if c == nil {
		return nil
	}
	file = strings.TrimPrefix(path.Clean("/"+file), "/")
	var out []string
	for _, s := range c.sections {
		for _, r := range slices.Backward(s.rules) {
			if !r.pattern.MatchString(file) {
				continue
			}
			for _, o := range r.owners {
				if !slices.Contains(out, o) {
					out = append(out, o)
				}
			}
			break
		}
	}
	return out
}

// OwnersOf returns the owners of every file, each once, in the order the
// files and their rules name them.
func (c *Codeowners) OwnersOf(files []string) []string {
	var out []string
	for _, f := range files {
		for _, o := range c.Owners(f) {
			if !slices.Contains(out, o) {
				out = append(out, o)
			}
		}
	}
	return out
}

// maxCodeownersBytes bounds the CODEOWNERS file read: forges stop at 3 MB
// (GitHub); a file of the repository must not fill the run's memory.
const maxCodeownersBytes = 3 << 20

// ReadCodeowners reads the CODEOWNERS file of the checkout at dir, the
// first of CodeownersPaths that exists, and returns it with its path; nil
// and "" when there is none.
func ReadCodeowners(dir string) (*Codeowners, string, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, "", fmt.Errorf("reading CODEOWNERS: %w", err)
	}
	defer root.Close()
	for _, name := range CodeownersPaths {
		f, err := root.Open(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, name, fmt.Errorf("reading %s: %w", name, err)
		}
		data, err := io.ReadAll(io.LimitReader(f, maxCodeownersBytes+1))
		f.Close()
		if err != nil {
			return nil, name, fmt.Errorf("reading %s: %w", name, err)
		}
		if len(data) > maxCodeownersBytes {
			return nil, name, fmt.Errorf("reading %s: larger than %d MiB", name, maxCodeownersBytes>>20)
		}
		return ParseCodeowners(data), name, nil
	}
	return nil, "", nil
}

// Reviewers turns owners into the names a forge asks to review: users and
// teams (@org/team) keep their form, e-mail addresses, which no forge
// takes as a reviewer, are left out.
func Reviewers(owners []string) []string {
	var out []string
	for _, o := range owners {
		if strings.HasPrefix(o, "@") && len(o) > 1 && !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}
