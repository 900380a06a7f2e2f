// Command kubectl is upstream's kubectl, built from the Go module proxy at
// the version pinned in this directory's go.mod: the Kubernetes release
// whose API crdserver serves. The end-to-end tests and the upstream e2e
// runner build it (package test/kubectlbin) when no kubectl is on PATH, so
// Go is all a machine needs to run them.
//
// It is a module of its own so that kubectl's dependencies stay out of
// crdserver's go.mod and out of `go test ./...`. kubectlbin stamps the
// version into the binary with -ldflags, as upstream's release build does.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	// -v is read before the command is built, so that what kubectl logs
	// while it builds the command (plugins, .kuberc) honours it too.
	logs.GlogSetter(cmd.GetLogVerbosity(os.Args)) //nolint:errcheck
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		// kubectl prints the error in its own format and exits with the
		// code the error carries.
		util.CheckErr(err)
	}
}
