package helm

// Compare checks two outputs of r as Prove does, for callers that change
// the output after rendering (a post-renderer): after must equal before
// but for the values want names, which must be the expected quantities,
// test hooks left out. When they differ otherwise, Compare calls again
// for another output of r's own values, made as before was, and leaves
// out what differs between the two, as Prove does; a nil again makes
// every difference count. Its errors wrap ErrProofFailed and list what
// changed, or are again's.
func Compare(r Release, before, after []Object, want []Expect, again func() ([]Object, error)) error {
	return prove(r, before, after, want, again)
}
