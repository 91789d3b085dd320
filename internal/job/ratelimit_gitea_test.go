//go:build integration

package job

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/recommend-job/recommend-job/internal/forge"
)

// TestWriteBackGiteaRateLimited runs a grouped write-back against a real
// Gitea behind a proxy that, after the first pull request, answers every
// new one with a 429 asking for an hour: the first group's pull request
// opens, the others wait for the next run and say why, the forge is not
// asked again once it said to wait, and the run is not failed.
func TestWriteBackGiteaRateLimited(t *testing.T) {
	ctx := t.Context()
	b := newGroupsBed(t, []string{"blog", "pay", "shop"}, nil)
	target, err := url.Parse(b.srv.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var creates, limitedAfter atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if limitedAfter.Load() > 0 {
			limitedAfter.Add(1)
		}
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/pulls") && creates.Add(1) > 1 {
			limitedAfter.Store(1)
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	cfg := b.cfg
	cfg.Forge = newForge(t, forge.Options{Kind: forge.KindGitea, APIURL: srv.URL, Token: b.srv.Token()}, cfg.Git)

	p := shopsPlan(map[string]string{"blog": "300m", "pay": "350m", "shop": "390m"})
	if err := writeBack(ctx, newRun(cfg), p, slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))); err != nil {
		t.Fatalf("a rate-limited run failed: %v", err)
	}
	opened, waiting := 0, 0
	for _, g := range p.Groups {
		switch {
		case g.Git != nil && g.Git.PullRequest != nil && g.Git.PullRequest.Action == "created":
			opened++
		case strings.Contains(g.Waiting, "rate limit"):
			waiting++
		default:
			t.Errorf("group %s: git %+v, waiting %q; want its pull request opened or waiting for the rate limit", g.Name, g.Git, g.Waiting)
		}
	}
	if opened != 1 || waiting != 2 {
		t.Errorf("%d groups opened and %d wait, want 1 and 2", opened, waiting)
	}
	if n := len(b.openPRs(t)); n != 1 {
		t.Errorf("%d pull requests open on Gitea, want 1", n)
	}
	if creates.Load() != 2 {
		t.Errorf("the forge was asked to create %d pull requests, want 2: none after it said to wait", creates.Load())
	}
	if n := limitedAfter.Load() - 1; n > 0 {
		t.Errorf("the forge was sent %d requests after it said to wait an hour, want none", n)
	}
}
