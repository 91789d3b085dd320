package main

import (
	"bufio"
	"io"
	"log/slog"
	"os"
	"strings"
)

// maxLibraryTexts bounds how many distinct lines of library output a run
// logs: a tenant's kustomization builds many times, and says the same.
const maxLibraryTexts = 100

// logLibraryOutput sends what libraries print on os.Stderr themselves
// (kustomize's deprecation warnings are written there, past any logger)
// to the process's default slog logger, one JSON line per distinct text,
// so that the job's stderr holds only its structured log. It returns the
// function that puts os.Stderr back and waits for the last line; with no
// pipe to be had, output stays as it was.
func logLibraryOutput() (restore func()) {
	r, w, err := os.Pipe()
	if err != nil {
		slog.Warn("library output is not logged as JSON", "error", err)
		return func() {}
	}
	orig := os.Stderr
	os.Stderr = w
	done := make(chan struct{})
	go func() {
		defer close(done)
		forwardLines(r, maxLibraryTexts)
	}()
	return func() {
		os.Stderr = orig
		_ = w.Close()
		<-done
		_ = r.Close()
	}
}

// forwardLines logs each distinct non-empty line of r, up to max of them,
// and reads r to its end.
func forwardLines(r io.Reader, max int) {
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		text := strings.TrimSpace(sc.Text())
		if text == "" || seen[text] {
			continue
		}
		if len(seen) == max {
			slog.Warn("more library output than is logged; the rest is dropped", "logged", max)
			break
		}
		seen[text] = true
		slog.Warn("printed by a library", "text", text)
	}
	_, _ = io.Copy(io.Discard, r)
}
