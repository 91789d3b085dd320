// Command kube-apiserver is the upstream kube-apiserver, built from the
// k8s.io/kubernetes module so that the test bed needs no prebuilt binaries.
// The test bed links it with the module's version stamped in, as the
// upstream release build does, so that it reports a real version.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
