package helm

import (
	"fmt"

	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// Cluster is what a chart's templates see of the cluster as
// .Capabilities, as helm-controller and Argo CD give it to them
// (Engine.Cluster).
type Cluster struct {
	// KubeVersion is the apiserver's version, e.g. v1.31.2.
	KubeVersion string
	// APIVersions are the group versions the apiserver serves (apps/v1),
	// and each with its kinds (apps/v1/Deployment), as Helm lists them.
	APIVersions []string
}

// capabilitiesOf is c as Helm's capabilities.
func capabilitiesOf(c *Cluster) (*common.Capabilities, error) {
	if c == nil {
		return common.DefaultCapabilities, nil
	}
	caps := common.DefaultCapabilities.Copy()
	if c.KubeVersion != "" {
		kv, err := common.ParseKubeVersion(c.KubeVersion)
		if err != nil {
			return nil, fmt.Errorf("the cluster's version %q: %w", c.KubeVersion, err)
		}
		caps.KubeVersion = *kv
	}
	if len(c.APIVersions) > 0 {
		caps.APIVersions = common.VersionSet(c.APIVersions)
	}
	return caps, nil
}

// checkKubeVersion refuses a chart whose kubeVersion constraint excludes
// the cluster's version, as helm install does.
func checkKubeVersion(ch *chartv2.Chart, c *Cluster, caps *common.Capabilities) error {
	if c == nil || c.KubeVersion == "" || ch.Metadata == nil || ch.Metadata.KubeVersion == "" {
		return nil
	}
	if !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", ch.Metadata.KubeVersion, caps.KubeVersion.Version)
	}
	return nil
}
