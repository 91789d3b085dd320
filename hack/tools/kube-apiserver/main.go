// Command kube-apiserver is the upstream kube-apiserver, built from the
// k8s.io/kubernetes module so that the test bed needs no prebuilt binaries.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
