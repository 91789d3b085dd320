package gitops

import (
	"errors"
	"net"
	"net/url"
	"strings"
)

// redacted is an error whose text has the credentials taken out. It still
// matches what the original matched with errors.Is, but does not unwrap to
// it, and errors.As finds only network errors in it, so the original text
// cannot leak.
type redacted struct {
	msg  string
	orig error
}

func (r *redacted) Error() string        { return r.msg }
func (r *redacted) Is(target error) bool { return errors.Is(r.orig, target) }

// As hands out only network errors, which name an address, never a URL
// with its user part, so that callers can tell an unreachable remote.
func (r *redacted) As(target any) bool {
	switch target.(type) {
	case **net.OpError, **net.DNSError:
		return errors.As(r.orig, target)
	default:
		return false
	}
}

// redact replaces every credential of opts in err's text. url.Parse errors
// quote the whole URL, user info included, and servers may echo it.
func redact(err error, opts Options) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	secrets := []string{opts.Token, opts.Forge.Token}
	if isSCPLike(opts.URL) {
		// user@host:path names a user, never a secret.
	} else if u, perr := url.Parse(opts.URL); perr == nil && u.User != nil {
		if p, ok := u.User.Password(); ok {
			secrets = append(secrets, p)
		} else {
			// A user part alone is a token.
			secrets = append(secrets, u.User.Username())
		}
	} else if i := strings.LastIndex(opts.URL, "@"); i > 0 {
		// An unparsable URL: hide everything before the host.
		secrets = append(secrets, opts.URL[:i])
	}
	changed := false
	for _, s := range secrets {
		if s != "" && strings.Contains(msg, s) {
			msg = strings.ReplaceAll(msg, s, "REDACTED")
			changed = true
		}
	}
	if !changed {
		return err
	}
	return &redacted{msg: msg, orig: err}
}
