package plan

import (
	"strings"
	"unicode"
)

// Line makes s a single line of visible text: invalid UTF-8 becomes
// U+FFFD; control characters (line feeds and carriage returns among them),
// Unicode line and paragraph separators, and bidirectional controls, which
// can make text read differently from what it says, become spaces; runs of
// white space collapse to one space. Every view of a plan shows text from
// the cluster or the repository through it (the table, the commit message,
// the pull request body), so that such text can never start a line of its
// own, such as a trailer, a heading or a table row, nor drive a terminal.
func Line(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.In(r, unicode.Zl, unicode.Zp, unicode.Bidi_Control) {
			return ' '
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}
