package gitops

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"

	"github.com/recommend-job/recommend-job/internal/redact"
)

// scpLike matches git's scp-like syntax, user@host:path, which is not a URL.
var scpLike = regexp.MustCompile(`^(?:([^@/:]+)@)?([^@/:]+):([^/].*)?$`)

// isSCPLike reports whether raw is an scp-like ssh address.
func isSCPLike(raw string) bool {
	return scpLike.MatchString(raw) && !regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*://`).MatchString(raw)
}

// access is what the job needs to reach and sign for the repository,
// parsed from the settings of Options once (Prepare): the URL without its
// credentials, the auth method, the signer, the redactor of every
// credential, and the repository's web address and path.
type access struct {
	url    string
	auth   transport.AuthMethod
	signer git.Signer
	secret *redact.Redactor
	// web is where a person reads the repository (see webURL); path is
	// the repository's path on its host, owner/name for the forges;
	// token the one the URL carries (see URLToken).
	web, path, token string
}

// gitURL is the git URL of Options, parsed once: git's scp-like
// user@host:path (scp holds the match of scpLike: its user, host and
// path), or a URL (u, nil with err when it does not parse).
type gitURL struct {
	raw string
	scp []string
	u   *url.URL
	err error
}

// parseGitURL parses raw, which is a URL or an scp-like address.
func parseGitURL(raw string) gitURL {
	if isSCPLike(raw) {
		return gitURL{raw: raw, scp: scpLike.FindStringSubmatch(raw)}
	}
	u, err := url.Parse(raw)
	return gitURL{raw: raw, u: u, err: err}
}

// http reports whether g is an http(s) URL, whose user part may hold
// credentials.
func (g gitURL) http() bool { return g.u != nil && (g.u.Scheme == "http" || g.u.Scheme == "https") }

// SettingError is an error of Prepare's that one setting caused.
type SettingError struct {
	// Setting is the field of Options at fault: URL, SSHKeyFile,
	// KnownHostsFile or SigningKeyFile.
	Setting string
	Err     error
}

func (e *SettingError) Error() string { return e.Err.Error() }
func (e *SettingError) Unwrap() error { return e.Err }

// Prepare parses and checks the settings of opts once: the git URL and
// its credentials, the ssh key and known_hosts files, and the signing
// key. The options it returns carry what it parsed, which every checkout,
// listing and history read of them then uses: an unreadable key fails
// here, before the run contacts anything, and not at a group's checkout.
func Prepare(opts Options) (Options, error) {
	a, err := parseAccess(opts)
	if err != nil {
		return Options{}, err
	}
	opts.access = a
	return opts, nil
}

// accessOf is what Prepare parsed of opts; options made by hand, as
// tests make them, are parsed on each use.
func accessOf(opts Options) (*access, error) {
	if opts.access != nil {
		return opts.access, nil
	}
	return parseAccess(opts)
}

// parseAccess parses the settings of opts; see Prepare.
func parseAccess(opts Options) (*access, error) {
	g := parseGitURL(opts.URL)
	a := &access{secret: gitRedactor(opts, g), web: webURL(g), path: repositoryPath(g), token: urlToken(g)}
	var err error
	if a.url, a.auth, err = authFor(opts, g, a.secret); err != nil {
		return nil, err
	}
	if a.signer, err = loadSigner(opts.SigningFormat, opts.SigningKeyFile); err != nil {
		return nil, &SettingError{Setting: "SigningKeyFile", Err: err}
	}
	return a, nil
}

// RepositoryPath is the path of the repository on its host, without a
// leading "/" or a trailing ".git": owner/name on the forges (GitLab:
// the project path), which a forge's client takes when forge-repository
// is not set.
func (o Options) RepositoryPath() (string, error) {
	if o.access != nil {
		return o.access.path, nil
	}
	if p := repositoryPath(parseGitURL(o.URL)); p != "" {
		return p, nil
	}
	return "", errors.New("the git url has no repository path")
}

// URLToken is the token an http(s) git URL carries in its user part (its
// password, or a user name alone, as GitHub documents), "" for none: the
// forge's token when no other is set.
func (o Options) URLToken() string {
	if o.access != nil {
		return o.access.token
	}
	return urlToken(parseGitURL(o.URL))
}

// urlToken is URLToken of g.
func urlToken(g gitURL) string {
	if !g.http() {
		return ""
	}
	return redact.UserSecret(g.u)
}

// repositoryPath is the path part of g (see RepositoryPath).
func repositoryPath(g gitURL) string {
	var p string
	switch {
	case g.scp != nil:
		p = g.scp[3]
	case g.u != nil:
		p = g.u.Path
	}
	return strings.TrimSuffix(strings.Trim(p, "/"), ".git")
}

// gitRedactor knows the credentials of opts: the git token and those of
// Secrets, the password (or the token in the user part) of an http(s)
// URL, and the basic-auth header value built from them, which a server
// may echo.
func gitRedactor(opts Options, g gitURL) *redact.Redactor {
	secrets := append([]string{opts.Token}, opts.Secrets...)
	switch {
	case g.scp != nil: // user@host:path names a user, never a secret.
	case g.err != nil:
		secrets = append(secrets, redact.BeforeHost(g.raw))
	case g.http():
		secrets = append(secrets, redact.UserSecret(g.u))
		if user, token := httpCredentials(g.u, opts); token != "" {
			secrets = append(secrets, base64.StdEncoding.EncodeToString([]byte(user+":"+token)))
		}
	}
	return redact.New(secrets...)
}

// redactErr replaces every credential of opts in err's text. url.Parse errors
// quote the whole URL, user info included, and servers may echo it.
func redactErr(err error, opts Options) error {
	if a := opts.access; a != nil {
		return a.secret.Error(err)
	}
	return gitRedactor(opts, parseGitURL(opts.URL)).Error(err)
}

// authFor returns the repository URL without credentials, and the auth
// method. Over HTTP(S), credentials embedded in the URL move to basic auth
// so that they never show up in an error or log line that quotes the URL;
// a URL with only a user part (https://TOKEN@host/...) carries a token, as
// GitHub documents. Over ssh, a key file and a known_hosts file are
// required: there is no default that trusts any host key.
func authFor(opts Options, g gitURL, secret *redact.Redactor) (string, transport.AuthMethod, error) {
	if g.scp != nil {
		return sshAuth(g.raw, g.scp[1], g.scp[2]+":22", opts)
	}
	if g.err != nil {
		return "", nil, &SettingError{Setting: "URL", Err: fmt.Errorf("parsing git url: %w", secret.Error(g.err))}
	}
	u := *g.u // a copy, which loses its user part below
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
	username, token := httpCredentials(&u, opts)
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
		return "", nil, &SettingError{Setting: "SSHKeyFile", Err: fmt.Errorf("reading ssh key file: %w", err)}
	}
	db, err := gitssh.NewKnownHostsDb(opts.KnownHostsFile)
	if err != nil {
		return "", nil, &SettingError{Setting: "KnownHostsFile", Err: fmt.Errorf("reading known_hosts file: %w", err)}
	}
	keys.HostKeyCallback = db.HostKeyCallback()
	keys.HostKeyAlgorithms = db.HostKeyAlgorithms(hostPort)
	return clean, keys, nil
}
