//go:build integration

package gitops

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// TestSignSSH checks the SSHSIG signature with OpenSSH's own verifier, as
// git does for gpg.format=ssh.
func TestSignSSH(t *testing.T) {
	keygen, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Fatalf("ssh-keygen verifies the signature: %v", err)
	}
	signer, pemKey := newSSHKey(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(keyFile, pemKey, 0o600); err != nil {
		t.Fatal(err)
	}
	sig, payload := signedCommit(t, SigningSSH, keyFile)
	if !strings.HasPrefix(sig, "-----BEGIN SSH SIGNATURE-----\n") {
		t.Fatalf("signature = %q, want an SSH signature", sig)
	}
	sigFile := filepath.Join(dir, "commit.sig")
	if err := os.WriteFile(sigFile, []byte(sig), 0o600); err != nil {
		t.Fatal(err)
	}
	allowed := filepath.Join(dir, "allowed_signers")
	line := "recommend-job@example.com " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))) + "\n"
	if err := os.WriteFile(allowed, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(keygen, "-Y", "verify", "-f", allowed, "-I", "recommend-job@example.com", "-n", "git", "-s", sigFile)
	cmd.Stdin = strings.NewReader(payload)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -Y verify: %v\n%s", err, out)
	}
	// A changed payload must not verify.
	cmd = exec.Command(keygen, "-Y", "verify", "-f", allowed, "-I", "recommend-job@example.com", "-n", "git", "-s", sigFile)
	cmd.Stdin = strings.NewReader(payload + "tampered")
	if err := cmd.Run(); err == nil {
		t.Error("ssh-keygen verified a tampered payload")
	}
}
