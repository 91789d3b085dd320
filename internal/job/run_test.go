package job

import (
	"testing"

	"github.com/recommend-job/recommend-job/internal/forge"
	"github.com/recommend-job/recommend-job/internal/gitops"
)

// newRun is a run of cfg with an empty ledger, as Run starts one.
func newRun(cfg Config) *run { return &run{Config: cfg, ledger: &ledger{}} }

// newForge is the forge's client for the repository of git, as config
// builds it once for a run.
func newForge(t *testing.T, opts forge.Options, git gitops.Options) forge.Forge {
	t.Helper()
	f, err := forge.New(opts, git)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
