//go:build integration

package testbed_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

func TestGiteaServesCreatedRepository(t *testing.T) {
	ctx := t.Context()
	g := testbedtest.Gitea(t)

	url, err := g.CreateRepo(ctx, "fleet", map[string]string{"apps/web.yaml": "cpu: 1\n"})
	if err != nil {
		t.Fatalf("CreateRepo() error = %v", err)
	}
	if want := g.URL + g.Username + "/fleet.git"; url != want {
		t.Errorf("clone url = %q, want %q", url, want)
	}
	repo, err := git.PlainCloneContext(ctx, t.TempDir(), false, &git.CloneOptions{
		URL: url, ReferenceName: plumbing.NewBranchReferenceName("main"), SingleBranch: true,
		Auth: &githttp.BasicAuth{Username: g.Username, Password: g.Password()},
	})
	if err != nil {
		t.Fatalf("clone from gitea: %v", err)
	}
	head, _ := repo.Head()
	commit, err := repo.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	f, err := commit.File("apps/web.yaml")
	if err != nil {
		t.Fatalf("apps/web.yaml not in the pushed commit: %v", err)
	}
	if got, _ := f.Contents(); got != "cpu: 1\n" {
		t.Errorf("apps/web.yaml = %q, want %q", got, "cpu: 1\n")
	}

	// The token authenticates the API; a wrong one does not.
	for _, tt := range []struct {
		token string
		want  int
	}{{g.Token(), http.StatusOK}, {"0000000000000000000000000000000000000000", http.StatusUnauthorized}} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.APIURL()+"/api/v1/user", nil)
		req.Header.Set("Authorization", "token "+tt.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("GET /api/v1/user with token %s...: status %d, want %d", tt.token[:4], resp.StatusCode, tt.want)
		}
	}
	if strings.Contains(g.URL, g.Password()) {
		t.Errorf("gitea url %q holds the password", g.URL)
	}
}
