package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The project's pages: each relative link of theirs must name a file that
// exists and, with a #fragment into a Markdown file, one of its headings.
// The settings table moved out of the README once; its links moved with it.
var projectPages = []string{
	"README.md", "ARCHITECTURE.md", "BENCHMARKS.md", "docs/*.md", "charts/recommend-job/README.md",
}

var (
	linkRE        = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpanRE    = regexp.MustCompile("`[^`]*`")
	headingRE     = regexp.MustCompile(`^#{1,6} +(.*?) *#* *$`)
	headingLinkRE = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	schemeRE      = regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`)
)

func TestDocumentedLinksResolve(t *testing.T) {
	root := "../.."
	var pages []string
	for _, pattern := range projectPages {
		matches, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil || len(matches) == 0 {
			t.Fatalf("no page matches %s (%v)", pattern, err)
		}
		pages = append(pages, matches...)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(file string) map[string]bool {
		if a, ok := anchors[file]; ok {
			return a
		}
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		anchors[file] = headingAnchors(string(text))
		return anchors[file]
	}
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, page)
		for _, line := range proseLines(string(text)) {
			for _, m := range linkRE.FindAllStringSubmatch(codeSpanRE.ReplaceAllString(line, ""), -1) {
				target := m[1]
				if schemeRE.MatchString(target) {
					continue
				}
				path, fragment, _ := strings.Cut(target, "#")
				file := page
				if path != "" {
					file = filepath.Join(filepath.Dir(page), path)
					if _, err := os.Stat(file); err != nil {
						t.Errorf("%s: link %s: no such file", name, target)
						continue
					}
				}
				if fragment != "" && strings.HasSuffix(file, ".md") && !anchorsOf(file)[fragment] {
					t.Errorf("%s: link %s: no heading makes the anchor #%s", name, target, fragment)
				}
			}
		}
	}
}

// proseLines are the lines of a Markdown text outside fenced code blocks.
func proseLines(text string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, line)
		}
	}
	return out
}

// headingAnchors are the anchors GitHub gives a Markdown text's headings:
// the heading's text without its links' targets, lower-cased, with what is
// neither a letter, a digit, a space, a hyphen nor an underscore left out
// and spaces made hyphens; a repeated anchor gets -1, -2, ...
func headingAnchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range proseLines(text) {
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		heading := strings.ToLower(headingLinkRE.ReplaceAllString(m[1], "$1"))
		var b strings.Builder
		for _, r := range heading {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		anchor := b.String()
		if n := seen[anchor]; n > 0 {
			out[anchor+"-"+strconv.Itoa(n)] = true
		} else {
			out[anchor] = true
		}
		seen[anchor]++
	}
	return out
}
