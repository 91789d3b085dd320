package config

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/ssh"
)

// sshKeyFiles writes an ssh private key and an empty known_hosts file,
// which an ssh git-url needs to load, and returns their paths.
func sshKeyFiles(t *testing.T) (key, knownHosts string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	key, knownHosts = filepath.Join(dir, "id"), filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(key, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(knownHosts, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return key, knownHosts
}

// TestLoadChecksGitAndForgeSettingsFirst checks that Load parses the
// settings a run needs mid-way (the forge's repository, the signing key,
// the ssh key) and fails on a bad one, naming its key, before anything
// is contacted: neither the forge nor the repository hears of the run.
func TestLoadChecksGitAndForgeSettingsFirst(t *testing.T) {
	var contacted atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		contacted.Add(1)
		http.Error(w, "not here", http.StatusNotFound)
	}))
	defer srv.Close()
	key, knownHosts := sshKeyFiles(t)
	missing := filepath.Join(t.TempDir(), "absent.asc")
	notAKey := filepath.Join(t.TempDir(), "key.asc")
	if err := os.WriteFile(notAKey, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	forgeArgs := []string{"--forge=gitea", "--forge-api-url=" + srv.URL, "--forge-token=ftok"}
	tests := []struct {
		name string
		args []string
		want string // "" when valid
	}{
		{"forge repository owner/name", append([]string{"--forge-repository=org/fleet"}, forgeArgs...), ""},
		{"forge repository without an owner", append([]string{"--forge-repository=owner-only"}, forgeArgs...),
			`forge-repository: forge: repository "owner-only" is not owner/name`},
		{"forge repository from a git url of one segment", append([]string{"--git-url=" + srv.URL + "/fleet.git"}, forgeArgs...),
			`forge-repository: forge: repository "fleet" is not owner/name`},
		{"signing key missing", []string{"--git-signing-key-file=" + missing}, "git-signing-key-file: reading signing key:"},
		{"signing key unreadable", []string{"--git-signing-key-file=" + notAKey}, "git-signing-key-file: parsing openpgp signing key:"},
		{"ssh signing key unreadable", []string{"--git-signing-format=ssh", "--git-signing-key-file=" + notAKey}, "git-signing-key-file: parsing ssh signing key:"},
		{"ssh key", []string{"--git-url=ssh://git@" + strings.TrimPrefix(srv.URL, "http://") + "/org/fleet.git",
			"--git-ssh-key-file=" + key, "--git-known-hosts-file=" + knownHosts}, ""},
		{"ssh key unreadable", []string{"--git-url=git@git.example:org/fleet.git", "--git-ssh-key-file=" + notAKey, "--git-known-hosts-file=" + knownHosts},
			"git-ssh-key-file: reading ssh key file:"},
		{"known_hosts missing", []string{"--git-url=git@git.example:org/fleet.git", "--git-ssh-key-file=" + key, "--git-known-hosts-file=" + missing},
			"git-known-hosts-file: reading known_hosts file:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--prometheus-url=" + srv.URL, "--git-url=" + srv.URL + "/org/fleet.git"}, tt.args...)
			cfg, err := Parse(args, io.Discard)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Parse() error = %v, want none", err)
			case tt.want == "" && cfg.ForgeOptions().Enabled() && cfg.ForgeClient() == nil:
				t.Error("Parse() built no forge client, want the run's")
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Parse() error = %v, want one containing %q", err, tt.want)
			}
			if n := contacted.Load(); n != 0 {
				t.Errorf("Load sent %d requests, want none", n)
			}
		})
	}
}
