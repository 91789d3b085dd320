// Package redact takes credentials out of the text of errors: those it is
// told (tokens, passwords) and the user part of any http(s) URL quoted in
// them. The git workspace and the forge clients both pass their errors
// through it, so that no credential reaches a log, a report or a plan.
package redact

import (
	"errors"
	"net"
	"net/url"
	"regexp"
	"sort"
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

// minSecretLength is the length from which a secret is taken out of text
// wherever it occurs, even inside a longer word. A shorter one is taken
// out only where it stands alone, between characters no token or
// base64 text has (spaces, quotes, ':', '@', line ends): a one-letter
// password must not blank out every "a" of a message, and a secret that
// short is not hidden inside other text anyway. Real tokens (GitHub's,
// GitLab's, Gitea's) are far longer.
const minSecretLength = 8

// redactedText replaces a secret.
const redactedText = "REDACTED"

// userinfo matches the user part of an http(s) URL quoted in text: a user
// name alone there is a token (https://TOKEN@host/, as GitHub documents),
// and with a password the password is the secret. The user part of any
// other URL, such as the "git" of ssh://git@host/, names an account and
// is left alone.
var userinfo = regexp.MustCompile(`(?i)\bhttps?://([^\s/?#@]+)@`)

// Redactor takes known secrets out of text.
type Redactor struct {
	// secrets, longest first, so that a secret holding another is
	// replaced whole.
	secrets []string
}

// New returns a Redactor for the non-empty secrets.
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	seen := map[string]bool{}
	for _, s := range secrets {
		if s != "" && !seen[s] {
			seen[s] = true
			r.secrets = append(r.secrets, s)
		}
	}
	sort.SliceStable(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	return r
}

// UserSecret is the secret in an http(s) URL's user part: the password,
// or a user name alone, which is a token; "" without a user part.
func UserSecret(u *url.URL) string {
	if u.User == nil {
		return ""
	}
	if p, ok := u.User.Password(); ok {
		return p
	}
	return u.User.Username()
}

// BeforeHost is everything before the host of a URL that does not parse,
// where its credentials would be; "" without an @.
func BeforeHost(raw string) string {
	if i := strings.LastIndex(raw, "@"); i > 0 {
		return raw[:i]
	}
	return ""
}

// Text returns s with the user part of every http(s) URL and every known
// secret replaced; see minSecretLength for short secrets.
func (r *Redactor) Text(s string) string {
	s = userinfo.ReplaceAllStringFunc(s, func(m string) string {
		scheme, rest, _ := strings.Cut(m, "://")
		if user, _, ok := strings.Cut(rest, ":"); ok {
			return scheme + "://" + user + ":" + redactedText + "@"
		}
		return scheme + "://" + redactedText + "@"
	})
	for _, secret := range r.secrets {
		if len(secret) >= minSecretLength {
			s = strings.ReplaceAll(s, secret, redactedText)
		} else {
			s = replaceWord(s, secret)
		}
	}
	return s
}

// replaceWord replaces secret in s where neither neighbour is a token
// character.
func replaceWord(s, secret string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, secret)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(secret)
		if (i == 0 || !tokenByte(s[i-1])) && (end == len(s) || !tokenByte(s[end])) {
			b.WriteString(s[:i])
			b.WriteString(redactedText)
		} else {
			b.WriteString(s[:i+1])
			end = i + 1
		}
		s = s[end:]
	}
}

// tokenByte reports whether c can be part of a token, a password in a URL
// or base64 text.
func tokenByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+/=%", c) >= 0
}

// Error returns err with its text redacted, or err itself when its text
// holds no secret.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := r.Text(err.Error())
	if msg == err.Error() {
		return err
	}
	return &redacted{msg: msg, orig: err}
}

// Seal returns err with its text redacted, always behind redacted: a
// forge client's error holds the HTTP response, and through it the
// request with its Authorization header, for anyone who unwraps it.
func (r *Redactor) Seal(err error) error {
	if err == nil {
		return nil
	}
	return &redacted{msg: r.Text(err.Error()), orig: err}
}
