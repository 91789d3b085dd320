//go:build integration

package gitops

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// sshGitServer serves the repositories of the local file system to git
// over ssh: it runs git-upload-pack and git-receive-pack for clients
// presenting the one authorised key.
type sshGitServer struct {
	addr    string
	hostKey ssh.PublicKey
	ln      net.Listener
	wg      sync.WaitGroup
}

// newSSHKey makes an ed25519 key and returns the signer and the OpenSSH
// PEM of the private key.
func newSSHKey(t *testing.T) (ssh.Signer, []byte) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return signer, pem.EncodeToMemory(block)
}

// startSSHGitServer starts a server on loopback that accepts clientKey.
func startSSHGitServer(t *testing.T, clientKey ssh.PublicKey) *sshGitServer {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("the ssh git server runs git: %v", err)
	}
	hostSigner, _ := newSSHKey(t)
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if bytes.Equal(key.Marshal(), clientKey.Marshal()) {
				return nil, nil
			}
			return nil, errors.New("key not authorised")
		},
	}
	cfg.AddHostKey(hostSigner)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &sshGitServer{addr: ln.Addr().String(), hostKey: hostSigner.PublicKey(), ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.serve(conn, cfg, gitPath)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *sshGitServer) serve(conn net.Conn, cfg *ssh.ServerConfig, gitPath string) {
	defer conn.Close()
	_, chans, reqs, err := ssh.NewServerConn(conn, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "session only")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			return
		}
		go s.session(ch, chReqs, gitPath)
	}
}

// session runs the one exec request of a git client: "git-upload-pack
// '/path'" or "git-receive-pack '/path'".
func (s *sshGitServer) session(ch ssh.Channel, reqs <-chan *ssh.Request, gitPath string) {
	defer ch.Close()
	for req := range reqs {
		if req.Type != "exec" {
			_ = req.Reply(false, nil)
			continue
		}
		var payload struct{ Command string }
		if err := ssh.Unmarshal(req.Payload, &payload); err != nil {
			_ = req.Reply(false, nil)
			return
		}
		service, path, ok := strings.Cut(payload.Command, " ")
		if !ok || (service != "git-upload-pack" && service != "git-receive-pack") {
			_ = req.Reply(false, nil)
			return
		}
		_ = req.Reply(true, nil)
		cmd := exec.Command(gitPath, strings.TrimPrefix(service, "git-"), strings.Trim(path, "'"))
		cmd.Stdin, cmd.Stdout, cmd.Stderr = ch, ch, ch.Stderr()
		status := uint32(0)
		if err := cmd.Run(); err != nil {
			status = 1
		}
		_ = ch.CloseWrite()
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], status)
		_, _ = ch.SendRequest("exit-status", false, b[:])
		return
	}
}

// sshFixture is a bare repository served over ssh, and a client key and
// known_hosts file for it.
type sshFixture struct {
	url, keyFile, knownHosts, bare string
	server                         *sshGitServer
}

func newSSHFixture(t *testing.T) sshFixture {
	t.Helper()
	fileURL := newRemote(t, map[string]string{"apps/web.yaml": "cpu: 1\n"})
	bare := strings.TrimPrefix(fileURL, "file://")
	clientSigner, clientPEM := newSSHKey(t)
	srv := startSSHGitServer(t, clientSigner.PublicKey())
	dir := t.TempDir()
	f := sshFixture{
		url:        fmt.Sprintf("ssh://git@%s%s", srv.addr, bare),
		keyFile:    filepath.Join(dir, "id_ed25519"),
		knownHosts: filepath.Join(dir, "known_hosts"),
		bare:       fileURL,
		server:     srv,
	}
	if err := os.WriteFile(f.keyFile, clientPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	writeKnownHosts(t, f.knownHosts, srv.addr, srv.hostKey)
	return f
}

func writeKnownHosts(t *testing.T, file, addr string, key ssh.PublicKey) {
	t.Helper()
	line := knownhosts.Line([]string{knownhosts.Normalize(addr)}, key)
	if err := os.WriteFile(file, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestSSHKeyAuthClonesAndPushes(t *testing.T) {
	ctx := t.Context()
	f := newSSHFixture(t)
	opts := testOptions(f.url)
	opts.SSHKeyFile, opts.KnownHostsFile = f.keyFile, f.knownHosts

	ws, err := Checkout(ctx, opts, t.TempDir())
	if err != nil {
		t.Fatalf("Checkout() over ssh error = %v", err)
	}
	hash, committed := writeAndCommit(t, ws, map[string]string{"apps/web.yaml": "cpu: 2\n"}, "Right-size web")
	if !committed {
		t.Fatal("no commit")
	}
	if err := ws.Push(ctx); err != nil {
		t.Fatalf("Push() over ssh error = %v", err)
	}
	got, commit := testbedtest.BranchFile(t, f.bare, nil, opts.PushBranch, "apps/web.yaml")
	if got != "cpu: 2\n" || commit.Hash.String() != hash {
		t.Errorf("pushed %s with %q, want %s with %q", commit.Hash, got, hash, "cpu: 2\n")
	}
}

func TestSSHRefusesUnverifiedHosts(t *testing.T) {
	f := newSSHFixture(t)
	otherHost, _ := newSSHKey(t)
	emptyKnownHosts := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(emptyKnownHosts, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wrongKnownHosts := filepath.Join(t.TempDir(), "known_hosts")
	writeKnownHosts(t, wrongKnownHosts, f.server.addr, otherHost.PublicKey())
	_, otherClientPEM := newSSHKey(t)
	otherClientKey := filepath.Join(t.TempDir(), "id_other")
	if err := os.WriteFile(otherClientKey, otherClientPEM, 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, key, knownHosts, want string
	}{
		{"host not in known_hosts", f.keyFile, emptyKnownHosts, "key is unknown"},
		{"host key differs from known_hosts", f.keyFile, wrongKnownHosts, "key mismatch"},
		{"no known_hosts file", f.keyFile, "", "needs a known_hosts file"},
		{"client key not authorised", otherClientKey, f.knownHosts, "unable to authenticate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := testOptions(f.url)
			opts.SSHKeyFile, opts.KnownHostsFile = tt.key, tt.knownHosts
			_, err := Checkout(t.Context(), opts, t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Checkout() error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}
