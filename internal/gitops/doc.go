// Package gitops is the git workspace of a run: it parses the
// repository's settings once (Prepare: the URL and its credentials, the
// ssh and signing keys), checks out the GitOps repository with go-git
// (over HTTP(S) with a token, or ssh with a key and known_hosts), commits
// the rendered files on the job's branch, optionally signed, with the
// trailers that record its changes, and pushes it with a lease. It names
// the branches of pull request groups and reads the base branch's history.
// It never shells out to git; the forges are package forge's, the text of
// pull requests and commits package markdown's.
package gitops
