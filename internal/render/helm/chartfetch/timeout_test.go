package chartfetch

import (
	"errors"
	"testing"
	"time"

	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// TestFetchTimeoutIsKeptForTheRun proves that a fetch from a repository
// that never answers ends after the fetch timeout, and that a later fetch
// from it in the same run fails at once instead of waiting again.
func TestFetchTimeoutIsKeptForTheRun(t *testing.T) {
	const timeout = 300 * time.Millisecond
	addr := testbedtest.SilentListener(t)
	tests := []struct {
		name string
		refs []ChartRef
	}{
		{name: "chart repository", refs: []ChartRef{
			{RepoURL: "http://" + addr + "/charts", Chart: "web"},
			{RepoURL: "http://" + addr + "/charts", Chart: "worker"},
		}},
		{name: "OCI registry", refs: []ChartRef{
			{RepoURL: "oci://" + addr + "/charts", Chart: "web", Version: "^1.0.0"},
			{RepoURL: "oci://" + addr + "/charts", Chart: "web", Version: "~1.2.0"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLoader(WithFetchTimeout(timeout), WithPlainHTTP())
			for i, ref := range tt.refs {
				start := time.Now()
				_, err := l.Fetch(t.Context(), ref)
				took := time.Since(start)
				if !errors.Is(err, ErrFetchTimeout) {
					t.Fatalf("Fetch(%s) error = %v, want ErrFetchTimeout", ref, err)
				}
				// Generous on a loaded machine; without the timeout the
				// fetch would wait for the test's deadline.
				if i == 0 && (took < timeout || took > timeout+5*time.Second) {
					t.Errorf("first Fetch(%s) took %s, want about %s", ref, took, timeout)
				}
				if i > 0 && took > timeout/2 {
					t.Errorf("Fetch(%s) again took %s, want the kept failure at once", ref, took)
				}
			}
		})
	}
}
