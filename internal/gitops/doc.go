// Package gitops is the git side of a run: it checks out the GitOps
// repository with go-git, commits the rendered files on the job's branch and
// pushes it. It never shells out to git.
package gitops
