package helm

import "fmt"

// Compare checks two outputs of r as Prove does, for callers that change
// the output after rendering (a post-renderer): after must equal before
// but for the values want names, which must be the expected quantities.
// Its errors wrap ErrProofFailed and list what changed.
func Compare(r Release, before, after []Object, want []Expect) error {
	problems := compareRenders(before, after, want, r.Namespace)
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: release %s/%s (chart %s %s): %s", ErrProofFailed, r.Namespace, r.Name, r.Chart.Name, r.Chart.Version, boundedList(problems, proofLines))
}
