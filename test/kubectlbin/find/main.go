// Command find prints the path of the kubectl the tests drive, building
// upstream's kubectl first when the machine has none (see kubectlbin).
// .ci/run calls it so that the first build does not count against a test
// timeout.
package main

import (
	"fmt"
	"os"

	"github.com/crdserver/crdserver/test/kubectlbin"
)

func main() {
	p, err := kubectlbin.Find()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubectl:", err)
		os.Exit(1)
	}
	fmt.Println(p)
}
