package gitops

import (
	"bytes"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-git/v5"
	"golang.org/x/crypto/ssh"
)

// Signing formats.
const (
	SigningOpenPGP = "openpgp"
	SigningSSH     = "ssh"
)

// loadSigner reads the signing key of format from file; nil when file is
// empty. Errors name the file's role, never its content.
func loadSigner(format, file string) (git.Signer, error) {
	if file == "" {
		return nil, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading signing key: %w", err)
	}
	switch format {
	case "", SigningOpenPGP, "gpg":
		entities, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("parsing openpgp signing key: %w", err)
		}
		if len(entities) != 1 {
			return nil, fmt.Errorf("openpgp signing key file holds %d keys, want exactly one", len(entities))
		}
		if entities[0].PrivateKey == nil || entities[0].PrivateKey.Encrypted {
			return nil, fmt.Errorf("openpgp signing key: need an unencrypted private key")
		}
		return pgpSigner{entities[0]}, nil
	case SigningSSH:
		key, err := ssh.ParsePrivateKey(data)
		if err != nil {
			return nil, fmt.Errorf("parsing ssh signing key: %w", err)
		}
		return sshSigner{key}, nil
	default:
		return nil, fmt.Errorf("signing format must be openpgp or ssh, got %q", format)
	}
}

// pgpSigner makes the armored detached signature git verifies with gpg.
type pgpSigner struct{ entity *openpgp.Entity }

func (s pgpSigner) Sign(message io.Reader) ([]byte, error) {
	var b bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&b, s.entity, message, nil); err != nil {
		return nil, fmt.Errorf("signing commit: %w", err)
	}
	return b.Bytes(), nil
}

// sshSigner makes the SSHSIG signature (OpenSSH's PROTOCOL.sshsig) that git
// verifies with gpg.format=ssh, in the "git" namespace.
type sshSigner struct{ key ssh.Signer }

func (s sshSigner) Sign(message io.Reader) ([]byte, error) {
	const namespace, hashAlg = "git", "sha512"
	h := sha512.New()
	if _, err := io.Copy(h, message); err != nil {
		return nil, fmt.Errorf("signing commit: %w", err)
	}
	var signed bytes.Buffer
	signed.WriteString("SSHSIG")
	writeSSHString(&signed, []byte(namespace))
	writeSSHString(&signed, nil) // reserved
	writeSSHString(&signed, []byte(hashAlg))
	writeSSHString(&signed, h.Sum(nil))
	algo := ""
	if s.key.PublicKey().Type() == ssh.KeyAlgoRSA {
		// ssh-rsa means SHA-1, which OpenSSH no longer accepts.
		algo = ssh.KeyAlgoRSASHA512
	}
	var sig *ssh.Signature
	var err error
	if as, ok := s.key.(ssh.AlgorithmSigner); ok && algo != "" {
		sig, err = as.SignWithAlgorithm(nil, signed.Bytes(), algo)
	} else {
		sig, err = s.key.Sign(nil, signed.Bytes())
	}
	if err != nil {
		return nil, fmt.Errorf("signing commit: %w", err)
	}
	var blob bytes.Buffer
	blob.WriteString("SSHSIG")
	_ = binary.Write(&blob, binary.BigEndian, uint32(1))
	writeSSHString(&blob, s.key.PublicKey().Marshal())
	writeSSHString(&blob, []byte(namespace))
	writeSSHString(&blob, nil)
	writeSSHString(&blob, []byte(hashAlg))
	writeSSHString(&blob, ssh.Marshal(sig))

	enc := base64.StdEncoding.EncodeToString(blob.Bytes())
	var out bytes.Buffer
	out.WriteString("-----BEGIN SSH SIGNATURE-----\n")
	for len(enc) > 70 {
		out.WriteString(enc[:70] + "\n")
		enc = enc[70:]
	}
	out.WriteString(enc + "\n-----END SSH SIGNATURE-----\n")
	return out.Bytes(), nil
}

func writeSSHString(b *bytes.Buffer, s []byte) {
	_ = binary.Write(b, binary.BigEndian, uint32(len(s)))
	b.Write(s)
}
