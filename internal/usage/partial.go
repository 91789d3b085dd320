package usage

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// ErrPartial is wrapped by the error of a read one of whose answers
// carried a warning: Thanos and Mimir answer with what the stores they
// could reach hold, and warn that the rest is missing, so that a
// percentile of the answer would be one of part of the pods or part of
// the window. The namespace's history is then unavailable for the run.
var ErrPartial = errors.New("partial response")

// PartialError is the error of a query whose answer carried warnings.
type PartialError struct {
	// Query names what was asked: cpu, memory, oom, startup, ownership.
	Query     string
	Namespace string
	// Warning is the first warning, as the server wrote it, bounded and
	// with control characters replaced; Warnings counts them all.
	Warning  string
	Warnings int
}

func (e *PartialError) Error() string {
	// Thanos' warnings start with the same words.
	w := strings.TrimPrefix(e.Warning, "partial response: ")
	more := ""
	if e.Warnings > 1 {
		more = fmt.Sprintf(" (and %d more warnings)", e.Warnings-1)
	}
	return fmt.Sprintf("partial response: %s%s; querying %s in namespace %s", w, more, e.Query, e.Namespace)
}

func (e *PartialError) Unwrap() error { return ErrPartial }

// maxWarning bounds a warning kept in an error: it is the server's text,
// which the report, a pull request and the dashboard show.
const maxWarning = 300

// cleanWarning is w bounded to maxWarning bytes on a rune boundary, its
// control characters replaced by spaces, so that it stays one line.
func cleanWarning(w string) string {
	w = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(w, "?"))
	if len(w) <= maxWarning {
		return w
	}
	cut := maxWarning
	for cut > 0 && !utf8RuneStart(w[cut]) {
		cut--
	}
	return w[:cut] + "..."
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
