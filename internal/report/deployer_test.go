package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestTableNamesTheDeployer checks that each changed row names the
// deployer that placed its change.
func TestTableNamesTheDeployer(t *testing.T) {
	p := helmPlan()
	p.Items[0].Source.Deployer = "Application argocd/shop-prod (from the cluster)"
	var buf bytes.Buffer
	if err := Write(&buf, p, FormatTable); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), ", deployed by Application argocd/shop-prod (from the cluster)"); n != 2 {
		t.Errorf("%d rows name the deployer, want the 2 changed ones:\n%s", n, buf.String())
	}
}
