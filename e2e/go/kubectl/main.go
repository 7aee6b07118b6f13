// Command kubectl is kubectl as k8s.io/kubectl builds it (the same command tree as the kubectl
// of the Kubernetes release the tests run), for tests that run kubectl commands from the docs
// (e.g. `kubectl wait --for=condition=Ready md/<name>` in e2e/tests/gitops.rs).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err)
		os.Exit(1)
	}
}
