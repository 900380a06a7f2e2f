// Command find prints the path of the helm the tests drive, building
// upstream's helm first when the machine has none (see helmbin), so that
// the first build need not count against a test timeout.
package main

import (
	"fmt"
	"os"

	"github.com/crdserver/crdserver/test/helmbin"
)

func main() {
	p, err := helmbin.Find()
	if err != nil {
		fmt.Fprintln(os.Stderr, "helm:", err)
		os.Exit(1)
	}
	fmt.Println(p)
}
