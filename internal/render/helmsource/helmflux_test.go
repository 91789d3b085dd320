package helmsource

import (
	"testing"
)

// TestReleaseName checks helm-controller's naming of a HelmRelease's Helm
// release, long names shortened to 53 characters as helm-controller does.
func TestReleaseName(t *testing.T) {
	tests := []struct {
		name, releaseName, targetNamespace, want string
	}{
		{name: "web", want: "web"},
		{name: "web", targetNamespace: "shop", want: "shop-web"},
		{name: "web", releaseName: "storefront", targetNamespace: "shop", want: "storefront"},
		{name: "with-a-nice-object-name", targetNamespace: "a-very-lengthy-target-namespace", want: "a-very-lengthy-target-namespace-with-a-n-97af5d7f41f3"},
	}
	for _, tt := range tests {
		var hr FluxHelmRelease
		hr.Metadata.Name = tt.name
		hr.Spec.ReleaseName, hr.Spec.TargetNamespace = tt.releaseName, tt.targetNamespace
		if got := hr.ReleaseName(); got != tt.want {
			t.Errorf("%+v: releaseName() = %q, want %q", tt, got, tt.want)
		}
	}
}
