package gitops

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/go-git/go-git/v5/plumbing"

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
