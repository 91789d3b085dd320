package main

import (
	"os"
	"testing"
)

// writeFile writes content to path, readable by the owner only.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
