package gitops

import (
	"errors"
	"net/url"
	"strings"
)

// redact replaces every credential of opts in err's text. url.Parse
// errors quote the whole URL, user info included.
func redact(err error, opts Options) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	secrets := []string{opts.Token}
	if u, perr := url.Parse(opts.URL); perr == nil && u.User != nil {
		if p, ok := u.User.Password(); ok {
			secrets = append(secrets, p)
		}
	} else if i := strings.Index(opts.URL, "@"); i > 0 {
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
	return errors.New(msg)
}
