package gitops

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/crypto/ssh"

	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// signedCommit makes one signed commit with opts' signing key on a new
// remote and returns the pushed commit's signature and signed payload.
func signedCommit(t *testing.T, format, keyFile string) (signature, payload string) {
	t.Helper()
	ctx := context.Background()
	url := newRemote(t, map[string]string{"a.yaml": "a: 1\n"})
	opts := testOptions(url)
	opts.SigningFormat, opts.SigningKeyFile = format, keyFile
	ws, err := Checkout(ctx, opts, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeAndCommit(t, ws, map[string]string{"a.yaml": "a: 2\n"}, "signed")
	if err := ws.Push(ctx); err != nil {
		t.Fatal(err)
	}
	_, commit := testbedtest.BranchFile(t, url, nil, opts.PushBranch, "a.yaml")
	if commit.PGPSignature == "" {
		t.Fatalf("commit %s is not signed", commit.Hash)
	}
	unsigned := &plumbing.MemoryObject{}
	if err := commit.EncodeWithoutSignature(unsigned); err != nil {
		t.Fatal(err)
	}
	r, _ := unsigned.Reader()
	var b bytes.Buffer
	_, _ = b.ReadFrom(r)
	return commit.PGPSignature, b.String()
}

func TestSignOpenPGP(t *testing.T) {
	entity, err := openpgp.NewEntity("recommend-job", "", "recommend-job@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	var priv, pub bytes.Buffer
	w, _ := armor.Encode(&priv, openpgp.PrivateKeyType, nil)
	if err := entity.SerializePrivate(w, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	w, _ = armor.Encode(&pub, openpgp.PublicKeyType, nil)
	_ = entity.Serialize(w)
	w.Close()
	keyFile := filepath.Join(t.TempDir(), "signing.asc")
	if err := os.WriteFile(keyFile, priv.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}

	sig, payload := signedCommit(t, SigningOpenPGP, keyFile)
	ring, err := openpgp.ReadArmoredKeyRing(&pub)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := openpgp.CheckArmoredDetachedSignature(ring, strings.NewReader(payload), strings.NewReader(sig), nil)
	if err != nil {
		t.Fatalf("signature does not verify: %v", err)
	}
	if signer.PrimaryKey.KeyId != entity.PrimaryKey.KeyId {
		t.Errorf("signed by %X, want %X", signer.PrimaryKey.KeyId, entity.PrimaryKey.KeyId)
	}
}

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

func TestLoadSignerRejects(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	_ = os.WriteFile(garbage, []byte("not a key"), 0o600)
	tests := []struct{ format, file, want string }{
		{SigningOpenPGP, garbage, "parsing openpgp signing key"},
		{SigningSSH, garbage, "parsing ssh signing key"},
		{"x509", garbage, `signing format must be openpgp or ssh, got "x509"`},
		{SigningSSH, filepath.Join(dir, "missing"), "reading signing key"},
	}
	for _, tt := range tests {
		if _, err := loadSigner(tt.format, tt.file); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("loadSigner(%s, %s) error = %v, want %q", tt.format, filepath.Base(tt.file), err, tt.want)
		}
	}
}
