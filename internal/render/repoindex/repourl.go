package repoindex

import (
	"net/url"
	"strings"
)

// NormalRepoURL reduces a git URL to host and path: scheme, credentials,
// port-less ssh forms and a trailing .git do not tell repositories apart.
func NormalRepoURL(u string) string {
	u = strings.TrimSpace(u)
	if !strings.Contains(u, "://") {
		if host, p, ok := strings.Cut(u, ":"); ok { // git@host:org/repo
			u = "ssh://" + host + "/" + p
		}
	}
	pu, err := url.Parse(u)
	if err != nil {
		return u
	}
	p := strings.TrimSuffix(strings.Trim(pu.Path, "/"), ".git")
	return strings.ToLower(pu.Hostname()) + "/" + p
}

// RedactURL drops credentials from a URL for messages.
func RedactURL(u string) string {
	pu, err := url.Parse(u)
	if err != nil || pu.User == nil {
		return u
	}
	pu.User = nil
	return pu.String()
}
