// Package forge opens, updates and closes the job's pull requests and its
// dashboard issue on GitHub, GitLab or Gitea behind the small Forge
// interface, built once per process (New), every call bounded by the
// forge timeout and its errors redacted. It reads CODEOWNERS for the
// reviewers, and tells which of the job's recorded commits reached the
// base branch (ReadMerged), asking the forge about squashed and rebased
// pull requests.
package forge
