package gitops

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
)

// scpLike matches git's scp-like syntax, user@host:path, which is not a URL.
var scpLike = regexp.MustCompile(`^(?:([^@/:]+)@)?([^@/:]+):([^/].*)?$`)

// isSCPLike reports whether raw is an scp-like ssh address.
func isSCPLike(raw string) bool {
	return scpLike.MatchString(raw) && !regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*://`).MatchString(raw)
}

// authFor returns the repository URL without credentials, and the auth
// method. Over HTTP(S), credentials embedded in the URL move to basic auth
// so that they never show up in an error or log line that quotes the URL;
// a URL with only a user part (https://TOKEN@host/...) carries a token, as
// GitHub documents. Over ssh, a key file and a known_hosts file are
// required: there is no default that trusts any host key.
func authFor(opts Options) (string, transport.AuthMethod, error) {
	if isSCPLike(opts.URL) {
		m := scpLike.FindStringSubmatch(opts.URL)
		return sshAuth(opts.URL, m[1], m[2]+":22", opts)
	}
	u, err := url.Parse(opts.URL)
	if err != nil {
		return "", nil, fmt.Errorf("parsing git url: %w", redact(err, opts))
	}
	if u.Scheme == "ssh" {
		user := ""
		if u.User != nil {
			user = u.User.Username()
		}
		host := u.Host
		if u.Port() == "" {
			host = net.JoinHostPort(u.Hostname(), "22")
		}
		return sshAuth(u.String(), user, host, opts)
	}
	username, token := httpCredentials(u, opts)
	u.User = nil
	clean := u.String()
	if token == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return clean, nil, nil
	}
	return clean, &githttp.BasicAuth{Username: username, Password: token}, nil
}

// httpCredentials is the user name and token of basic auth for u: the
// options' token, else the URL's password, else a URL's user part alone,
// which is a token. The user name is the options', else the URL's when it
// has a password, else "git", which the forges accept with a token.
func httpCredentials(u *url.URL, opts Options) (username, token string) {
	username, token = opts.Username, opts.Token
	if u.User != nil {
		p, hasPassword := u.User.Password()
		switch {
		case token != "":
		case hasPassword:
			token = p
			if username == "" {
				username = u.User.Username()
			}
		default:
			token = u.User.Username()
		}
	}
	if username == "" {
		username = "git"
	}
	return username, token
}

// sshAuth authenticates with the key in opts.SSHKeyFile and accepts only
// the host keys opts.KnownHostsFile lists for hostPort; the algorithms
// offered are those of the listed keys, so that a host with several keys
// presents one that can be checked.
func sshAuth(clean, user, hostPort string, opts Options) (string, transport.AuthMethod, error) {
	if opts.SSHKeyFile == "" {
		return "", nil, errors.New("ssh url needs an ssh key file")
	}
	if opts.KnownHostsFile == "" {
		return "", nil, errors.New("ssh url needs a known_hosts file: host keys are never trusted unchecked")
	}
	if user == "" {
		user = "git"
	}
	keys, err := gitssh.NewPublicKeysFromFile(user, opts.SSHKeyFile, "")
	if err != nil {
		return "", nil, fmt.Errorf("reading ssh key file: %w", err)
	}
	db, err := gitssh.NewKnownHostsDb(opts.KnownHostsFile)
	if err != nil {
		return "", nil, fmt.Errorf("reading known_hosts file: %w", err)
	}
	keys.HostKeyCallback = db.HostKeyCallback()
	keys.HostKeyAlgorithms = db.HostKeyAlgorithms(hostPort)
	return clean, keys, nil
}
