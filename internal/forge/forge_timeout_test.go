package forge

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/recommend-job/recommend-job/internal/gitops"
)

// TestForgeCallsEndAtTheForgeTimeout calls each forge kind's API on a
// server that takes every request and never answers: each call ends after
// the forge timeout with ErrTimeout, without the token.
func TestForgeCallsEndAtTheForgeTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	const token = "s3cret-forge-token"
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer srv.Close()
	defer close(stop)

	for _, kind := range []string{KindGitHub, KindGitLab, KindGitea} {
		t.Run(kind, func(t *testing.T) {
			f, err := New(Options{Kind: kind, APIURL: srv.URL, Token: token, Timeout: timeout}, gitops.Options{URL: "https://git.example.com/org/fleet.git"})
			if err != nil {
				t.Fatal(err)
			}
			calls := map[string]func(context.Context) error{
				"FindOpen": func(ctx context.Context) error { _, err := f.FindOpen(ctx, "head", "main"); return err },
				"Create": func(ctx context.Context) error {
					_, err := f.Create(ctx, NewPullRequest{Head: "head", Base: "main", Title: "t", Body: "b"})
					return err
				},
				"RequestReviewers": func(ctx context.Context) error { return f.RequestReviewers(ctx, 1, []string{"alice"}) },
				"CloseIssue":       func(ctx context.Context) error { return f.CloseIssue(ctx, 1) },
			}
			for name, call := range calls {
				start := time.Now()
				err := call(t.Context())
				took := time.Since(start)
				if !errors.Is(err, ErrTimeout) {
					t.Errorf("%s() error = %v, want ErrTimeout", name, err)
				}
				if took < timeout || took > timeout+5*time.Second {
					t.Errorf("%s() took %s, want about %s", name, took, timeout)
				}
				if err != nil && strings.Contains(err.Error(), token) {
					t.Errorf("%s() error shows the token: %v", name, err)
				}
			}
		})
	}
}
