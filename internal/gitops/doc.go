// Package gitops is the git side of a run: it checks out the GitOps
// repository with go-git (over HTTP(S) with a token, or ssh with a key and
// known_hosts), commits the rendered files on the job's branch, optionally
// signed, and pushes it with a lease. It also renders the pull request's
// body from a run's report and opens or updates that pull request on
// GitHub, GitLab or Gitea behind the small Forge interface. It never shells
// out to git.
package gitops
