package job

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/render"
)

// TestWriteBackReportsSkippedFiles checks that a file above max-file-size
// is listed in the report and logged, and that the run renders the rest.
func TestWriteBackReportsSkippedFiles(t *testing.T) {
	url := testbedtest.FileRemote(t, map[string]string{
		"clusters/prod/web.yaml": webDeployment,
		"clusters/prod/big.yaml": "# " + strings.Repeat("x", 4096) + "\n",
	})
	cfg := Config{Path: "clusters", DryRun: true, RenderOptions: []render.Option{render.WithMaxFileSize(1024)},
		Git: gitops.Options{URL: url, BaseBranch: "main", PushBranch: "recommend-job/main",
			AuthorName: "recommend-job", AuthorEmail: "recommend-job@example.com"}}
	rep := webPlan("390m")
	var logs bytes.Buffer
	if err := writeBack(t.Context(), newRun(cfg), rep, slog.New(slog.NewJSONHandler(&logs, nil))); err != nil {
		t.Fatal(err)
	}
	if src := rep.Items[0].Source; src == nil || !src.Changed || src.Error != "" {
		t.Errorf("source = %+v, want web.yaml changed", src)
	}
	const reason = "clusters/prod/big.yaml is 4 KiB, above max-file-size 1Ki: not read"
	if s := rep.Git.Skipped; len(s) != 1 || s[0].File != "clusters/prod/big.yaml" || !strings.Contains(s[0].Reason, reason) {
		t.Errorf("git.skipped = %+v, want clusters/prod/big.yaml: %s", s, reason)
	}
	if !strings.Contains(logs.String(), `"msg":"file not read","file":"clusters/prod/big.yaml"`) {
		t.Errorf("logs do not name the skipped file:\n%s", logs.String())
	}
}
