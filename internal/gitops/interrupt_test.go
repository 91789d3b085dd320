//go:build integration

package gitops

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/recommend-job/recommend-job/internal/testbed"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// TestPushOutcomeIsTheRemotes interrupts pushes where a run can be
// interrupted, and checks that Push reports what the remote then holds.
func TestPushOutcomeIsTheRemotes(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("the git server needs git: %v", err)
	}
	tests := []struct {
		name string
		// receivePack serves a push: backend is the real git server, and
		// cancel stops the run's context.
		receivePack func(w http.ResponseWriter, r *http.Request, backend http.Handler, cancel context.CancelFunc)
		// cancelFirst cancels the run before Push is called.
		cancelFirst bool
		wantErr     string // empty: pushed
	}{
		{
			name: "SIGTERM while the server takes the push: the push finishes",
			receivePack: func(w http.ResponseWriter, r *http.Request, backend http.Handler, cancel context.CancelFunc) {
				cancel()
				time.Sleep(300 * time.Millisecond)
				backend.ServeHTTP(w, r)
			},
		},
		{
			name: "the answer is lost after the server took the branch: pushed",
			receivePack: func(w http.ResponseWriter, r *http.Request, backend http.Handler, _ context.CancelFunc) {
				backend.ServeHTTP(httptest.NewRecorder(), r)
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close()
				}
			},
		},
		{
			name: "the connection drops before the server took it: not pushed",
			receivePack: func(w http.ResponseWriter, _ *http.Request, _ http.Handler, _ context.CancelFunc) {
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close()
				}
			},
			wantErr: "pushing recommend-job/main to http://",
		},
		{
			name:        "SIGTERM before the push: nothing is pushed",
			cancelFirst: true,
			wantErr:     "context canceled",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fileURL := newRemote(t, map[string]string{"a.yaml": "a: 1\n"})
			bare := strings.TrimPrefix(fileURL, "file://")
			backend := testbed.NewGitHandler(gitPath, filepath.Dir(bare), "bot", "s3cret", nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack") && tt.receivePack != nil {
					tt.receivePack(w, r, backend, cancel)
					return
				}
				backend.ServeHTTP(w, r)
			}))
			defer srv.Close()
			opts := testOptions(srv.URL + "/" + filepath.Base(bare))
			opts.Username, opts.Token = "bot", "s3cret"

			ws, err := Checkout(ctx, opts, t.TempDir())
			if err != nil {
				t.Fatalf("Checkout() error = %v", err)
			}
			hash, _ := writeAndCommit(t, ws, map[string]string{"a.yaml": "a: 2\n"}, "change")
			if tt.cancelFirst {
				cancel()
			}
			err = ws.Push(ctx)
			auth := &githttp.BasicAuth{Username: "bot", Password: "s3cret"}
			heads, lerr := ws.remoteHeads(context.Background())
			if lerr != nil {
				t.Fatal(lerr)
			}
			onRemote := heads[plumbing.NewBranchReferenceName(opts.PushBranch)].String() == hash
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Push() error = %v, want the push reported done", err)
				}
				if got, _ := testbedtest.BranchFile(t, opts.URL, auth, opts.PushBranch, "a.yaml"); got != "a: 2\n" {
					t.Errorf("remote a.yaml = %q, want the pushed change", got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Push() error = %v, want one containing %q", err, tt.wantErr)
			}
			if onRemote {
				t.Errorf("Push() failed but the remote holds the commit")
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("Push() error shows the token: %v", err)
			}
		})
	}
}
