package redact

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
)

// TestText takes out known secrets, long ones anywhere and short ones
// where they stand alone, and the user part of any http(s) URL.
func TestText(t *testing.T) {
	r := New("ghp_0123456789abcdef", "pw", "")
	tests := []struct{ name, in, want string }{
		{"long secret inside a word", "token=xghp_0123456789abcdefx", "token=xREDACTEDx"},
		{"short secret alone", "user:pw@host", "user:REDACTED@host"},
		{"short secret inside a word stays", "upward", "upward"},
		{"user part of an https URL", "clone https://bot:s3cret@git.example/r.git", "clone https://bot:REDACTED@git.example/r.git"},
		{"token as the user of an https URL", "clone https://t0k3n@git.example/r.git", "clone https://REDACTED@git.example/r.git"},
		{"ssh user stays", "clone ssh://git@git.example/r.git", "clone ssh://git@git.example/r.git"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.Text(tt.in); got != tt.want {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestSeal keeps what an error matches and the network errors in it, and
// nothing else of the original: no unwrapping to its text.
func TestSeal(t *testing.T) {
	r := New("s3cr3t-token")
	opErr := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("refused")}
	err := r.Seal(fmt.Errorf("sending s3cr3t-token: %w: %w", context.DeadlineExceeded, opErr))
	if err.Error() != "sending REDACTED: context deadline exceeded: dial tcp: refused" {
		t.Errorf("Seal() = %q", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) || errors.Unwrap(err) != nil {
		t.Errorf("Seal() matches the deadline %t, unwraps to %v; want it matched and nothing", errors.Is(err, context.DeadlineExceeded), errors.Unwrap(err))
	}
	var op *net.OpError
	if !errors.As(err, &op) {
		t.Error("Seal() hides the network error")
	}
	plain := errors.New("nothing secret")
	if got := r.Error(plain); got != plain { //nolint:errorlint // identity: Error returns such an error itself
		t.Errorf("Error() changed an error without secrets: %v", got)
	}
	if r.Seal(nil) != nil || r.Error(nil) != nil {
		t.Error("a nil error is not nil once redacted")
	}
}
