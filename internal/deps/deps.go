// Package deps pins modules that work in progress will import. It is
// removed once real imports exist.
package deps

import (
	_ "code.gitea.io/sdk/gitea"
	_ "github.com/google/go-github/v89/github"
	_ "gitlab.com/gitlab-org/api/client-go"
	_ "golang.org/x/crypto/ssh"
	_ "sigs.k8s.io/kustomize/api/krusty"
)
