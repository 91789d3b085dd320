//go:build integration

package job

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/recommend-job/recommend-job/internal/forge"
	"github.com/recommend-job/recommend-job/internal/plan"
)

// TestWriteBackGiteaStuckCreate puts a proxy in front of a real Gitea
// that holds one group's pull request creation without ever answering,
// as Gitea did when it choked on a CODEOWNERS file. That group fails after
// forge-timeout; the other groups' pull requests are opened. The stuck
// group saves the most, so it goes first: without a timeout the run would
// wait on it until its deadline, and open none.
func TestWriteBackGiteaStuckCreate(t *testing.T) {
	const forgeTimeout = 3 * time.Second
	b := newGroupsBed(t, []string{"blog", "pay", "shop"}, nil)
	stuck := groupBranch("pay")

	target, err := url.Parse(b.srv.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	backend := httputil.NewSingleHostReverseProxy(target)
	held := make(chan struct{}, 8)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/pulls") {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			var pr struct{ Head string }
			if json.Unmarshal(body, &pr) == nil && pr.Head == stuck {
				held <- struct{}{}
				<-r.Context().Done() // never answers; the client gives up
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		backend.ServeHTTP(w, r)
	}))
	defer proxy.Close()

	cfg := b.cfg
	cfg.Forge = newForge(t, forge.Options{Kind: forge.KindGitea, APIURL: proxy.URL, Token: b.srv.Token(), Timeout: forgeTimeout}, cfg.Git)
	// The run's own deadline, far beyond the forge's timeout.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	p := shopsPlan(map[string]string{"blog": "300m", "pay": "100m", "shop": "390m"})
	start := time.Now()
	err = writeBack(ctx, newRun(cfg), p, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	took := time.Since(start)
	t.Logf("writeBack() took %s with forge-timeout %s: %v", took, forgeTimeout, err)

	if len(held) != 1 {
		t.Fatalf("the proxy held %d pull request creations of %s, want 1", len(held), stuck)
	}
	if !errors.Is(err, forge.ErrTimeout) || !strings.Contains(err.Error(), "group namespace/pay:") {
		t.Errorf("writeBack() error = %v, want group namespace/pay failed with ErrForgeTimeout", err)
	}
	for _, other := range []string{"blog", "shop"} {
		if err != nil && strings.Contains(err.Error(), "group namespace/"+other) {
			t.Errorf("writeBack() error = %v, want group namespace/%s unaffected", err, other)
		}
	}
	// Time for the other groups' pushes and calls; without the bound the
	// run would wait until its deadline.
	if limit := forgeTimeout + time.Minute; took > limit {
		t.Errorf("writeBack() took %s, want it to end well within %s", took, limit)
	}
	prs := b.openPRs(t)
	if prs[stuck] != nil {
		t.Errorf("a pull request is open on %s, want none: its creation never reached Gitea", stuck)
	}
	for _, g := range p.Groups {
		ns := strings.TrimPrefix(g.Name, "namespace/")
		if ns == "pay" {
			if g.Git != nil && g.Git.PullRequest != nil {
				t.Errorf("group %s: pull request %+v, want none", g.Name, g.Git.PullRequest)
			}
			continue
		}
		pr := prs[groupBranch(ns)]
		if pr == nil || g.Git == nil || g.Git.PullRequest == nil || g.Git.PullRequest.Action != plan.PRCreated || int64(g.Git.PullRequest.Number) != pr.Index {
			t.Errorf("group %s: git %+v; open pull request %v, want one created", g.Name, g.Git, pr)
		}
	}
}
